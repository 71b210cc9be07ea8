"""Where the returned runs of experiments.py come from, for its checks (test_experiments.py):
each is validated, rebuilt and measured again by the judge (measured_runs), and each check of an
experiment starts by holding its runs to the recipe and to their own numbers (expect_honest). How
a run is held to the recipe is the engine's (grader/lab_api/provenance.py); lab 2's schemas, its
measurements with evaluate(), its hints and its tolerances are here.

Provenance. The judge trains every documented run itself, with trusted code (the handout's
model.py and tasks.py, the RoPE of fed/positions.py), once per (seed, device, torch, lab files): kept for
a worker's life and on disk (conftest.py: recipe; grader/lab_api/memo.py). A returned run's
train_losses and weights must be those runs' within a tolerance that honest rewrites stay far inside (own loop with
torch.optim.Adam, complex or einsum RoPE, float64 angles, another order of runs, more torch
threads) and recipe changes stay far outside (one more step, steps on the evaluation batch,
another length, task, batch or learning rate). Measured by benchmarks/recipe_tolerance.py
(CPU, torch 2.13, seeds 0 and 5, largest relative distance of a weight tensor / of a loss):
    honest:  complex RoPE + float64 angles 4.9e-6 / 4.8e-7, torch.optim.Adam 1.0e-6 / 4.8e-7,
             two threads 9.6e-7 / 4.8e-7, another order and einsum RoPE 0 / 0
    changes: one more step (losses cut to 70) 1.6e-3 / 0, two steps on the eval batch 3.1e-3 / 2e-7,
             lr x 1.1 0.13 / 0.018, batch 9 0.26 / 0.16, length 48 0.61 / 0.25
-> WEIGHT_TOLERANCE and LOSS_TOLERANCE 1e-4: 20x above the honest noise, 15x below one step.

Reported numbers must be what evaluate() gives for the returned weights on the documented data
(seed + 1); when they are not, reported.py names the usual slip that gives them (a cost to the
reproduction check only). Numbers no slip explains cost the reproduction check only too when the
run's weights and losses are the recipe's (a slip in the report, not in the run); from weights
that are not, they count as not coming from the weights: then nothing of the run counts. The
judge's run of the recipe comes with its own measurements (recipe.train), which stand for any
weights that are its own, bit for bit (know). The claims are judged on the judge's own data (seed
FRESH), where the weights must do as they do on the documented data, within the reference's
spread (FRESH_SPREAD): a model fitted to the documented evaluation batch shows there.
"""
import inspect
import itertools
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import torch
from pydantic import BaseModel, ConfigDict

from grader.lab_api import provenance as lab_api
from grader.lab_api.checks import CheckFailed, expect, load_beside
from grader.lab_api.provenance import Parted, Parting

reported = load_beside(__file__, "reported")
FRESH = 90_001                  # the judge's own evaluation data, for the claims
LOSS_TOLERANCE = 1e-4           # a training loss vs the judge's run of the recipe (see above)
WEIGHT_TOLERANCE = 1e-4         # |w - judge's w| / |judge's w| of every weight tensor (see above)
# documented vs fresh data: the reference moves by at most 0.144 in loss and 0.042 in accuracy over
# seeds 0..19, any run and length (benchmarks/seed_spread.py); about twice that is allowed
FRESH_SPREAD = {"loss": 0.3, "accuracy": 0.08}


