"""The one reader of a class's lesson-test answers, for every command that takes them (`quiz
--class`, `batch --quiz`, `report --quiz`, `gradebook --quiz`).

It reads either form, recognised by its header:
  responses  a form's or a spreadsheet's export: a `student` column, one per question id,
             optionally a timestamp; graded here against the keyed quiz
  gradebook  what `quiz --class` wrote: student, score, max, passed (status, a 0/1 column per
             question and notes where it has them); read as graded
in any common encoding (UTF-8 with or without BOM, UTF-16, Latin-1/cp1252), separator (comma,
tab, semicolon) and cell length. A cell that cannot be read costs that answer only, and is noted
on its row. A student's names compare in one normal form (grader.identity); a student's duplicate
rows are noted, and the latest by timestamp counts (else the last).
"""
import codecs
import csv
import io
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, PrivateAttr

from grader.errors import QuizError
from grader.identity import identity
from grader.quiz.answers import AnswerError, in_key_form, parse_answer, why_wrong
from grader.quiz.grading import grade
from grader.quiz.model import QuestionResult, QuizResult

TIMESTAMPS = ("timestamp", "completion time", "submitted at", "submitted", "time")
TIME_FORMATS = ("%Y/%m/%d %I:%M:%S %p", "%Y/%m/%d %H:%M:%S", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %I:%M:%S %p",
                "%d/%m/%Y %H:%M:%S", "%m/%d/%y %H:%M:%S", "%d.%m.%Y %H:%M:%S", "%Y-%m-%d %H:%M")
GRADEBOOK = ("student", "score", "max", "passed")       # the columns that make a file a gradebook


class ClassRow(BaseModel):
    row: int                     # the row's number in the file (the header is row 1)
    student: str
    status: str                  # "graded", or why the row counts for nothing
    notes: list[str] = []        # cells that could not be read (each costs its answer), duplicates
    result: QuizResult | None = None


class ClassAnswers(BaseModel):
    """A class's answers as read: every row, and the counted one of each student."""
    path: str
    kind: Literal["responses", "gradebook"]
    marks: bool                  # whether each question's right or wrong is known (a gradebook may lack them)
    rows: list[ClassRow]
    _counted: dict = PrivateAttr(default_factory=dict)

    def model_post_init(self, context):
        self._counted = {identity(row.student): row for row in self.rows if row.result is not None}

    def get(self, student):
        """The counted row of `student` (any spelling of the name in the normal form), or None."""
        return self._counted.get(identity(student))

    def counted(self):
        return list(self._counted.values())

    def require_some_of(self, students, option):
        """QuizError unless at least one of `students` has a counted row: another class's file,
        or one whose names are not the submissions', would otherwise show a class of zeros."""
        if any(self.get(student) for student in students):
            return
        theirs = ", ".join(repr(row.student) for row in self.counted()[:3]) or "none"
        ours = ", ".join(repr(student) for student in list(students)[:3]) or "none"
        raise QuizError(f"{option} {self.path}: none of its {len(self.counted())} students is one of the "
                        f"{len(list(students))} graded here (its: {theirs}; here: {ours}); is it this class's file, "
                        "and is its student column the submissions' names?")


# -- the file -------------------------------------------------------------------------------------------
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


def _delimiter(text):
    """The separator of the header line (comma, tab or semicolon), counting none inside quotes."""
    counts, quoted = dict.fromkeys(",\t;", 0), False
    for char in text.split("\n", 1)[0]:
        quoted ^= char == '"'
        if not quoted and char in counts:
            counts[char] += 1
    return max(counts, key=counts.get)


def read_table(path, option):
    """(header casefolded, [(row number, cells)]) of a CSV or tab-separated file; empty rows left out."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise QuizError(f"{option} {path}: cannot be read ({error.strerror or type(error).__name__})") from None
    text = decode(data, f"{option} {path}")
    csv.field_size_limit(2**31 - 1)             # a form's export may hold a very long answer
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text)))
    except csv.Error as error:
        raise QuizError(f"{option} {path}: not a CSV file ({error})") from None
    header = [" ".join(cell.split()).casefold() for cell in rows[0]] if rows else []
    return header, [(number, cells) for number, cells in enumerate(rows[1:], 2) if any(c.strip() for c in cells)]


def _plain(cell):
    """A cell as its writer meant it: a gradebook's inert prefix (a quote before = + - @) taken off."""
    cell = cell.strip()
    return cell[1:] if cell[:1] == "'" and cell[1:].lstrip()[:1] in ("=", "+", "-", "@") else cell


def read_class(path, quiz=None, name="", option="--quiz"):
    """Every row of a class's answers file, graded (a responses export) or as graded (a gradebook).
    `quiz`: the keyed quiz, needed for a responses export; QuizError when the file cannot be used."""
    header, lines = read_table(path, option)
    ids = [question.id for question in quiz.questions] if quiz else []
    if all(column in header for column in GRADEBOOK):
        answers = _read_gradebook(header, lines, quiz, name, Path(path))
    elif "student" in header and ids and all(i.casefold() in header for i in ids):
        if not quiz.keyed:
            raise QuizError(f"{option} {path}: the quiz here is an exam form with no answer key: grade the "
                            "responses with the keyed quiz file")
        answers = _grade_responses(header, lines, quiz, name)
    else:
        missing = next(column for column in ["student", *ids, *GRADEBOOK] if column.casefold() not in header)
        expected = f"student, {', '.join(ids)} (a form's responses) or " if ids else ""
        got = ", ".join(header) or "an empty file"
        raise QuizError(f"{option} {path}: no column {missing!r}; expected a header with {expected}"
                        f"{', '.join(GRADEBOOK)} (a gradebook of grade.py quiz --class); got {got[:200]}")
    answers = ClassAnswers(path=str(path), **answers)
    if not answers.counted():
        raise QuizError(f"{option} {path}: no row of it holds a student's answers ({len(answers.rows)} rows: "
                        f"{', '.join(dict.fromkeys(row.status for row in answers.rows)) or 'none'})")
    return answers


