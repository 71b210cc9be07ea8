"""Shared by the tests: one warm zygote for in-process grading, as a batch worker keeps one, a way
to find the processes an attack submission left behind, and what the lesson test's files share: the
lab 2 quiz, right answers, its command line, a copy of the course, a temporary `.grade/`."""
import shutil
import signal
import time
from pathlib import Path

import pytest
import yaml

from grader.core.request import Device, Request, Selection
from grader.core.runner import grade
from grader.judge.launchers import launcher_for
from grader.judge.zygote import Zygote, children_of
from grader.learner.cli import main
from grader.quiz import progress
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parent.parent
# A suite started in the background by a shell ignores Ctrl-C, and so would every grader the tests
# start (Python keeps an inherited SIG_IGN): the Ctrl-C tests must not depend on how we were run
signal.signal(signal.SIGINT, signal.default_int_handler)
collect_ignore = ["labs"]           # labs as data (the guide's example): graded by the tests, not collected
LAB2_QUIZ = ROOT / "quizzes" / "lab2.yaml"
EXAMPLE = ROOT / "tests" / "labs" / "example"
SEAMS = ROOT / "tests" / "seams"          # sitecustomize.py: a grader fault simulated in a grade.py the tests run
RIGHT = {"table-size": 38.6, "order": ["a", "b", "e"], "methods": "d", "rope-score": "m - n", "tied": "c"}


@pytest.fixture(scope="session")
def zygote():
    warm = Zygote(launcher_for("auto"))
    yield warm
    warm.close()


def lab_in_form(form: str, into: Path) -> Path:
    """The example lab as written in an earlier form: the example's checks, handout and reference,
    with the form's own files of tests/labs/forms/FORM/ (lab.yaml, its quiz) laid over them. A form
    whose lab.yaml names `stubs: stubs` gets the handout's pristine stub there."""
    lab = into / form
    shutil.copytree(EXAMPLE, lab, ignore=shutil.ignore_patterns("__pycache__", "lab.yaml", "*quiz.yaml"))
    shutil.copytree(ROOT / "tests" / "labs" / "forms" / form, lab, dirs_exist_ok=True)
    if yaml.safe_load((lab / "lab.yaml").read_text()).get("stubs") == "stubs":
        shutil.copytree(lab / "handout", lab / "stubs", ignore=shutil.ignore_patterns("README.md"))
    return lab


@pytest.fixture(scope="session")
def lab2():
    return find_lab("lab2")


@pytest.fixture
def grade_lab2(lab2, zygote):
    """grade_lab2(submission, select=[...]) -> LabResults, on the CPU, with the warm zygote."""
    def run(submission, select=()):
        zygote.reset()
        return grade(Request(lab2, submission, Device.CPU, Selection(tuple(select))), zygote)
    return run


def zygote_pid(zygote):
    """The pid of a Zygote's zygote: the process it started, or the one bubblewrap runs (once it does)."""
    deadline = time.monotonic() + 10
    while zygote.launcher.name == "bubblewrap" and not children_of(zygote.process.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return zygote.process.pid if zygote.launcher.name == "process" else children_of(zygote.process.pid)[0]


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


# -------------------------------------------------------------------------------- the lesson test

@pytest.fixture
def state(tmp_path, monkeypatch):
    """Attempts recorded in-process go to a temporary `.grade/`."""
    monkeypatch.setattr(progress, "STATE", tmp_path / ".grade")
    return tmp_path / ".grade"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A copy of the course whose grade.py records attempts in its own `.grade/`."""
    copy = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "grade.py", copy)
    for folder in ("grader", "quizzes"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "assignments" / "lab2").mkdir(parents=True)
    return copy


def answers_file(tmp_path, answers, name="answers.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(answers))
    return path


def run_cli(capsys, *argv):
    code = main(["quiz", *map(str, argv)])
    return code, capsys.readouterr().out


@pytest.fixture
def observe(monkeypatch):
    """observe(on_answer, ...): every sandbox built in this test's process has these observers too,
    each on_answer(call, answer) -> answer (a simulated grader fault, a zygote killed mid-grading)."""
    import dataclasses

    from grader.judge.sandbox import Sandbox, Settings

    def install(*observers):
        built = Sandbox.__init__

        def observed(self, lab, files, zygote, settings=None):
            settings = settings or Settings()
            built(self, lab, files, zygote, dataclasses.replace(settings, observers=(*observers, *settings.observers)))
        monkeypatch.setattr(Sandbox, "__init__", observed)
    return install
