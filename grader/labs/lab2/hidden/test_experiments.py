"""Hidden checks of experiments.py: the lab's claims, measured again from the student's weights.

The judge rebuilds every returned model with the handout's model.py (and the reference RoPE),
loads the returned weights and measures it on fresh data it chose. Reported numbers must match
those measurements, and the claims are judged on the judge's measurements only.

Thresholds come from the reference over seeds 0..19 (benchmarks/seed_spread.py), min / median / max:
    loss gap (none - learned)              2.273 / 2.301 / 2.331      -> gap > 1.0
    learned, lookback accuracy             1.000 / 1.000 / 1.000      -> > 0.9
    no positions, lookback accuracy        0.197 / 0.217 / 0.222      -> < 0.35, and > 0.15: trained
                                                                         (untrained: about 0.06)
    no positions, majority accuracy        0.824 / 0.855 / 0.887      -> > 0.7
    learned at 48 / 96 (past 24 only)      0.059-0.076 / 0.065-0.074  -> < 0.2
    RoPE at 24 / 48 / 96                   0.948 / 0.948 / 0.952 min  -> > 0.8
    RoPE - learned at 48 / 96              0.879 / 0.883 min          -> > 0.6
Reported numbers are checked on the data the docstrings name (evaluate(..., seed=seed + 1)), where
the judge's measurement must agree to rounding; claims are judged on fresh data (seed FRESH),
where the reference's own numbers move by up to 0.04 in accuracy and 0.13 in loss.
"""
from dataclasses import asdict

import pytest
import torch
from pydantic import BaseModel, ConfigDict, ValidationError

from grader.checks import CheckFailed, describe, expect

FRESH = 90_001                  # the judge's own evaluation data, for the claims
REPRODUCE = 2e-3                # reported vs re-measured on the same data: rounding only


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


def result(experiments, name, model):
    """The experiment's result, validated: a clear failure when it is not what results.py says."""
    value = experiments[name].result()
    try:
        return model.model_validate(value)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(map(str, problem["loc"]))
        raise CheckFailed(f"{name} to return a {model.__name__} (see results.py)",
                          f"{describe(value)}; {where}: {problem['msg']}") from None


def lengths(reference):
    train_len = reference.tasks.TRAIN_LEN
    return [train_len, 2 * train_len, 4 * train_len]


def rebuild(reference, run, name, pos, task, eval_lengths, device):
    """The judge's copy of a returned model, after checking it is the documented one."""
    model = reference.model
    expected = asdict(model.Config(pos=pos))
    expect(run.config == expected, f"{name}.config == asdict(Config(pos={pos!r})) = {expected}",
           str(run.config), "build every model with build_model(Config(pos=...)), nothing changed")
    expect(run.task == task, f"{name}.task == {task!r}", repr(run.task))
    expect(run.eval_lengths == eval_lengths, f"{name}.eval_lengths == {eval_lengths}", str(run.eval_lengths))
    expect(len(run.eval_losses) == len(run.eval_accuracies) == len(eval_lengths),
           f"{name}: one loss and one accuracy per evaluation length",
           f"{len(run.eval_losses)} losses, {len(run.eval_accuracies)} accuracies")
    try:
        return model.build_model(run.config, run.state_dict, device=device)
    except (RuntimeError, TypeError, ValueError) as error:
        raise CheckFailed(f"{name}.state_dict to load into build_model(Config(pos={pos!r}))",
                          str(error).splitlines()[0][:300], "return model.state_dict() of the trained model") from None


def remeasure(reference, model, task, eval_lengths, seed):
    """(loss, accuracy) at each length on data from `seed`; past TRAIN_LEN only beyond it."""
    train_len = reference.tasks.TRAIN_LEN
    with torch.no_grad():
        return [reference.tasks.evaluate(model, task, n, start=0 if n == train_len else train_len, seed=seed)
                for n in eval_lengths]


