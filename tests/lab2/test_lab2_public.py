"""Lab 2's public checks, as learners have them: in a release handout (no reference, no hidden
checks), each common mistake loses public points with a hint that names it, a function that does
nothing or reads the layers earns nothing, the reference keeps full marks, and the "done when"
boxes are ticked only for what passed here, with a word on the hidden checks."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_lab2_grading import GROUPS, MUTANTS, hint_words, mutant_folder

from grader.core.request import Device, Request, Selection
from grader.core.runner import grade
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"
PARTS = ["positions", "invariance"]
CACHE = {}


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    out = tmp_path_factory.mktemp("handout") / "lab2"
    run = subprocess.run([sys.executable, str(ROOT / "grade.py"), "release", "lab2", "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


@pytest.fixture
def graded(handout, zygote):
    """graded(name) -> the LabResults of tests/submissions/<name> (or the reference) in the handout."""
    lab = find_lab(handout / "grader" / "labs" / "lab2")
    assert lab.reference is None and [v for _, v in lab.test_folders] == ["visible"]

    def get(name):
        if name not in CACHE:
            zygote.reset()
            folder = ROOT / "reference" / "lab2" if name == "reference" else SUBMISSIONS / name
            CACHE[name] = grade(Request(lab, folder, Device.CPU, Selection(tuple(PARTS))), zygote)
        return CACHE[name]
    return get


@pytest.fixture
def graded_one(handout, zygote):
    """graded_one(folder or tests/submissions name, function) -> LabResults of that function's public checks."""
    lab = find_lab(handout / "grader" / "labs" / "lab2")

    def get(name, function):
        if (name, function) not in CACHE:
            zygote.reset()
            folder = name if isinstance(name, Path) else SUBMISSIONS / name
            CACHE[name, function] = grade(Request(lab, folder, Device.CPU, Selection((function,))), zygote)
        return CACHE[name, function]
    return get


def points(results, function):
    return results.by_function([function])[function]


def test_reference_keeps_full_public_marks(graded):
    results = graded("reference")
    assert results.all_passed and results.score == results.max_score > 0
    assert {c.visibility for c in results.checks} == {"visible"}


@pytest.mark.parametrize("submission, function, hint", [
    ("mistakes_b", "apply_rope", "wrong sign: pairs turn clockwise"),
    ("mistakes_b", "apply_rope", "slices like x[..., 0::2] are views of x"),
    ("concatenated", "apply_rope", "concatenated [firsts..., seconds...] instead of interleaved"),
    ("mistakes_a", "apply_rope", "half-split rotate_half"),
    ("mistakes_b", "rope_frequencies", "positions start at 1"),
    ("mistakes_a", "rope_frequencies", "cos and sin are swapped"),
    ("exponent_slip", "rope_frequencies", "the exponent uses i / head_dim"),
    ("device_ignored", "rope_frequencies", "pass device=device"),
    ("mistakes_a", "is_permutation_invariant", "randperm(2) leaves the order unchanged"),
    ("inplace_invariance", "is_permutation_invariant", "x[:, perm] makes a copy"),
    ("fixed_reorderings", "is_permutation_invariant", "try every reordering"),
    ("mistakes_b", "is_permutation_invariant", "not the outputs position by position"),
    ("mistakes_b", "is_permutation_invariant", "atol=atol"),
    ("lesson_starter", "is_permutation_invariant", "rather than assert it"),
])
def test_each_mistake_loses_public_points_with_its_hint(graded, submission, function, hint):
    results = graded(submission)
    score, top = points(results, function)
    messages = [c.message for c in results.checks if c.function == function and c.status != "passed"]
    assert score < top and any(hint in m for m in messages), messages


@pytest.mark.parametrize("function, submission", [(f, s) for f, group in GROUPS.items() for s in group])
def test_each_slip_loses_public_points_with_its_hint(graded_one, lab2, function, submission):
    """What the course's checks catch, the handout's catch, with the same hint: a wrong dtype or
    device, cos and sin ignored, integer division, swaps or rotations only, one row, means, ==."""
    results = graded_one(submission, function)
    score, top = points(results, function)
    hints = [c.hint for c in results.checks if c.function == function and c.status != "passed"]
    assert score < top and any(hint_words(lab2, function, GROUPS[function][submission]) in h for h in hints), hints


@pytest.mark.parametrize("submission, function, words", [
    ("view_noncontig", "apply_rope", "NOT_CONTIGUOUS"), ("no_grad_rope", "apply_rope", "NO_GRADIENT"),
    ("reshape_cos_inplace", "apply_rope", "SECOND_CALL"), ("returns_x_unturned", "apply_rope", "RETURNED_X"),
    ("lesson_apply_rope", "apply_rope", "type promotion"),
    ("half_positions", "rope_frequencies", "positions in float16"),
    ("squeezed_frequencies", "rope_frequencies", ".squeeze() drops it")])
def test_the_contracts_edges_are_public(graded_one, lab2, submission, function, words):
    """Slips that need no hidden data are the handout's to catch: the lab's model (a permuted q, a
    backward pass), one position, thousands of positions, half precision."""
    results = graded_one(submission, function)
    hints = [c.hint for c in results.checks if c.function == function and c.status != "passed"]
    assert points(results, function)[0] < points(results, function)[1]
    assert any(hint_words(lab2, function, words) in h for h in hints), hints


