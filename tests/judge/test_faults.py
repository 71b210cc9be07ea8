"""A grader fault is never a score: checks the grader could not grade are "not graded", the
grading is tried once more, and then single grading exits 3, a batch row says "regrade" (no
score, no results.json) and a plain rerun, or --student, grades just that row again. Faults are
simulated with GRADER_FAULT=function (every answer of it becomes a grader fault, judge side), or
in-process with an observer of the sandbox."""
import csv
import os
import shutil
import signal

import pytest
from test_batch import REFERENCE, grade_py

from grader.instructor.records import BatchSummary, StudentRecord
from grader.judge.sandbox import CallFailed
from grader.readers.manifest import find_lab

from conftest import SEAMS, zygote_pid

FAULT = {"GRADER_FAULT": "is_permutation_invariant", "PYTHONPATH": str(SEAMS)}   # tests/seams/sitecustomize.py
STUB = find_lab("lab2").stubs / "invariance.py"


def test_a_grading_with_grader_faults_is_not_a_grade(tmp_path):
    results = tmp_path / "results.json"
    run = grade_py("lab2", "--submission", REFERENCE, "-k", "invariance", "--json", results, env=FAULT)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "not graded after 2 attempt(s)" in run.stdout and "nothing was charged to you" in run.stdout
    assert "simulated grader fault" in run.stdout
    assert not results.exists()                 # no score is written anywhere


def rows(out):
    with open(out / "grades.csv", newline="") as file:
        return {row["student"]: row for row in csv.DictReader(file)}


@pytest.mark.slow
def test_a_batch_row_the_grader_failed_is_regraded_by_a_plain_rerun(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(REFERENCE, subs / "ref")
    (subs / "stub").mkdir()
    shutil.copy(STUB, subs / "stub")            # raises NotImplementedError: no answer to fault
    batch = ("batch", "lab2", subs, "--out", out, "-k", "invariance", "--workers", "1")
    run = grade_py(*batch, env=FAULT)
    assert run.returncode == 3, run.stdout + run.stderr
    table = rows(out)
    assert (table["ref"]["status"], table["ref"]["score"]) == ("regrade", "")
    assert table["stub"]["status"] == "incomplete"
    assert not (out / "students" / "ref" / "results.json").exists()
    summary = BatchSummary.model_validate_json((out / "summary.json").read_text())
    assert summary.mean_percent == 0.0          # the stub's 0 alone: the regrade row is no 0
    assert "not graded through the grader's fault" in run.stdout and "ref" in run.stdout

    run = grade_py(*batch)                      # the grader works again: only the regrade row is graded
    assert run.returncode == 0, run.stdout + run.stderr
    assert BatchSummary.model_validate_json((out / "summary.json").read_text()).graded_now == 1
    assert rows(out)["ref"]["status"] == "graded" and rows(out)["ref"]["score"] == rows(out)["ref"]["max_score"]

    run = grade_py(*batch, "--student", "stub")     # one student again, unchanged or not
    assert run.returncode == 0, run.stdout + run.stderr
    assert BatchSummary.model_validate_json((out / "summary.json").read_text()).graded_now == 1
    record = StudentRecord.model_validate_json((out / "students" / "ref" / "graded.json").read_text())
    assert record.row.status == "graded" and rows(out)["ref"]["status"] == "graded"
    assert grade_py(*batch, "--student", "nobody").returncode == 2


def test_a_fault_the_child_claims_is_believed_once_not_for_ever(tmp_path):
    """The child's report of a wire fault is its word: the grading is tried again, and a second
    claim is the submission's failure, or it could stay ungraded (and unscored) for ever."""
    (tmp_path / "invariance.py").write_text(
        "class GraderFault(Exception):\n    pass\n\n\n"
        "def is_permutation_invariant(attn, x, trials=None):\n    raise GraderFault('the wire broke, honest')\n")
    results = tmp_path / "results.json"
    run = grade_py("lab2", "--submission", tmp_path, "-k", "invariance", "--json", results)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "could not carry its answer" in run.stdout and results.exists()


def test_an_observer_of_the_sandbox_sees_every_answer_and_may_replace_it(grade_lab2, observe):
    """A sandbox's observers: on_answer(call, answer) -> answer for every call, in-process (what
    GRADER_FAULT and grade.py mutants use): one that turns answers into grader faults makes every
    check of that function not graded, tried twice."""
    seen = []

    def fault(call, answer):
        seen.append(call.function)
        return CallFailed(call.function, "grader_fault", "an observer's fault")

    observe(fault)
    results = grade_lab2(REFERENCE, ["invariance"])
    assert results.attempts == 2 and {c.status for c in results.checks} == {"not_graded"}
    assert set(seen) == {"is_permutation_invariant"} and all("an observer's fault" in c.message for c in results.checks)


def test_a_zygote_killed_from_outside_mid_grading_is_no_score(grade_lab2, zygote, observe):
    """Something outside the submission (another judge, an administrator) kills the zygote after
    the first answer: the checks it stopped are not graded, never failed, and the grading done
    again afresh gives the score. (A second time it would be the submission's: a child of the
    judge's own user may kill its zygote.)"""
    killed = []

    def kill_once(call, answer):
        if not killed:
            killed.append(zygote_pid(zygote))
            os.kill(killed[0], signal.SIGKILL)
            zygote.process.wait()
        return answer

    observe(kill_once)
    results = grade_lab2(REFERENCE, ["invariance"])
    assert killed and results.attempts == 2 and results.score == results.max_score > 0
