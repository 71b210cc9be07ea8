"""Lab 2's experiment checks: the reference's claims hold, every time; every run is held to the
lab's recipe and only numbers that reproduce from returned weights count; the usual slips are
named, each only where it is made, and no visible message names the course's hidden seed. Also
the learner's --experiments run."""
import functools
import importlib.util
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from test_lab2_model import load_handout

from grader.lab_api import apart

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"
HIDDEN_SEED = runpy.run_path(str(ROOT / "grader/labs/lab2/hidden/seed.py"))["SEED"]    # never named by a check
EXPERIMENTS = ["measure_loss_gap", "extrapolation_runs"]


def assemble(tmp_path, **overrides):
    """A submission: the reference's files, with some replaced by tests/submissions/<name>/<file>."""
    folder = tmp_path / "submission"
    shutil.copytree(ROOT / "reference/lab2", folder, ignore=shutil.ignore_patterns("__pycache__"))
    for file, name in overrides.items():
        shutil.copy(SUBMISSIONS / name / f"{file}.py", folder / f"{file}.py")
    return folder


@pytest.mark.slow
def test_reference_full_marks_and_same_figures_twice(grade_lab2):
    first = grade_lab2(ROOT / "reference/lab2")
    assert first.all_passed and first.score == first.max_score, [c.message for c in first.checks if c.message]
    assert all(item.done for item in first.done_when)
    second = grade_lab2(ROOT / "reference/lab2")
    strip = lambda results: json.loads(results.model_dump_json(exclude={"execution_time"}))
    assert strip(first) == strip(second)


def test_stubs_say_not_implemented_once_and_train_nothing(grade_lab2, monkeypatch):
    """A stub's grading starts no run of the recipe: no process of the judge's own is spawned."""
    started = []
    monkeypatch.setattr(apart, "submit", lambda *args: started.append(args))
    results = grade_lab2(None, EXPERIMENTS)
    assert started == []
    assert results.score == 0
    assert {c.status for c in results.checks} == {"not_implemented"}
    assert {c.message for c in results.checks if c.function == "measure_loss_gap"} == {"not implemented yet"}


@pytest.mark.slow
def test_made_up_numbers_with_untrained_weights_score_zero(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, experiments="fabricated"), EXPERIMENTS)
    assert results.score == 0
    assert all("do not come from the returned weights" in c.message for c in results.checks)


def test_undertrained_runs_are_not_the_recipe(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, experiments="undertrained"), EXPERIMENTS)
    assert results.score == 0
    assert all("trained 15 steps, the lab trains 70" in c.message for c in results.checks)


def checks_of(results, function):
    """{check name: message} of the function's failed checks, and whether any passed."""
    mine = [c for c in results.checks if c.function == function]
    return {c.test.split("::")[-1]: c.message for c in mine if c.status == "failed"}, \
        any(c.status == "passed" for c in mine)


def expect_all_lost(results, function, words):
    failed, any_passed = checks_of(results, function)
    assert not any_passed and failed, (function, failed)
    assert all(words in message for message in failed.values()), (words, failed)


def expect_slip(results, function, check, words):
    """A named slip costs the reproduction check only."""
    failed, _ = checks_of(results, function)
    assert list(failed) == [check], failed
    assert all(w in failed[check] for w in words), failed[check]
    assert "do not come from" not in failed[check]


def expect_lost(results, function, checks, words):
    """Exactly `checks` of the function fail, each saying `words`; the others pass."""
    failed, _ = checks_of(results, function)
    assert sorted(failed) == sorted(checks), failed
    assert all(words in message for message in failed.values()), (words, failed)