@pytest.mark.parametrize("submission, function", [
    ("rope_rotation_matrix", "apply_rope"), ("rope_empty_like", "apply_rope"), ("stacked_orders",
                                                                                "is_permutation_invariant")])
def test_other_correct_styles_keep_full_public_marks(graded_one, submission, function):
    score, top = points(graded_one(submission, function), function)
    assert score == top > 0


@pytest.mark.slow
@pytest.mark.parametrize("file, function, description, words", MUTANTS, ids=[m[2] for m in MUTANTS])
def test_the_new_mutant_classes_lose_public_points_with_their_hint(graded_one, lab2, tmp_path, file, function,
                                                                  description, words):
    """grade.py mutants' new classes, made of correct code, lose points in the handout too, named."""
    results = graded_one(mutant_folder(tmp_path, file, function, description), function)
    hints = [c.hint for c in results.checks if c.function == function and c.status != "passed"]
    assert points(results, function)[0] < points(results, function)[1]
    assert any(hint_words(lab2, function, words) in h for h in hints), hints


@pytest.mark.parametrize("submission", ["identity_rope", "constant_rope"])
def test_doing_nothing_earns_no_public_points(graded, submission):
    results = graded(submission)
    assert points(results, "rope_frequencies")[0] == 0 and points(results, "apply_rope")[0] == 0


def test_reading_the_layers_earns_at_most_a_third(graded):
    results = graded("read_weights")
    score, top = points(results, "is_permutation_invariant")
    ran = [c.status for c in results.checks if c.function == "is_permutation_invariant"]
    assert top > 0 and "failed" in ran and set(ran) <= {"passed", "failed"}, ran    # judged, not crashed or skipped
    assert score <= top / 3


def test_no_box_ticked_for_wrong_code_and_the_hidden_checks_are_said(handout, tmp_path):
    """Through the handout's own grade.py: a wrong invariance check leaves its box empty."""
    shutil.copy(SUBMISSIONS / "mistakes_a" / "invariance.py", tmp_path / "invariance.py")
    run = subprocess.run([sys.executable, str(handout / "grade.py"), "lab2", "-k", "invariance",
                          "--submission", str(tmp_path)], cwd=handout, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "COLUMNS": "300"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert "☐ You demonstrated permutation invariance" in run.stdout
    assert "the course's grading adds hidden checks of the same contracts" in run.stdout


SEED_TELLER = '''def measure_loss_gap(seed=0, device="cpu", on_step=None):
    raise ValueError(f"run at seed {seed}")


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    raise ValueError(f"run at seed {seed}")
'''


@pytest.mark.parametrize("copy, seed", [("handout", 0), ("course", 5)])
def test_a_learners_copy_runs_the_experiments_at_seed_0_and_the_course_at_its_own(handout, zygote, tmp_path,
                                                                                 copy, seed):
    """The experiments' checks are public, with the same code: the course keeps back only its seed."""
    lab = find_lab(handout / "grader" / "labs" / "lab2") if copy == "handout" else find_lab("lab2")
    assert lab.given == (lab.folder / "given" if copy == "handout" else lab.handout)
    (tmp_path / "experiments.py").write_text(SEED_TELLER)
    zygote.reset()
    results = grade(Request(lab, tmp_path, Device.CPU, Selection(("experiments.py",))), zygote)
    messages = {c.message for c in results.checks}
    assert results.score == 0 and messages and all(f"run at seed {seed}" in m for m in messages), messages
    assert {c.visibility for c in results.checks} == {"visible"}


@pytest.mark.slow
def test_the_experiments_are_checked_in_a_learners_copy(graded_experiments):
    """The reference's runs are the recipe's and make the lab's claims: full marks, boxes ticked;
    made-up numbers lose every point there, with why, and leave the boxes empty."""
    reference, fabricated = graded_experiments(ROOT / "reference" / "lab2"), graded_experiments("fabricated")
    assert reference.all_passed and reference.score == reference.max_score == 20
    assert all(item.done for item in reference.done_when if item.graded)
    assert sum(item.graded for item in reference.done_when) == 2
    assert fabricated.score == 0
    assert all("do not come from the returned weights" in c.message for c in fabricated.checks)
    assert not any(item.done for item in fabricated.done_when)


@pytest.fixture
def graded_experiments(handout, zygote, tmp_path):
    """graded_experiments(folder or tests/submissions name) -> its experiments' LabResults in the
    handout, with the reference's other files."""
    lab = find_lab(handout / "grader" / "labs" / "lab2")

    def get(source):
        folder = tmp_path / str(source).replace("/", "_")
        shutil.copytree(ROOT / "reference" / "lab2", folder, ignore=shutil.ignore_patterns("__pycache__"))
        if not isinstance(source, Path):
            shutil.copy(SUBMISSIONS / source / "experiments.py", folder / "experiments.py")
        zygote.reset()
        return grade(Request(lab, folder, Device.CPU, Selection(("experiments.py",))), zygote)
    return get
