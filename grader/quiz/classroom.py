"""A class's lesson-test answers into a gradebook: one row per student from a spreadsheet's or a
form's export (a `student` column, one per question id, optionally a timestamp), whatever its
encoding (UTF-8 with or without BOM, UTF-16, Latin-1/cp1252), separator (comma, tab, semicolon)
or cell length. A cell that cannot be read costs that answer only, and is noted on its row; a
student's duplicate rows are reported, and the latest by timestamp counts (else the last). Every
cell of the gradebook is inert in a spreadsheet (no formula).
"""
import codecs
import csv
import io
import os
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from grader.errors import QuizError
from grader.instructor.gradebook import inert
from grader.quiz.answers import AnswerError, parse_answer
from grader.quiz.grading import grade
from grader.quiz.model import QuizResult

TIMESTAMPS = ("timestamp", "completion time", "submitted at", "submitted", "time")
TIME_FORMATS = ("%Y/%m/%d %I:%M:%S %p", "%Y/%m/%d %H:%M:%S", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %I:%M:%S %p",
                "%d/%m/%Y %H:%M:%S", "%m/%d/%y %H:%M:%S", "%d.%m.%Y %H:%M:%S", "%Y-%m-%d %H:%M")


class GradebookRow(BaseModel):
    row: int                     # line number in the responses file (the header is line 1)
    student: str
    status: str                  # "graded", or why the row counts for nothing
    notes: list[str] = []        # cells that could not be read (each costs its answer), duplicates
    result: QuizResult | None = None


def decode(data, path):
    """The text of a responses file in whichever of the common encodings it is."""
    sample = data[:400]
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encodings = ["utf-16"]
    elif sample[1::2].count(0) > len(sample) // 4:          # UTF-16 without its BOM: ASCII's high bytes
        encodings = ["utf-16-le"]
    elif sample[0::2].count(0) > len(sample) // 4:
        encodings = ["utf-16-be"]
    else:
        encodings = ["utf-8-sig", "cp1252", "latin-1"]
    for encoding in encodings:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise QuizError(f"{path}: not text in UTF-8, UTF-16 or Latin-1 (export it again as CSV)")


def read_responses(quiz, path):
    """(header positions, [(line, cells)]) of a responses file; QuizError when a column is missing."""
    text = decode(Path(path).read_bytes(), path)
    first = text.split("\n", 1)[0]
    delimiter = max(",\t;", key=first.count)
    csv.field_size_limit(2**31 - 1)             # a form's export may hold a very long answer
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    header = [cell.strip().casefold() for cell in rows[0]] if rows else []
    ids = [question.id for question in quiz.questions]
    missing = [column for column in ["student", *ids] if column.casefold() not in header]
    if missing:
        got = ", ".join(rows[0]) if rows else "an empty file"
        raise QuizError(f"{path}: no column {missing[0]!r}; expected a header with student, {', '.join(ids)} "
                        f"(got {got[:200]})")
    columns = {name: header.index(name.casefold()) for name in ["student", *ids]}
    stamp = next((header.index(name) for name in TIMESTAMPS if name in header), None)
    lines = [(line, cells) for line, cells in enumerate(rows[1:], 2) if any(cell.strip() for cell in cells)]
    return columns, stamp, lines


def grade_class(quiz, name, responses_path, gradebook_path):
    """Grade a class's responses into a gradebook CSV; the rows, as written."""
    columns, stamp, lines = read_responses(quiz, responses_path)
    cell = lambda cells, column: cells[column].strip() if column < len(cells) else ""
    rows = [_grade_row(quiz, name, line, {key: cell(cells, column) for key, column in columns.items()})
            for line, cells in lines]
    times = {line: _time(cell(cells, stamp)) for line, cells in lines} if stamp is not None else {}
    _settle_duplicates(rows, times)
    _write_gradebook(gradebook_path, [question.id for question in quiz.questions], rows)
    return rows


def _grade_row(quiz, name, line, cells):
    student = cells["student"]
    if not student:
        return GradebookRow(row=line, student="", status="no student name")
    answers, notes = {}, []
    for question in quiz.questions:
        try:
            if cells[question.id]:
                answers[question.id] = parse_answer(question, cells[question.id])
        except AnswerError as error:
            notes.append(f"{question.id}: not read, counted wrong ({error})")
    return GradebookRow(row=line, student=student, status="graded", notes=notes,
                        result=grade(quiz, answers, name))


def _time(text):
    """A timestamp as a number to order by, or None when it cannot be read."""
    try:
        return float(text)
    except ValueError:
        pass
    text = text.split(" GMT")[0].split(" UTC")[0].strip()
    for parse in [datetime.fromisoformat, *(lambda t, f=f: datetime.strptime(t, f) for f in TIME_FORMATS)]:
        try:
            return parse(text).timestamp()
        except ValueError:
            continue
    return None


def _settle_duplicates(rows, times):
    """One counted row per student (names compared ignoring case): the latest by timestamp when all
    can be read, else the last."""
    by_student = {}
    for row in rows:
        if row.student:
            by_student.setdefault(row.student.casefold(), []).append(row)
    for same in (group for group in by_student.values() if len(group) > 1):
        stamps = [times.get(row.row) for row in same]
        by_time = times and None not in stamps
        counted = max(same, key=lambda row: (times[row.row], row.row)) if by_time else same[-1]
        how = "the latest by timestamp" if by_time else "the last" + (" (timestamps unreadable)" if times else "")
        lines = ", ".join(str(row.row) for row in same)
        for row in same:
            if row is counted:
                row.notes.append(f"{len(same)} rows for this student ({lines}): this one counts, {how}")
            else:
                row.status, row.result = f"duplicate: row {counted.row} counts ({how})", None


def _write_gradebook(path, ids, rows):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    with open(part, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["student", "score", "max", "passed", "status", *ids, "notes"])
        for row in rows:
            result = row.result
            marks = [int(q.correct) for q in result.questions] if result else [""] * len(ids)
            writer.writerow([inert(row.student), result.score if result else "", len(ids),
                             ("yes" if result.passed else "no") if result else "", inert(row.status), *marks,
                             inert("; ".join(row.notes))])
    os.replace(part, path)
