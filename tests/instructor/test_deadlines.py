"""The late policy (lab.yaml's deadline) and where a submission's time comes from: only from where
the student cannot write it (the instructor's timestamps, Gradescope's metadata beside the
submission); never from the submission itself, whose dates the student sets."""
import csv
import io
import json
import os
import shutil
import time
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError
from rich.console import Console

from grader.base.errors import UsageError
from grader.core.results import Check, LabResults
from grader.instructor import batch
from grader.instructor.deadlines import Arrival, assess, due_for, gradescope_time, lateness, parse_time, read_timestamps
from grader.instructor.records import BatchRow
from grader.instructor.roster import read_roster
from grader.learner.cli import main
from grader.readers.manifest import Deadline, find_lab
from grader.readers.times import Order

DUE = datetime(2026, 12, 1, 23, 59, tzinfo=timezone(timedelta(hours=1)))
REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "lab2"


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
    assert lateness(policy, DUE + timedelta(hours=30), due_for(policy, 48)) is None
    assert lateness(policy, DUE + timedelta(hours=30), due_for(policy, 24)).periods == 1
    own = parse_time("2026-12-05T12:00:00Z", "x")
    assert lateness(policy, DUE + timedelta(days=3), due_for(policy, own)) is None


def test_a_time_needs_its_zone_and_a_named_zone_keeps_summer_time():
    with pytest.raises(ValidationError, match="time zone"):
        Deadline(due=datetime(2026, 12, 1, 23, 59))
    with pytest.raises(UsageError, match="no time zone"):
        parse_time("2026-12-01T23:59", "--due")
    assert parse_time("2026-12-01T22:59:00Z", "--due") == DUE
    july = parse_time("2026-07-01T12:00:00[Europe/Paris]", "--due")
    assert july.utcoffset() == timedelta(hours=2) and parse_time("2026-01-01T12:00[Europe/Paris]", "x").utcoffset() \
        == timedelta(hours=1)
    with pytest.raises(UsageError, match="not Europe/Paris's"):
        parse_time("2026-07-01T12:00:00+01:00[Europe/Paris]", "--due")
    with pytest.raises(UsageError, match="is not a time"):
        parse_time("2026-07-01T12:00:00[Mars/Olympus]", "--due")


@pytest.mark.parametrize("text", ["2026-03-29T02:30:00[Europe/Paris]", "2026-03-29T02:30:00+01:00[Europe/Paris]",
                                  "2026-03-29T02:30:00+02:00[Europe/Paris]", "29/03/2026 02:00[Europe/Paris]"])
def test_a_time_the_clocks_skip_is_refused(text):
    """Paris's clocks go from 02:00 to 03:00 on 2026-03-29: 02:30 is on no clock there, and which
    time was meant (01:30 or 03:30 in summer time) would be a guess."""
    with pytest.raises(UsageError, match="Europe/Paris's clocks skip"):
        parse_time(text, "--due", Order.DAY_FIRST)


def test_a_due_time_is_a_time_never_a_number():
    """lab.yaml's `due: 20261201` is no time: read as seconds since 1970, it would be due in August 1970."""
    for due in (20261201, 1764629940.0, True):
        with pytest.raises(ValidationError, match="time zone"):
            Deadline(due=due)


def test_days_late_are_counted_on_the_due_dates_clock_across_a_change_of_summer_time():
    policy = Deadline(due=parse_time("2026-10-24T23:59:00[Europe/Paris]", "due"), penalty=10)
    a_day_on_the_clock = parse_time("2026-10-25T23:58:00+01:00", "t")      # 24 h 59 min later as time passes
    assert lateness(policy, a_day_on_the_clock).periods == 1
    assert lateness(policy, a_day_on_the_clock).late_by == timedelta(hours=24, minutes=59)
    spring = Deadline(due=parse_time("2026-03-28T23:59:00[Europe/Paris]", "due"), penalty=10, per="hour")
    assert lateness(spring, parse_time("2026-03-29T01:30:00+00:00", "t")).periods == 3     # 2 h 31 min passed


def test_gradescope_metadata_is_read_beside_the_submission_never_inside_it(tmp_path):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "submission_metadata.json").write_text(json.dumps({"created_at": "2020-01-01T00:00Z"}))
    assert gradescope_time(tmp_path) == (None, [])                 # the student's own file
    (tmp_path / "submission_metadata.json").write_text(json.dumps({"created_at": "2026-12-01T22:59:00Z", "id": 1}))
    assert gradescope_time(tmp_path) == (DUE, [])
    (tmp_path / "submission_metadata.json").write_text("{not json")
    assert gradescope_time(tmp_path) == (None, [])
    (tmp_path / "submission_metadata.json").unlink()
    (tmp_path / "submission_metadata.json").symlink_to(tmp_path / "submission" / "submission_metadata.json")
    assert gradescope_time(tmp_path) == (None, [])


