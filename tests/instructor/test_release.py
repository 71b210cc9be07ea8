"""What leaves the instructor's machine: the learners' release of lab 2 holds nothing secret and
gives public feedback; the Gradescope bundle grades a submission in a fake /autograder tree."""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
import yaml

from grader.core.results import Check, GradescopeResults, LabResults
from grader.core.submissions import submission_files
from grader.instructor.gradebook import not_graded
from grader.instructor.release import stage
from grader.quiz.model import load_quiz
from grader.readers.manifest import ENGINE, engine_files, find_lab

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "lab2"
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "gradescope_results.schema.json").read_text())


def grade_py(*args, cwd=ROOT, script=ROOT / "grade.py"):
    return subprocess.run([sys.executable, str(script), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "COLUMNS": "200"})


def secret_lines(paths, given):
    """Lines of `paths` long enough to identify them, and found in nothing learners are given."""
    return {line.strip() for path in paths for line in path.read_text().splitlines()
            if len(line.strip()) > 25 and line.strip() not in given}


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "lab2"
    run = grade_py("release", "lab2", "--out", out, "--quiz", "exam")      # a graded class's release
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def test_release_leaks_nothing(released):
    lab = find_lab("lab2")
    files = [p for p in released.rglob("*") if p.is_file()]
    assert not [p for p in files if {"reference", "hidden"} & set(p.relative_to(released).parts)]
    text = "\n".join(p.read_text(errors="replace") for p in files)
    shipped = {line.strip() for line in text.splitlines()}
    given = {line.strip() for path in [*lab.handout.rglob("*.py"), *(lab.folder / "public").rglob("*.py"),
                                       *(ENGINE / f for f in engine_files()), *lab.child_modules]
             for line in path.read_text().splitlines()}
    reference = secret_lines(lab.reference.rglob("*.py"), given)
    hidden = secret_lines((lab.folder / "hidden").rglob("*.py"), given)
    assert len(reference) > 10 and len(hidden) > 50
    assert not (reference | hidden) & shipped
    quiz = yaml.safe_load((released / "quizzes" / "lab2.yaml").read_text())
    assert not load_quiz(released / "quizzes" / "lab2.yaml").keyed
    key = load_quiz(lab.quiz)
    assert not [q.explanation for q in key.questions if q.explanation.strip()[:60] in text]
    assert all(set(q) <= {"id", "type", "prompt", "choices", "unit"} for q in quiz["questions"])
    assert not [h.reveal for h in key.hard_questions if h.reveal.strip()[:60] in text]      # no reveal either
    manifest = yaml.safe_load((released / "grader" / "labs" / "lab2" / "lab.yaml").read_text())
    assert "reference" not in manifest and manifest["student_files"] == lab.manifest.student_files
    assert sorted(p.name for p in (released / "grader" / "labs" / "lab2").iterdir()) == \
        ["given", "lab.yaml", "model_calls.py", "public", "stubs", "toy_attention.py"]
    given_modules = {p.name: p.read_bytes() for p in (released / "grader" / "labs" / "lab2" / "given").iterdir()}
    assert given_modules == {p.name: p.read_bytes() for p in lab.handout.glob("*.py")      # pristine, for the
                             if p.name not in lab.manifest.student_files}                  # judge, no solution
    assert {p.name for p in (released / "assignments" / "lab2").iterdir()} >= {"README.md", "positions.py", "model.py"}


def answer_forms(question):
    """How a key could be written in a comment or docstring: numbers in their usual forms, choice
    lists with any separator, expressions of a text answer."""
    if question.type == "numeric":
        value = question.answer
        return {f"{value:g}", f"{value}", f"{value:.1f}", f"{value * 1e6:,.0f}", f"{value * 1e6:.0f}"}
    if question.type == "multiple":
        return {separator.join(question.answer) for separator in (", ", ",", " ", "")} - set(question.answer)
    if question.type == "text":
        return {question.answer.expression} if question.answer.expression else set()
    return set()


