"""Checks of experiments.py: every run is held to the lab's recipe, and the lab's claims are
measured again from the student's weights. How a run is held to the recipe, and its reported
numbers to its weights, is provenance.py's (with grader.lab_api.provenance); the claims are
here. Each check holds to the recipe the runs it uses: a run that is not the recipe's costs the
checks about it (its reproduction, the claims it is part of), not those of the other runs.
Public: a learner's copy runs the experiments at two seeds, 0 and another, and a check passes
only when it passes at both; the course's grading runs them at a seed of its own
(conftest.py).

Thresholds come from the reference over seeds 0..19 (benchmarks/seed_spread.py), min / median / max:
    loss gap (none - learned)              2.273 / 2.301 / 2.331      -> gap > 1.0
    learned, lookback accuracy             1.000 / 1.000 / 1.000      -> > 0.9
    no positions, lookback accuracy        0.197 / 0.217 / 0.222      -> < 0.35, and > 0.15: trained
                                                                         (untrained: about 0.06)
    no positions, majority accuracy        0.824 / 0.855 / 0.887      -> > 0.7
    learned at 48 / 96 (past 24 only)      0.059-0.076 / 0.065-0.074  -> < 0.2
    RoPE at 24 / 48 / 96                   0.948 / 0.948 / 0.952 min  -> > 0.8
    RoPE - learned at 48 / 96              0.879 / 0.883 min          -> > 0.6
"""
import pytest

from grader.lab_api import CallFailed
from grader.lab_api.checks import CheckFailed, expect, load_beside
from grader.lab_api.provenance import each_seed, expect_honest, per_seed

provenance = load_beside(__file__, "provenance")
ON_STEP = "on_step"             # the key of the on_step probe's call (conftest.py: experiments)
NOT_PASSED = "OnStepNotPassed: "  # what the probe's train() raises (fed/on_step/tasks.py)
CALLED_OTHERWISE = "the experiment's on_step was called as"     # ... its probe: not as train() calls it
ROPE_ACCURACY = 0.8             # at every length, the training length's and beyond (the class page draws it)
GAP = 1.0                       # nats: deleting positions costs at least this much (the class page draws it)


def lengths(given):
    train_len = given.tasks.TRAIN_LEN
    return [train_len, 2 * train_len, 4 * train_len]


def expect_no_pos_trained(runs):
    """An untrained no-position model would widen the gap for free: it must have learned what
    it can (lookback's statistics: the reference reaches 0.20 to 0.22, an untrained one 0.06)."""
    accuracy = runs["no_pos"].fresh[0].accuracy
    expect(accuracy > 0.15, "the no-position model trained on lookback (accuracy > 0.15)",
           f"accuracy {accuracy:.3f}", "train it like the others: train(model, 'lookback', seed=seed)")


def yardstick(recipe, given, device, seed, pos, task, eval_lengths):
    """The judge's own run of the recipe, measured as a learner's is: the class page's reference."""
    model = given.model
    built = model.build_model(model.Config(pos=pos), recipe(pos, task, seed.value)["state_dict"], device=device)
    return provenance.remeasure(given, built, task, eval_lengths, provenance.FRESH)


def first(outcomes):
    """The first seed and its (result, runs), or None when it raised: the class page's figures."""
    seed, outcome = next(iter(outcomes.items()))
    return None if isinstance(outcome, BaseException) else (seed, *outcome)


def expect_some_honest(runs):
    """Some run is the recipe's (else the first's problem is raised): the experiment trained by the
    recipe, so a clause about how it trains (on_step) has something to be about."""
    if not any(run.problem is None for run in runs.values()):
        expect_honest(runs.values())


def expect_on_step(outcomes, experiments, name):
    """Some run is the recipe's, and the on_step probe (conftest.py) found on_step handed on
    unchanged to every train call: each call of train()'s reached the on_step the grader passed, and
    the experiment called it no other way (a callback that raises when train calls it fails too). A
    failure of the probe's call that is not the probe's (its train() trains nothing) shows no slip.
    A run that is not the recipe's costs the checks that use it, not this one's clause."""
    each_seed(outcomes, lambda value, runs, seed: expect_some_honest(runs))
    try:
        experiments[name, ON_STEP].result()
    except CallFailed as failure:
        if failure.kind != "raised":
            raise
        if failure.message.startswith(NOT_PASSED):
            seen = failure.message.removeprefix(NOT_PASSED)
            raise CheckFailed(f"{name} to pass its on_step to every train call unchanged", seen,
                              "call on_step only as train() does, on_step(name, step, steps, loss), or leave "
                              "the calling to train" if seen.startswith(CALLED_OTHERWISE) else
                              "train(model, task, seed=seed, on_step=on_step): hand on the on_step you were given, "
                              "as it is, to every train call") from None


