"""The one record of a class's final grades: OUT/final.json (a FinalRecord).

Lateness, penalty, extension and the instructor's adjustments are decided once, by the command
given the policy (`batch` with lab.yaml's deadline, `gradebook` with --due/--penalty/...), and
`adjust` with its points; each writes the record, and grades.csv, every LMS file, the class page
and each feedback page read it, never working a grade out again on their own.

    OUT/final.json          the decision: the policy in force, who decided it and when, one row per
                            student (its time, extension, lateness, adjustments and final score)
    OUT/adjustments.json    every adjustment given, in order: kept through any regrade
"""
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, TypeAdapter

from grader.base.errors import UsageError
from grader.base.files import write_atomic
from grader.instructor import deadlines
from grader.instructor.records import Adjustment, BatchRow, TimeSource
from grader.readers.identity import as_read, identity, look_alikes, shown
from grader.readers.manifest import Deadline

RECORD = "final.json"
ADJUSTMENTS = "adjustments.json"
LOG = TypeAdapter(list[Adjustment])
Assume = Literal["on time", "late"] | None
PolicyFrom = Literal["", "lab.yaml", "command line"]
NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")    # points as typed: 5, -2.5, +1e1


class QuizMark(BaseModel):
    score: float
    max: float
    passed: bool


class FinalRecord(BaseModel):
    """OUT/final.json: what every file made for people or an LMS shows of a student's grade."""
    decided_by: str                         # the command whose policy is in force: "grade.py gradebook"
    decided_at: datetime
    policy: Deadline | None = None          # the late policy in force (lab.yaml's, or the command line's)
    policy_from: PolicyFrom = ""
    zone: str = ""                          # the due time's named zone, where it had one (days late on its clock)
    assume: Assume = None                   # what an unknown time was taken as
    max_score: float | None = None
    rows: list[BatchRow]
    quiz: dict[str, QuizMark] = {}          # identity -> the class quiz's mark, where one was read

    def deadline(self) -> Deadline | None:
        """The policy with its due time on its own named clock again (JSON keeps only the offset)."""
        if self.policy is None or not self.zone:
            return self.policy
        return self.policy.model_copy(update={"due": self.policy.due.astimezone(ZoneInfo(self.zone))})


@dataclass(frozen=True)
class Policy:
    """The late policy a command decides under: its deadline (None: no late policy), where that
    came from, and what an unknown time is taken as."""
    deadline: Deadline | None
    origin: PolicyFrom
    assume: Assume = None


@dataclass(frozen=True)
class Given:
    """What a command knows of the class beside its rows. `times` ({identity: time}): the only
    source of times where given; else a row keeps one from the instructor's timestamps.
    `extensions` ({identity: hours or time}, the roster's) where given; else a row keeps the
    extension it has. `quiz`: the class quiz's marks where given; else those of `earlier`, the
    record before."""
    decided_by: str                         # the command: "grade.py gradebook"
    max_score: float | None = None
    times: dict[str, datetime | None] | None = None
    extensions: dict[str, float | datetime] | None = None
    adjustments: tuple[Adjustment, ...] = ()
    quiz: dict[str, QuizMark] | None = None
    earlier: FinalRecord | None = None


def decide(rows: Iterable[BatchRow], policy: Policy, given: Given) -> FinalRecord:
    """The FinalRecord of `rows` (a batch's BatchRows) under `policy`, with what the command was `given`."""
    deadline, assume, max_score = policy.deadline, policy.assume, given.max_score
    by_student: dict[str, list[Adjustment]] = {}
    for a in given.adjustments:
        by_student.setdefault(identity(a.student), []).append(a)
    decided = []
    for row in sorted(rows, key=lambda r: r.student):
        key = identity(row.student)
        when: datetime | None
        source: TimeSource
        if given.times is not None:
            when, source = given.times.get(key), "timestamps"
        else:
            when, source = (row.submitted_at, row.time_source) if row.time_source == "timestamps" else (None, "")
        extension = given.extensions.get(key) if given.extensions is not None else row.extension
        due = deadlines.due_for(deadline, extension) if deadline is not None and extension else None
        assessed = deadlines.assess(row, deadline, deadlines.Arrival(when, source, due), assume, max_score)
        decided.append(_adjusted(assessed.model_copy(update={"extension": extension}), by_student.get(key, []),
                                 max_score))
    zone = deadline.due.tzinfo.key if deadline is not None and isinstance(deadline.due.tzinfo, ZoneInfo) else ""
    return FinalRecord(decided_by=given.decided_by, decided_at=datetime.now(timezone.utc), policy=deadline,
                       policy_from=policy.origin if deadline is not None else "", zone=zone, assume=assume,
                       max_score=max_score, rows=decided,
                       quiz=given.quiz if given.quiz is not None else given.earlier.quiz if given.earlier else {})


