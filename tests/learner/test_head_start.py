"""grade.py's head start (grader/learner/head_start.py): a plain grading's zygote is started first
thing, once its arguments are known to be good; none for anything else."""
import pytest

from grader.judge import zygote
from grader.learner import head_start


@pytest.fixture
def started(monkeypatch):
    """The launchers of the zygotes begun (none really starts)."""
    begun = []
    monkeypatch.setattr(zygote.Zygote, "__init__", lambda self, launcher: begun.append(launcher.name))
    monkeypatch.setattr(head_start, "any_listening", lambda: False)
    return begun


@pytest.mark.parametrize("argv", [["lab2", "-k", "aply_rope"], ["lab2", "--device", "tpu"], ["lab2", "--watch"],
                                  ["lab2", "--experiments"], ["nolab"], ["quiz", "lab2"], ["lab2", "--json", "/"],
                                  ["lab2", "--submission", "x.zip"], ["--help"], []])
def test_none_is_begun_but_for_a_plain_grading_with_good_arguments(argv, started):
    assert head_start.zygote_for(argv) is None and started == []


@pytest.mark.parametrize("sandbox, launcher", [("process", "process"), ("auto", None)])
def test_a_plain_grading_s_zygote_is_begun_for_its_sandbox(sandbox, launcher, started):
    assert head_start.zygote_for(["lab2", "-k", "apply_rope", "--sandbox", sandbox]) is not None
    assert len(started) == 1 and started[0] == (launcher or started[0])


def test_none_where_a_warm_grader_may_answer(started, monkeypatch):
    monkeypatch.setattr(head_start, "any_listening", lambda: True)
    assert head_start.zygote_for(["lab2"]) is None and started == []
