"""The experiments start as soon as hidden checks do, each in a child of its own, and so does the
judge's own run of their recipe (in a thread here, or read from .grade/), so that all this
training overlaps the other checks."""
import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from grader.checks import load_beside
from grader.memo import remembered
from grader.plugin import grade_of

SEED = 5                        # not the students' default 0: results must hold for any seed
EXPERIMENTS = ("measure_loss_gap", "extrapolation_runs")
RUNS = {"measure_loss_gap": [("learned", "lookback"), ("none", "lookback"), ("none", "majority")],
        "extrapolation_runs": [("learned", "lookback"), ("rope", "lookback")]}       # (pos, task)


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
    handout's model.py and tasks.py with the reference RoPE."""
    if not experiments:
        yield {}
        return
    model, tasks = reference.model, reference.tasks         # imported here, not in the thread
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    files = [model.__file__, tasks.__file__, reference.positions.__file__, __file__]
    lab = hashlib.sha256(b"".join(Path(f).read_bytes() for f in files)).hexdigest()

    def run(pos, task):
        def train():
            built = model.build_model(model.Config(pos=pos), seed=SEED, device=device)
            losses = tasks.train(built, task, seed=SEED)
            return {"train_losses": losses, "state_dict": {k: v.cpu() for k, v in built.state_dict().items()}}
        return remembered("lab2-recipe", (pos, task, SEED, where, torch.__version__, lab), train)

    runs = dict.fromkeys(run for name in experiments for run in RUNS[name])
    with ThreadPoolExecutor(1) as pool:
        yield {key: pool.submit(run, *key) for key in runs}