def test_gradescope_s_due_time_is_the_student_s_own_extension_included(tmp_path):
    """The bundle counts lateness against the due time Gradescope gives: the student's own (an
    extension set on Gradescope), else the assignment's."""
    metadata = {"created_at": "2026-12-03T10:00:00Z", "assignment": {"due_date": "2026-12-01T23:59:00+01:00"},
                "users": [{"email": "a@example.com", "assignment": {"due_date": "2026-12-04T23:59:00+01:00"}}]}
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata))
    submitted, [member] = gradescope_time(tmp_path)
    assert member.due == DUE + timedelta(days=3)
    assert lateness(Deadline(due=DUE, penalty=10), submitted, member.due) is None
    del metadata["users"][0]["assignment"]
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata))
    assert gradescope_time(tmp_path)[1][0].due == DUE
    metadata["users"] = []                  # no one listed (an instructor's test run): still Gradescope's due
    metadata["assignment"]["due_date"] = "2026-12-04T23:59:00+01:00"
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata))
    assert [member.due for member in gradescope_time(tmp_path)[1]] == [DUE + timedelta(days=3)]


GROUP = {"created_at": "2026-12-03T10:00:00Z", "assignment": {"due_date": "2026-12-01T23:59:00+01:00"},
         "users": [{"name": "Ada", "assignment": {"due_date": "2026-12-04T23:59:00+01:00"}},      # an extension
                   {"name": "Bob", "assignment": {"due_date": "not a date"}},                   # the assignment's
                   {"name": "Cy"}]}


@pytest.mark.parametrize("order", [(0, 1, 2), (1, 0, 2), (2, 1, 0), (2, 0, 1)])
def test_a_group_is_judged_the_same_in_any_order_each_member_against_their_own_due(tmp_path, order):
    """One member's extension never covers a late partner, whoever Gradescope lists first; a due
    date that does not parse is not the group's either."""
    from grader.core.results import GradescopeResults
    from grader.instructor.gradescope import late_policy

    metadata = {**GROUP, "users": [GROUP["users"][i] for i in order]}
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata))
    submitted, members = gradescope_time(tmp_path)
    assert [(m.name, m.due) for m in members] == [("Ada", DUE + timedelta(days=3)), ("Bob", DUE), ("Cy", DUE)]
    report = GradescopeResults(score=80, execution_time=1, output="80/100", tests=[])
    late_policy(report, Deadline(due=DUE, penalty=10, per="day", cap=50), submitted, members, 100)
    assert report.score == 60 and report.extra_data["timing"] == "1 d 11.0 h late: -20%"
    assert report.extra_data["members"].startswith("Ada: on time (due 2026-12-04T23:59:00+01:00); Bob: 1 d 11.0 h "
                                                   "late: -20%")
    assert "The group's score carries the largest penalty" in report.output


def test_the_bundle_applies_the_late_policy_at_gradescopes_time_only():
    """In a Gradescope bundle the lab's late policy cuts the score at Gradescope's own time of the
    submission, says so, and cuts nothing when that time is unknown."""
    from grader.core.results import GradescopeResults
    from grader.instructor.gradescope import late_policy

    policy = Deadline(due=DUE, penalty=10, per="day", cap=50)
    results = lambda: GradescopeResults(score=80, execution_time=1, output="80/89", tests=[])  # noqa: E731
    on_time, late_one, unknown = results(), results(), results()
    late_policy(on_time, policy, DUE, None, 89)
    late_policy(late_one, policy, DUE + timedelta(days=1, hours=2), None, 89)
    late_policy(unknown, policy, None, None, 89)
    assert on_time.score == 80 and on_time.extra_data["timing"] == "on time"
    assert late_one.score == pytest.approx(80 - 0.2 * 89) and "-20%" in late_one.output
    assert late_one.extra_data["time_source"] == "gradescope"
    assert unknown.score == 80 and unknown.extra_data["time_source"] == "unknown" and "unknown" in unknown.output
    no_policy = results()
    late_policy(no_policy, None, DUE + timedelta(days=9), None, 89)
    assert no_policy.score == 80 and not no_policy.extra_data