def test_release_carries_no_answer_key(released):
    """The learners' copy has no answer of the lesson test anywhere, nor the engine any course
    content: numbers, choice keys and expressions of the key are all absent."""
    key = load_quiz(find_lab("lab2").quiz)
    forms = {form for question in key.questions for form in answer_forms(question)}
    assert {"38.6", "38,597,376", "a, b, e", "m - n"} <= forms
    for path in (p for p in released.rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        found = {form for form in forms if form in text and (len(form) > 4 or re.search(
            rf"(?<![\w.]){re.escape(form)}(?!\d|\.\d)", text))}     # '38.6', (38.6M) and 38.6. too
        assert not found, f"{path.relative_to(released)} holds {found}"
    engine = [released / "grade.py", *(released / "grader").glob("*.py")]
    choices = {text for question in key.questions for text in (question.choices or {}).values()}
    assert not [(path.name, c) for path in engine for c in choices if c[:30] in path.read_text()]


def test_release_has_what_the_lesson_gives(released):
    """A README to start from, the unscored hard questions (as the lesson shows them), and every
    package the handout's commands need, matplotlib for --experiments plots included."""
    readme = (released / "README.md").read_text()
    assert "pip install -r requirements.txt" in readme and "grade.py lab2 --experiments" in readme
    assert "grade.py quiz lab2" in readme and "assignments/lab2/README.md" in readme
    hard = load_quiz(released / "quizzes" / "lab2.yaml").hard_questions
    assert [h.prompt for h in hard] == [h.prompt for h in load_quiz(find_lab("lab2").quiz).hard_questions]
    requirements = (released / "requirements.txt").read_text().splitlines()
    assert "matplotlib" in requirements and any(line.startswith("torch") for line in requirements)


def test_the_cpu_install_asks_one_index_for_torch_alone(released):
    """requirements-cpu.txt asks PyTorch's CPU index for torch alone (and what torch needs): the
    grader's other packages are never looked up there, so an index that cannot be reached costs
    a look-up, not one per package for minutes; requirements.txt then finds torch installed (or,
    alone, takes PyPI's)."""
    lines = [line for line in (released / "requirements-cpu.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    torch = next(line for line in (released / "requirements.txt").read_text().splitlines() if line.startswith("torch"))
    assert lines == ["--index-url https://download.pytorch.org/whl/cpu", torch]
    readme = (released / "README.md").read_text()
    cpu = readme.index("pip install -r requirements-cpu.txt")
    assert cpu < readme.index("pip install -r requirements.txt")
    assert "NVIDIA GPU" in readme and "extra-index-url" not in readme


def test_release_ships_the_pristine_stubs_and_refuses_a_changed_copy(tmp_path):
    """A solution tried in the handout folder is never shipped: release refuses, in one line, and
    with --ignore-working-copy ships the pristine stubs."""
    course = tmp_path / "course"
    shutil.copytree(ROOT / "grader" / "labs" / "lab2", course / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "assignments" / "lab2", course / "handout", ignore=shutil.ignore_patterns("__pycache__"))
    manifest = yaml.safe_load((course / "lab" / "lab.yaml").read_text())
    manifest.update(handout="../handout", reference=str(REFERENCE), quiz=str(ROOT / "quizzes" / "lab2.yaml"),
                    child_modules=["toy_attention.py", "model_calls.py"])
    (course / "lab" / "lab.yaml").write_text(yaml.safe_dump(manifest))
    shutil.copy(REFERENCE / "invariance.py", course / "handout" / "invariance.py")
    run = grade_py("release", course / "lab", "--out", tmp_path / "out")
    assert run.returncode == 2 and len(run.stdout.strip().splitlines()) == 1, run.stdout
    assert "invariance.py" in run.stdout and "--ignore-working-copy" in run.stdout
    assert not (tmp_path / "out").exists()
    run = grade_py("release", course / "lab", "--out", tmp_path / "out", "--ignore-working-copy")
    assert run.returncode == 0, run.stdout + run.stderr
    shipped = tmp_path / "out" / "assignments" / "lab" / "invariance.py"
    assert shipped.read_bytes() == (ROOT / "grader" / "labs" / "lab2" / "stubs" / "invariance.py").read_bytes()


@pytest.mark.slow
def test_learners_get_public_feedback(released, tmp_path):
    shutil.copy(REFERENCE / "invariance.py", released / "assignments" / "lab2")
    out = tmp_path / "results.json"
    run = grade_py("lab2", "-k", "invariance", "--json", out, cwd=released, script=released / "grade.py")
    assert run.returncode == 0, run.stdout + run.stderr
    results = GradescopeResults.model_validate_json(out.read_text())
    assert results.tests and {t.visibility for t in results.tests} == {"visible"}
    assert results.score == sum(t.max_score for t in results.tests)


def test_practice_quiz_and_a_used_folder(tmp_path):
    run = grade_py("release", "lab2", "--out", tmp_path / "practice", "--quiz", "practice")
    assert run.returncode == 0, run.stdout + run.stderr
    assert load_quiz(tmp_path / "practice" / "quizzes" / "lab2.yaml").keyed
    run = grade_py("release", "lab2", "--out", tmp_path / "practice")
    assert run.returncode == 2 and "expected a new or empty folder" in run.stdout


@pytest.mark.slow
def test_gradescope_bundle_grades_in_a_fake_autograder(tmp_path):
    bundle = tmp_path / "lab2.zip"
    run = grade_py("export", "lab2", "--gradescope", bundle)
    assert run.returncode == 0, run.stdout + run.stderr
    with zipfile.ZipFile(bundle) as archive:
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
        archive.extractall(tmp_path / "autograder" / "source")
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert {"grade.py", "requirements.txt", "grader/labs/lab2/hidden/test_positions.py",
            "reference/lab2/positions.py", "assignments/lab2/positions.py"} <= set(modes)
    source = tmp_path / "autograder" / "source"
    assert any(line.startswith("torch") for line in (source / "requirements.txt").read_text().splitlines())
    assert subprocess.run(["bash", "-n", source / "setup.sh"]).returncode == 0
    shutil.copy(source / "run_autograder", tmp_path / "autograder")        # where Gradescope puts it

    def autograde(files, path=os.environ["PATH"], status=0):
        shutil.rmtree(tmp_path / "autograder" / "submission", ignore_errors=True)
        for name, data in files.items():
            (tmp_path / "autograder" / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "autograder" / "submission" / name).write_bytes(data)
        run = subprocess.run([shutil.which("bash"), tmp_path / "autograder" / "run_autograder"], capture_output=True,
                             text=True, timeout=600, env={**os.environ, "AUTOGRADER": str(tmp_path / "autograder"),
                                                          "GRADER_PYTHON": sys.executable, "PATH": path})
        assert run.returncode == status, run.stdout + run.stderr
        results = tmp_path / "autograder/results/results.json"
        if status:                              # the grader's fault: said on stdout, no results at all
            assert not results.exists()
            return run.stdout
        written = json.loads(results.read_text())
        results.unlink()
        jsonschema.validate(written, SCHEMA)
        graded = GradescopeResults.model_validate(written)
        assert graded.output in run.stdout and f"score {graded.score:g}" in run.stdout     # a readable log
        assert run.stdout.startswith(f"grading in the sandbox {graded.extra_data['sandbox']}: ")
        return graded

    results = autograde({f"upload/{name}": (REFERENCE / name).read_bytes()       # one wrapping folder
                         for name in ("positions.py", "invariance.py")})
    experiments = {"measure_loss_gap", "extrapolation_runs"}
    folded = [t for t in results.tests if t.name.endswith("hidden checks")]     # students see their total:
    assert {t.visibility for t in results.tests} == {"visible"} and len(folded) == 1     # hidden ones are one line
    assert {t.status for t in results.tests if not experiments & set(t.tags)} == {"passed"}
    assert results.score == sum(t.max_score for t in results.tests if not experiments & set(t.tags)) > 0
    assert "Not submitted (graded as the stubs): experiments.py" in results.output
    raising = "def rope_frequencies(head_dim, seq_len, base=10000.0, device='cpu'):\n    raise ValueError('boom')\n"
    results = autograde({"lab2.ipynb": json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": raising}]}).encode()})
    said = [t.output for t in results.tests if t.tags[:1] == ["rope_frequencies"]]     # an upload's cells, as cells
    assert said and "cell 1, line 2" in said[0] and "positions.py line" not in said[0], said
    results = autograde({"notes.txt": b"hello"})
    assert results.score == 0 and not results.tests and results.output.startswith("Not graded: none of positions.py")
    results = autograde({"notes.txt": b"hello"}, path=str(tmp_path))     # no bwrap: the process sandbox, as root
    assert results.extra_data["sandbox"] == "process" and results.extra_data["user"] == "own"
    run = grade_py("export", "lab2", "--gradescope", tmp_path / "required.zip", "--sandbox", "required")
    assert run.returncode == 0, run.stdout + run.stderr
    with zipfile.ZipFile(tmp_path / "required.zip") as archive:
        (tmp_path / "autograder" / "run_autograder").write_bytes(archive.read("run_autograder"))
    said = autograde({"positions.py": (REFERENCE / "positions.py").read_bytes()}, path=str(tmp_path), status=3)
    assert "bubblewrap cannot run here, and this bundle grades only in bubblewrap" in said
    assert "through no fault of the student's" in said


# -- Gradescope's results.json, by its specification ------------------------------------------------------
def test_results_validate_against_gradescopes_specification():
    levels = ["hidden", "after_due_date", "after_published", "visible"]
    checks = [Check(name=f"check {level}", test=f"hidden/test_x.py::test_{level}", tags=["f"], points=2,
                    score=2 * (level == "visible"), status="passed" if level == "visible" else "failed",
                    message="expected 1, saw 2", output="printed", visibility=level) for level in levels]
    results = LabResults(lab="lab", title="A lab", submission="s", device="cpu", sandbox="bubblewrap",
                         execution_time=1.5, checks=checks, done_when=[]).gradescope()
    written = json.loads(results.model_dump_json())
    jsonschema.validate(written, SCHEMA)
    assert [t["visibility"] for t in written["tests"]] == levels and written["extra_data"]["sandbox"] == "bubblewrap"
    assert {t["output_format"] for t in written["tests"]} == {"text"} and written["output_format"] == "text"
    jsonschema.validate(json.loads(not_graded("why", "process").model_dump_json()), SCHEMA)
    with pytest.raises(jsonschema.ValidationError):          # the shape before: a key the spec lacks
        jsonschema.validate({**written, "sandbox": "bubblewrap"}, SCHEMA)
    assert "failed: check hidden (0/2)" in results.summary()
    assert written["visibility"] == "visible" and written["stdout_visibility"] == "hidden"   # the log names them


def test_a_total_shows_only_when_the_lab_says_so():
    """Gradescope hides the total while any test is hidden: the output then gives the visible
    checks' points alone, unless lab.yaml's score_visibility says when the total may be seen."""
    checks = [Check(name=f"check {level}", test=f"t.py::{level}", tags=["f"], points=2, score=1,
                    status="failed", visibility=level) for level in ("visible", "hidden", "after_due_date")]
    graded = LabResults(lab="lab", title="A lab", submission="s", device="cpu", sandbox="process",
                        execution_time=1, checks=checks, done_when=[])
    output = graded.gradescope().output
    assert "1/2 points on the visible checks" in output and "3/6" not in output and "2 more" in output
    shown = graded.gradescope("after_due_date")
    assert shown.output == "A lab: 3/6 points" and shown.visibility == "after_due_date"
    graded.checks = checks[:1]
    assert graded.gradescope().output == "A lab: 1/2 points"
    graded.checks = checks[1:]
    assert "/" not in graded.gradescope().output and "2 checks hidden" in graded.gradescope().output
    lab = find_lab("lab2")
    assert lab.manifest.model_validate({**lab.manifest.model_dump(), "score_visibility": "after_published"})
    with pytest.raises(ValueError):
        lab.manifest.model_validate({**lab.manifest.model_dump(), "score_visibility": "soon"})


def test_a_checks_visibility_is_set_in_lab_yaml():
    lab = find_lab("lab2")
    hidden = lab.folder / "hidden" / "test_positions.py"
    assert lab.visibility_of(hidden, "hidden/test_positions.py::test_a[x]") == "hidden"
    assert lab.visibility_of(lab.folder / "public" / "test_p.py", "public/test_p.py::test_a") == "visible"
    table = {"hidden/test_positions.py": "after_due_date", "hidden/test_positions.py::test_a": "after_published"}
    lab.manifest = lab.manifest.model_copy(update={"visibility": table})
    assert lab.visibility_of(hidden, "hidden/test_positions.py::test_b") == "after_due_date"
    assert lab.visibility_of(hidden, "hidden/test_positions.py::test_a[x]") == "after_published"


def test_a_learners_grading_runs_the_given_modules_the_judge_does(released, tmp_path):
    """The judge builds the experiments' truth from given/ (pristine); the children must train with
    the same modules, not the learner's edited copies in the handout: a tasks.py tinkered with (its
    learning rate) failed honest experiments locally, 0 of 18, that the course's grading passes."""
    copy = tmp_path / "release"
    shutil.copytree(released, copy)
    tasks = copy / "assignments" / "lab2" / "tasks.py"
    tasks.write_text(tasks.read_text() + "\nLR = 3.3e-3  # the learner tinkering\n")
    lab = find_lab(copy / "grader" / "labs" / "lab2")
    files, _ = submission_files(lab)
    assert files["tasks.py"] == (lab.given / "tasks.py").read_bytes()
    assert files["model.py"] == (lab.given / "model.py").read_bytes()
    mine, _ = submission_files(lab, pristine=False)         # --experiments: the learner's own run, as edited
    assert mine["tasks.py"] == tasks.read_bytes()


def test_a_release_names_no_hidden_check(tmp_path):
    """lab.yaml's visibility table may name hidden checks (their files and tests, which say what they
    try): a release keeps only the entries of the public checks it ships; the Gradescope bundle all."""
    copy = tmp_path / "example"
    shutil.copytree(ROOT / "tests" / "labs" / "example", copy)
    manifest = yaml.safe_load((copy / "lab.yaml").read_text())
    manifest.update(handout=str(ROOT / "tests" / "labs" / "example" / "handout"),
                    visibility={"hidden/test_attention.py::test_softmax_large_inputs": "after_due_date",
                                "hidden/test_attention.py": "after_published",
                                "public/test_attention_public.py": "after_published"})
    (copy / "lab.yaml").write_text(yaml.safe_dump(manifest))
    lab = find_lab(copy)
    for hidden, kept in ((False, {"public/test_attention_public.py": "after_published"}),
                         (True, manifest["visibility"])):
        staged = stage(lab, tmp_path / f"staged-{hidden}", hidden=hidden, reference=hidden)
        assert staged.manifest.visibility == kept
    released = (tmp_path / "staged-False").rglob("*")
    assert not [p for p in released if p.is_file() and "test_softmax_large_inputs" in p.read_text(errors="replace")]
