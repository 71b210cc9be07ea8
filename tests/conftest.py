"""Shared by the tests: one warm zygote for in-process grading, as a batch worker keeps one."""
import pytest

from grader.labs import find_lab
from grader.runner import grade
from grader.sandbox import Zygote, launcher_for


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