@pytest.mark.slow
def test_fitting_the_evaluation_batch_and_training_longer_lose_their_functions(grade_lab2, tmp_path):
    """no_pos, fitted to the evaluation batch, is in every claim of measure_loss_gap; the RoPE run,
    trained at 96, costs the checks that use it, not learned positions' claim (its run is the recipe's).
    Neither passes on_step: the on_step checks say so (other runs are the recipe's)."""
    results = grade_lab2(assemble(tmp_path, experiments="fit_and_stretch"), EXPERIMENTS)
    claims = ["test_gap_reproduces", "test_gap_measured", "test_gap_can_and_cannot"]
    expect_lost(results, "measure_loss_gap", [*claims, "test_gap_passes_on_step"], "")
    failed, _ = checks_of(results, "measure_loss_gap")
    assert all("on the documented data" in failed[c] and "fitted to the evaluation batch" in failed[c] for c in claims)
    expect_lost(results, "extrapolation_runs", ["test_extrapolation_reproduces", "test_rope_extrapolates",
                                                "test_extrapolation_passes_on_step"], "")
    failed, _ = checks_of(results, "extrapolation_runs")
    assert all("trained at length 96, the lab trains at 24" in failed[c]
               for c in ("test_extrapolation_reproduces", "test_rope_extrapolates"))
    assert all("hand on the on_step you were given" in checks_of(results, f)[0][c] for f, c in (
        ("measure_loss_gap", "test_gap_passes_on_step"), ("extrapolation_runs", "test_extrapolation_passes_on_step")))


@pytest.mark.slow
def test_sorted_losses_lose_and_start_0_is_named(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, experiments="tidy_and_start0"), EXPERIMENTS)
    expect_all_lost(results, "measure_loss_gap", "the recipe's losses in another order (sorted?)")
    expect_slip(results, "extrapolation_runs", "test_extrapolation_reproduces",
                ["your numbers match evaluate(..., start=0)", "(start=TRAIN_LEN)"])


@pytest.mark.slow
def test_rounded_numbers_are_named(grade_lab2, tmp_path):
    """evaluate()'s numbers rounded to 3 decimals (the docstring: unrounded), within the float noise
    a reproduction allows: named, at the reproduction check only; unrounded ones are not."""
    results = grade_lab2(assemble(tmp_path, experiments="rounded_numbers"), EXPERIMENTS)
    expect_slip(results, "extrapolation_runs", "test_extrapolation_reproduces",
                ["your numbers are evaluate()'s rounded (3 decimals)"])
    assert checks_of(results, "measure_loss_gap") == ({}, True)


REPRODUCES = {"measure_loss_gap": "test_gap_reproduces", "extrapolation_runs": "test_extrapolation_reproduces"}


def expect_reporting_slip(results, words, functions=EXPERIMENTS):
    """A slip in the report of runs that are the recipe's: the reproduction check of each function
    in `functions` fails, with `words`, and nothing else; the others keep full marks; the course's
    seed is named nowhere."""
    for function in EXPERIMENTS:
        if function in functions:
            expect_slip(results, function, REPRODUCES[function], words)
        else:
            assert checks_of(results, function) == ({}, True), function
    scores = results.by_function(EXPERIMENTS)
    assert all(scores[f][0] == scores[f][1] - (3 if f in functions else 0) for f in EXPERIMENTS), scores
    assert hidden_seed_named(results) == []


def test_accuracy_in_percent_costs_the_reproduction_checks_only(grade_lab2, tmp_path):
    """The recipe's weights, accuracies reported as percentages: 3 points of 10 per function, named
    as a factor of 100 at the course's seed too (it is the grading's seed here), not as numbers that
    do not come from the weights."""
    results = grade_lab2(assemble(tmp_path, experiments="report_percent"), EXPERIMENTS)
    expect_reporting_slip(results, ["your accuracies are evaluate()'s times 100"])


@pytest.mark.slow
def test_another_start_index_costs_the_reproduction_check_only(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, experiments="report_start_index"), EXPERIMENTS)
    expect_reporting_slip(results, ["your numbers match evaluate(..., start=12 at length 48, start=12 at length 96)"],
                          ["extrapolation_runs"])


