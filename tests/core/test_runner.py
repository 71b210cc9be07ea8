"""The facade of a grading: a Request checks what it names before anything starts, and finish() is
the one finishing step of every front door (the command line, --watch, the notebook)."""
import json

import pytest
import yaml

from grader.base.errors import UsageError
from grader.core.request import NOT_GRADED_STATUS, Device, Output, Request, SandboxKind, Selection
from grader.core.results import Check, LabResults
from grader.core.runner import finish, grade
from grader.readers.manifest import find_lab


def results_with(*statuses):
    checks = [Check(name=f"c{i}", test=f"public/test_x.py::test_{i}", tags=["apply_rope"], points=1,
                    score=1 if status == "passed" else 0, status=status, visibility="visible")
              for i, status in enumerate(statuses)]
    return LabResults(lab="lab2", title="t", submission="", device="cpu", sandbox="process", execution_time=0,
                      checks=checks, done_when=[])


def test_a_grading_with_grader_faults_leaves_no_json_and_no_lesson_progress(lab2, state, tmp_path):
    """What --watch once did differently from the command line: a grading the grader could not
    finish is no grade, for every front door."""
    out = tmp_path / "results.json"
    finished = finish(results_with("passed", "not_graded"), Request(lab2, output=Output(json=out)))
    assert finished.status == NOT_GRADED_STATUS and finished.quiz == (False, None)
    assert not out.exists() and not (state / "lab-lab2.json").exists()


def test_a_full_grading_of_the_learners_own_copy_writes_json_and_lesson_progress(lab2, state, tmp_path):
    out = tmp_path / "results.json"
    finished = finish(results_with("passed", "failed"), Request(lab2, output=Output(json=out)))
    assert finished.status == 1 and finished.quiz[0] is True
    assert json.loads(out.read_text())["score"] == 1
    assert json.loads((state / "lab-lab2.json").read_text())["passed"] is False


def test_a_submission_folder_or_a_selection_is_no_lesson_progress(lab2, state, tmp_path):
    assert finish(results_with("passed"), Request(lab2, tmp_path)).status == 0
    selected = results_with("passed").model_copy(update={"selected": ["apply_rope"]})
    finish(selected, Request(lab2, selection=Selection(("apply_rope",))))
    assert not (state / "lab-lab2.json").exists()


def test_a_request_takes_a_front_doors_words_as_enums(lab2):
    request = Request(lab2, device="cpu", sandbox="process")
    assert request.device is Device.CPU and request.sandbox is SandboxKind.PROCESS
    with pytest.raises(ValueError):
        Request(lab2, device="tpu")


@pytest.mark.parametrize("name, suggested", [("positons", "positions.py"), ("apply_rop", "apply_rope"),
                                             ("invariance", None)])
def test_a_selection_that_names_nothing_is_refused_with_the_closest_name(lab2, name, suggested):
    if suggested is None:
        assert Request(lab2, selection=Selection((name,))).selection.only == (name,)
        return
    with pytest.raises(UsageError, match=f"did you mean {suggested}\\?"):
        Request(lab2, selection=Selection((name,)))


def test_a_submission_that_is_no_folder_is_refused_when_asked(lab2, tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        Request(lab2, tmp_path / "nowhere")
    (tmp_path / "file.py").write_text("")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        Request(lab2, tmp_path / "file.py")


BEGUN = '''import time


def begun(seconds):
    started = time.time()
    time.sleep(seconds)
    return started
'''
BEGUN_CHECKS = '''import pytest


@pytest.fixture(scope="session")
def hidden_calls(student):
    return [student.submit("begun", 1.5, hidden=True) for _ in range(2)]


@pytest.mark.grade(points=1, tags=["begun"])
def test_together(hidden_calls, record_property):
    """hidden calls start together"""
    first, second = (call.result(30) for call in hidden_calls)
    record_property("apart", abs(second - first))
'''


def test_the_hidden_calls_held_back_start_together_when_the_hidden_room_begins(tmp_path, zygote):
    """A visible check asking for one call on hidden inputs begins the hidden room: every call held
    back starts then (lab 2's two experiments at the course's seed), not one after the other."""
    folder = tmp_path / "begun"
    manifest = {"title": "Begun", "handout": "handout", "student_files": {"begun.py": ["begun"]}}
    stub = "def begun(seconds):\n    raise NotImplementedError\n"
    for name, text in {"lab.yaml": yaml.safe_dump(manifest), "stubs/begun.py": stub, "handout/begun.py": BEGUN,
                       "public/test_begun.py": BEGUN_CHECKS}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    zygote.reset()
    check = grade(Request(find_lab(folder), device=Device.CPU), zygote).checks[0]
    assert check.status == "passed", check.message
    assert check.data["apart"] < 1.0 and check.inputs_hidden
