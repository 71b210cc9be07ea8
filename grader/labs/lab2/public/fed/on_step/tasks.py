"""tasks.py as the grader's on_step probe runs your experiments (public/conftest.py): the
handout's tasks.py (here as given_tasks.py), but train() trains nothing and evaluate() measures
nothing (it gives the reference's typical numbers). Each train call calls the on_step it was given
as the real train would, (name, step, steps, loss) for every step, and checks that those calls
reached the experiment's own on_step (the `probe()` the grader passed it), unchanged: a train call
given another callback, or none, or one that raises when train calls it, raises OnStepNotPassed,
and so does a call the experiment makes itself (its own loop's) that train could not make,
on_step(name, step, steps, loss) with step 1 to steps (a progress callback would fail, or count
wrong). The experiment then runs on, and its result is not used.
"""
import numbers
import reprlib

from given_tasks import *  # noqa: F403  (the handout's tasks.py: TRAIN_LEN, evaluate, ...)
from given_tasks import BATCH_SIZE, LR, STEPS, TRAIN_LEN

GIVEN: list = []          # the probe the grader passed as on_step (one per child: one call per child)


class OnStepNotPassed(Exception):
    """A train call whose on_step does not reach the experiment's own, unchanged."""


class Probe:
    """The on_step the grader passes: it keeps every call that reaches it."""

    def __init__(self):
        self.calls = []
        self.misused = None     # how it was first called not as train calls it
        self.training = False   # inside a train call, whose calls train() itself compares

    def __call__(self, *args, **kwargs):
        self.calls.append(args)
        if self.misused is None and not self.training and not like_train(args, kwargs):
            shown = ", ".join([*map(reprlib.repr, args), *(f"{k}={reprlib.repr(v)}" for k, v in kwargs.items())])
            self.misused = (f"the experiment's on_step was called as on_step({shown}); train calls it as "
                            f"on_step(name, step, steps, loss), step counting from 1 to steps ({STEPS}), "
                            f"and so may the experiment, no other way")
        self.check()

    def check(self):
        if self.misused is not None:
            raise OnStepNotPassed(self.misused)


def like_train(args, kwargs):
    """Whether a call the experiment made itself (its own loop's) is one train() could make: an integer
    step (a numpy one too: a progress callback counts it alike) and a real loss."""
    if kwargs or len(args) != 4:
        return False
    name, step, steps, loss = args
    return isinstance(name, str) and isinstance(step, numbers.Integral) and not isinstance(step, bool) \
        and steps == STEPS and 1 <= step <= steps and isinstance(loss, numbers.Real) and not isinstance(loss, bool)


def probe():
    GIVEN.append(Probe())
    return GIVEN[-1]


def train(model, task, steps=STEPS, seq_len=TRAIN_LEN, batch_size=BATCH_SIZE, lr=LR, seed=0, on_step=None):
    """No training: on_step called as train() calls it, and what reached the probe compared."""
    given = GIVEN[-1]
    given.check()
    expected = [(f"{model.cfg.pos} · {task}", step, steps, 1.0 / step) for step in range(1, steps + 1)]
    before = len(given.calls)
    given.training = True
    try:
        for call in expected:
            if on_step is not None:
                try:
                    on_step(*call)
                except OnStepNotPassed:
                    raise
                except Exception as error:      # the callback it was handed is not one train can call
                    raise OnStepNotPassed(f"train(model, {task!r}) of the {model.cfg.pos!r} model called "
                                          f"on_step{call}, and the on_step it was given raised "
                                          f"{type(error).__name__}: {str(error)[:200]}") from None
    finally:
        given.training = False
    calls = given.calls[before:]
    if calls == expected:
        return [loss for *_, loss in expected]
    if not calls:
        what = f"none of train's {len(expected)} calls of on_step reached the on_step the experiment was given"
    elif len(calls) != len(expected):
        what = f"{len(calls)} calls of on_step reached the experiment's on_step, train made {len(expected)}"
    else:
        i = next(i for i, (a, b) in enumerate(zip(calls, expected)) if a != b)
        what = (f"train called on_step{expected[i]}, and the experiment's on_step got {calls[i]}")
    raise OnStepNotPassed(f"train(model, {task!r}) of the {model.cfg.pos!r} model: {what}")


# what evaluate() gives the reference's runs (medians over seeds 0..19, public/test_experiments.py):
# the probe's numbers, so that an experiment's own sanity check (the learned model learned?) passes
# as on a real run, and the probe goes on to its later train calls
TYPICAL = {("learned", "lookback"): (0.0025, 1.0), ("rope", "lookback"): (0.004, 1.0),
           ("none", "lookback"): (2.3, 0.217), ("none", "majority"): (0.45, 0.855)}
LEARNED_BEYOND = (6.5, 0.07)        # learned positions, scored past TRAIN_LEN


def evaluate(model, task, seq_len, start=0, batch_size=128, seed=1):
    """Nothing measured: the reference's typical numbers for this model and task (the probe's
    result is not used); a misuse of on_step so far is raised."""
    GIVEN[-1].check()
    if model.cfg.pos == "learned" and start >= TRAIN_LEN:
        return LEARNED_BEYOND
    return TYPICAL.get((model.cfg.pos, task), (1.0, 0.5))