@pytest.mark.slow
def test_another_batch_size_costs_the_reproduction_check_only(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, experiments="report_batch_size"), EXPERIMENTS)
    expect_reporting_slip(results, ["your numbers match evaluate(..., batch_size=64)"], ["measure_loss_gap"])


@pytest.mark.slow
def test_numbers_no_slip_explains_from_the_recipes_weights_cost_the_reproduction_check_only(grade_lab2, tmp_path):
    """Losses reported 1.1 times evaluate()'s: no hint names a slip, the check says the numbers differ."""
    results = grade_lab2(assemble(tmp_path, experiments="report_scaled_loss"), EXPERIMENTS)
    expect_reporting_slip(results, ["the reported numbers differ from what evaluate() gives for these weights"])
    assert not [c.hint for c in results.checks if c.hint]


def test_on_step_dropped_or_wrapped_costs_its_check_only(grade_lab2, tmp_path):
    """The docstring: pass on_step to every train call unchanged. Dropped (measure_loss_gap) or
    wrapped in a callback that changes what it is told (extrapolation_runs): 1 point each, said why."""
    results = grade_lab2(assemble(tmp_path, experiments="on_step_dropped"), EXPERIMENTS)
    for function, check, words in (
            ("measure_loss_gap", "test_gap_passes_on_step", "none of train's 70 calls of on_step reached"),
            ("extrapolation_runs", "test_extrapolation_passes_on_step", "the experiment's on_step got "
                                                                         "('learned · lookback', 0, 70")):
        failed, _ = checks_of(results, function)
        assert list(failed) == [check] and words in failed[check], failed
    scores = results.by_function(EXPERIMENTS)
    assert all(scores[f][0] == scores[f][1] - 1 for f in EXPERIMENTS), scores


def hidden_seed_named(results):
    """The visible messages and hints that name the course's hidden seed (hidden/seed.py) as a number."""
    seed = re.compile(rf"(?<![\w.]){HIDDEN_SEED}(?![\w.])")
    return [c.message + c.hint for c in results.checks
            if c.visibility == "visible" and seed.search(c.message + c.hint)]


@pytest.mark.slow
def test_evaluating_on_the_training_seed_is_named_and_more_steps_lose(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, experiments="seed_slip_and_more_steps"), EXPERIMENTS)
    expect_slip(results, "measure_loss_gap", "test_gap_reproduces",
                ["your numbers match evaluate(..., seed=seed)", "seed=seed + 1"])
    failed, _ = checks_of(results, "measure_loss_gap")
    assert "best of" not in failed["test_gap_reproduces"] and "seed is ignored" not in failed["test_gap_reproduces"]
    expect_all_lost(results, "extrapolation_runs", "trained 140 steps, the lab trains 70")
    assert hidden_seed_named(results) == []


@pytest.mark.slow
def test_the_best_of_several_evaluations_is_named(grade_lab2, tmp_path):
    """Each run evaluated on seed, seed + 1 and seed + 2, the lowest loss kept: named as such where
    the answers show it, a run's lengths measured on different data (extrapolation_runs), not as the
    training seed, which one run's numbers match; at the reproduction checks only. measure_loss_gap's
    runs give one number each, each from one data (seed, seed, seed + 2 at the course's seed): what
    one evaluation per run on data of its own gives too, so that is what its hint says."""
    results = grade_lab2(assemble(tmp_path, experiments="best_of_three"), EXPERIMENTS)
    for function, check, words in (
            ("measure_loss_gap", "test_gap_reproduces",
             ["your numbers come from evaluations on different data (seed=seed, seed=seed + 2)",
              "evaluate every model with seed=seed + 1"]),
            ("extrapolation_runs", "test_extrapolation_reproduces",
             ["your numbers are the best of evaluations on different data",
              "evaluate each model once per length, with seed=seed + 1"])):
        expect_slip(results, function, check, words)
        assert "training data" not in checks_of(results, function)[0][check]
    assert hidden_seed_named(results) == []