def _cells(header, cells, names):
    """{name: the row's cell under that column, stripped} for each of `names` in the header."""
    at = {column: header.index(column.casefold()) for column in names if column.casefold() in header}
    return {column: cells[i].strip() if i < len(cells) else "" for column, i in at.items()}


# -- a responses export, graded here ------------------------------------------------------------------
def _grade_responses(header, lines, quiz, name):
    ids = [question.id for question in quiz.questions]
    stamp = next((column for column in TIMESTAMPS if column in header), None)
    rows, times = [], {}
    for number, cells in lines:
        row = _cells(header, cells, ["student", *ids, *([stamp] if stamp else [])])
        rows.append(_grade_row(quiz, name, number, row))
        if stamp:
            times[number] = _time(row[stamp])
    _settle_duplicates(rows, times if stamp else {})
    return {"kind": "responses", "marks": True, "rows": rows}


def _grade_row(quiz, name, number, cells):
    student = cells["student"]
    if not student:
        return ClassRow(row=number, student="", status="no student name")
    answers, notes = {}, []
    for question in quiz.questions:
        raw = cells[question.id]
        if not raw:
            continue
        try:
            answers[question.id] = parse_answer(question, raw)
            if not in_key_form(question, answers[question.id]):     # a hedge: judged wrong as written
                notes.append(f"{question.id}: judged wrong ({why_wrong(question, answers[question.id])})")
        except AnswerError as error:
            answers[question.id] = " ".join(raw.split())          # judged wrong as written, with the reason
            notes.append(f"{question.id}: not read, counted wrong ({error})")
    return ClassRow(row=number, student=student, status="graded", notes=notes, result=grade(quiz, answers, name))


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
    """One counted row per student (names in their normal form): the latest by timestamp when all
    can be read, else the last."""
    by_student = {}
    for row in rows:
        if row.result is not None:
            by_student.setdefault(identity(row.student), []).append(row)
    for same in (group for group in by_student.values() if len(group) > 1):
        stamps = [times.get(row.row) for row in same]
        by_time = bool(times) and None not in stamps
        counted = max(same, key=lambda row: (times[row.row], row.row)) if by_time else same[-1]
        how = "the latest by timestamp" if by_time else "the last" + (" (timestamps unreadable)" if times else "")
        numbers = ", ".join(str(row.row) for row in same)
        for row in same:
            if row is counted:
                row.notes.append(f"{len(same)} rows for this student ({numbers}): this one counts, {how}")
            else:
                row.status, row.result = f"duplicate: row {counted.row} counts ({how})", None


# -- a gradebook, read as graded -------------------------------------------------------------------------
def _read_gradebook(header, lines, quiz, name, path):
    ids = [question.id for question in quiz.questions] if quiz else []
    marks = bool(ids) and all(i.casefold() in header for i in ids)
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).astimezone()
    rows = []
    for number, cells in lines:
        row = _cells(header, cells, [*GRADEBOOK, "status", "notes", *(ids if marks else [])])
        rows.append(_gradebook_row(quiz, name, number, row, ids if marks else [], when, path))
    _settle_duplicates(rows, {})
    return {"kind": "gradebook", "marks": marks, "rows": rows}


def _gradebook_row(quiz, name, number, cells, ids, when, path):
    student, status = _plain(cells["student"]), _plain(cells.get("status", "")) or "graded"
    notes = [note for note in _plain(cells.get("notes", "")).split("; ") if note]
    if not student or not cells["score"]:
        return ClassRow(row=number, student=student, status=status if status != "graded" else "no score", notes=notes)
    try:
        score, top = float(cells["score"]), float(cells["max"])
        marks = [QuestionResult(id=i, type=q.type, given=None, answer=_key(q), correct=_mark(cells[i]))
                 for i, q in zip(ids, quiz.questions if ids else [])]
    except ValueError:
        raise QuizError(f"--quiz {path} row {number}: score {cells['score']!r}, max {cells['max']!r} and the "
                        "questions' marks should be numbers") from None
    passed = cells["passed"].strip().casefold() in ("yes", "true", "1", "pass", "passed")
    result = QuizResult(quiz=name, title=quiz.title if quiz else name, score=round(score), max=round(top),
                        needed=quiz.needed if quiz else 0, passed=passed, when=when, questions=marks)
    return ClassRow(row=number, student=student, status="graded", notes=notes, result=result)


def _mark(cell):
    if cell.strip() not in ("0", "1"):
        raise ValueError(cell)
    return cell.strip() == "1"


def _key(question):
    if question.answer is None:                 # an exam form: the key is not here
        return ""
    return question.answer.shown() if question.type == "text" else question.answer
