"""The protocols' words are types (grader/base/kinds.py): each member reads, prints and goes into JSON as
the string it stands for, a word outside a type is refused where it is made, and results and rows
written before the types existed load as they were."""
import json

import pytest

from grader.base.kinds import Answer, Failure, Status, Timing, Why
from grader.core.outcome import Blocked
from grader.core.results import Check
from grader.instructor.deadlines import tally
from grader.instructor.gradebook import ROWS
from grader.instructor.records import BatchRow
from grader.judge.channel import CallFailed

CHECK = {"name": "adds", "test": "t.py::test_add", "tags": ["f"], "points": 1.0, "score": 0.0,
         "visibility": "visible"}


@pytest.mark.parametrize("kind", [Failure, Status, Why, Answer, Timing])
def test_every_word_is_the_string_it_stands_for(kind):
    for member in kind:
        assert member == member.value and str(member) == f"{member}" == f"{member:s}" == member.value
        assert json.dumps({member: member}) == json.dumps({member.value: member.value})
        assert {member.value: 1}[member] == 1 and {member: 1}[member.value] == 1
        assert kind(member.value) is member


def test_a_call_failure_of_no_known_kind_is_refused_where_it_is_made():
    assert CallFailed("f", "timeout", "no answer").kind is Failure.TIMEOUT
    with pytest.raises(ValueError):
        CallFailed("f", "timed_out", "no answer")
    assert Blocked("f", "budget", "the budget ran out").why is Why.BUDGET
    with pytest.raises(ValueError):
        Blocked("f", "busy", "?")


def test_a_check_written_before_the_types_loads_and_is_written_back_alike():
    for status, failure in [("failed", "timeout"), ("passed", ""), ("not_graded", "grader_fault")]:
        check = Check.model_validate_json(json.dumps({**CHECK, "status": status, "failure": failure}))
        assert check.status is Status(status) and check.failure == failure
        assert json.loads(check.model_dump_json())["status"] == status
        assert json.loads(check.model_dump_json())["failure"] == failure
    with pytest.raises(ValueError):
        Check.model_validate({**CHECK, "status": "passed", "failure": "timed_out"})


@pytest.mark.parametrize("words, kind", [
    ("time unknown: no mark until it is known (the instructor gives --timestamps, or --assume-on-time or "
     "--assume-late)", Timing.UNKNOWN),
    ("time unknown, assumed late: -50% (the late policy's cap)", Timing.ASSUMED_LATE),
    ("time unknown, assumed on time", Timing.ASSUMED_ON_TIME),
    ("on time", Timing.ON_TIME),
    ("1 d 10.0 h late: -20%", Timing.LATE),
    ("3.0 h late: score 0 past the cap", Timing.LATE),
    ("", None)])
def test_a_row_from_an_older_rows_json_keeps_where_it_stood(words, kind):
    """rows.json from before timing_kind: its kind is read from the words it was written with, so
    `grade.py gradebook` on an older OUT folder counts it as it did."""
    old = {"student": "a", "status": "graded", "score": 1, "max_score": 2, "timing": words}
    row = ROWS.validate_json(json.dumps([old]))[0]
    assert row.timing_kind is kind
    assert tally([row]) == ({kind: 1} if kind else {})


def test_a_row_says_its_timing_kind_and_the_words_are_not_read_again():
    row = BatchRow(student="a", status="graded", timing="time unknown, assumed on time", timing_kind="late")
    assert BatchRow.model_validate_json(row.model_dump_json()).timing_kind is Timing.LATE
    assert json.loads(row.model_dump_json())["timing_kind"] == "late"