@pytest.mark.slow
def test_experiments_that_ignore_the_seed_lose_all_and_the_hidden_seed_is_not_named(grade_lab2, tmp_path):
    """The defaults whatever seed is asked: right only at seed 0, so the course's seed shows it; the
    hint says so without naming that seed."""
    results = grade_lab2(assemble(tmp_path, experiments="seed_ignored"), EXPERIMENTS)
    for function in EXPERIMENTS:
        expect_all_lost(results, function, "the seed is ignored: built and trained as for seed 0")
    assert hidden_seed_named(results) == [] and HIDDEN_SEED != 0


@pytest.mark.slow
def test_another_task_loses_and_lengths_in_another_order_are_named(grade_lab2, tmp_path):
    """no_pos_majority trained on lookback costs the checks that use it; the loss gap (learned and
    no_pos, the recipe's) and on_step keep their points."""
    results = grade_lab2(assemble(tmp_path, experiments="other_task_and_order_slip"), EXPERIMENTS)
    expect_lost(results, "measure_loss_gap", ["test_gap_reproduces", "test_gap_can_and_cannot"],
                "trained on 'lookback', this run is 'majority'")
    expect_slip(results, "extrapolation_runs", "test_extrapolation_reproduces", ["in another order"])


@pytest.mark.slow
def test_one_run_off_the_recipe_costs_the_checks_that_use_it(grade_lab2, tmp_path):
    """no_pos_majority trained with seed + 1, the other runs the recipe's: its reproduction and the
    can/cannot claim fail, saying how it parts from the recipe; the loss gap and on_step, whose runs
    and clause are right, keep their 4 points."""
    results = grade_lab2(assemble(tmp_path, experiments="majority_seed_slip"), EXPERIMENTS)
    expect_lost(results, "measure_loss_gap", ["test_gap_reproduces", "test_gap_can_and_cannot"], "no_pos_majority")
    scores = results.by_function(EXPERIMENTS)
    assert scores["measure_loss_gap"] == (4, 10) and scores["extrapolation_runs"] == (10, 10), scores
    assert hidden_seed_named(results) == []


@pytest.mark.slow
def test_own_adam_loop_runs_in_another_order_and_complex_rope_keep_full_marks(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, experiments="own_loop", positions="alternative_styles"), EXPERIMENTS)
    assert results.score == results.max_score, [c.message for c in results.checks if c.status != "passed"]


def test_a_wrong_rope_costs_positions_only(grade_lab2, tmp_path):
    """The experiments run with a correct RoPE in place of positions.py (public/fed/positions.py): a RoPE
    mistake is charged to rope_frequencies and apply_rope, not again to extrapolation_runs. (The device
    checks of rope_frequencies stay passed: cos and sin swapped is a value slip the hint names.)"""
    results = grade_lab2(assemble(tmp_path, positions="mistakes_a"))
    scores = results.by_function(EXPERIMENTS + ["apply_rope", "rope_frequencies"])
    assert all(scores[f][0] == scores[f][1] for f in EXPERIMENTS), [c.message for c in results.checks if c.message]
    assert all(scores[f][0] < scores[f][1] for f in ("apply_rope", "rope_frequencies"))


@pytest.mark.slow
def test_experiments_command_shows_table_chart_and_writes_plots(tmp_path):
    run = subprocess.run([sys.executable, "grade.py", "lab2", "--experiments", "--submission", "reference/lab2",
                          "--out", str(tmp_path / "plots")], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "120"}, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Loss gap" in run.stdout and "█" in run.stdout
    assert {p.name for p in (tmp_path / "plots").glob("*.png")} == {"extrapolation.png", "training_loss.png"}


