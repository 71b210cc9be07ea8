"""The judge's own run of the lab's recipe (conftest.py: recipe). It runs in a process of its own
(grader.lab_api.TrustedWork), where only torch and the lab's given modules are imported."""


def train(given, seed):
    """The recipe's run at `seed`: {"train_losses": [...], "state_dict": {name: CPU tensor}}."""
    model = given.tiny.build_model(seed)
    losses = given.tiny.train(model, seed=seed)
    return {"train_losses": losses, "state_dict": {k: v.cpu() for k, v in model.state_dict().items()}}