def expect_reproduced(name, run, same_data):
    """Reported numbers == the judge's measurement of the returned weights on the same data."""
    for i, (loss, accuracy) in enumerate(same_data):
        for what, reported, judged in (("loss", run.eval_losses[i], loss), ("accuracy", run.eval_accuracies[i], accuracy)):
            expect(abs(reported - judged) <= REPRODUCE * max(1.0, abs(judged)),
                   f"{name}'s reported {what} at length {run.eval_lengths[i]} to reproduce from the weights "
                   f"returned, on the same data (evaluate(..., seed=seed + 1))",
                   f"reported {reported:.4f}, the grader measured {judged:.4f}: these numbers do not reproduce",
                   "report exactly what evaluate() returned for the model you return")


def measured_runs(experiments, reference, device, seed, name, model, runs):
    """Validate, rebuild and re-measure every run.

    Returns (result, {run name: (run, [(loss, accuracy)] on fresh data, the same on the student's data)}).
    """
    value = result(experiments, name, model)
    out = {}
    for run_name, pos, task, eval_lengths in runs(reference):
        run = getattr(value, run_name)
        built = rebuild(reference, run, f"{name}().{run_name}", pos, task, eval_lengths, device)
        out[run_name] = (run, remeasure(reference, built, task, eval_lengths, FRESH),
                         remeasure(reference, built, task, eval_lengths, seed + 1))
    return value, out


def expect_honest(measured, experiment, hint=None):
    """Every reported number reproduces from the returned weights; training went somewhere.

    Each check of an experiment starts here: its claims count only on numbers that reproduce.
    """
    value, runs = measured
    for name, (run, _, same_data) in runs.items():
        try:
            expect_reproduced(f"{experiment}().{name}", run, same_data)
        except CheckFailed as failure:
            raise CheckFailed(failure.expected, failure.seen, failure.hint if name != "rope" else hint) from None
        first, last = run.train_losses[:10], run.train_losses[-10:]
        expect(first and sum(last) / len(last) < sum(first) / len(first),
               f"{experiment}().{name}.train_losses: a training loss that goes down",
               f"{describe(run.train_losses)}" if not first else
               f"from {sum(first) / len(first):.3f} to {sum(last) / len(last):.3f} on average")


def expect_no_pos_trained(runs):
    """An untrained no-position model would widen the gap for free: it must have learned what
    it can (lookback's statistics: the reference reaches 0.20 to 0.22, an untrained one 0.06)."""
    accuracy = runs["no_pos"][1][0][1]
    expect(accuracy > 0.15, "the no-position model trained on lookback (accuracy > 0.15)",
           f"accuracy {accuracy:.3f}", "train it like the others: train(model, 'lookback', seed=seed)")


def gap_runs(reference):
    train_len = reference.tasks.TRAIN_LEN
    return [("learned", "learned", "lookback", [train_len]), ("no_pos", "none", "lookback", [train_len]),
            ("no_pos_majority", "none", "majority", [train_len])]


def extrapolation_runs(reference):
    return [("learned", "learned", "lookback", lengths(reference)), ("rope", "rope", "lookback", lengths(reference))]


# -- measure_loss_gap ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gap(experiments, reference, device, seed):
    return measured_runs(experiments, reference, device, seed, "measure_loss_gap", LossGap, gap_runs)


@pytest.mark.grade(points=3, tags=["measure_loss_gap"])
def test_gap_reproduces(gap):
    """returns the three documented models, and numbers that reproduce from their weights"""
    expect_honest(gap, "measure_loss_gap")
    value, _ = gap
    computed = value.no_pos.eval_losses[0] - value.learned.eval_losses[0]
    expect(abs(value.gap - computed) < 1e-6, f"gap == no_pos.eval_losses[0] - learned.eval_losses[0] = {computed:.4f}",
           f"{value.gap:.4f}")