def test_each_set_of_weights_is_measured_once_and_only_for_itself(monkeypatch):
    """The judge measures the same weights once per process (a batch worker's next student, the
    yardsticks), and never hands one model's numbers to another whose weights differ in one bit."""
    spec = importlib.util.spec_from_file_location("provenance_under_test",
                                                  ROOT / "grader/labs/lab2/public/provenance.py")
    provenance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(provenance)
    model, tasks = load_handout()
    measured = []
    monkeypatch.setattr(tasks, "evaluate", lambda net, *args, **kwargs: measured.append(args) or (
        float(next(net.parameters()).detach().sum()), 0.5))
    reference = SimpleNamespace(model=model, tasks=tasks)
    first = model.build_model(model.Config(pos="learned"), seed=0)
    again = model.build_model(model.Config(pos="learned"), first.state_dict())
    lengths = [tasks.TRAIN_LEN, 2 * tasks.TRAIN_LEN]
    assert provenance.remeasure(reference, first, "lookback", lengths, 6) == \
        provenance.remeasure(reference, again, "lookback", lengths, 6)
    assert len(measured) == 2
    provenance.remeasure(reference, first, "lookback", lengths, 7)         # other data: measured
    assert len(measured) == 4
    weights = {name: w.clone() for name, w in first.state_dict().items()}
    weights["tok_emb.weight"][0, 0] = torch.nextafter(weights["tok_emb.weight"][0, 0], torch.tensor(9.0))
    nudged = model.build_model(model.Config(pos="learned"), weights)
    scores = provenance.remeasure(reference, nudged, "lookback", lengths, 6)
    assert len(measured) == 4 + len(lengths) and scores[0].loss == float(next(nudged.parameters()).detach().sum())


def test_models_in_each_others_fields_are_named_so():
    """Extrapolation(rope, learned) for Extrapolation(learned, rope): the hint says which model is
    where, not that the models were built wrong; a config changed otherwise keeps that hint."""
    spec = importlib.util.spec_from_file_location("provenance_under_test",
                                                  ROOT / "grader/labs/lab2/public/provenance.py")
    provenance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(provenance)
    from dataclasses import asdict

    from grader.lab_api.checks import CheckFailed

    model, tasks = load_handout()
    given = SimpleNamespace(model=model, tasks=tasks)
    rope = asdict(model.Config(pos="rope"))
    run = SimpleNamespace(config=rope, state_dict=model.build_model(rope).state_dict())
    built, other = provenance.rebuild(given, run, "learned", "learned", "cpu")     # measured as what it is
    assert built.cfg.pos == "rope"
    assert "this is the pos='rope' model: learned holds the pos='learned' one" in other.hint
    run = SimpleNamespace(config=asdict(model.Config(pos="learned", d_model=64)), state_dict={})
    with pytest.raises(CheckFailed) as failed:                              # never built
        provenance.rebuild(given, run, "learned", "learned", "cpu")
    assert "nothing changed" in failed.value.hint