class Run(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    task: str
    config: dict
    state_dict: dict[str, torch.Tensor]
    train_losses: list[float]
    eval_lengths: list[int]
    eval_losses: list[float]
    eval_accuracies: list[float]


class LossGap(BaseModel):
    model_config = ConfigDict(extra="forbid")
    learned: Run
    no_pos: Run
    no_pos_majority: Run
    gap: float


class Extrapolation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    learned: Run
    rope: Run


class Score(NamedTuple):
    """What evaluate() gives at one length."""
    loss: float
    accuracy: float


@dataclass
class Measured:
    """One returned run, as the judge sees it."""
    run: Run
    fresh: list[Score]          # per length, on the judge's data
    documented: list[Score]     # the same on the documented data (seed + 1)
    problem: CheckFailed | None = None     # not the recipe's, or numbers from elsewhere: nothing counts
    slip: CheckFailed | None = None        # numbers from a named slip: costs the reproduction check


def rebuild(given, run, name, pos, device):
    """(the judge's copy of a returned model, None) when it is the documented one. A model that
    is the lab's with another position encoding (a run in another's field, a copy-paste slip) is
    built as its config says, and comes with the CheckFailed that it is not the documented model:
    it costs the checks that use its run, not the others'. Any other config is never built, nor a
    state_dict that does not load: the CheckFailed raised costs the checks that use the run (measured_runs)."""
    model, expected = given.model, asdict(given.model.Config(pos=pos))
    other_pos = isinstance(run.config, dict) and run.config == {**expected, "pos": run.config.get("pos")} \
        and known_pos(given, run.config["pos"])
    wrong = None
    try:
        expect(run.config == expected, f"{name}.config == asdict(Config(pos={pos!r})) = {expected}", str(run.config),
               f"this is the pos={run.config['pos']!r} model: {name} holds the pos={pos!r} one" if other_pos
               else "build every model with build_model(Config(pos=...)), nothing changed")
    except CheckFailed as failure:
        if not other_pos:
            raise
        wrong = failure
    try:
        return model.build_model(run.config, run.state_dict, device=device), wrong
    except (RuntimeError, TypeError, ValueError) as error:
        raise wrong or CheckFailed(f"{name}.state_dict to load into build_model(Config(pos={pos!r}))",
                                   " ".join(line.strip() for line in str(error).splitlines())[:300],
                                   "return model.state_dict() of the trained model") from None


def known_pos(given, pos):
    """Whether `pos` is one of the position encodings the lab's model.Config accepts."""
    try:
        given.model.Config(pos=pos)
    except (TypeError, ValueError):
        return False
    return True


def labels(run, name, task, eval_lengths):
    """A CheckFailed when the run's labels (its task, its lengths, a number per length) are not the
    documented ones, else None: a slip in the report, which the judge, knowing each field's task
    and lengths, measures past; it costs the reproduction check only."""
    try:
        expect(run.task == task, f"{name}.task == {task!r}", repr(run.task),
               "label each Run with the task it was trained and evaluated on")
        expect(run.eval_lengths == eval_lengths, f"{name}.eval_lengths == {eval_lengths}", str(run.eval_lengths),
               "evaluate each model at the lengths its experiment's docstring names, and no others")
        expect(len(run.eval_losses) == len(run.eval_accuracies) == len(eval_lengths),
               f"{name}: one loss and one accuracy per evaluation length",
               f"{len(run.eval_losses)} losses, {len(run.eval_accuracies)} accuracies")
    except CheckFailed as failure:
        return failure
    return None


def remeasure(given, model, task, eval_lengths, seed, start=None, batch_size=None):
    """(loss, accuracy) at each length on data from `seed`, scoring past TRAIN_LEN beyond it
    (or from `start` everywhere), on evaluate()'s default batch (or `batch_size` sequences).
    Measured once per weights (MEASURED), whoever returned them; asked for a batch size, every
    size a reporting slip's search tries at once where one pass can measure them (by_batch_size)."""
    train_len, weights = given.tasks.TRAIN_LEN, digest(model)
    batch = {} if batch_size is None else {"batch_size": batch_size}
    scores = []
    for n in eval_lengths:
        begin = (0 if n == train_len else train_len) if start is None else start
        key = (weights, task, n, seed, begin, *batch.values())
        tried = (*key[:5], "every size")     # by_batch_size, asked once (it may measure none)
        if key not in MEASURED and batch and tried not in MEASURED:
            MEASURED[tried] = None
            MEASURED.update(by_batch_size(given, model, task, n, seed, begin, weights))
        if key not in MEASURED:
            with torch.no_grad():
                MEASURED[key] = Score(*given.tasks.evaluate(model, task, n, seed=seed, start=begin, **batch))
        while len(MEASURED) > MEASURED_KEPT:
            MEASURED.pop(next(iter(MEASURED)))
        scores.append(MEASURED[key])
    return scores


def by_batch_size(given, model, task, n, seed, begin, weights):
    """{MEASURED key: Score} at every size of reported.BATCH_SIZES, from one pass of the model over
    the largest batch (in evaluate()'s default size of rows at a time): where each smaller batch of
    the task is that batch's first rows (make_batch draws all of a batch's tokens first, and lookback
    nothing after), each size's numbers are evaluate()'s sums over its rows. Empty, and each size
    evaluated apart, where a batch is not such a prefix (majority draws more after its tokens), or
    where the pass misses evaluate()'s own numbers at its default size by more than float noise
    (a single position scored otherwise moves the accuracy by over 1e-4).
    The search tries sixteen sizes, 3779 sequences in all: this measures 1024 of them."""
    tasks, sizes = given.tasks, reported.BATCH_SIZES
    default = getattr(inspect.signature(tasks.evaluate).parameters.get("batch_size"), "default", None)
    if not isinstance(default, int) or default < 1:
        return {}
    device = next(model.parameters()).device
    data = lambda size: tasks.make_batch(task, size, n, torch.Generator().manual_seed(seed), device)
    tokens, targets = data(max(sizes))
    if max(begin, tasks.LOOKBACK) >= n or not all(
            all(map(torch.equal, data(size), (tokens[:size], targets[:size]))) for size in (*sizes, default)):
        return {}
    targets[:, :begin] = tasks.IGNORE
    scored = targets != tasks.IGNORE
    rows = []                                   # per row: summed loss, scored positions, right ones
    with torch.no_grad():
        for first in range(0, len(tokens), default):
            logits, wanted = model(tokens[first:first + default]), targets[first:first + default]
            losses = torch.nn.functional.cross_entropy(logits.flatten(0, 1), wanted.flatten(), reduction="none",
                                                       ignore_index=tasks.IGNORE).view(wanted.shape)
            right = (logits.argmax(dim=-1) == wanted) & scored[first:first + default]
            rows.append(torch.stack((losses.double().sum(1), scored[first:first + default].sum(1).double(),
                                     right.sum(1).double()), dim=1).cpu())
    summed = torch.cat(rows).cumsum(0).tolist()
    at = {size: Score(summed[size - 1][0] / summed[size - 1][1], summed[size - 1][2] / summed[size - 1][1])
          for size in (*sizes, default)}
    own = remeasure(given, model, task, [n], seed, begin)[0]
    if not reported.close_loss(at[default].loss, own.loss) or abs(at[default].accuracy - own.accuracy) > 1e-6:
        return {}
    return {(weights, task, n, seed, begin, size): at[size] for size in sizes}


# evaluate() is deterministic: the same weights, task, length, data and device give the same
# numbers, so they are measured once per judge process. Honest runs of one seed hold the same
# weights, bit for bit, as the judge's own run of the recipe and as each other's (a batch worker's
# next student's, the learned run both experiments train): what a batch or --watch pays again
# is only what is new. Keys: (digest of the weights and the model's device, task, length, seed, start),
# and the batch size when it is not evaluate()'s default (a reporting slip's search).
MEASURED: dict[tuple, object] = {}
MEASURED_KEPT = 4096


def digest(model):
    """The model's digest (grader.lab_api.provenance): its Config, device and weights."""
    return lab_api.digest(model, model.cfg)


# -- provenance: the returned runs against the judge's own (conftest.py: recipe) ---------------
def recipe_call(pos, task):
    return f"train(build_model(Config(pos={pos!r}), seed=seed), {task!r}, seed=seed)"


def losses_provenance(given, run, name, pos, task, seed, device, judge):
    """None when train_losses are the recipe's for this seed; else a CheckFailed that says which
    part of the recipe differs."""
    return lab_api.losses_provenance(
        run.train_losses, judge["train_losses"], name, recipe_call(pos, task),
        lambda where: recipe_difference(given, where, run.train_losses[0], pos, task, seed, device), LOSS_TOLERANCE)


def losses_reported(run, name, judge, where: Parted | None):
    """For a run whose weights are the recipe's: (problem, slip) of its train_losses. Losses that
    are the recipe's rounded to a few decimals are a slip in the report (it costs the reproduction
    check only, as rounded numbers do); others are not the losses train() returned (another order,
    other values, another count), whose hint says so and not that training differed: the weights
    show that it did not."""
    losses, truths = run.train_losses, judge["train_losses"]
    places = reported.decimals(losses, truths, lambda truth: LOSS_TOLERANCE) if len(losses) == len(truths) else None
    if places is not None:
        i = next((i for i, (a, b) in enumerate(zip(losses, truths)) if a != b), 0)
        return None, CheckFailed(f"{name}.train_losses to be the losses train() returned, as they are",
                                 f"step {i + 1}: {losses[i]!r}, train() gave {truths[i]!r}",
                                 f"your train_losses are train()'s rounded ({places} decimals): return the list "
                                 f"train() returns as it is")
    if where is None:
        return None, None
    hint = ("these are the recipe's losses in another order (sorted?): return the list train() returns, as it is"
            if where.how is Parting.ORDER else
            "the weights are the recipe's, but these are not the losses its train() returned: return the list "
            "train() returns, as it is")
    if where.how is Parting.STEPS:
        return CheckFailed(f"{name}.train_losses: one loss per step of train(), {where.steps} steps",
                           f"{where.returned} losses", hint), None
    i = where.step
    return CheckFailed(f"{name}.train_losses to be the losses train() returned",
                       f"step {i + 1}: {losses[i]:.4f}, the recipe gives {truths[i]:.4f}", hint), None


def weights_stored_lower(run, name, judge):
    """A CheckFailed (a slip) when the returned weights are the recipe's stored in a float type of
    less precision than the model's (float16, bfloat16: rounded far past the recipe's tolerance),
    else None: the weights come from the recipe, and the checks measure them as returned."""
    theirs, weights = run.state_dict, judge["state_dict"]
    lower = {k: w.dtype for k, w in theirs.items() if k in weights and w.is_floating_point()
             and weights[k].is_floating_point() and torch.finfo(w.dtype).eps > torch.finfo(weights[k].dtype).eps}
    if not lower:
        return None
    rounded = {k: w.to(lower[k]) if k in lower else w for k, w in weights.items()}
    if not lab_api.weight_distance(theirs, rounded) <= WEIGHT_TOLERANCE:
        return None
    kinds = ", ".join(sorted({str(d).removeprefix("torch.") for d in lower.values()}))
    return CheckFailed(f"{name}.state_dict to be the weights train() leaves, as they are",
                       f"the recipe's weights stored in {kinds}",
                       f"your weights are the recipe's rounded to {kinds}: return model.state_dict() as it is, "
                       f"in the model's own precision")


def recipe_check(given, t, seed, device):
    """(problem, slip) of one returned run (Returned) against the judge's run of the recipe: a
    problem when it is not the recipe's (nothing of it counts), a slip when it is, reported
    otherwise than it is (it costs the reproduction check only)."""
    r = t.reported
    if t.other_model is not None:
        return t.other_model, None
    losses = losses_provenance(given, r.run, r.label, t.pos, r.task, seed, device, t.judge)
    fresh = fresh_difference(r.label, t.eval_lengths, t.fresh, r.documented)
    weights = weights_provenance(given, r.run, r.label, t.pos, r.task, seed, t.judge)
    stored = weights_stored_lower(r.run, r.label, t.judge) if weights and weights.mistake != INITIAL else None
    if stored is not None:
        weights = None
    if fresh is not None or weights is not None:
        return losses or fresh or weights, None
    problem, slip = losses_reported(r.run, r.label, t.judge, lab_api.parted(
        r.run.train_losses, t.judge["train_losses"], LOSS_TOLERANCE) if losses else None)
    return problem, slip or stored


def weights_provenance(given, run, name, pos, task, seed, judge):
    """None when the returned weights are those the recipe leaves, else a CheckFailed, whose hint
    says when they are the model's initial weights (a copy taken before train)."""
    problem = lab_api.weights_provenance(
        run.state_dict, judge["state_dict"], name, recipe_call(pos, task),
        "trained on after the recorded steps (more steps, or on the evaluation batch?): "
        "return model.state_dict() right after train(...)", WEIGHT_TOLERANCE)
    if problem is not None and initial_weights(given, run, pos, seed):
        return CheckFailed(problem.expected, f"{problem.seen}: they are the model's initial weights",
                           "a copy taken before train(...) keeps the untrained weights: return model.state_dict() "
                           "right after train(...)", INITIAL)
    return problem


INITIAL = "initial_weights"     # the mistake id of a CheckFailed that says so: it explains the numbers too


def initial_weights(given, run, pos, seed):
    """Whether the run's weights are build_model(Config(pos=pos), seed=seed)'s, before training."""
    built = given.model.build_model(given.model.Config(pos=pos), seed=seed.value)
    return lab_api.weight_distance(run.state_dict, built.state_dict()) <= WEIGHT_TOLERANCE


def recipe_difference(given, where: Parted, first, pos, task, seed, device):
    """The hint for losses that are not the recipe's: which part of it they show (`first`: the
    first loss returned)."""
    if where.how is Parting.STEPS:
        return f"trained {where.returned} steps, the lab trains {where.steps}: keep train()'s defaults"
    if where.how is Parting.ORDER:
        return "these are the recipe's losses in another order (sorted?): return the list train() returns, as it is"
    if where.how is Parting.START:
        found = first_loss_match(given, first, pos, task, seed, device)
        if found:
            return found + "; every run follows the docstring's recipe"
        return ("the first step's loss is not the recipe's for any length, task or seed tried: build with "
                "build_model(Config(pos=...), seed=seed) and train with train(model, task, seed=seed)")
    return (f"the losses follow the recipe for {where.step} step(s), then part from it: train with train()'s "
            f"defaults (its Adam, lr {given.tasks.LR}, batch {given.tasks.BATCH_SIZE}), nothing in between")


def first_loss_match(given, first, pos, task, seed, device):
    """What makes the recipe's first training loss equal `first`: the model at initialisation on
    the first batch, for other lengths, tasks and seeds; a description, or None."""
    tasks, train_len, s = given.tasks, given.tasks.TRAIN_LEN, seed.value
    max_len = given.model.Config(pos=pos).max_len
    choices = itertools.product([s, 0], [s, 0], [task] + [t for t in tasks.TASKS if t != task],
                                [n for n in (train_len, 2 * train_len, 4 * train_len, train_len // 2) if n <= max_len])
    built = {init: given.model.build_model(given.model.Config(pos=pos), seed=init, device=device) for init in {s, 0}}
    for init, data, other_task, length in choices:
        tokens, targets = tasks.make_batch(other_task, tasks.BATCH_SIZE, length, torch.Generator().manual_seed(data),
                                           device)
        with torch.no_grad():
            loss = torch.nn.functional.cross_entropy(built[init](tokens).flatten(0, 1), targets.flatten(),
                                                     ignore_index=tasks.IGNORE).item()
        if abs(loss - first) <= LOSS_TOLERANCE:
            seeds = {(True, True): "the seed is ignored: built and trained as for seed 0 (build_model's and "
                                   f"train's default), the lab builds and trains with seed=seed{seed.shown}",
                     (True, False): f"built with seed 0 (build_model's default), the lab builds with "
                                    f"seed=seed{seed.shown}",
                     (False, True): f"trained on data of seed 0 (train's default), the lab uses seed=seed{seed.shown}",
                     (False, False): ""}[init != s, data != s]
            found = [f"trained at length {length}, the lab trains at {train_len}" if length != train_len else "",
                     f"trained on {other_task!r}, this run is {task!r}" if other_task != task else "", seeds]
            return "; ".join(f for f in found if f) or None
    return None


def fresh_difference(name, eval_lengths, fresh, documented):
    """A CheckFailed when the weights do much better on the documented data than on fresh data."""
    for n, (loss, accuracy), (loss_doc, accuracy_doc) in zip(eval_lengths, fresh, documented):
        for what, ours, theirs in (("loss", loss, loss_doc), ("accuracy", accuracy, accuracy_doc)):
            if abs(ours - theirs) > FRESH_SPREAD[what]:
                return CheckFailed(
                    f"{name}'s {what} at length {n} on the documented data within {FRESH_SPREAD[what]} of the "
                    f"grader's fresh data, as the reference's is",
                    f"{theirs:.3f} on the documented data, {ours:.3f} on fresh data",
                    "a model fitted to the evaluation batch (seed + 1): train only with train(model, task, seed=seed)")
    return None


def know(given, recipe, pos, task, device, lengths, data):
    """The scores of the judge's run of the recipe, [[length, data seed, start, loss, accuracy], ...]
    at each of `lengths` on each of `data`, as remeasure measures a learner's run: kept with the run
    (conftest.py: recipe), they are remeasure's for its weights, and weights that are these, bit for
    bit, are not measured again; a run without them is measured here."""
    model = given.model.build_model(given.model.Config(pos=pos), recipe["state_dict"], device=device)
    weights, train_len = digest(model), given.tasks.TRAIN_LEN
    for n, d, start, loss, accuracy in recipe.get("scores", []):
        MEASURED[weights, task, n, d, start] = Score(loss, accuracy)
    return recipe.get("scores") or [[n, d, 0 if n == train_len else train_len,
                                     *remeasure(given, model, task, [n], d)[0]] for n in lengths for d in data]


class Returned(NamedTuple):
    """One returned run before it is held to the recipe: its documented position encoding and
    lengths, the judge's run of the recipe, the learner's run as measured, and what is wrong with
    its labels or its model (CheckFailed or None)."""
    pos: str
    eval_lengths: list
    judge: dict
    fresh: list
    reported: Any                   # reported.Reported (a module loaded beside this one)
    mislabelled: CheckFailed | None
    other_model: CheckFailed | None


def measured_runs(call, recipe, given, device, seed, name, model, runs):
    """Validate, rebuild, re-measure and hold to the recipe every run of one call of an experiment:
    (result, {run name: Measured})."""
    value = lab_api.returned(call, name, model, "results.py")
    returned = {}
    for run_name, pos, task, eval_lengths in runs(given):
        run, label = getattr(value, run_name), f"{name}().{run_name}"
        judge = recipe(pos, task, seed.value)           # first: its measurements are known then
        try:
            built, other_model = rebuild(given, run, label, pos, device)
        except CheckFailed as failure:      # never built: it costs the checks that use it, no others
            built, other_model = None, failure
        fresh = [] if built is None else remeasure(given, built, task, eval_lengths, FRESH)
        documented = [] if built is None else remeasure(given, built, task, eval_lengths, seed.value + 1)
        returned[run_name] = Returned(pos, eval_lengths, judge, fresh,
                                      reported.Reported(label, run, built, task, documented),
                                      labels(run, label, task, eval_lengths), other_model)
    checked = {t.reported.label: recipe_check(given, t, seed, device) for t in returned.values()}
    honest = {label for label, (problem, _) in checked.items() if problem is None}
    labelled = [t.reported for t in returned.values()          # the numbers to hold
                if t.mislabelled is None and t.other_model is None]
    explained = reported.reproduction(given, seed, labelled, remeasure, honest)
    out = {}
    for run_name, t in returned.items():
        r = t.reported
        unexplained, slip = explained.get(r.label, (None, None))
        recipe_problem, recipe_slip = checked[r.label]
        first = recipe_problem if recipe_problem and recipe_problem.mistake == INITIAL else unexplained
        out[run_name] = Measured(r.run, t.fresh, r.documented, first or recipe_problem,
                                 t.mislabelled or recipe_slip or slip)
    return value, out
