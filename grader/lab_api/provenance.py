"""Experiments held to their recipe: what any lab whose learners train and report runs needs, so
that its results reproduce from the weights and the weights from the recipe (docs/authoring.md, 7).

A run is {"train_losses": [one per step], "state_dict": {name: tensor}}. The judge trains the
lab's recipe itself, with trusted code, as TrustedWork (grader.lab_api): a process of its own, the
value kept in .grade/ under `work_key` (the device, torch, and a digest of every file the run
executes) and used, read back, only once `replays` holds. A learner's returned run is then held
to the judge's: its losses step by step (`losses_provenance`), its weights tensor by tensor
(`weights_provenance`), each within a tolerance the lab measures for its recipe (lab 2's:
benchmarks/recipe_tolerance.py), far above what honest rewrites stray and far below one step more.

    check = lambda kept, *args: replays(kept, build(*args), STEPS, lambda n: <train it n steps>)
    runs = TrustedWork(name, folders, "recipe.py", "train", work_key(files, device), check)
    losses_provenance(run.train_losses, judge["train_losses"], name, call, explain, tolerance)
    weights_provenance(run.state_dict, judge["state_dict"], name, call, hint, tolerance)
    each_seed(per_seed(seeds, measure), check)      # a check at every seed, failures named by it

tests/labs/experiment is the smallest lab that uses it; lab 2's experiments the largest.
"""
import contextlib
import hashlib
import math
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

import torch
from pydantic import BaseModel, ValidationError

from grader.lab_api.checks import CheckFailed, describe

REPLAY = 2                      # steps replayed: the initial weights, the first batch, one update
REPLAY_TOLERANCE = 1e-6         # relative: float32 rounding (another device's kernels), no more

Schema = TypeVar("Schema", bound=BaseModel)


# -- the judge's run of the recipe ------------------------------------------------------------------
def work_key(files: Iterable[Path], device: torch.device) -> tuple[str, str, str]:
    """TrustedWork's key for runs of the recipe: the device (a GPU by its name), torch's version and
    the SHA-256 of every file the run executes, so that a change to any of them trains afresh."""
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    code = hashlib.sha256(b"".join(Path(path).read_bytes() for path in files)).hexdigest()
    return where, torch.__version__, code


def replays(kept: Mapping[str, Any], model: torch.nn.Module, steps: int,
            replay: Callable[[int], Sequence[float]]) -> bool:
    """Whether a kept run is the recipe's as far as its first REPLAY steps and its shapes show:
    `model` is built as the recipe builds it, `steps` the recipe's number of steps, and replay(n)
    trains `model` n steps as the recipe does and returns their losses. Equal first losses show
    that the run starts from the recipe's initial weights and data; the rest of a kept file is
    covered by its memo's digest."""
    shapes = {name: tuple(w.shape) for name, w in model.state_dict().items()}
    losses, weights = kept["train_losses"], kept["state_dict"]
    if len(losses) != steps or {k: tuple(w.shape) for k, w in weights.items()} != shapes:
        return False
    if not all(math.isfinite(x) for x in losses) or not all(w.isfinite().all() for w in weights.values()):
        return False
    replayed = replay(REPLAY)
    return all(abs(a - b) <= REPLAY_TOLERANCE * abs(b) for a, b in zip(losses, replayed))


# -- a returned run against the judge's -------------------------------------------------------------
def returned(call: "Future[Any]", name: str, schema: type[Schema], where: str) -> Schema:
    """The value of a student call (its Future), validated: a clear failure when it is not the
    `schema` that `where` (the handout file that defines it) describes."""
    value = call.result()
    try:
        return schema.model_validate(value)
    except ValidationError as error:
        problem = error.errors()[0]
        at = ".".join(map(str, problem["loc"]))
        raise CheckFailed(f"{name} to return a {schema.__name__} (see {where})",
                          f"{describe(value)}; {at}: {problem['msg']}") from None


def digest(model: torch.nn.Module, config: object) -> str:
    """SHA-256 of a model's `config` (what besides its weights makes it compute what it does), its
    device and every weight's name, dtype, shape and bytes: equal digests, equal answers. Once per
    model, which nothing may change after (a slip search measures one model many times)."""
    if model not in _DIGESTS:
        weights = model.state_dict()
        some = next(iter(weights.values()))
        h = hashlib.sha256(repr((config, str(some.device))).encode())
        for name, w in weights.items():
            h.update(repr((name, str(w.dtype), tuple(w.shape))).encode())
            h.update(w.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy())
        _DIGESTS[model] = h.hexdigest()
    return _DIGESTS[model]


_DIGESTS: "weakref.WeakKeyDictionary[torch.nn.Module, str]" = weakref.WeakKeyDictionary()


def weight_distance(theirs: Mapping[str, torch.Tensor], judge: Mapping[str, torch.Tensor]) -> float:
    """The largest |w - judge's w| / |judge's w| over the judge's tensors (Frobenius norms); a tensor
    missing or of another shape is infinitely far."""
    far = [float("inf") for k, w in judge.items() if k not in theirs or theirs[k].shape != w.shape]
    return max(far or [float((theirs[k].double() - w.double()).norm() / w.double().norm().clamp_min(1e-12))
                       for k, w in judge.items()])


