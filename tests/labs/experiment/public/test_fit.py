"""Checks of fit.py: its run is the recipe's, losses and weights, at two seeds (so that a fit that
ignores its seed shows), held to the judge's own run (conftest.py: recipe).

TOLERANCE: the judge's run and an honest fit() run the same code on the same CPU and agree bit for
bit. Measured at seed 0 (tests/lab_api/test_provenance.py), largest relative distance of a weight
tensor / absolute of a loss: an own SGD loop, no optimizer, 4.6e-7 / 9.5e-7; one step more, the
recipe's losses returned, 1.2 (3.6 at seed 3) / 0. 1e-4 lies far between.
"""
import pytest
import torch
from pydantic import BaseModel, ConfigDict

from grader.lab_api import provenance
from grader.lab_api.provenance import Parted, Parting, Seed

SEEDS = (Seed(0), Seed(3))
TOLERANCE = 1e-4                # relative, of a loss and of a weight tensor (see above)
CALL = "train(build_model(seed), seed=seed)"


class Run(BaseModel):
    """What fit returns."""
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    train_losses: list[float]
    state_dict: dict[str, torch.Tensor]


def explain(where: Parted):
    """The hint for losses that are not the recipe's."""
    return {Parting.STEPS: f"trained {where.returned} steps, the recipe trains {where.steps}: keep train()'s default",
            Parting.ORDER: "the recipe's losses in another order: return the list train() returns",
            Parting.START: "another first loss: build_model(seed) and train(model, seed=seed), the same seed",
            Parting.LATER: f"the recipe's for {where.step} step(s), then not: train with train() alone"}[where.how]


@pytest.mark.grade(points=2, tags=["fit"])
def test_fit_is_the_recipes_run(student, recipe):
    """fit returns the recipe's run: the losses train() gives and the weights it leaves"""
    calls = {seed: student.submit("fit", seed=seed.value) for seed in SEEDS}        # both at once
    outcomes = provenance.per_seed(SEEDS, lambda seed: (provenance.returned(calls[seed], "fit()", Run, "fit.py"),))

    def check(run, seed):
        judge = recipe.get(seed.value)
        failure = provenance.losses_provenance(run.train_losses, judge["train_losses"], "fit()", CALL, explain,
                                               TOLERANCE) \
            or provenance.weights_provenance(run.state_dict, judge["state_dict"], "fit()", CALL,
                                             "trained on after train(): return model.state_dict() right after it",
                                             TOLERANCE)
        if failure:
            raise failure
    provenance.each_seed(outcomes, check)
