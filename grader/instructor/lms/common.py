"""What the LMS formats share: the gradebook's Line (one student), numbers as a cell writes them,
the scale, the grade columns, and the refusal of identifiers an LMS would misread."""
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from grader.base.errors import UsageError
from grader.base.text import inert
from grader.instructor.gradebook import lesson_complete
from grader.instructor.records import BatchRow
from grader.instructor.roster import Quiz, RosterEntry


@dataclass
class Line:
    """One student of the gradebook."""
    student: str                    # as the submission (else the roster, else the quiz) writes it
    entry: RosterEntry | None
    row: BatchRow | None            # with its time, lateness and final score (deadlines.assess)
    quiz: Quiz | None = None
    final: float | None = None      # points after the late policy; None: no mark
    notes: list[str] = field(default_factory=list)     # for the student too (Moodle's feedback)
    matched: str = ""               # how the roster's name matched the submission's, where they differ
    alike: str = ""                 # a name of the other list (roster, submissions) that only looks like this one

    @property
    def status(self) -> str:
        return self.row.status if self.row else "missing"

    @property
    def on_roster(self) -> RosterEntry:
        """Its roster entry, for a format that writes only the lines on the roster (LmsFormat.needs_roster)."""
        if self.entry is None:
            raise ValueError(f"{self.student!r} is not on the roster")
        return self.entry



Scale = Literal["points", "percent"]
Kind = Literal["lab", "quiz", "lesson"]
Columns = dict[Kind, str]                 # the columns written, each with its title
Table = Sequence[Sequence[object]]        # a format's rows of cells, its header first
OPTION = {"lab": "--column", "quiz": "--quiz-column", "lesson": "--lesson-column"}


def number(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{round(value, digits) + 0.0:g}"


def scaled(points: float | None, top: float | None, scale: Scale) -> float | None:
    if points is None or scale == "points":
        return points
    return 100 * points / top if top else None


def grades(line: "Line", max_score: float | None, scale: Scale, columns: Iterable[Kind]) -> list[str]:
    """The line's cells of `columns`: the lab's final score, the quiz's, and the lesson (1, 0 or blank)."""
    quiz, cells = line.quiz, {"lab": number(scaled(line.final, max_score, scale))}
    cells["quiz"] = number(scaled(quiz.score, quiz.max, scale)) if quiz else ""
    cells["lesson"] = {"yes": "1", "no": "0"}.get(lesson_complete(line.row, quiz), "")
    return [cells[kind] for kind in columns]


def tops(lines: Sequence["Line"], max_score: float | None, scale: Scale, columns: Iterable[Kind]) -> list[str]:
    """The points possible of `columns`."""
    quiz_max = next((line.quiz.max for line in lines if line.quiz), None)
    top = {"lab": max_score, "quiz": quiz_max, "lesson": 1} if scale == "points" else \
        {"lab": 100, "quiz": 100, "lesson": 1}
    return [number(top[kind]) for kind in columns]


def kept(value: str) -> bool:
    """Whether a cell writes `value` as it is (grader.base.text.inert leaves it alone), so that the LMS
    finds the identifier again."""
    return inert(value) == value


def identifiers(lines: Sequence["Line"], fields: Sequence[tuple[str, str]], lms: str) -> None:
    """Refuses a roster where two students share an identifier of `fields` (the LMS would give both
    rows to one of them), or one a cell would write otherwise (made inert: no one's)."""
    for name, _ in fields:
        seen: dict[str, int] = {}
        for line in lines:
            entry = line.on_roster
            value = getattr(entry, name)
            if not kept(value):
                raise UsageError(f"--roster line {entry.line}, column {name}: {value!r} would be written as "
                                 f"{inert(value)!r} (a spreadsheet reads it as a formula), which {lms} "
                                 "matches to no one")
            if value and value in seen:
                raise UsageError(f"--format {lms.lower()}: roster lines {seen[value]} and {entry.line} have "
                                 f"the same {name} {value!r}: {lms} would give both rows to one student")
            seen[value] = entry.line


def unmatched(lines: Sequence["Line"], max_score: float | None) -> list[list[str]]:
    """The lines an LMS could not match (not on the roster), to grade by hand."""
    table = [["student", "status", "raw_score", "max_score", "final_score", "quiz_score", "note"]]
    for line in lines:
        row = line.row
        table.append([line.student, line.status, number(row.score if row else None), number(max_score),
                      number(line.final), number(line.quiz.score) if line.quiz else "", "; ".join(line.notes)])
    return table
