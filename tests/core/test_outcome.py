"""A check's Outcome is a value decided from what it raised alone (grader/core/outcome.py): its status
and words, and its effects on the checks after it, which the plugin applies."""
from types import SimpleNamespace

from grader.core.outcome import Blocked, Outcome, outcome
from grader.judge.sandbox import CallFailed
from grader.lab_api.checks import CheckFailed

LAB = SimpleNamespace(functions={"f": "a.py", "g": "a.py"},
                      exception_hint=lambda raised: "mind the shapes" if "shape" in raised else "")


def test_a_pass_and_a_failed_check_change_nothing_after_them():
    assert outcome(None, "passed", "f", LAB) == Outcome()
    failed = outcome(CheckFailed("5", "6", hint="add, not multiply", mistake="times"), "failed", "f", LAB)
    assert (failed.status, failed.hint, failed.mistake, failed.blocks, failed.stops) == \
        ("failed", "add, not multiply", "times", None, "")


def test_a_call_that_did_not_answer_says_what_it_blocks_or_stops():
    stub = outcome(CallFailed("f", "not_implemented", "g"), "failed", "f", LAB)
    assert (stub.status, stub.blocked_by, stub.blocks) == ("not_implemented", "g", ("g", "not_implemented"))
    assert stub.message == "not graded because g is not implemented yet"
    assert outcome(CallFailed("f", "timeout", "no answer"), "failed", "f", LAB).blocks == ("f", "timeout")
    budget = outcome(CallFailed("f", "budget", "the budget ran out"), "failed", "f", LAB)
    assert (budget.status, budget.stops, budget.blocks) == ("failed", "the budget ran out", None)
    assert outcome(CallFailed("f", "grader_fault", "busy"), "failed", "f", LAB).status == "not_graded"
    raised = outcome(CallFailed("f", "raised", "ValueError: bad shape", ["a.py line 3, in f"]), "failed", "f", LAB)
    assert raised.hint == "mind the shapes"
    assert raised.message == "f raised ValueError: bad shape\n  at a.py line 3, in f"


def test_a_blocked_check_names_what_blocked_it():
    skipped = outcome(Blocked("g", "not_implemented", "not graded because g is not implemented yet"), "skipped", "f",
                      LAB)
    assert (skipped.status, skipped.blocked_by, skipped.blocks) == ("not_implemented", "g", None)
    judge = outcome(Blocked("f", "judge", "not graded: the grader's own work"), "skipped", "f", LAB)
    assert (judge.status, judge.blocked_by) == ("not_graded", "")
