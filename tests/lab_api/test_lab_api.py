"""grader/lab_api/: a lab's trusted work starts only when asked for, once per value however many
checks and threads ask, is kept across gradings and read back only once checked; its failure is
the grader's fault. The work itself is faked here (grader/lab_api/apart.py has its own tests)."""
import contextlib
import threading
from concurrent.futures import Future

import pytest

from grader.judge.channel import CallFailed
from grader.lab_api import TrustedWork, after, apart, memo


class Calls(list):
    """The calls made, and `answers`: {args: a value or an exception} to answer some with."""


@pytest.fixture
def started(monkeypatch, tmp_path):
    """The work the API starts, faked: [(function, args)], each answered at once with args' sum (or
    what `answers` says); no process is spawned, and .grade/ is a temporary folder."""
    monkeypatch.setattr(memo, "STATE", tmp_path)
    monkeypatch.setattr(memo, "_memory", {})
    monkeypatch.setattr(memo, "_pending", {})
    calls, answers = Calls(), {}

    def submit(executor, folders, module, function, *args):
        calls.append((function, args))
        done = Future()
        answer = answers.get(args, sum(args))
        done.set_exception(answer) if isinstance(answer, BaseException) else done.set_result(answer)
        return done
    monkeypatch.setattr(apart, "submit", submit)
    monkeypatch.setattr(apart, "pool", lambda: contextlib.nullcontext("pool"))
    calls.answers = answers
    return calls


def work(check=None):
    return TrustedWork("t", ["folder"], "work.py", "add", key=("code",), check=check)


def test_nothing_starts_until_asked_and_each_value_once(started):
    with work() as runs:
        assert started == []
        runs.start(1, 2)
        runs.start(1, 2)
        assert runs.get(1, 2) == 3 and runs.get(1, 2) == 3
    assert started == [("add", (1, 2))]


def test_work_asked_for_from_another_thread_is_shared(started):
    with work() as runs:
        asking = threading.Thread(target=runs.start, args=(2, 3))
        asking.start()
        asking.join()
        assert runs.get(2, 3) == 5
    assert started == [("add", (2, 3))]


def test_a_kept_value_is_not_started_again_and_is_checked_when_read(started, monkeypatch):
    with work() as runs:
        runs.get(1, 1)
    monkeypatch.setattr(memo, "_memory", {})            # the next grading on this machine
    checked = []
    with work(check=lambda value, *args: checked.append((value, args)) or True) as runs:
        runs.start(1, 1)                                # a file holds it: get reads it
        assert runs.get(1, 1) == 2
    assert started == [("add", (1, 1))] and checked == [(2, (1, 1))]


def test_a_kept_value_that_fails_its_check_is_computed_again(started, monkeypatch):
    with work() as runs:
        runs.get(1, 1)
    monkeypatch.setattr(memo, "_memory", {})
    with work(check=lambda value, *args: False) as runs:
        assert runs.get(1, 1) == 2
    assert started == [("add", (1, 1))] * 2


def test_failed_work_is_a_grader_fault(started):
    started.answers[(4, 4)] = RuntimeError("the process died")
    with work() as runs, pytest.raises(CallFailed) as raised:
        runs.get(4, 4)
    assert raised.value.kind == "grader_fault" and "the process died" in raised.value.message


def test_nothing_starts_once_the_block_is_left(started):
    with work() as runs:
        runs.start(1, 2)            # inside the block: it starts
    assert started == [("add", (1, 2))]
    runs.start(3, 4)                # a student's call that returns after the grading
    assert started == [("add", (1, 2))]


def test_after_starts_the_next_once_the_first_has_a_value_and_never_after_a_failure():
    first, started = Future(), []

    def start():
        started.append(1)
        done = Future()
        done.set_result("second")
        return done
    second = after(first, start)
    assert started == [] and not second.done()
    first.set_result("first")
    assert second.result() == "second" and started == [1]
    failed = Future()
    failed.set_exception(CallFailed("f", "not_implemented", "stub"))
    with pytest.raises(CallFailed):
        after(failed, start).result()
    assert started == [1]


class Held(Future):
    """A call held back until asked for (a hidden call made for a visible check): asking starts it."""

    def exception(self, timeout=None):
        if not self.done():
            self.set_result("asked")
        return super().exception(timeout)


def test_asking_for_the_last_of_calls_one_after_another_asks_for_each():
    """Held-back calls one after another (two hidden seeds, say) start as a check asks for the last."""
    assert after(after(Held(), Held), Held).result(timeout=5) == "asked"


def test_a_value_kept_instead_is_what_the_next_grading_reads(started, monkeypatch):
    with work() as runs:
        assert runs.get(1, 2) == 3
        assert runs.keep(30, 1, 2) == 30 and runs.get(1, 2) == 30
    monkeypatch.setattr(memo, "_memory", {})
    with work() as runs:
        assert runs.get(1, 2) == 30
    assert started == [("add", (1, 2))]
