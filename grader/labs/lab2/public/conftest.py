"""The experiments start as soon as their checks are selected, each in a child of its own, and so
does the judge's own run of their recipe (in a process of its own, or read from .grade/ and
checked), so that all this training overlaps the other checks.

The seed: 0, the learner's default, in a handout; in the course's grading, the one its hidden
folder keeps (hidden/seed.py), which learners never see: the same checks, on other data."""
import hashlib
from pathlib import Path

import pytest
import torch

from grader import apart
from grader.checks import load_beside
from grader.memo import later
from grader.plugin import Reference, grade_of

RECIPE = Path(__file__).with_name("recipe.py")     # the judge's run of the recipe, and its check
FED = Path(__file__).with_name("fed")              # the positions.py the experiments run with
COURSE_SEED = Path(__file__).parent.parent / "hidden" / "seed.py"
EXPERIMENTS = ("measure_loss_gap", "extrapolation_runs")
RUNS = {"measure_loss_gap": [("learned", "lookback"), ("none", "lookback"), ("none", "majority")],
        "extrapolation_runs": [("learned", "lookback"), ("rope", "lookback")]}       # (pos, task)


recipe_code = load_beside(__file__, "recipe")


@pytest.fixture(scope="session")
def seed():
    """The seed the experiments run with."""
    return load_beside(__file__, "../hidden/seed").SEED if COURSE_SEED.is_file() else 0


def judge_folders(lab):
    """Where the judge's own copy of the experiments' code comes from, the first that has a name
    winning: the correct RoPE of fed/positions.py, the handout's given modules, pristine (lab.given)."""
    return [FED, lab.given, lab.folder]


@pytest.fixture(scope="session")
def given(lab):
    """The handout's model.py and tasks.py, imported here with fed/positions.py as their positions.py."""
    return Reference.over(judge_folders(lab))


@pytest.fixture(scope="session", autouse=True)
def experiments(request, student, device, seed):
    """{experiment: Future of its result} for the experiments whose checks are selected, each run
    with a correct RoPE in place of the student's positions.py (fed/positions.py). The course's
    seed is hidden: no check shows what those runs print."""
    selected = {grade_of(item).function for item in request.session.items}
    fed = {"positions.py": (FED / "positions.py").read_bytes()}
    return {name: student.submit(name, seed=seed, device=str(device), replace=fed, hidden=COURSE_SEED.is_file())
            for name in EXPERIMENTS if name in selected}


def recipe_files(given):
    """Every file the recipe's run executes, for its memo's key: toy_attention.py too, whose
    turn_pairs is the checks' RoPE (fed/positions.py imports it)."""
    return [given.model.__file__, given.tasks.__file__, given.positions.__file__, given.toy_attention.__file__,
            __file__, RECIPE]


@pytest.fixture(scope="session", autouse=True)
def recipe(request, experiments, lab, device, seed):
    """{(pos, task): Future of the judge's run of the lab's recipe for this seed}, for the
    experiments selected: {"train_losses": [...], "state_dict": {name: CPU tensor}}. Trusted code
    only: the handout's model.py and tasks.py with the RoPE of fed/positions.py, trained in a process
    of its own (recipe.train), or kept in .grade/ for this lab's files and checked
    (recipe.replays). The main thread alone draws from this process's global RNG."""
    if not experiments:
        yield {}
        return
    given = request.getfixturevalue("given")
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    code = hashlib.sha256(b"".join(Path(f).read_bytes() for f in recipe_files(given))).hexdigest()

    def run(pool, pos, task):
        start = lambda: apart.submit(pool, judge_folders(lab), RECIPE, "train", pos, task, seed, str(device))
        check = lambda kept: recipe_code.replays(given, kept, pos, task, seed, device)
        return later("lab2-recipe", (pos, task, seed, where, torch.__version__, code), start, check)

    runs = dict.fromkeys(run for name in experiments for run in RUNS[name])
    with apart.pool() as pool:
        yield {key: run(pool, *key) for key in runs}
