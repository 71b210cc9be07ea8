"""Adding a lab is data, not engine code: a toy lab built in a temporary folder (manifest, stub,
reference, public and hidden checks, a quiz) goes through grading, batch grading, release and the
Gradescope bundle with no change to grader/."""
import csv
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from grader.core.results import GradescopeResults
from grader.instructor.batch import lab_fingerprint
from grader.instructor.records import BatchSummary
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parents[2]

STUB = '''"""Arithmetic: fill in both functions."""


def add(a, b):
    """a + b."""
    raise NotImplementedError


def double(a):
    """2 * a."""
    raise NotImplementedError
'''
REFERENCE = '''def add(a, b):
    return a + b  # toy-reference-marker


def double(a):
    return add(a, a)
'''
HIDDEN = '''"""Hidden checks of adder.py (toy-hidden-marker)."""
import pytest

from grader.lab_api.checks import expect


@pytest.mark.grade(points=2, tags=["add"])
@pytest.mark.parametrize("a, b", [(1, 2), (-3, 5)])
def test_add(student, reference, a, b):
    """adds two numbers"""
    want = reference.adder.add(a, b)
    got = student.add(a, b)
    times = got == a * b
    expect(got == want, str(want), str(got), "add a and b with +" if times else None, "times" if times else None)


@pytest.mark.grade(points=1, tags=["double"])
def test_double(student, record_property):
    """doubles"""
    record_property("double(21)", float(student.double(21)))
    expect(student.double(21) == 42, "42", str(student.double(21)))
'''
PUBLIC = '''import pytest

from grader.lab_api.checks import expect


@pytest.mark.grade(points=1, tags=["add"])
def test_add_zero(student):
    """0 + 0 is 0"""
    expect(student.add(0, 0) == 0, "0", str(student.add(0, 0)))
'''
QUESTIONS = [{"id": f"q{i}", "type": "single", "prompt": f"Toy question {i}?",
              "choices": {"a": "yes", "b": "no"}, "answer": "a",
              "explanation": f"toy-explanation-{i}: yes, always."} for i in range(1, 6)]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy lab's folder: lab.yaml, handout/, reference/, public/, hidden/, quiz.yaml."""
    lab = tmp_path_factory.mktemp("course") / "toy"
    files = {"handout/adder.py": STUB, "stubs/adder.py": STUB, "handout/README.md": "# Toy lab\nFill in adder.py.\n",
             "reference/adder.py": REFERENCE, "hidden/test_adder.py": HIDDEN,
             "public/test_adder_public.py": PUBLIC,
             "quiz.yaml": yaml.safe_dump({"title": "Toy quiz", "pass_fraction": 0.6, "questions": QUESTIONS}),
             "lab.yaml": yaml.safe_dump({"title": "Toy lab", "handout": "handout", "reference": "reference",
                                         "quiz": "quiz.yaml", "student_files": {"adder.py": ["add", "double"]},
                                         "call_timeout": 5})}
    for name, text in files.items():
        (lab / name).parent.mkdir(parents=True, exist_ok=True)
        (lab / name).write_text(text)
    return lab


def grade_py(*args, cwd=ROOT, script=ROOT / "grade.py"):
    return subprocess.run([sys.executable, str(script), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})


def test_single_grading(toy, tmp_path):
    out = tmp_path / "results.json"
    run = grade_py(toy, "--submission", toy / "reference", "--json", out)
    assert run.returncode == 0, run.stdout + run.stderr
    results = GradescopeResults.model_validate_json(out.read_text())
    assert results.score == 6 and {t.visibility for t in results.tests} == {"visible", "hidden"}


@pytest.mark.slow
def test_batch(toy, tmp_path):
    submissions = tmp_path / "submissions"
    (submissions / "good").mkdir(parents=True)
    (submissions / "good" / "adder.py").write_text(REFERENCE)
    (submissions / "times").mkdir()
    (submissions / "times" / "adder.py").write_text("def add(a, b):\n    return a * b\n")
    with zipfile.ZipFile(submissions / "zipped.zip", "w") as archive:
        archive.writestr("toy-work/adder.py", REFERENCE)
    out = tmp_path / "out"
    run = grade_py("batch", toy, submissions, "--out", out, "--workers", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {row["student"]: row for row in csv.DictReader(open(out / "grades.csv"))}
    assert {s: (r["status"], r["score"], r["add"], r["double"]) for s, r in rows.items()} == {
        "good": ("graded", "6", "5", "1"), "zipped": ("graded", "6", "5", "1"),
        "times": ("graded", "1", "1", "0")}
    summary = BatchSummary.model_validate_json((out / "summary.json").read_text())
    assert summary.mistakes[0].hint == "add a and b with +" and summary.mistakes[0].students == ["times"]
    assert summary.mistakes[0].id == "times"                        # the id the check gave the mistake
    page = (out / "report.html").read_text()                        # and what test_double measured
    assert "double(21): the class and the reference" in page and page.count('<circle class="mark"') == 2
    assert summary.checks[0].function == "add" and summary.checks[0].rate < 1

    rerun = grade_py("batch", toy, submissions, "--out", out)
    assert BatchSummary.model_validate_json((out / "summary.json").read_text()).graded_now == 0, rerun.stdout


def test_a_changed_lab_regrades(toy):
    """The hash of a submission covers the lab's manifest, checks, handout and reference."""
    lab = find_lab(toy)
    before = lab_fingerprint(lab, [], "cpu", "process")
    hidden = toy / "hidden" / "test_adder.py"
    hidden.write_text(HIDDEN.replace("doubles", "doubles 21"))
    try:
        assert lab_fingerprint(lab, [], "cpu", "process") != before
    finally:
        hidden.write_text(HIDDEN)
    assert lab_fingerprint(lab, [], "cpu", "process") == before
    assert lab_fingerprint(lab, ["add"], "cpu", "process") != before != lab_fingerprint(lab, [], "cuda", "process")
    assert lab_fingerprint(lab, [], "cpu", "bubblewrap") != before


@pytest.mark.slow
def test_release_runs_public_checks_only(toy, tmp_path):
    out = tmp_path / "release"
    assert grade_py("release", toy, "--out", out, "--quiz", "exam").returncode == 0     # a graded class
    text = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    for secret in ("toy-reference-marker", "toy-hidden-marker", "toy-explanation-"):
        assert secret not in text
    assert (out / "assignments" / "toy" / "README.md").is_file()
    (out / "assignments" / "toy" / "adder.py").write_text(REFERENCE)
    run = grade_py("toy", "--json", tmp_path / "done.json", cwd=out, script=out / "grade.py")
    assert run.returncode == 0, run.stdout + run.stderr
    results = GradescopeResults.model_validate_json((tmp_path / "done.json").read_text())
    assert [(t.name, t.visibility) for t in results.tests] == [("0 + 0 is 0", "visible")]


@pytest.mark.slow
def test_gradescope_bundle(toy, tmp_path):
    bundle = tmp_path / "toy.zip"
    assert grade_py("export", toy, "--gradescope", bundle).returncode == 0
    autograder = tmp_path / "autograder"
    zipfile.ZipFile(bundle).extractall(autograder / "source")
    (autograder / "submission").mkdir()
    (autograder / "submission" / "adder.py").write_text(REFERENCE)
    run = subprocess.run(["bash", autograder / "source" / "run_autograder"], capture_output=True, text=True,
                         env={**os.environ, "AUTOGRADER": str(autograder), "GRADER_PYTHON": sys.executable},
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads((autograder / "results" / "results.json").read_text())
    assert GradescopeResults.model_validate(results).score == 6
