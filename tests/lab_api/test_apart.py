"""grader/lab_api/apart.py: a lab's trusted work in a fresh process of its own, which shares no global
state with the judge (torch's RNG above all) and does not outlive it."""
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from grader.lab_api import apart
from grader.readers.manifest import find_lab

WORK = '''import os, time
import torch

def facts(reference, seed):
    torch.manual_seed(seed)
    rope = reference.model.apply_rope.__code__.co_filename         # the handout's model.py takes it from positions
    return {"pid": os.getpid(), "train_len": reference.tasks.TRAIN_LEN, "threads": torch.get_num_threads(),
            "drawn": torch.randn(3), "rope": rope}

def wait(reference, note, seconds):
    open(note, "w").write(str(os.getpid()))
    time.sleep(seconds)
'''


def folders():
    lab = find_lab("lab2")
    return [lab.reference, lab.handout]


def work(tmp_path):
    path = tmp_path / "work.py"
    path.write_text(WORK)
    return path


def test_work_runs_apart_with_the_labs_reference(tmp_path):
    torch.manual_seed(7)
    ours = torch.get_rng_state()
    with apart.pool() as executor:
        value = apart.submit(executor, folders(), work(tmp_path), "facts", 3).result(timeout=300)
    assert value["pid"] != os.getpid() and value["threads"] == 1
    assert value["train_len"] == 24 and value["rope"] == str(folders()[0] / "positions.py")   # the lab's, there
    assert torch.equal(value["drawn"], torch.randn(3, generator=torch.Generator().manual_seed(3)))
    assert torch.equal(torch.get_rng_state(), ours)     # it seeded its own generator, not ours


def test_a_judge_killed_mid_work_leaves_none_behind(tmp_path):
    note = tmp_path / "pid"
    script = (f"from grader.lab_api import apart\nwith apart.pool() as executor:\n"
              f"    apart.submit(executor, {list(map(str, folders()))!r}, {str(work(tmp_path))!r}, 'wait', "
              f"{str(note)!r}, 300).result()\n")
    judge = subprocess.Popen([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 300
    while not note.exists() or not note.read_text():
        assert time.monotonic() < deadline and judge.poll() is None
        time.sleep(0.1)
    worker = int(note.read_text())
    judge.send_signal(signal.SIGKILL)
    judge.wait()
    deadline = time.monotonic() + 10
    try:
        while alive(worker):
            assert time.monotonic() < deadline, "the worker outlived the judge"
            time.sleep(0.1)
    finally:
        if alive(worker):
            os.kill(worker, signal.SIGKILL)


def alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_leaving_the_block_waits_for_no_work(tmp_path):
    """The grading ends (Ctrl-C, or checks that needed no more) without waiting for work under way."""
    note = tmp_path / "pid"
    with apart.pool() as executor:
        apart.submit(executor, folders(), work(tmp_path), "wait", note, 300)
        deadline = time.monotonic() + 300
        while not note.exists() or not note.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        left = time.monotonic()
    worker = int(note.read_text())
    try:
        assert time.monotonic() - left < 5 and alive(worker)
    finally:
        os.kill(worker, signal.SIGKILL)


class ApartGrader:
    """A batch worker's grader that does what lab 2's checks do with the recipe: work in a process
    of its own (grader/instructor/workers.py: grade_all's grader_class)."""

    def __init__(self, lab_folder, plan, work):
        self.work = work

    def grade(self, files):
        with apart.pool() as pool:
            return "graded", apart.submit(pool, folders(), self.work, "facts", 3).result()["train_len"]

    def close(self):
        pass


@pytest.mark.slow
def test_a_batch_worker_may_run_work_apart(tmp_path):
    """A worker is no daemonic process, which multiprocessing forbids to start any: on a machine
    whose .grade/ lacks the recipe's runs, a batch would have failed every check of the experiments."""
    from grader.core.submissions import Submission
    from grader.instructor.workers import Plan, grade_all

    answers = []
    job = Submission("s", tmp_path, {}, "graded")
    grade_all(find_lab("lab2"), [job], 1, Plan(), lambda submission, kind, data: answers.append((kind, data)),
              functools.partial(ApartGrader, work=work(tmp_path)))
    assert answers == [("graded", 24)]


@pytest.mark.slow
def test_work_asked_for_from_a_thread_that_ends_goes_on(tmp_path):
    """A process dies with the thread that started it (PR_SET_PDEATHSIG): work asked for from a
    short-lived thread (a callback of a student's call) must not die when that thread ends."""
    note, asked = tmp_path / "pid", []

    def ask():
        asked.append(apart.submit(executor, folders(), work(tmp_path), "wait", note, 2))
        deadline = time.monotonic() + 300
        while not note.exists() or not note.read_text():      # the worker runs: then this thread ends
            assert time.monotonic() < deadline
            time.sleep(0.1)

    with apart.pool() as executor:
        asking = threading.Thread(target=ask)
        asking.start()
        asking.join()
        assert asked[0].result(timeout=300) is None