def _adjusted(row, adjustments, max_score):
    """The row with the instructor's adjustments added to its final score, kept within 0 and the
    lab's points. A row with no mark (its time unknown, not graded yet) keeps none."""
    row = row.model_copy(update={"adjustments": list(adjustments)})
    if not adjustments or row.final_score is None:
        return row
    top = row.max_score or max_score
    final = max(row.final_score + row.adjusted, 0.0)
    return row.model_copy(update={"final_score": round(min(final, top) if top else final, 4) + 0.0})


def again(out: Path, decided_by: str) -> FinalRecord:
    """The record in `out` decided again with its own policy, times and extensions and the
    adjustments as they stand now (after grade.py adjust)."""
    record = load(out)
    if record is None:
        raise UsageError(f"{out}: no {RECORD} (a batch's record of its final grades): run grade.py batch first")
    return decide(record.rows, Policy(record.deadline(), record.policy_from, record.assume),
                  Given(decided_by, record.max_score, adjustments=tuple(read_adjustments(out)), earlier=record))


def load(out: Path) -> FinalRecord | None:
    """OUT/final.json, or None where there is none (a batch from before the record)."""
    try:
        return FinalRecord.model_validate_json((out / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def save(out: Path, record: FinalRecord) -> None:
    write_atomic(out / RECORD, record.model_dump_json(indent=2))


def read_adjustments(out: Path) -> list[Adjustment]:
    """Every adjustment given so far, oldest first."""
    path = out / ADJUSTMENTS
    if not path.is_file():
        return []
    try:
        return LOG.validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        raise UsageError(f"{path}: not a list of adjustments (it is grade.py adjust's: fix or remove it)") from None


def add_adjustments(out: Path, new: Iterable[Adjustment]) -> None:
    """Append `new` to OUT/adjustments.json."""
    write_atomic(out / ADJUSTMENTS, LOG.dump_json([*read_adjustments(out), *new], indent=2).decode())


def adjustment(student, points, reason, source, students, top=None):
    """An Adjustment from what the instructor typed (`source`: where, for an error), its student
    one of `students` ({identity: name}) in their one normal form, its points a number no larger
    than the lab's `top`; UsageError in one sentence."""
    name = students.get(identity(student or ""))
    if name is None:
        alike = next((group for group in look_alikes([*students.values(), student or ""]) if student in group), [])
        raise UsageError(f"{source}: {as_read(student or '')} is no student of this batch" +
                         "".join(f"; it looks like {as_read(other)}" for other in alike if other != student))
    text = str(points).strip()
    value = float(text) if NUMBER.fullmatch(text) else math.nan
    if not math.isfinite(value) or value == 0:
        raise UsageError(f"{source}: points {shown(text)!r}: expected a number of points, e.g. 5 or -2.5")
    if top and abs(value) > top:
        raise UsageError(f"{source}: points {shown(text)!r}: more than the lab's {top:g} points")
    if not " ".join(shown(reason or "").split()):
        raise UsageError(f"{source}: give the reason (it is shown to the student)")
    return Adjustment(student=name, points=value, reason=" ".join(shown(reason).split()),
                      at=datetime.now(timezone.utc), source=source)


def read_adjustments_csv(path, students, top=None):
    """[Adjustment] from a CSV with the columns student, points, reason; each bad line refused in
    one sentence naming the file and line."""
    from grader.readers.csvfile import read_table

    return [adjustment(row.cells.get("student"), row.cells.get("points", ""), row.cells.get("reason", ""),
                       f"--file {path} line {row.line}", students, top)
            for row in read_table(path, ["student", "points", "reason"], "--file").rows]


def stranded(out: Path, decided: FinalRecord) -> str:
    """The adjustments of OUT/adjustments.json whose student has no row in `decided` (their
    submission gone from a regrade), in words for the terminal; '' where there are none."""
    rows = {identity(row.student) for row in decided.rows}
    left = [a for a in read_adjustments(out) if identity(a.student) not in rows]
    if not left:
        return ""
    return f"adjustments of {len({identity(a.student) for a in left})} student(s) with no submission now, in no " \
        "grade: " + "; ".join(f"{as_read(a.student)} ({a.points:+g}: {a.reason})" for a in left)


def in_words(row: BatchRow) -> list[str]:
    """Each of the row's adjustments in words: '+5: regrade of test 3 (2026-12-07)'."""
    return [f"{a.points:+g}: {a.reason} ({a.at.date().isoformat()})" for a in row.adjustments]