def test_every_batch_size_is_measured_in_one_pass_as_evaluate_measures_it():
    """A reporting slip's search of batch sizes: where each smaller batch of the task is the
    largest's first rows (lookback), one pass gives every size evaluate()'s own numbers, within
    float noise; where it is not (majority draws more after its tokens), each size is evaluated
    apart, and the pass is not tried again for the same length, data and start."""
    spec = importlib.util.spec_from_file_location("provenance_under_test",
                                                  ROOT / "grader/labs/lab2/public/provenance.py")
    provenance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(provenance)
    model, tasks = load_handout()
    given = SimpleNamespace(model=model, tasks=tasks)
    net = model.build_model(model.Config(pos="learned"), seed=3)
    digest, sizes = provenance.digest(net), provenance.reported.BATCH_SIZES
    n, start = 2 * tasks.TRAIN_LEN, tasks.TRAIN_LEN
    one_pass = provenance.by_batch_size(given, net, "lookback", n, 7, start, digest)
    assert sorted(key[-1] for key in one_pass) == sorted(sizes)
    for size in (1, 10, 500, 1024):
        loss, accuracy = tasks.evaluate(net, "lookback", n, start=start, batch_size=size, seed=7)
        assert one_pass[digest, "lookback", n, 7, start, size] == pytest.approx((loss, accuracy), abs=1e-6)
    assert provenance.by_batch_size(given, net, "majority", n, 7, start, digest) == {}
    evaluated, passes = [], []
    evaluate, one_pass_of = tasks.evaluate, provenance.by_batch_size

    @functools.wraps(evaluate)
    def counted(*args, **kwargs):
        evaluated.append(kwargs.get("batch_size"))
        return evaluate(*args, **kwargs)
    tasks.evaluate = counted
    provenance.by_batch_size = lambda *args: passes.append(args[2]) or one_pass_of(*args)
    try:
        for size in (2, 64):
            provenance.remeasure(given, net, "majority", [n], 7, None, size)
    finally:
        tasks.evaluate = evaluate
    assert evaluated == [2, 64] and passes == ["majority"]     # each size apart; the pass tried once


@pytest.mark.slow
def test_accuracies_rounded_alone_are_named(grade_lab2, tmp_path):
    """Losses unrounded, accuracies rounded to 3 decimals: within the float noise a reproduction
    allows, yet not evaluate()'s numbers (the docstring: unrounded); named at the reproduction checks
    only, as rounded losses are. An accuracy of 1.0 is no rounding and shows none."""
    results = grade_lab2(assemble(tmp_path, experiments="acc_rounded"), EXPERIMENTS)
    expect_reporting_slip(results, ["your accuracies are evaluate()'s rounded (3 decimals)"])


@pytest.mark.slow
@pytest.mark.parametrize("name, words", [
    ("on_step_two_args", ["the on_step it was given raised TypeError"]),
    ("on_step_announce", ["the experiment's on_step was called as on_step('learned · lookback')"]),
    ("own_loop_step0", ["the experiment's on_step was called as on_step('", " · ", "', 0, 70, "]),
    ("sanity_assert_on_step", ["none of train's 70 calls of on_step reached"])])
def test_on_step_called_otherwise_costs_its_check_only(grade_lab2, tmp_path, name, words):
    """A callback handed to train that train cannot call (it takes (step, loss)), on_step called by
    the experiment itself with one argument, or by its own loop with steps counted from 0 (as
    on_step_dropped's wrapper counts them through train): a real progress callback fails or counts
    wrong, though the grading's own call passes no on_step. The on_step checks say so (1 point
    each), no other. Nor does an experiment that asserts its learned model learned (> 0.5) before
    its next train calls, which drop on_step: the probe's evaluate gives the reference's numbers, so
    the probe reaches them."""
    results = grade_lab2(assemble(tmp_path, experiments=name), EXPERIMENTS)
    for function, check in (("measure_loss_gap", "test_gap_passes_on_step"),
                            ("extrapolation_runs", "test_extrapolation_passes_on_step")):
        failed, _ = checks_of(results, function)
        assert list(failed) == [check] and all(w in failed[check] for w in words), failed
    scores = results.by_function(EXPERIMENTS)
    assert all(scores[f][0] == scores[f][1] - 1 for f in EXPERIMENTS), scores


@pytest.mark.slow
@pytest.mark.parametrize("name, call", [("eval_seed_plus_2", "seed=seed + 2"), ("eval_seed_2", "seed=2")])
def test_one_other_seed_throughout_is_named_not_as_the_best_kept(grade_lab2, tmp_path, name, call):
    """Every run evaluated once, on one other seed: that seed is named, in both experiments, even
    where its numbers happen to be the better ones (not 'the best of evaluations on different data')."""
    results = grade_lab2(assemble(tmp_path, experiments=name), EXPERIMENTS)
    expect_reporting_slip(results, [f"your numbers match evaluate(..., {call})"])
    assert not [c.message for c in results.checks if "best of" in c.message]


