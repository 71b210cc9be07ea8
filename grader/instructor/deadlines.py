"""When a submission came in, and what lateness costs under the lab's late policy (lab.yaml's
`deadline`, overridable on the command line, with per-student extensions from the roster).

A time comes only from where the student cannot write it, and its source is kept with it:
    timestamps    the instructor's CSV (student, submitted_at), e.g. the LMS's export: overrides all
    gradescope    Gradescope's submission_metadata.json, beside the submission (ROOT/ next to
                  ROOT/submission/, as in /autograder), never a file inside the submission
    unknown       anything else. Zip entry dates and file times are set by the student (`touch`,
                  or copying the files), so they are never read. An unknown time costs nothing
                  and earns no mark: the instructor chooses (--assume-on-time, --assume-late).
The download names of Canvas and Moodle hold no time (Canvas marks a late file LATE, not how late).
Times compare as aware datetimes; days late are counted on the due date's clock (its zone, DST
included, where the due names one: 2026-03-29T23:59:00[Europe/Paris]).
"""
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.base.errors import UsageError
from grader.base.kinds import Timing
from grader.instructor.records import SCORED, BatchRow, TimeSource
from grader.readers.csvfile import Row, read_table
from grader.readers.identity import as_read, identity, look_alikes, shown

if TYPE_CHECKING:
    from grader.readers.manifest import Deadline
from grader.readers.times import parse_time, read_column

METADATA = "submission_metadata.json"           # Gradescope's, beside ROOT/submission/
ASSUMED = {"on time": "assumed on time", "late": "assumed late"}


@dataclass
class Lateness:
    late_by: timedelta              # past the (extended) due time, grace not deducted
    periods: int                    # started days or hours past due + grace
    penalty_percent: float          # of the lab's points
    zeroed: bool                    # past the cap with after_cap: zero


@dataclass(frozen=True)
class Member:
    """One member of a Gradescope submission (a group has several) and their own due time."""
    name: str
    due: datetime | None            # their own (an extension), else the assignment's; None: lab.yaml's


def gradescope_time(root: str | os.PathLike) -> tuple[datetime | None, list[Member]]:
    """(submission time, [Member]) of the bundle at `root` from Gradescope's metadata
    (ROOT/submission_metadata.json, which Gradescope writes beside ROOT/submission/): each member
    with their own due time where Gradescope gives one, else the assignment's, else None. The
    members come sorted by name, so nothing depends on the order Gradescope lists them in.
    (None, []) when the file is not there or not readable."""
    metadata = Path(root) / METADATA
    try:
        if metadata.is_symlink() or not metadata.is_file():
            return None, []
        data = json.loads(metadata.read_text(encoding="utf-8"))
        submitted = parse_time(data["created_at"], METADATA)
    except (OSError, ValueError, KeyError, TypeError, UsageError):
        return None, []
    assignment = _due((data.get("assignment") or {}) if isinstance(data.get("assignment"), dict) else {})
    users = [user for user in data.get("users") or [] if isinstance(user, dict)]
    members = [Member(shown(str(user.get("name") or user.get("email") or user.get("id") or f"member {i}")),
                      _due(user.get("assignment") if isinstance(user.get("assignment"), dict) else {}) or assignment)
               for i, user in enumerate(users, 1)]
    latest = datetime.max.replace(tzinfo=timezone.utc)
    members = members or ([Member("", assignment)] if assignment else [])     # no one listed: the assignment's
    return submitted, sorted(members, key=lambda m: (identity(m.name), m.due or latest))


def _due(assignment):
    """The due time of one of Gradescope's "assignment" objects, or None where it has none that parses."""
    try:
        return parse_time(assignment["due_date"], METADATA)
    except (KeyError, UsageError):
        return None


def group_lateness(policy: "Deadline", submitted: datetime,
                   members: Sequence[Member]) -> tuple[list[tuple[Member, Lateness | None]], Lateness | None]:
    """[(Member, Lateness or None)] of each member, each against their own due time (no one's
    extension covers another), and the one the group's single score carries: the largest
    penalty, whatever the members' order. Without members, one judged against the policy's due."""
    judged = [(member, lateness(policy, submitted, member.due)) for member in members or [Member("", None)]]
    worst = max(judged, key=lambda j: (j[1] is not None and j[1].zeroed, j[1].penalty_percent if j[1] else -1))
    return judged, worst[1]


def read_timestamps(path: str | os.PathLike) -> dict[str, datetime | None]:
    """{identity: time} from a CSV with the columns student and submitted_at (grader.readers.csvfile's
    reader; its dates in one order, grader.readers.times); a student listed twice (in any case or Unicode
    form), names that look alike, or a time without a zone is refused, naming the line."""
    table = read_table(path, ["student", "submitted_at"], "--timestamps")
    rows = [row for row in table.rows if identity(row.cells["student"])]
    lines: dict[str, Row] = {}
    for row in rows:
        key = identity(row.cells["student"])
        if key in lines:
            raise UsageError(f"{table.where} line {row.line}: {shown(row.cells['student'])!r} is listed "
                             f"twice (line {lines[key].line} too): keep the time of the submission graded")
        lines[key] = row
    for group in look_alikes(row.cells["student"] for row in rows):
        first, second = (lines[identity(name)] for name in group[:2])
        raise UsageError(f"{table.where} line {second.line}: {as_read(group[1])} looks like {as_read(group[0])} of "
                         f"line {first.line}: two students whose names render alike; rename one")
    def at(line: int | None) -> str:
        return table.at(line, "submitted_at")

    times = read_column([(row.line, row.cells["submitted_at"]) for row in rows], at).one(at)
    missing = next((row for row in rows if times[row.line] is None), None)
    if missing:
        raise UsageError(f"{at(missing.line)}: no time for {shown(missing.cells['student'])!r}")
    return {key: times[row.line] for key, row in lines.items()}


