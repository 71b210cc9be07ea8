"""The judge's own run of the lab's recipe (conftest.py: recipe), and the check of a kept one.

`train` runs in a process of its own (grader.lab_api.TrustedWork): build_model initialises from
torch's global RNG, which nothing else there draws from meanwhile. It also measures the weights it
leaves as the checks measure a learner's (provenance.remeasure), so that the judge need not measure
them again: an honest run holds these weights bit for bit. A run kept in .grade/ (grader/memo.py)
is used only after its first REPLAY steps are replayed here and give its losses, which shows
that it starts from the recipe's initial weights and data; its weights must have the shapes of
build_model's. Anything else in the file is covered by the memo's digest.
"""
import math

REPLAY = 2                      # steps replayed: the initial weights, the first batch, one update
REPLAY_TOLERANCE = 1e-6         # relative: float32 rounding (another device's kernels), no more


def train(given, pos, task, seed, device, multiples, data):
    """The recipe's run: {"train_losses": [...], "state_dict": {name: CPU tensor}, "scores": [[length,
    data seed, start, loss, accuracy], ...]}, evaluated at each of `multiples` of TRAIN_LEN on each of
    `data`, scoring past TRAIN_LEN beyond it."""
    model = given.model.build_model(given.model.Config(pos=pos), seed=seed, device=device)
    losses = given.tasks.train(model, task, seed=seed)
    train_len = given.tasks.TRAIN_LEN
    scores = [[m * train_len, d, 0 if m == 1 else train_len] for m in multiples for d in data]
    for score in scores:
        score.extend(given.tasks.evaluate(model, task, score[0], start=score[2], seed=score[1]))
    return {"train_losses": losses, "state_dict": {k: v.cpu() for k, v in model.state_dict().items()},
            "scores": scores}


def replays(given, kept, pos, task, seed, device, multiples, data):
    """Whether a kept run is the recipe's as far as its first REPLAY steps and its shapes show, with
    a finite score for each length and data."""
    model = given.model.build_model(given.model.Config(pos=pos), seed=seed, device=device)
    shapes = {name: tuple(w.shape) for name, w in model.state_dict().items()}
    losses, weights = kept["train_losses"], kept["state_dict"]
    if len(losses) != given.tasks.STEPS or {k: tuple(w.shape) for k, w in weights.items()} != shapes:
        return False
    if not all(math.isfinite(x) for x in losses) or not all(w.isfinite().all() for w in weights.values()):
        return False
    measured = sorted((m * given.tasks.TRAIN_LEN, d) for m in multiples for d in data)
    if sorted((n, d) for n, d, *_ in kept["scores"]) != measured or \
            not all(math.isfinite(x) for *_, loss, accuracy in kept["scores"] for x in (loss, accuracy)):
        return False
    replayed = given.tasks.train(model, task, steps=REPLAY, seed=seed)
    return all(abs(a - b) <= REPLAY_TOLERANCE * abs(b) for a, b in zip(losses, replayed))
