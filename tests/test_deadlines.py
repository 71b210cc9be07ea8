"""The late policy (lab.yaml's deadline) and where a submission's time comes from."""
import json
import os
import zipfile
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from grader.errors import UsageError
from grader.instructor.deadlines import lateness, parse_time, submission_time
from grader.labs import Deadline

DUE = datetime(2026, 12, 1, 23, 59, tzinfo=timezone(timedelta(hours=1)))
WANTED = ["positions.py"]


def late(policy, **after):
    return lateness(policy, DUE + timedelta(**after))


def test_penalty_per_started_period_after_the_grace():
    daily = Deadline(due=DUE, grace_minutes=10, penalty=10)
    assert late(daily, minutes=10) is None and late(daily, minutes=-5) is None
    assert late(daily, minutes=11).penalty_percent == 10 and late(daily, hours=24, minutes=11).periods == 2
    hourly = Deadline(due=DUE, penalty=2, per="hour")
    assert late(hourly, minutes=61).penalty_percent == 4


def test_the_cap_keeps_the_penalty_or_zeroes_the_score():
    keep = Deadline(due=DUE, penalty=20, cap=50)
    assert (late(keep, days=4).penalty_percent, late(keep, days=4).zeroed) == (50, False)
    zero = Deadline(due=DUE, penalty=20, cap=50, after_cap="zero")
    assert late(zero, days=2).zeroed is False and late(zero, days=3, minutes=1).zeroed is True


def test_an_extension_moves_the_due_time():
    policy = Deadline(due=DUE, penalty=10)
    assert lateness(policy, DUE + timedelta(hours=30), extension_hours=48) is None
    assert lateness(policy, DUE + timedelta(hours=30), extension_hours=24).periods == 1


def test_a_due_time_needs_its_zone():
    with pytest.raises(ValidationError, match="time zone"):
        Deadline(due=datetime(2026, 12, 1, 23, 59))
    with pytest.raises(UsageError, match="no time zone"):
        parse_time("2026-12-01T23:59", "--due")
    assert parse_time("2026-12-01T22:59:00Z", "--due") == DUE


def test_the_best_source_of_a_submission_time(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "positions.py").write_text("x = 1")
    os.utime(folder / "positions.py", (1e9, 1e9))
    assert submission_time(folder, WANTED) == (datetime.fromtimestamp(1e9, timezone.utc), "files")
    (folder / "submission_metadata.json").write_text("{not json")                  # unreadable: the next source
    assert submission_time(folder, WANTED)[1] == "files"
    (folder / "submission_metadata.json").write_text(json.dumps({"created_at": "2026-12-01T22:59:00Z"}))
    assert submission_time(folder, WANTED) == (DUE, "gradescope")
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as archive:
        archive.writestr(zipfile.ZipInfo("a/positions.py", date_time=(2026, 11, 2, 3, 4, 6)), "x")
        archive.writestr(zipfile.ZipInfo("a/other.txt", date_time=(2026, 11, 1, 0, 0, 0)), "x")
    when, source = submission_time(tmp_path / "z.zip", WANTED)
    assert (when.replace(tzinfo=None), source) == (datetime(2026, 11, 2, 3, 4, 6), "zip") and when.tzinfo
    (tmp_path / "bad.zip").write_bytes(b"no")
    assert submission_time(tmp_path / "bad.zip", WANTED) == (None, "")