def test_a_timestamps_file_names_each_student_once_with_a_zoned_time(tmp_path):
    stamps = tmp_path / "t.csv"
    stamps.write_text("student,submitted_at\nJosé,2026-12-01T22:59:00Z\nada,2026-12-01T23:00:00+01:00\n")
    times = read_timestamps(stamps)
    assert times["josé"] == DUE and set(times) == {"josé", "ada"}
    stamps.write_text("student,submitted_at\nAda,2026-12-01T22:59:00Z\n ada ,2026-12-01T23:00:00+01:00\n")
    with pytest.raises(UsageError, match="line 3: 'ada' is listed twice \\(line 2 too\\)"):
        read_timestamps(stamps)
    stamps.write_text("student,submitted_at\nada,2026-12-01 23:00\n")
    with pytest.raises(UsageError, match="line 2, column submitted_at: '2026-12-01 23:00' has no time zone"):
        read_timestamps(stamps)



def test_the_hour_summer_time_repeats_is_late_as_time_passes_and_either_offset_is_read():
    """Paris's clocks go from 03:00 back to 02:00 on 2026-10-25: 02:10+01:00 is 40 min after
    02:30+02:00, though its clock reads 20 min before."""
    policy = Deadline(due=parse_time("2026-10-25T02:30:00[Europe/Paris]", "due"), penalty=10, grace_minutes=30)
    second = parse_time("2026-10-25T02:10:00+01:00[Europe/Paris]", "t")     # the second 02:10: a real time
    assert second.utcoffset() == timedelta(hours=1) and second.isoformat().startswith("2026-10-25T02:10:00+01:00")
    late = lateness(policy, second)
    assert (late.late_by, late.periods, late.penalty_percent) == (timedelta(minutes=40), 1, 10)
    assert lateness(policy, parse_time("2026-10-25T00:59:00+00:00", "t")) is None     # 29 min: in the grace


@pytest.mark.parametrize("cell, said", [
    ("inf", "'inf' hours: expected a number from 0 to 8784"), ("nan", "'nan' hours"), ("1e12", "'1e12' hours"),
    ("-5", "'-5' hours"), ("soon", "'soon' is neither hours nor a time"),
    ("2026-12-05 10:00", "'2026-12-05 10:00' is neither hours nor a time"),
    ("0001-01-01T00:00:00+01:00", "'0001-01-01T00:00:00\\+01:00' is neither hours nor a time")])
def test_a_bad_extension_is_a_sentence_naming_its_line_and_column(tmp_path, cell, said):
    (tmp_path / "r.csv").write_text(f"student,extension\nada,48\nbob,{cell}\n")
    with pytest.raises(UsageError, match=f"line 3, column extension: {said}"):
        read_roster(tmp_path / "r.csv")