def due_for(policy: "Deadline", extension: float | datetime | None) -> datetime:
    """The student's due time: the policy's, moved by `extension` (hours, or a time of its own)."""
    if isinstance(extension, datetime):
        return extension.astimezone(policy.due.tzinfo)
    return (policy.due.astimezone(timezone.utc) + timedelta(hours=extension or 0)).astimezone(policy.due.tzinfo)


def lateness(policy: "Deadline | None", submitted: datetime | None, due: datetime | None = None) -> Lateness | None:
    """What `policy` (a labs.Deadline) makes of a submission at `submitted` against `due` (default:
    the policy's); None when on time or when there is no time or no policy. Whether it is late is
    a matter of time passed (a clock set back an hour gives no one an hour); days late are counted
    on the due date's clock, hours as they pass."""
    if policy is None or submitted is None:
        return None
    due = policy.due if due is None else due
    grace = timedelta(minutes=policy.grace_minutes)
    late_by = submitted.astimezone(timezone.utc) - due.astimezone(timezone.utc)
    if late_by - grace <= timedelta(0):
        return None
    if policy.per == "day":
        clock = submitted.astimezone(due.tzinfo).replace(tzinfo=None) - due.replace(tzinfo=None)
        periods = max(1, math.ceil((clock - grace) / timedelta(days=1)))
    else:
        periods = math.ceil((late_by - grace) / timedelta(hours=1))
    uncapped = periods * policy.penalty
    return Lateness(late_by=late_by, periods=periods, penalty_percent=min(uncapped, policy.cap),
                    zeroed=policy.after_cap == "zero" and uncapped > policy.cap)


def describe(late: Lateness | None) -> str:
    """'2 d 3.0 h late' for a Lateness; '' when on time."""
    if late is None:
        return ""
    hours = late.late_by.total_seconds() / 3600
    days, rest = divmod(hours, 24)
    return (f"{int(days)} d " if days else "") + f"{rest:.1f} h late"


@dataclass(frozen=True)
class Arrival:
    """When a submission came in (None: unknown), by whose word, and the student's own due time
    (None: the policy's)."""
    at: datetime | None
    source: TimeSource
    due: datetime | None = None


def assess(row: BatchRow, policy: "Deadline | None", arrival: Arrival, assume: str | None = None,
           max_score: float | None = None) -> BatchRow:
    """`row` with its time, the time's source, lateness, penalty and final score (a BatchRow).
    Under a policy, an unknown time gives no mark unless `assume` says: "on time", or "late"
    (the policy's cap). A row the grader did not score keeps no mark, a rejected or empty one 0."""
    submitted, source, due = arrival.at, arrival.source, arrival.due
    fields: dict[str, Any] = {"submitted_at": submitted, "time_source": source if submitted else "unknown",
                               "late_by_hours": None, "penalty_percent": None, "timing": "", "timing_kind": None}
    if row.status not in SCORED:
        final = None if row.collision or row.status in ("pending", "regrade") else 0.0
        return row.model_copy(update={**fields, "final_score": final})
    late, cut, zeroed = None, 0.0, False
    if policy is not None and submitted is None:
        fields["timing_kind"] = Timing.UNKNOWN
        if assume is None:
            fields["timing"] = f"{Timing.UNKNOWN}: no mark until it is known (the instructor gives --timestamps, " \
                               "or --assume-on-time or --assume-late)"
            return row.model_copy(update={**fields, "final_score": None})
        cut = policy.cap if assume == "late" else 0.0
        fields["timing_kind"] = Timing(ASSUMED[assume])
        fields["timing"] = f"{Timing.UNKNOWN}, {ASSUMED[assume]}" + \
            (f": -{cut:g}% (the late policy's cap)" if cut else "")
    elif policy is not None:
        late = lateness(policy, submitted, due)
        cut, zeroed = (late.penalty_percent, late.zeroed) if late else (0.0, False)
        fields["timing"] = f"{describe(late)}: " + ("score 0 past the cap" if zeroed else f"-{cut:g}%") \
            if late else Timing.ON_TIME.value
        fields["timing_kind"] = Timing.LATE if late else Timing.ON_TIME
        fields["late_by_hours"] = round(late.late_by.total_seconds() / 3600, 2) if late else None
    top = row.max_score or max_score or 0
    final = 0.0 if zeroed else max((row.score or 0.0) - top * cut / 100, 0.0) + 0.0
    return row.model_copy(update={**fields, "penalty_percent": cut or None,
                                  "final_score": round(final, 4)})


def tally(rows: Iterable[BatchRow]) -> dict[Timing, int]:
    """{Timing: students} of the rows a late policy was applied to (an assumed time counted as
    such, apart from the unknown ones that get no mark)."""
    counts: dict[Timing, int] = {}
    for row in rows:
        if row.timing_kind is not None:
            counts[row.timing_kind] = counts.get(row.timing_kind, 0) + 1
    return counts