class Parting(Enum):
    """How returned losses part from the recipe's."""
    STEPS = "steps"             # another number of steps
    ORDER = "order"             # the recipe's losses, in another order
    START = "start"             # from the first step: another start (initial weights, data, length)
    LATER = "later"             # the recipe's for some steps, then not: another update


@dataclass(frozen=True)
class Parted:
    """Where returned losses part from the recipe's, for the lab's hint."""
    how: Parting
    step: int                   # the first step (from 0) whose loss is not the recipe's; for STEPS, 0
    returned: int               # losses returned
    steps: int                  # the recipe's steps


def parted(losses: Sequence[float], judge: Sequence[float], tolerance: float) -> Parted | None:
    """None when every loss is within `tolerance` of the recipe's (NaN never is), else where not."""
    if len(losses) != len(judge):
        return Parted(Parting.STEPS, 0, len(losses), len(judge))
    off = [i for i, (a, b) in enumerate(zip(losses, judge)) if not abs(a - b) <= tolerance]
    if not off:
        return None
    if all(abs(a - b) <= tolerance for a, b in zip(sorted(losses), sorted(judge))):
        how = Parting.ORDER
    else:
        how = Parting.START if off[0] == 0 else Parting.LATER
    return Parted(how, off[0], len(losses), len(judge))


def losses_provenance(losses: Sequence[float], judge: Sequence[float], name: str, call: str,
                      explain: Callable[[Parted], str | None], tolerance: float) -> CheckFailed | None:
    """None when `losses` are the recipe's (`judge`, the judge's run of `call`), else a CheckFailed
    whose hint explain(where they part) gives: which part of the recipe differs."""
    where = parted(losses, judge, tolerance)
    if where is None:
        return None
    if where.how is Parting.STEPS:
        return CheckFailed(f"{name}.train_losses: one loss per step of {call}, {where.steps} steps",
                           f"{where.returned} losses", explain(where))
    i = where.step
    return CheckFailed(f"{name}.train_losses to be those of the lab's recipe, {call}",
                       f"step {i + 1}: {losses[i]:.4f}, the recipe gives {judge[i]:.4f}", explain(where))


def weights_provenance(weights: Mapping[str, torch.Tensor], judge: Mapping[str, torch.Tensor], name: str,
                       call: str, hint: str, tolerance: float) -> CheckFailed | None:
    """None when the returned weights are those the recipe leaves (`judge`), else a CheckFailed:
    weights trained on after the losses the run reports (more steps, or on the evaluation data)."""
    distance = weight_distance(weights, judge)
    if not distance <= tolerance:         # NaN weights fail too
        return CheckFailed(f"{name}.state_dict to be the weights {call} leaves (within {tolerance:g})",
                           f"weights {distance:.1e} away from the recipe's, though the losses match it", hint)
    return None


class Judged(Protocol):
    """A returned run as the checks see it, once held to the recipe."""
    problem: CheckFailed | None     # not the recipe's, or numbers from elsewhere: nothing counts
    slip: CheckFailed | None        # reported numbers a named slip gives: costs the reproduction check


def expect_honest(runs: Iterable[Judged], reproduces: bool = False) -> None:
    """Every run is the recipe's and its numbers come from its weights; with `reproduces`, the
    numbers are also exactly the documented measurement. Each check of an experiment starts here."""
    for run in runs:
        for failure in (run.problem, run.slip if reproduces else None):
            if failure:
                raise CheckFailed(failure.expected, failure.seen, failure.hint)


# -- seeds ------------------------------------------------------------------------------------------
class Seed(NamedTuple):
    """A seed the experiments run with; a hidden one (the course's) is never named in a message."""
    value: int
    hidden: bool = False

    @property
    def shown(self) -> str:
        """The seed's value for a message, " (7)", or nothing when it is hidden."""
        return "" if self.hidden else f" ({self.value})"


def per_seed(seeds: Iterable[Seed], measure: Callable[[Seed], Any]) -> dict[Seed, Any]:
    """{seed: measure(seed), or the exception it raised}: each seed's outcome, for the checks."""
    out: dict[Seed, Any] = {}
    for seed in seeds:
        try:
            out[seed] = measure(seed)
        except Exception as error:      # raised again by the check, at its seed (at)
            out[seed] = error
    return out


@contextlib.contextmanager
def at(seed: Seed, seeds: Sequence[Seed]) -> Iterator[None]:
    """A failure in this block names its seed, when the experiments run at several (public ones)."""
    try:
        yield
    except CheckFailed as failure:
        if len(seeds) == 1:
            raise
        where = "at the grading's seed" if seed.hidden else f"at seed {seed.value}"
        raise CheckFailed(f"{where}: {failure.expected}", failure.seen, failure.hint, failure.mistake) from None


def each_seed(outcomes: Mapping[Seed, Any], check: Callable[..., None]) -> None:
    """check(*outcome, seed) at every seed in turn (an outcome is a tuple: lab 2's (result, runs)):
    the first failure, named by its seed."""
    for seed, outcome in outcomes.items():
        with at(seed, list(outcomes)):
            if isinstance(outcome, BaseException):
                raise outcome
            check(*outcome, seed)
