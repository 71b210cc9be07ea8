"""The grading plugin's rules for a lab's own data: a real dependency between functions declared in
lab.yaml (`depends`) is graded after what it needs, skipped, never failed, and said once; a
known cause of an exception (`exception_hints`) comes with it. On a toy lab built in a folder."""
import io

import pytest
import yaml
from rich.console import Console

from grader.base.errors import LabError
from grader.core.request import Device, Request, Selection
from grader.core.runner import grade
from grader.learner.report import render
from grader.readers.manifest import find_lab

CHECKS = '''import pytest

from grader.lab_api.checks import expect


@pytest.mark.grade(points=1, tags=["add"])
def test_add(student):
    """adds"""
    expect(student.add(2, 3) == 5, "5", str(student.add(2, 3)))


@pytest.mark.grade(points=1, tags=["double"])
@pytest.mark.parametrize("a", [4, 7])
def test_double(student, a):
    """doubles"""
    expect(student.double(a) == 2 * a, str(2 * a), str(student.double(a)))
'''
STUB = "def add(a, b):\n    raise NotImplementedError\n\n\ndef double(a):\n    raise NotImplementedError\n"


@pytest.fixture
def toy(tmp_path):
    folder = tmp_path / "toy"
    manifest = {"title": "Toy", "handout": "handout", "student_files": {"adder.py": ["add", "double"]},
                "depends": {"double": ["add"]},
                "exception_hints": [{"match": "TypeError: .*unsupported operand", "hint": "add numbers, not strings"}]}
    for name, text in {"lab.yaml": yaml.safe_dump(manifest), "stubs/adder.py": STUB, "handout/adder.py": STUB,
                       "hidden/test_adder.py": CHECKS}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return find_lab(folder)


def graded(lab, zygote, tmp_path, add, first=()):
    (tmp_path / "work").mkdir(exist_ok=True)
    solution = f"def add(a, b):\n    {add}\n\n\ndef double(a):\n    return add(a, a)\n"
    (tmp_path / "work" / "adder.py").write_text(solution)
    zygote.reset()
    results = grade(Request(lab, tmp_path / "work", Device.CPU, Selection(first=tuple(first))), zygote)
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(render(results, lab))
    return results, console.export_text()


@pytest.mark.parametrize("first", [(), ("double",)], ids=["in order", "dependent first"])
def test_a_dependency_not_implemented_is_said_once(toy, zygote, tmp_path, first):
    results, report = graded(toy, zygote, tmp_path, "raise NotImplementedError", first)
    double = [c for c in results.checks if c.function == "double"]
    assert [c.status for c in double] == ["not_implemented"] * 2 and results.score == 0
    assert report.count("not graded because add is not implemented yet") == 1, report


@pytest.mark.parametrize("first", [(), ("double",)], ids=["in order", "dependent first"])
def test_a_failing_dependency_skips_instead_of_charging(toy, zygote, tmp_path, first):
    results, report = graded(toy, zygote, tmp_path, "return a * b", first)
    assert [c.function for c in results.checks] == ["add", "double", "double"]
    assert {c.status for c in results.checks if c.function == "double"} == {"skipped"}
    assert report.count("not graded because add does not pass its own checks yet") == 1, report


def test_a_known_exception_comes_with_its_cause(toy, zygote, tmp_path):
    results, report = graded(toy, zygote, tmp_path, "return a + str(b)")
    assert results.checks[0].hint == "add numbers, not strings"
    assert report.index("hint add numbers, not strings") < report.index("add raised TypeError")


def test_depends_names_functions_of_the_lab(toy):
    manifest = yaml.safe_load((toy.folder / "lab.yaml").read_text())
    (toy.folder / "lab.yaml").write_text(yaml.safe_dump({**manifest, "depends": {"double": ["subtract"]}}))
    with pytest.raises(LabError, match="depends names subtract"):
        find_lab(toy.folder)


