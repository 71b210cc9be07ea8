"""Shared by the tests: one warm zygote for in-process grading, as a batch worker keeps one, and
a way to find the processes an attack submission left behind."""
from pathlib import Path

import pytest

from grader.judge.launchers import launcher_for
from grader.judge.zygote import Zygote
from grader.labs import find_lab
from grader.runner import grade


@pytest.fixture(scope="session")
def zygote():
    warm = Zygote(launcher_for("auto"))
    yield warm
    warm.close()


@pytest.fixture(scope="session")
def lab2():
    return find_lab("lab2")


@pytest.fixture
def grade_lab2(lab2, zygote):
    """grade_lab2(submission, select=[...]) -> LabResults, on the CPU, with the warm zygote."""
    def run(submission, select=()):
        zygote.reset()
        return grade(lab2, submission=submission, device="cpu", select=select, zygote=zygote)
    return run


def processes_marked(marker):
    """PIDs of processes whose command line carries `marker` (bytes): an attack's daemons."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids
