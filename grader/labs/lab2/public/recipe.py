"""The judge's own run of the lab's recipe (conftest.py: recipe), and the check of a kept one.

`train` runs in a process of its own (grader.lab_api.TrustedWork): build_model initialises from
torch's global RNG, which nothing else there draws from meanwhile. A run kept in .grade/
(grader/lab_api/memo.py) is used only after its first REPLAY steps are replayed here and give its losses,
which shows that it starts from the recipe's initial weights and data; its weights must have the
shapes of build_model's, and the judge's measurements kept with it (provenance.know) be finite.
Anything else in the file is covered by the memo's digest.
"""
import math

REPLAY = 2                      # steps replayed: the initial weights, the first batch, one update
REPLAY_TOLERANCE = 1e-6         # relative: float32 rounding (another device's kernels), no more


def train(given, pos, task, seed, device):
    """The recipe's run: {"train_losses": [...], "state_dict": {name: CPU tensor}}."""
    model = given.model.build_model(given.model.Config(pos=pos), seed=seed, device=device)
    losses = given.tasks.train(model, task, seed=seed)
    return {"train_losses": losses, "state_dict": {k: v.cpu() for k, v in model.state_dict().items()}}


def replays(given, kept, pos, task, seed, device):
    """Whether a kept run is the recipe's as far as its first REPLAY steps and its shapes show, its
    scores (when the judge kept them with it) finite."""
    model = given.model.build_model(given.model.Config(pos=pos), seed=seed, device=device)
    shapes = {name: tuple(w.shape) for name, w in model.state_dict().items()}
    losses, weights = kept["train_losses"], kept["state_dict"]
    if len(losses) != given.tasks.STEPS or {k: tuple(w.shape) for k, w in weights.items()} != shapes:
        return False
    if not all(math.isfinite(x) for x in losses) or not all(w.isfinite().all() for w in weights.values()):
        return False
    if not all(len(score) == 5 and all(math.isfinite(x) for x in score) for score in kept.get("scores", [])):
        return False
    replayed = given.tasks.train(model, task, steps=REPLAY, seed=seed)
    return all(abs(a - b) <= REPLAY_TOLERANCE * abs(b) for a, b in zip(losses, replayed))
