"""The one reader of a class's lesson-test answers, for every command that takes them (`quiz
--class`, `batch --quiz`, `report --quiz`, `gradebook --quiz`).

It reads either form, recognised by its header:
  responses  a form's or a spreadsheet's export: a `student` column, one per question id,
             optionally a timestamp; graded here against the keyed quiz
  gradebook  what `quiz --class` wrote: student, score, max, passed (status, a 0/1 column per
             question and notes where it has them); read as graded
read by the one reader of instructors' CSV files (grader.readers.csvfile: any common encoding, separator
and cell length; a row with a missing or extra cell is refused, naming it). A cell that cannot be
read costs that answer only, and is noted on its row. A student's names compare in one normal form
(grader.readers.identity); a student's duplicate rows are noted, and the latest by timestamp counts (else
the last), the timestamps' order of day and month decided for the whole column (grader.readers.times).
"""
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, PrivateAttr

from grader.base.errors import QuizError, UsageError
from grader.base.text import as_written
from grader.quiz.answers import AnswerError, in_key_form, parse_answer, why_wrong
from grader.quiz.grading import grade
from grader.quiz.model import QuestionResult, Quiz, QuizResult
from grader.readers import csvfile
from grader.readers.identity import as_read, identity, look_alikes
from grader.readers.times import read_column

TIMESTAMPS = ("timestamp", "completion time", "submitted at", "submitted", "time")
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
def _table(path, option):
    """(header, [(line, cells)], Table) of a class's answers file, read by grader.readers.csvfile's reader."""
    table = csvfile.read_table(path, (), option, QuizError)
    return table.columns, [(row.line, row.cells) for row in table.rows], table


def _plain(cell):
    """A cell as its writer meant it: the gradebook's inert marks taken off (grader.base.text.as_written)."""
    return as_written(cell.strip())


def read_class(path, quiz=None, name="", option="--quiz"):
    """Every row of a class's answers file, graded (a responses export) or as graded (a gradebook).
    `quiz`: the keyed quiz, needed for a responses export; QuizError when the file cannot be used."""
    header, lines, table = _table(path, option)
    ids = [question.id for question in quiz.questions] if quiz else []
    if all(column in header for column in GRADEBOOK):
        answers = _read_gradebook(header, lines, quiz, name, Path(path))
    elif "student" in header and ids and all(csvfile.column(i) in header for i in ids):
        if not quiz.keyed:
            raise QuizError(f"{option} {path}: the quiz here is an exam form with no answer key: grade the "
                            "responses with the keyed quiz file")
        answers = _grade_responses(header, lines, quiz, name, table)
    else:
        missing = next(column for column in ["student", *ids, *GRADEBOOK] if csvfile.column(column) not in header)
        expected = f"student, {', '.join(ids)} (a form's responses) or " if ids else ""
        got = ", ".join(header) or "an empty file"
        raise QuizError(f"{option} {path}: no column {missing!r}; expected a header with {expected}"
                        f"{', '.join(GRADEBOOK)} (a gradebook of grade.py quiz --class); got {got[:200]}")
    _note_look_alikes(answers["rows"])
    answers = ClassAnswers(path=str(path), **answers)
    if not answers.counted():
        raise QuizError(f"{option} {path}: no row of it holds a student's answers ({len(answers.rows)} rows: "
                        f"{', '.join(dict.fromkeys(row.status for row in answers.rows)) or 'none'})")
    return answers


def _note_look_alikes(rows):
    """A note on each counted row whose name renders like another student's (grader.readers.identity):
    the two are never silently two students."""
    counted = {row.student: row for row in rows if row.result is not None}
    for group in look_alikes(counted):
        for name in group:
            others = ", ".join(f"row {counted[other].row}'s {as_read(other)}" for other in group if other != name)
            counted[name].notes.append(f"{as_read(name)} looks like {others}: one student, or two to tell apart?")


def _cells(header, cells, names):
    """{name: the row's cell under that column} for each of `names` in the header."""
    return {name: cells[csvfile.column(name)] for name in names if csvfile.column(name) in header}


# -- a responses export, graded here ------------------------------------------------------------------
def _grade_responses(header, lines, quiz, name, table):
    ids = [question.id for question in quiz.questions]
    stamp = next((column for column in TIMESTAMPS if column in header), None)
    rows = [_grade_row(quiz, name, number, _cells(header, cells, ["student", *ids])) for number, cells in lines]
    readings, at = None, lambda line: table.at(line, stamp)
    if stamp:
        try:
            readings = read_column([(number, cells[stamp]) for number, cells in lines], at, zoned=False,
                                   strict=False).readings
        except UsageError as error:
            raise QuizError(str(error)) from None
    _settle_duplicates(rows, readings, at)
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


def _order(when):
    """A time to order by: a form's (no zone: its own clock) as it reads, one with a zone in UTC."""
    return when.replace(tzinfo=None) if when.utcoffset() is None else when.astimezone(timezone.utc).replace(tzinfo=None)


def _settle_duplicates(rows, readings, at=None):
    """One counted row per student (names in their normal form): the latest by timestamp when
    every row of the student has one, else the last. `readings`: the timestamp column under each
    order of day and month that reads it (grader.readers.times); where those would count different rows,
    QuizError says so."""
    by_student = {}
    for row in rows:
        if row.result is not None:
            by_student.setdefault(identity(row.student), []).append(row)
    for same in (group for group in by_student.values() if len(group) > 1):
        by_time = bool(readings) and all(times[row.row] is not None for times in readings.values() for row in same)
        if by_time:
            latest = {order: max(same, key=lambda row: (_order(times[row.row]), row.row))
                      for order, times in readings.items()}
            if len(set(map(id, latest.values()))) > 1:
                raise QuizError(f"{at(same[0].row)}: its dates read both day-first and month-first, and the two "
                                f"count different rows of {same[0].student!r} ({', '.join(str(r.row) for r in same)});"
                                " write them as ISO 8601 (2026-10-01 14:05:00)")
        counted = next(iter(latest.values())) if by_time else same[-1]
        how = "the latest by timestamp" if by_time else \
            "the last" + (" (timestamps missing or unreadable)" if readings else "")
        numbers = ", ".join(str(row.row) for row in same)
        for row in same:
            if row is counted:
                row.notes.append(f"{len(same)} rows for this student ({numbers}): this one counts, {how}")
            else:
                row.status, row.result = f"duplicate: row {counted.row} counts ({how})", None


# -- a gradebook, read as graded -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Gradebook:
    """A gradebook file as each of its rows reads: its quiz (None: not known) and the quiz's name,
    the question ids whose 0/1 marks it holds, when it was written (the results' time) and where."""
    quiz: Quiz | None
    name: str
    ids: tuple[str, ...]
    when: datetime
    path: Path


def _read_gradebook(header, lines, quiz, name, path):
    ids = [question.id for question in quiz.questions] if quiz else []
    marks = bool(ids) and all(i.casefold() in header for i in ids)
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).astimezone()
    book = _Gradebook(quiz, name, tuple(ids) if marks else (), when, path)
    rows = []
    for number, cells in lines:
        rows.append(_gradebook_row(book, number, _cells(header, cells, [*GRADEBOOK, "status", "notes", *book.ids])))
    _settle_duplicates(rows, None)
    return {"kind": "gradebook", "marks": marks, "rows": rows}


def _gradebook_row(book, number, cells):
    quiz, name, ids, when, path = book.quiz, book.name, book.ids, book.when, book.path
    student, status = cells["student"], _plain(cells.get("status", "")) or "graded"     # csvfile's plain name
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