REPR_COUNTED = '''import pytest

from grader.lab_api.checks import expect

REPRS = []


class Heavy:
    """An experiment's runs, say: a repr of it costs seconds."""

    def __repr__(self):
        REPRS.append(1)
        return "Heavy()"


@pytest.fixture
def heavy():
    return Heavy()


@pytest.mark.grade(points=1, tags=["add"])
def test_add(student, heavy):
    """adds"""
    expect(student.add(2, 3) == 5, "5", str(student.add(2, 3)))


@pytest.mark.grade(points=1, tags=["add"])
def test_reprs(heavy):
    """pytest made no repr of a failed check's arguments"""
    expect(not REPRS, "no repr", f"{len(REPRS)} reprs")
'''


def test_a_failed_check_costs_no_repr_of_its_arguments(toy, zygote, tmp_path):
    """The report's text is the check's own: pytest's traceback, which would repr every argument of
    every frame (the experiments' runs and weights took seconds), is not built."""
    (toy.folder / "hidden" / "test_adder.py").write_text(REPR_COUNTED)
    results, _ = graded(toy, zygote, tmp_path, "return a - b")
    status = {check.test.split("::")[-1]: check.status for check in results.checks}
    assert status == {"test_add": "failed", "test_reprs": "passed"}


@pytest.mark.parametrize("raised", ['raise AssertionError("a typo of the author")', "raise AssertionError()"])
def test_a_check_file_that_cannot_be_collected_is_a_broken_lab(toy, zygote, tmp_path, raised):
    """A check file that raises as it is imported makes the lab broken, said with its file: it was
    taken for Ctrl-C (pytest's exit status for collection errors is INTERRUPTED), and one whose
    error had no text (pytest's "value" style then writes none) crashed the plugin."""
    (toy.folder / "hidden" / "test_broken.py").write_text(raised + "\n")
    with pytest.raises(LabError, match="test_broken.py"):
        graded(toy, zygote, tmp_path, "return a + b")


IN_MODEL = '''import pytest

from grader.lab_api.checks import expect


@pytest.mark.grade(points=1, tags=["add"])
def test_add_in_the_model(student):
    """adds, as the lab's own code calls it"""
    expect(student.in_model("add", 3) == 7, "7", str(student.in_model("add", 3)))
'''


@pytest.mark.parametrize("add, score, said", [("return a + b", 1, ""), ("return a - b", 0, "expected 7"),
                                              ("return a + b if b else 1 / 0", 0, "add raised ZeroDivisionError")])
def test_a_model_call_runs_the_learners_function_as_the_labs_code_does(toy, zygote, tmp_path, add, score, said):
    """lab.yaml's model_calls: a child module's function that calls the learner's, asked through
    student.in_model; what it raises is the learner's function's."""
    manifest = yaml.safe_load((toy.folder / "lab.yaml").read_text())
    (toy.folder / "model.py").write_text("from adder import add\n\n\ndef add_in_model(a):\n"
                                         "    return add(add(a, a), 1) + add(0, 0)\n")
    (toy.folder / "lab.yaml").write_text(yaml.safe_dump({**manifest, "depends": {}, "child_modules": ["model.py"],
                                                         "model_calls": {"add": "model:add_in_model"}}))
    (toy.folder / "hidden" / "test_adder.py").write_text(IN_MODEL)
    results, report = graded(find_lab(toy.folder), zygote, tmp_path, add)
    assert results.score == score and said in results.checks[0].message, report


@pytest.mark.parametrize("calls, said", [({"subtract": "model:f"}, "model_calls names subtract"),
                                         ({"add": "elsewhere:f"}, "not 'module:name' of a child module"),
                                         ({"add": "model:double"}, "named apart from the student functions")])
def test_model_calls_name_functions_and_child_modules_of_the_lab(toy, calls, said):
    manifest = yaml.safe_load((toy.folder / "lab.yaml").read_text())
    (toy.folder / "model.py").write_text("def f(a):\n    return a\n")
    (toy.folder / "lab.yaml").write_text(yaml.safe_dump({**manifest, "child_modules": ["model.py"],
                                                         "model_calls": calls}))
    with pytest.raises(LabError, match=said):
        find_lab(toy.folder)
