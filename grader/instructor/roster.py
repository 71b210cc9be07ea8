"""The class's own lists, read once for every command: the roster (who the LMS knows, by which
ids, with what extension) and the class quiz's gradebook. Students are keyed by
grader.readers.identity.identity, so a name matches in any case or Unicode form; the files are read by
grader.readers.csvfile's reader, and each bad cell is refused in a sentence naming its line and column."""
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

from grader.base.errors import QuizError, UsageError
from grader.readers.csvfile import Row, read_table
from grader.readers.identity import as_read, identity, look_alikes, shown
from grader.readers.times import NotATime, read_column

if TYPE_CHECKING:
    from grader.readers.manifest import Lab

YEAR_HOURS = 366 * 24                   # the longest extension given in hours
FIELDS = ("name", "id", "sis_user_id", "sis_login_id", "email", "section")


class RosterEntry(BaseModel):
    student: str                        # as the roster writes it (grader.readers.identity.shown)
    line: int = 0                       # where the roster has it
    name: str = ""
    id: str = ""                        # the LMS's user id (Canvas: digits)
    sis_user_id: str = ""               # Canvas's SIS User ID; Moodle's ID number
    sis_login_id: str = ""
    email: str = ""
    section: str = ""
    extension: float | datetime = 0.0   # hours past the due time, or the student's own due time


@dataclass
class Quiz:
    score: float
    max: float
    passed: bool


def extension(text: str, where: str, when: datetime | None = None) -> float | datetime:
    """Hours (a finite number from 0 to a year's) or an aware time, from a roster cell; `when`:
    the cell as its column's order of day and month read it (grader.readers.times.read_column)."""
    if not text:
        return 0.0
    try:
        hours = float(text)
    except ValueError:
        if when is not None:
            return when
        raise UsageError(f"{where}: {shown(text)!r} is neither hours nor a time; expected hours past the due "
                         "time (e.g. 48) or the student's own due time (e.g. 2026-12-03T23:59:00+01:00)") from None
    if not math.isfinite(hours) or not 0 <= hours <= YEAR_HOURS:
        raise UsageError(f"{where}: {shown(text)!r} hours: expected a number from 0 to {YEAR_HOURS} (a year)")
    return hours


def _hours(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_roster(path: str | os.PathLike) -> dict[str, RosterEntry]:
    """{identity: RosterEntry} from the roster CSV (grader.readers.csvfile's reader); a student listed twice,
    in any form, or two whose names render alike, are refused."""
    table = read_table(path, ["student"], "--roster")
    rows = [row for row in table.rows if identity(row.cells["student"])]
    lines: dict[str, Row] = {}
    for row in rows:
        key = identity(row.cells["student"])
        if key in lines:
            raise UsageError(f"{table.where} line {row.line}: {shown(row.cells['student'])!r} is listed twice "
                             f"(line {lines[key].line} too, as {shown(lines[key].cells['student'])!r})")
        lines[key] = row
    for group in look_alikes(row.cells["student"] for row in rows):
        first, second = (lines[identity(name)] for name in group[:2])
        raise UsageError(f"{table.where} line {second.line}: {as_read(group[1])} looks like {as_read(group[0])} of "
                         f"line {first.line}: two students whose names render alike; rename one")

    def at(line: int | None) -> str:
        return table.at(line, "extension")

    cells = {row.line: row.cells.get("extension", "") for row in rows}
    try:
        times = read_column([(line, text) for line, text in cells.items() if not _hours(text)], at).one(at)
    except NotATime as error:
        if error.line is not None:
            extension(cells[error.line], at(error.line))        # says so in the roster's words
        raise
    return {key: RosterEntry(student=shown(row.cells["student"]), line=row.line,
                             extension=extension(cells[row.line], at(row.line), times.get(row.line)),
                             **{name: shown(row.cells.get(name, "")) for name in FIELDS})
            for key, row in lines.items()}


def read_quiz(path: str | os.PathLike, lab: "Lab | None", students: Iterable[str]) -> dict[str, Quiz]:
    """{identity: Quiz} from the class quiz: a form's responses (graded against `lab`'s quiz) or the
    gradebook of grade.py quiz --class, read by the one reader of them (grader/quiz/responses.py).
    QuizError when none of `students` took it: another class's file, or names not the submissions'."""
    from grader.quiz.model import load_quiz
    from grader.quiz.responses import read_class

    try:
        quiz, broken = (load_quiz(lab.quiz) if lab and lab.quiz else None), None
    except QuizError as error:
        quiz, broken = None, error
    try:
        answers = read_class(path, quiz, lab.name if lab else "", option="--quiz")
    except QuizError as error:
        raise QuizError(f"{error} (the lab's quiz does not load: {broken})" if broken else str(error)) from None
    answers.require_some_of(students, "--quiz")
    return {identity(row.student): Quiz(row.result.score, row.result.max, row.result.passed)
            for row in answers.counted()}