@pytest.mark.slow
def test_one_run_evaluated_on_other_data_is_named_though_its_loss_is_small(grade_lab2, tmp_path):
    """The learned model of measure_loss_gap evaluated on evaluate's default data (seed=1): its loss,
    near 0.0025, moves by about 1e-3 of itself there, far more than float noise (1e-6), though far
    less than 2e-3 nats. Named at the reproduction check only; float64 evaluation of the returned
    weights stays full marks."""
    results = grade_lab2(assemble(tmp_path, experiments="learned_default_seed"), EXPERIMENTS)
    expect_reporting_slip(results, ["different data (seed=seed + 1, seed=1)"], ["measure_loss_gap"])
    results = grade_lab2(assemble(tmp_path / "wide", experiments="float64_eval"), EXPERIMENTS)
    assert results.score == results.max_score, [c.message for c in results.checks if c.status != "passed"]


@pytest.mark.slow
@pytest.mark.parametrize("name, words", [
    ("task_label", "measure_loss_gap().no_pos_majority.task == 'majority'"),
    ("extra_lengths", "measure_loss_gap().learned.eval_lengths == [24]")])
def test_a_mislabelled_run_costs_the_reproduction_check_only(grade_lab2, tmp_path, name, words):
    """The recipe's runs, a Run's label wrong (its task, or more lengths than documented): a slip in
    the report, which the judge measures past (it knows each field's task and lengths); it cost every
    check of the experiment, the claims and on_step too."""
    results = grade_lab2(assemble(tmp_path, experiments=name), EXPERIMENTS)
    expect_reporting_slip(results, [words], ["measure_loss_gap"])


@pytest.mark.slow
def test_a_run_built_with_another_position_encoding_costs_the_checks_that_use_it(grade_lab2, tmp_path):
    """no_pos_majority built with pos="learned": its run is not the documented model, so its
    reproduction and the can/cannot claim fail, saying so; the loss gap (learned and no_pos, the
    recipe's) and on_step keep their 4 points, as any other run off the recipe leaves them."""
    results = grade_lab2(assemble(tmp_path, experiments="majority_pos_learned"), EXPERIMENTS)
    expect_lost(results, "measure_loss_gap", ["test_gap_reproduces", "test_gap_can_and_cannot"],
                "this is the pos='learned' model: measure_loss_gap().no_pos_majority holds the pos='none' one")
    scores = results.by_function(EXPERIMENTS)
    assert scores["measure_loss_gap"] == (4, 10) and scores["extrapolation_runs"] == (10, 10), scores


@pytest.mark.slow
def test_initial_weights_are_named_as_such(grade_lab2, tmp_path):
    """Weights copied before train(), the trained model's losses and numbers: every check is lost,
    saying the weights are the initial ones; not 'trained on after the recorded steps', nor numbers
    that do not come from the weights (they come from the trained model)."""
    results = grade_lab2(assemble(tmp_path, experiments="initial_weights"), EXPERIMENTS)
    for function in EXPERIMENTS:
        expect_all_lost(results, function, "they are the model's initial weights")
    assert not [c.message for c in results.checks if "trained on after" in c.message or "do not come" in c.message]


@pytest.mark.slow
def test_runs_each_evaluated_once_on_other_data_are_not_the_best_kept(grade_lab2, tmp_path):
    """no_pos and RoPE evaluated on their training data (seed), the others on seed + 1: each run
    once, on one data. RoPE's numbers there are worse, learned's accuracies happen to be no lower
    than on the training data: not 'the best of evaluations', which the answers do not show."""
    results = grade_lab2(assemble(tmp_path, experiments="one_run_train_data"), EXPERIMENTS)
    expect_reporting_slip(results, ["your numbers come from evaluations on different data (seed=seed + 1, seed=seed)"])