@pytest.mark.grade(points=3, tags=["measure_loss_gap"])
def test_gap_measured(gap):
    """deleting positions costs a clear loss gap (> 1 nat, measured by the grader)"""
    expect_honest(gap, "measure_loss_gap")
    _, runs = gap
    expect_no_pos_trained(runs)
    learned_loss, learned_accuracy = runs["learned"][1][0]
    no_pos_loss, _ = runs["no_pos"][1][0]
    expect(learned_accuracy > 0.9, "the model with learned positions to learn lookback (accuracy > 0.9)",
           f"accuracy {learned_accuracy:.3f}", "train it with train(model, 'lookback', seed=seed)")
    expect(no_pos_loss - learned_loss > 1.0, "a loss gap (none - learned) above 1.0",
           f"{no_pos_loss:.3f} - {learned_loss:.3f} = {no_pos_loss - learned_loss:.3f}")


@pytest.mark.grade(points=3, tags=["measure_loss_gap"])
def test_gap_can_and_cannot(gap):
    """without positions the model cannot do lookback but can do majority"""
    expect_honest(gap, "measure_loss_gap")
    _, runs = gap
    expect_no_pos_trained(runs)
    lookback = runs["no_pos"][1][0][1]
    majority = runs["no_pos_majority"][1][0][1]
    expect(lookback < 0.35, "the no-position model to fail at lookback (accuracy < 0.35)", f"{lookback:.3f}",
           "no_pos must be built with Config(pos='none')")
    expect(majority > 0.7, "the no-position model to learn majority (accuracy > 0.7)", f"{majority:.3f}",
           "train no_pos_majority on 'majority'")


# -- extrapolation_runs --------------------------------------------------------------------------
TAGS = ["extrapolation_runs", "apply_rope", "rope_frequencies"]
ROPE_HINT = "the grader measures your RoPE model with a correct RoPE: positions.py must pass its checks first"


@pytest.fixture(scope="module")
def extrapolation(experiments, reference, device, seed):
    return measured_runs(experiments, reference, device, seed, "extrapolation_runs", Extrapolation,
                         extrapolation_runs)


@pytest.mark.grade(points=3, tags=TAGS)
def test_extrapolation_reproduces(extrapolation):
    """returns learned and RoPE models, and numbers at every length that reproduce from their weights"""
    expect_honest(extrapolation, "extrapolation_runs", ROPE_HINT)


@pytest.mark.grade(points=3, tags=TAGS)
def test_learned_fails_beyond(extrapolation, reference):
    """learned positions work at the training length and fail beyond it"""
    expect_honest(extrapolation, "extrapolation_runs", ROPE_HINT)
    _, runs = extrapolation
    train_len = reference.tasks.TRAIN_LEN
    accuracies = [accuracy for _, accuracy in runs["learned"][1]]
    expect(accuracies[0] > 0.9, f"learned positions to learn lookback at length {train_len} (accuracy > 0.9)",
           f"{accuracies[0]:.3f}")
    for n, accuracy in zip(lengths(reference)[1:], accuracies[1:]):
        expect(accuracy < 0.2, f"learned positions to fail past {train_len} at length {n} (accuracy < 0.2)",
               f"{accuracy:.3f}", "evaluate at longer lengths with start=TRAIN_LEN")


@pytest.mark.grade(points=3, tags=TAGS)
def test_rope_extrapolates(extrapolation, reference):
    """RoPE keeps working past the training length, far better than learned positions"""
    expect_honest(extrapolation, "extrapolation_runs", ROPE_HINT)
    _, runs = extrapolation
    learned = [accuracy for _, accuracy in runs["learned"][1]]
    rope = [accuracy for _, accuracy in runs["rope"][1]]
    for n, rope_accuracy, learned_accuracy in zip(lengths(reference), rope, learned):
        expect(rope_accuracy > 0.8, f"RoPE accuracy > 0.8 at length {n}", f"{rope_accuracy:.3f}",
               "train it with the documented defaults: train(model, 'lookback', seed=seed)")
        if n > reference.tasks.TRAIN_LEN:
            expect(rope_accuracy - learned_accuracy > 0.6, f"RoPE ahead of learned by > 0.6 at length {n}",
                   f"{rope_accuracy:.3f} vs {learned_accuracy:.3f}")
