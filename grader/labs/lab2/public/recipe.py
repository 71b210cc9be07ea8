"""The judge's own run of the lab's recipe (conftest.py: recipe_runs).

`train` runs in a process of its own (grader.lab_api.TrustedWork), where only torch and the lab's
trusted modules are imported: build_model initialises from torch's global RNG, which nothing else
there draws from meanwhile. A run read back from .grade/ is checked in the judge
(conftest.py: replays, with grader.lab_api.provenance.replays).
"""


def train(given, pos, task, seed, device):
    """The recipe's run: {"train_losses": [...], "state_dict": {name: CPU tensor}}."""
    model = given.model.build_model(given.model.Config(pos=pos), seed=seed, device=device)
    losses = given.tasks.train(model, task, seed=seed)
    return {"train_losses": losses, "state_dict": {k: v.cpu() for k, v in model.state_dict().items()}}
