"""The judge's runs of the lab's recipe, for the checks of fit (test_fit.py): trained in a process
of its own when a check first asks, kept in .grade/ for these files and torch, and used, read back,
only once their first steps replay here (grader.lab_api.provenance.replays)."""
from pathlib import Path

import pytest
import torch

from grader.lab_api import TrustedWork, trusted_modules
from grader.lab_api.provenance import replays, work_key

RECIPE = Path(__file__).with_name("recipe.py")


@pytest.fixture(scope="session")
def given(lab):
    """The handout's tiny.py, pristine, imported in the judge: trusted code."""
    return trusted_modules([lab.given])


@pytest.fixture(scope="session")
def recipe(lab, given):
    """recipe.get(seed): the judge's run of the recipe, {"train_losses", "state_dict"} (on the CPU,
    as fit's runs are)."""
    def check(kept, seed):
        model = given.tiny.build_model(seed)
        return replays(kept, model, given.tiny.STEPS, lambda steps: given.tiny.train(model, steps=steps, seed=seed))
    files = [lab.given / "tiny.py", RECIPE]
    with TrustedWork("experiment-recipe", [lab.given], RECIPE, "train", work_key(files, torch.device("cpu")),
                     check) as runs:
        yield runs