def gap_runs(given):
    train_len = given.tasks.TRAIN_LEN
    return [("learned", "learned", "lookback", [train_len]), ("no_pos", "none", "lookback", [train_len]),
            ("no_pos_majority", "none", "majority", [train_len])]


def extrapolation_runs(given):
    return [("learned", "learned", "lookback", lengths(given)), ("rope", "rope", "lookback", lengths(given))]


# -- measure_loss_gap ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gap(experiments, recipe, given, device, seeds):
    """{seed: (result, {run name: Measured}), or what it raised}."""
    return per_seed(seeds, lambda seed: provenance.measured_runs(
        experiments["measure_loss_gap", seed.value], recipe, given, device, seed, "measure_loss_gap",
        provenance.LossGap, gap_runs))


@pytest.mark.grade(points=3, tags=["measure_loss_gap"])
def test_gap_reproduces(gap):
    """returns the three documented models, trained by the recipe, and the numbers evaluate() gives"""
    def check(value, runs, seed):
        expect_honest(runs.values(), reproduces=True)
        computed = value.no_pos.eval_losses[0] - value.learned.eval_losses[0]
        expect(abs(value.gap - computed) < 1e-6,
               f"gap == no_pos.eval_losses[0] - learned.eval_losses[0] = {computed:.4f}", f"{value.gap:.4f}")
    each_seed(gap, check)


def record_gap(gap, recipe, given, device, record_property):
    """The class page's figures, at the first seed: the loss gap, the learner's and the judge's."""
    if first(gap) is None:
        return
    seed, _, runs = first(gap)
    if runs["no_pos"].fresh and runs["learned"].fresh:         # a run never built has no numbers
        record_property("loss gap (nats)", runs["no_pos"].fresh[0].loss - runs["learned"].fresh[0].loss)
    judge = [yardstick(recipe, given, device, seed, pos, "lookback", [given.tasks.TRAIN_LEN])[0].loss
             for pos in ("none", "learned")]
    record_property("reference loss gap (nats)", judge[0] - judge[1])
    record_property("above loss gap (nats)", GAP)


@pytest.mark.grade(points=3, tags=["measure_loss_gap"])
def test_gap_measured(gap, recipe, given, device, record_property):
    """deleting positions costs a clear loss gap (> 1 nat, measured by the grader)"""
    def check(value, runs, seed):
        expect_honest([runs["learned"], runs["no_pos"]])
        expect_no_pos_trained(runs)
        learned_loss, learned_accuracy = runs["learned"].fresh[0]
        no_pos_loss, _ = runs["no_pos"].fresh[0]
        expect(learned_accuracy > 0.9, "the model with learned positions to learn lookback (accuracy > 0.9)",
               f"accuracy {learned_accuracy:.3f}", "train it with train(model, 'lookback', seed=seed)")
        expect(no_pos_loss - learned_loss > GAP, f"a loss gap (none - learned) above {GAP}",
               f"{no_pos_loss:.3f} - {learned_loss:.3f} = {no_pos_loss - learned_loss:.3f}")
    record_gap(gap, recipe, given, device, record_property)
    each_seed(gap, check)


@pytest.mark.grade(points=3, tags=["measure_loss_gap"])
def test_gap_can_and_cannot(gap):
    """without positions the model cannot do lookback but can do majority"""
    def check(value, runs, seed):
        expect_honest([runs["no_pos"], runs["no_pos_majority"]])
        expect_no_pos_trained(runs)
        lookback = runs["no_pos"].fresh[0].accuracy
        majority = runs["no_pos_majority"].fresh[0].accuracy
        expect(lookback < 0.35, "the no-position model to fail at lookback (accuracy < 0.35)", f"{lookback:.3f}",
               "no_pos must be built with Config(pos='none')")
        expect(majority > 0.7, "the no-position model to learn majority (accuracy > 0.7)", f"{majority:.3f}",
               "train no_pos_majority on 'majority'")
    each_seed(gap, check)