@pytest.mark.parametrize("when", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"])
def test_a_time_no_clock_can_compare_is_a_sentence_naming_its_line(tmp_path, when):
    (tmp_path / "t.csv").write_text(f"student,submitted_at\nada,{when}\n")
    with pytest.raises(UsageError, match="line 2, column submitted_at: .* expected a year from 1900 to 2999"):
        read_timestamps(tmp_path / "t.csv")

def test_what_an_unknown_time_costs_is_the_instructors_choice():
    policy = Deadline(due=DUE, penalty=10, cap=30)
    row = BatchRow(student="a", status="graded", score=40, max_score=50)
    unknown = assess(row, policy, Arrival(None, "timestamps"))
    assert (unknown.time_source, unknown.final_score, unknown.penalty_percent) == ("unknown", None, None)
    assert unknown.timing.startswith("time unknown: no mark")
    assert assess(row, policy, Arrival(None, "timestamps"), assume="on time").final_score == 40
    assumed = assess(row, policy, Arrival(None, "timestamps"), assume="late")
    assert (assumed.final_score, assumed.penalty_percent) == (25, 30)
    free = assess(row, None, Arrival(None, "timestamps"))           # no late policy: time does not matter
    assert (free.final_score, free.timing, free.time_source) == (40, "", "unknown")


# -- a class: each untrusted source, and the instructor's file -------------------------------------------
def stand_in(lab, todo, workers, options, done):
    check = Check(name="all", test="hidden/test_x.py::test_all", tags=[next(iter(lab.functions))], points=50,
                  score=40, status="failed", visibility="hidden")
    for sub in todo:
        done(sub, "graded", LabResults(lab=lab.name, title="t", submission="", device="cpu", sandbox="process",
                                       execution_time=0, checks=[check], done_when=[]).model_dump(mode="json"))
    return 1


@pytest.fixture
def late_class(tmp_path):
    """A class due long ago whose submissions each claim a time of their own making."""
    subs = tmp_path / "subs"
    backdated = json.dumps({"created_at": "2020-01-01T00:00:00Z"})
    shutil.copytree(REFERENCE, subs / "meta")                      # Gradescope's file, forged, in the folder
    (subs / "meta" / "submission_metadata.json").write_text(backdated)
    shutil.copytree(REFERENCE, subs / "bundle" / "submission")     # the bundle's layout, made by the student
    (subs / "bundle" / "submission_metadata.json").write_text(backdated)
    with zipfile.ZipFile(subs / "zipped.zip", "w") as archive:     # `touch` before zipping
        for file in sorted(REFERENCE.glob("*.py")):
            archive.writestr(zipfile.ZipInfo(file.name, date_time=(2020, 1, 1, 0, 0, 0)), file.read_bytes())
    shutil.copytree(REFERENCE, subs / "copied", copy_function=shutil.copy)   # file times: today
    old = datetime(2020, 1, 1, tzinfo=timezone.utc).timestamp()
    shutil.copytree(REFERENCE, subs / "touched")
    for file in (subs / "touched").iterdir():
        os.utime(file, (old, old))
    lab = find_lab("lab2")
    lab.manifest = lab.manifest.model_copy(update={"deadline": Deadline(due=parse_time("2021-01-01T00:00Z", "due"),
                                                                        penalty=10)})
    return lab, subs, tmp_path / "out"


def rows_of(out):
    return {r["student"]: r for r in json.loads((out / "rows.json").read_text())}


def test_no_source_inside_a_submission_gives_a_time(late_class):
    lab, subs, out = late_class
    assert time.time() - (subs / "copied" / "positions.py").stat().st_mtime < 3600
    summary = batch.grade_class(lab, subs, out, Console(file=io.StringIO()), backend=stand_in)
    rows = rows_of(out)
    assert set(rows) == {"meta", "bundle", "zipped", "copied", "touched"}
    for student, row in rows.items():
        assert (row["time_source"], row["submitted_at"], row["penalty_percent"], row["final_score"]) == \
            ("unknown", None, None, None), student
        assert row["timing"].startswith("time unknown"), student
    assert summary.timing == {"time unknown": 5}


def test_with_timestamps_every_row_follows_that_file_alone(late_class, tmp_path):
    lab, subs, out = late_class
    stamps = tmp_path / "stamps.csv"
    stamps.write_text("student,submitted_at\nmeta,2020-12-31T00:00:00Z\nbundle,2021-01-03T12:00:00Z\n"
                      "ZIPPED,2021-01-02T00:00:00Z\ncopied,2020-06-01T00:00:00+02:00\n")
    summary = batch.grade_class(lab, subs, out, Console(file=io.StringIO()),
                                batch.ClassRequest(timing=batch.TimeFiles(timestamps=stamps)), stand_in)
    rows = {s: (r["time_source"], r["penalty_percent"], r["final_score"]) for s, r in rows_of(out).items()}
    assert rows == {"meta": ("timestamps", None, 40), "bundle": ("timestamps", 30, 25),
                    "zipped": ("timestamps", 10, 35), "copied": ("timestamps", None, 40),
                    "touched": ("unknown", None, None)}
    assert summary.timing == {"on time": 2, "late": 2, "time unknown": 1}


def test_a_row_from_before_times_were_trusted_has_none():
    old = {"student": "a", "status": "graded", "time_source": "zip", "submitted_at": "2020-01-01T00:00:00Z"}
    assert (BatchRow.model_validate(old).time_source, BatchRow.model_validate(old).submitted_at) == ("unknown", None)
    assert BatchRow.model_validate({**old, "time_source": "gradescope"}).submitted_at is not None


@pytest.mark.parametrize("source", ["meta", "bundle", "zipped", "copied", "touched"])
def test_each_date_a_student_can_set_is_no_time_in_the_batch_nor_the_gradebook(late_class, source, tmp_path):
    lab, subs, out = late_class
    for entry in subs.iterdir():
        if entry.stem != source:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    batch.grade_class(lab, subs, out, Console(file=io.StringIO()), backend=stand_in)
    row = rows_of(out)[source]
    assert (row["time_source"], row["penalty_percent"], row["final_score"]) == ("unknown", None, None)
    dest = tmp_path / "g.csv"
    assert main(["gradebook", str(out), "--out", str(dest), "--due", "2021-01-01T00:00:00Z", "--penalty", "10"]) == 0
    line = next(csv.DictReader(dest.open()))
    assert (line["time_source"], line["penalty_percent"], line["final_score"]) == ("unknown", "", "")
    assert line["note"].startswith("time unknown")
