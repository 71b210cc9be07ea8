"""The class's own lists, read once for every command: the roster (who the LMS knows, by which
ids, with what extension) and the class quiz's gradebook. Students are keyed by
grader.identity.identity, so a name matches in any case or Unicode form; each bad cell is refused
in a sentence naming its line and column."""
import csv
import math
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel

from grader.errors import QuizError, UsageError
from grader.identity import identity, shown
from grader.instructor.deadlines import parse_time

YEAR_HOURS = 366 * 24                   # the longest extension given in hours
FIELDS = ("name", "id", "sis_user_id", "sis_login_id", "email", "section")


class RosterEntry(BaseModel):
    student: str                        # as the roster writes it (grader.identity.shown)
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


def _csv_rows(path, option, required):
    with open(path, newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            got = ", ".join(map(shown, reader.fieldnames or [])) or "an empty file"
            raise UsageError(f"{option} {path}: no column {missing[0]!r}; expected a header with "
                             f"{', '.join(required)} (got {got})")
        return [(line, {k: (v or "").strip() for k, v in cells.items() if k}) for line, cells in enumerate(reader, 2)]


def extension(text, where):
    """Hours (a finite number from 0 to a year's) or an aware time, from a roster cell."""
    if not text:
        return 0.0
    try:
        hours = float(text)
    except ValueError:
        try:
            return parse_time(text, where)
        except UsageError:
            raise UsageError(f"{where}: {shown(text)!r} is neither hours nor a time; expected hours past the due "
                             "time (e.g. 48) or the student's own due time (e.g. 2026-12-03T23:59:00+01:00)") from None
    if not math.isfinite(hours) or not 0 <= hours <= YEAR_HOURS:
        raise UsageError(f"{where}: {shown(text)!r} hours: expected a number from 0 to {YEAR_HOURS} (a year)")
    return hours


def read_roster(path):
    """{identity: RosterEntry} from the roster CSV; a student listed twice, in any form, is refused."""
    roster = {}
    for line, cells in _csv_rows(path, "--roster", ["student"]):
        key = identity(cells.get("student", ""))
        if not key:
            continue
        if key in roster:
            raise UsageError(f"--roster {path} line {line}: {shown(cells['student'])!r} is listed twice "
                             f"(line {roster[key].line} too, as {roster[key].student!r})")
        where = f"--roster {path} line {line}, column extension"
        roster[key] = RosterEntry(student=shown(cells["student"]), line=line,
                                  extension=extension(cells.get("extension", ""), where),
                                  **{name: shown(cells.get(name, "")) for name in FIELDS})
    return roster


def read_quiz(path, lab, students):
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