@pytest.mark.grade(points=1, tags=["measure_loss_gap"])
def test_gap_passes_on_step(gap, experiments):
    """passes on_step to every train call unchanged"""
    expect_on_step(gap, experiments, "measure_loss_gap")


# -- extrapolation_runs: run with a correct RoPE (conftest.py), so graded on its own --------------
TAGS = ["extrapolation_runs"]


@pytest.fixture(scope="module")
def extrapolation(experiments, recipe, given, device, seeds):
    return per_seed(seeds, lambda seed: provenance.measured_runs(
        experiments["extrapolation_runs", seed.value], recipe, given, device, seed, "extrapolation_runs",
        provenance.Extrapolation, extrapolation_runs))


@pytest.mark.grade(points=3, tags=TAGS)
def test_extrapolation_reproduces(extrapolation):
    """returns learned and RoPE models, trained by the recipe, and the numbers evaluate() gives at every length"""
    each_seed(extrapolation, lambda value, runs, seed: expect_honest(runs.values(), True))


@pytest.mark.grade(points=3, tags=TAGS)
def test_learned_fails_beyond(extrapolation, given):
    """learned positions work at the training length and fail beyond it"""
    train_len = given.tasks.TRAIN_LEN

    def check(value, runs, seed):
        expect_honest([runs["learned"]])
        accuracies = [accuracy for _, accuracy in runs["learned"].fresh]
        expect(accuracies[0] > 0.9, f"learned positions to learn lookback at length {train_len} (accuracy > 0.9)",
               f"{accuracies[0]:.3f}")
        for n, accuracy in zip(lengths(given)[1:], accuracies[1:]):
            expect(accuracy < 0.2, f"learned positions to fail past {train_len} at length {n} (accuracy < 0.2)",
                   f"{accuracy:.3f}", "evaluate at longer lengths with start=TRAIN_LEN")
    each_seed(extrapolation, check)


def record_extrapolation(extrapolation, recipe, given, device, record_property):
    """The class page's figures, at the first seed: accuracy per length, the learner's and the judge's."""
    if first(extrapolation) is None:
        return
    seed, _, runs = first(extrapolation)
    record_property(f"x evaluation length (tokens), trained at {given.tasks.TRAIN_LEN}",
                    [float(n) for n in lengths(given)])
    for pos in ("learned", "rope"):
        if runs[pos].fresh:                                     # a run never built has no numbers
            record_property(f"{pos} accuracy (fraction right)", [score.accuracy for score in runs[pos].fresh])
        record_property(f"reference {pos} accuracy (fraction right)", [score.accuracy for score in yardstick(
            recipe, given, device, seed, pos, "lookback", lengths(given))])
    record_property("above rope accuracy (fraction right)", ROPE_ACCURACY)


@pytest.mark.grade(points=3, tags=TAGS)
def test_rope_extrapolates(extrapolation, recipe, given, device, record_property):
    """RoPE keeps working past the training length, far better than learned positions"""
    def check(value, runs, seed):
        expect_honest(runs.values())
        learned = [accuracy for _, accuracy in runs["learned"].fresh]
        rope = [accuracy for _, accuracy in runs["rope"].fresh]
        for n, rope_accuracy, learned_accuracy in zip(lengths(given), rope, learned):
            expect(rope_accuracy > ROPE_ACCURACY, f"RoPE accuracy > {ROPE_ACCURACY} at length {n}",
                   f"{rope_accuracy:.3f}",
                   "train it with the documented defaults: train(model, 'lookback', seed=seed)")
            if n > given.tasks.TRAIN_LEN:
                expect(rope_accuracy - learned_accuracy > 0.6, f"RoPE ahead of learned by > 0.6 at length {n}",
                       f"{rope_accuracy:.3f} vs {learned_accuracy:.3f}")
    record_extrapolation(extrapolation, recipe, given, device, record_property)
    each_seed(extrapolation, check)


@pytest.mark.grade(points=1, tags=TAGS)
def test_extrapolation_passes_on_step(extrapolation, experiments):
    """passes on_step to every train call unchanged"""
    expect_on_step(extrapolation, experiments, "extrapolation_runs")