@pytest.mark.slow
def test_a_run_that_cannot_be_built_costs_the_checks_that_use_it(grade_lab2, tmp_path):
    """measure_loss_gap's learned model built with max_len=TRAIN_LEN, extrapolation_runs' RoPE weights
    with an extra entry: neither is the documented model, and neither can be built as one. Each costs
    the checks that use its run (4 points of 10 kept), saying why; it cost every check of its
    experiment, the claims about the other runs and on_step too."""
    results = grade_lab2(assemble(tmp_path, experiments="unbuilt_runs"), EXPERIMENTS)
    expect_lost(results, "measure_loss_gap", ["test_gap_reproduces", "test_gap_measured"],
                "measure_loss_gap().learned.config == asdict(Config(pos='learned'))")
    expect_lost(results, "extrapolation_runs", ["test_extrapolation_reproduces", "test_rope_extrapolates"],
                'Unexpected key(s) in state_dict: "steps"')
    scores = results.by_function(EXPERIMENTS)
    assert scores["measure_loss_gap"] == (4, 10) and scores["extrapolation_runs"] == (4, 10), scores
    assert hidden_seed_named(results) == []


@pytest.mark.slow
def test_train_losses_rounded_cost_the_reproduction_check_only(grade_lab2, tmp_path):
    """The recipe's weights, train_losses rounded (3 decimals: past the recipe's tolerance; 4: within
    it): a slip in the report, named as rounding, at the reproduction checks only; it cost every
    check of measure_loss_gap, with hints that training differed (the weights show it did not)."""
    results = grade_lab2(assemble(tmp_path, experiments="losses_rounded"), EXPERIMENTS)
    expect_reporting_slip(results, ["your train_losses are train()'s rounded"])
    for function, places in (("measure_loss_gap", 3), ("extrapolation_runs", 4)):
        assert f"rounded ({places} decimals)" in checks_of(results, function)[0][REPRODUCES[function]]


@pytest.mark.slow
def test_losses_reworked_from_the_recipes_weights_lose_and_say_so(grade_lab2, tmp_path):
    """The recipe's weights with train_losses smoothed, or with one loss appended: not the losses
    train() returned (nothing of the run counts, as sorted losses); the hint says so, not that
    training parted from the recipe or took 71 steps, which the weights show it did not."""
    results = grade_lab2(assemble(tmp_path, experiments="losses_reworked"), EXPERIMENTS)
    for function in EXPERIMENTS:
        expect_all_lost(results, function, "the weights are the recipe's, but these are not the losses its "
                                           "train() returned")
    messages = " ".join(c.message for c in results.checks)
    assert "71 losses" in messages and "trained 71 steps" not in messages and "part from it" not in messages


@pytest.mark.slow
def test_weights_returned_in_half_precision_cost_the_reproduction_check_only(grade_lab2, tmp_path):
    """The recipe's weights returned in float16: named as such at the reproduction check, the claims
    measured on them; not numbers that do not come from the weights, nor weights trained on after."""
    results = grade_lab2(assemble(tmp_path, experiments="half_weights"), EXPERIMENTS)
    expect_reporting_slip(results, ["your weights are the recipe's rounded to float16"], ["measure_loss_gap"])
    messages = " ".join(c.message for c in results.checks)
    assert "do not come from" not in messages and "trained on after" not in messages


@pytest.mark.slow
def test_an_own_loop_counting_steps_with_numpy_keeps_full_marks(grade_lab2, tmp_path):
    """An own loop that trains the extrapolation runs in lockstep and calls on_step with np.int64
    steps, 1 to 70: a call train() could make, to a progress callback; it cost the on_step check."""
    results = grade_lab2(assemble(tmp_path, experiments="own_loop_numpy_steps"), EXPERIMENTS)
    assert results.score == results.max_score, [c.message for c in results.checks if c.status != "passed"]
