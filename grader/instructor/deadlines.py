"""When a submission came in, and what lateness costs under the lab's late policy (lab.yaml's
`deadline`, overridable on the command line, with per-student extensions from the roster).

The submission time comes from the best source there is, and the source is kept with it:
    gradescope    submission_metadata.json beside the files (Gradescope's `created_at`)
    timestamps    a CSV given by the instructor (student, submitted_at), e.g. an LMS's export
    zip           the newest modification time among the zip's entries
    files         the newest modification time of the lab's files in the folder (last resort:
                  copying can change it)
"""
import csv
import json
import math
import zipfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from grader.errors import UsageError

METADATA = "submission_metadata.json"           # Gradescope's, at the submission's top


@dataclass
class Lateness:
    late_by: timedelta              # past the (extended) due time, grace not deducted
    periods: int                    # started days or hours past due + grace
    penalty_percent: float          # of the lab's points
    zeroed: bool                    # past the cap with after_cap: zero


def parse_time(text, where):
    """An ISO 8601 time with its zone; a naive one is refused (its zone would be a guess)."""
    try:
        when = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{where}: {text!r} is not a time; expected ISO 8601 with a zone, "
                         "e.g. 2026-12-01T23:59:00+01:00") from None
    if when.tzinfo is None:
        raise UsageError(f"{where}: {text!r} has no time zone; add one, e.g. {text}+00:00")
    return when


def submission_time(path, wanted):
    """(time, source) of the submission at `path` (a folder or .zip), or (None, "") when unknown."""
    path = Path(path)
    metadata = path / METADATA
    if path.is_dir() and metadata.is_file() and not metadata.is_symlink():
        try:
            return parse_time(json.loads(metadata.read_text())["created_at"], METADATA), "gradescope"
        except (OSError, ValueError, KeyError, TypeError, UsageError):
            pass                                            # unreadable: the next source
    try:
        if path.is_file() and path.suffix.lower() == ".zip":
            with zipfile.ZipFile(path) as archive:
                stamps = [datetime(*info.date_time) for info in archive.infolist() if not info.is_dir()]
            local = datetime.now().astimezone().tzinfo     # zip times carry no zone: this machine's
            return (max(stamps).replace(tzinfo=local), "zip") if stamps else (None, "")
        files = [p for name in wanted for p in (path / name, *path.glob(f"*/{name}")) if p.is_file()]
        if files:
            newest = max(p.stat().st_mtime for p in files)
            return datetime.fromtimestamp(newest, timezone.utc), "files"
    except (OSError, ValueError, zipfile.BadZipFile):
        pass
    return None, ""


def submission_times(lab, subs):
    """{student: {submitted_at, time_source}} for a class's Submissions (BatchRow's fields)."""
    wanted = list(lab.manifest.student_files)
    return {sub.student: dict(zip(("submitted_at", "time_source"), submission_time(sub.path, wanted)))
            for sub in subs}


def read_timestamps(path):
    """{student: time} from a CSV with the columns student and submitted_at."""
    with open(path, newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        if not {"student", "submitted_at"} <= set(reader.fieldnames or []):
            raise UsageError(f"--timestamps {path}: expected the columns student and submitted_at "
                             f"(got {', '.join(reader.fieldnames or []) or 'an empty file'})")
        return {row["student"].strip(): parse_time(row["submitted_at"], f"--timestamps {path} line {line}")
                for line, row in enumerate(reader, 2) if (row["student"] or "").strip()}


def lateness(policy, submitted, extension_hours=0.0):
    """What `policy` (a labs.Deadline) makes of a submission at `submitted`; None when on time
    or when there is no time or no policy."""
    if policy is None or submitted is None:
        return None
    due = policy.due + timedelta(hours=extension_hours)
    late_by = submitted - due
    past_grace = late_by - timedelta(minutes=policy.grace_minutes)
    if past_grace <= timedelta(0):
        return None
    period = timedelta(days=1) if policy.per == "day" else timedelta(hours=1)
    periods = math.ceil(past_grace / period)
    uncapped = periods * policy.penalty
    return Lateness(late_by=late_by, periods=periods, penalty_percent=min(uncapped, policy.cap),
                    zeroed=policy.after_cap == "zero" and uncapped > policy.cap)


def describe(late):
    """'2 days 3 h late' for a Lateness; '' when on time."""
    if late is None:
        return ""
    hours = late.late_by.total_seconds() / 3600
    days, rest = divmod(hours, 24)
    return (f"{int(days)} d " if days else "") + f"{rest:.1f} h late"
