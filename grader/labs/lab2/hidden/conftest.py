"""The experiments start as soon as hidden checks do, each in a child of its own, and so does the
judge's own run of their recipe (in a process of its own, or read from .grade/ and checked), so
that all this training overlaps the other checks."""
import hashlib
import importlib.util
from pathlib import Path

import pytest
import torch

from grader import apart
from grader.checks import load_beside
from grader.memo import later
from grader.plugin import grade_of

RECIPE = Path(__file__).with_name("recipe.py")     # the judge's run of the recipe, and its check
SEED = 5                        # not the students' default 0: results must hold for any seed
EXPERIMENTS = ("measure_loss_gap", "extrapolation_runs")
RUNS = {"measure_loss_gap": [("learned", "lookback"), ("none", "lookback"), ("none", "majority")],
        "extrapolation_runs": [("learned", "lookback"), ("rope", "lookback")]}       # (pos, task)


def _load(path):
    spec = importlib.util.spec_from_file_location(f"lab2_hidden_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


recipe_code = _load(RECIPE)


@pytest.fixture(scope="session")
def seed():
    """The seed the experiments run with."""
    return SEED


@pytest.fixture(scope="session", autouse=True)
def experiments(request, student, reference, device):
    """{experiment: Future of its result} for the experiments whose checks are selected, each run
    with a correct RoPE in place of the student's positions.py (fed_rope.py)."""
    selected = {grade_of(item).function for item in request.session.items}
    fed = {"positions.py": load_beside(__file__, "fed_rope").positions_file(reference)} \
        if selected & set(EXPERIMENTS) else {}
    return {name: student.submit(name, seed=SEED, device=str(device), replace=fed)
            for name in EXPERIMENTS if name in selected}


@pytest.fixture(scope="session", autouse=True)
def recipe(experiments, reference, device):
    """{(pos, task): Future of the judge's run of the lab's recipe for SEED}, for the experiments
    selected: {"train_losses": [...], "state_dict": {name: CPU tensor}}. Trusted code only: the
    handout's model.py and tasks.py with the reference RoPE, trained in a process of its own
    (recipe.train), or kept in .grade/ for this lab's files and checked (recipe.replays). The
    main thread alone draws from this process's global RNG."""
    if not experiments:
        yield {}
        return
    model, tasks = reference.model, reference.tasks
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    files = [model.__file__, tasks.__file__, reference.positions.__file__, __file__, RECIPE]
    lab = hashlib.sha256(b"".join(Path(f).read_bytes() for f in files)).hexdigest()
    folders = [Path(reference.positions.__file__).parent, Path(model.__file__).parent]   # as `reference` has them

    def run(pool, pos, task):
        start = lambda: apart.submit(pool, folders, RECIPE, "train", pos, task, SEED, str(device))
        check = lambda kept: recipe_code.replays(reference, kept, pos, task, SEED, device)
        return later("lab2-recipe", (pos, task, SEED, where, torch.__version__, lab), start, check)

    runs = dict.fromkeys(run for name in experiments for run in RUNS[name])
    with apart.pool() as pool:
        yield {key: run(pool, *key) for key in runs}
