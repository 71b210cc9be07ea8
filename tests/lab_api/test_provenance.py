"""grader/lab_api/provenance.py: a kept run of the recipe is trusted only once its first steps replay,
and a returned run is held to the judge's, losses and weights, within a tolerance that an honest
rewrite stays inside and a changed recipe does not; per-seed outcomes name their seed. The recipe
is the experiment lab's (tests/labs/experiment: a line fitted by SGD), which is graded end to end
last (slow: 6 s, most of it the judge's process for its recipe)."""
import importlib.util
import math
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch
from pydantic import BaseModel

from grader.core.request import Device, Request, Selection
from grader.core.runner import grade
from grader.lab_api import memo
from grader.lab_api.checks import CheckFailed
from grader.lab_api.provenance import (
    Parting,
    Seed,
    digest,
    each_seed,
    expect_honest,
    losses_provenance,
    parted,
    per_seed,
    replays,
    returned,
    weight_distance,
    weights_provenance,
    work_key,
)
from grader.lab_api.trusted import Reference
from grader.readers.manifest import find_lab

LAB = Path(__file__).resolve().parents[1] / "labs" / "experiment"
TOLERANCE = 1e-4                # the experiment lab's (public/test_fit.py)
CALL = "train(build_model(seed), seed=seed)"
tiny = Reference.over([LAB / "handout"]).tiny


def recipe(seed):
    """The judge's run of the lab's recipe (public/recipe.py), here in this process."""
    spec = importlib.util.spec_from_file_location("experiment_lab_recipe", LAB / "public" / "recipe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.train(Reference.over([LAB / "handout"]), seed)


def run(seed=0, steps=tiny.STEPS, keep=None):
    """A learner's run: the recipe with `steps`, the first `keep` losses returned."""
    model = tiny.build_model(seed)
    losses = tiny.train(model, steps=steps, seed=seed)
    return {"train_losses": losses[:keep], "state_dict": model.state_dict()}


def own_loop(seed=0):
    """An honest rewrite of the recipe: its own SGD update, no optimizer."""
    model = tiny.build_model(seed)
    data, losses = torch.Generator().manual_seed(seed), []
    for _ in range(tiny.STEPS):
        x = torch.randn(tiny.BATCH, 4, generator=data)
        loss = ((x @ model.weight.T + model.bias - x @ tiny.SLOPE) ** 2).mean()
        grads = torch.autograd.grad(loss, list(model.parameters()))
        with torch.no_grad():
            for p, g in zip(model.parameters(), grads):
                p -= tiny.LR * g
        losses.append(loss.item())
    return {"train_losses": losses, "state_dict": model.state_dict()}


def check(kept, seed=0):
    """The experiment lab's check of a kept run (public/conftest.py)."""
    model = tiny.build_model(seed)
    return replays(kept, model, tiny.STEPS, lambda steps: tiny.train(model, steps=steps, seed=seed))


def held(theirs, judge):
    """What the lab's check finds of a returned run: the losses' failure, else the weights', else None."""
    explain = lambda where: where.how.value
    return losses_provenance(theirs["train_losses"], judge["train_losses"], "fit()", CALL, explain, TOLERANCE) \
        or weights_provenance(theirs["state_dict"], judge["state_dict"], "fit()", CALL, "weights", TOLERANCE)


# -- replay ------------------------------------------------------------------------------------------
def test_replay_accepts_the_recipes_run():
    assert check(recipe(0)) and check(recipe(3), seed=3)


def test_replay_refuses_a_run_with_one_more_step_another_seed_or_shape_or_nan():
    assert not check(run(steps=tiny.STEPS + 1))
    assert not check(recipe(1))                     # a consistent run, of another seed
    wrong_shape = recipe(0)
    wrong_shape["state_dict"]["weight"] = wrong_shape["state_dict"]["weight"].T
    assert not check(wrong_shape)
    nan = recipe(0)
    nan["state_dict"]["bias"] = torch.tensor([math.nan])
    assert not check(nan)


# -- provenance --------------------------------------------------------------------------------------
def test_an_honest_rewrite_is_the_recipes_run():
    judge, honest = recipe(0), own_loop(0)
    assert held(run(), judge) is None and held(honest, judge) is None
    assert weight_distance(honest["state_dict"], judge["state_dict"]) < TOLERANCE / 10        # 4.6e-7 measured
    assert max(abs(a - b) for a, b in zip(honest["train_losses"], judge["train_losses"])) < TOLERANCE / 10   # 9.5e-7


def test_a_changed_recipe_is_refused_and_where_it_parts_is_said(monkeypatch):
    judge = recipe(0)
    more = held(run(steps=tiny.STEPS + 1), judge)
    assert more.expected == f"fit().train_losses: one loss per step of {CALL}, 5 steps" and more.seen == "6 losses"
    cut = held(run(steps=tiny.STEPS + 1, keep=tiny.STEPS), judge)     # the losses of 5 steps, the weights of 6
    assert cut.hint == "weights" and "away from the recipe's, though the losses match it" in cut.seen
    assert weight_distance(run(steps=tiny.STEPS + 1)["state_dict"], judge["state_dict"]) > 100 * TOLERANCE
    other_seed = held(run(seed=1), judge)
    assert other_seed.hint == "start" and other_seed.seen.startswith("step 1: ")
    shuffled = dict(judge, train_losses=sorted(judge["train_losses"]))
    assert held(shuffled, judge).hint == "order"
    monkeypatch.setattr(tiny, "LR", tiny.LR * 1.1)
    faster = held(run(), judge)
    assert faster.hint == "later" and faster.seen.startswith("step 2: ")


def test_where_losses_part():
    assert parted([1.0, 2.0], [1.0, 2.0], 1e-4) is None
    assert parted([1.0, math.nan], [1.0, 2.0], 1e-4).how is Parting.LATER          # NaN is never the recipe's
    assert parted([math.nan, 2.0], [1.0, 2.0], 1e-4).how is Parting.START
    found = parted([1.0, 2.5, 3.0], [1.0, 2.0, 3.0], 1e-4)
    assert (found.how, found.step, found.returned, found.steps) == (Parting.LATER, 1, 3, 3)


def test_weights_missing_or_of_another_shape_are_infinitely_far():
    judge = recipe(0)["state_dict"]
    assert weight_distance({"weight": judge["weight"]}, judge) == math.inf
    assert weight_distance({**judge, "bias": torch.zeros(2)}, judge) == math.inf
    assert weight_distance(judge, judge) == 0.0


# -- the rest of the API -----------------------------------------------------------------------------
def test_work_key_names_the_files_torch_and_device(tmp_path):
    file = tmp_path / "recipe.py"
    file.write_text("a")
    before = work_key([file], torch.device("cpu"))
    assert before[:2] == ("cpu", torch.__version__)
    file.write_text("b")
    assert work_key([file], torch.device("cpu")) != before


def test_digest_tells_weights_apart_by_one_bit_and_by_config():
    first = tiny.build_model(0)
    again = tiny.build_model(0)
    assert digest(first, "line") == digest(again, "line")
    assert digest(tiny.build_model(0), "other") != digest(first, "line")
    nudged = tiny.build_model(0)
    with torch.no_grad():
        nudged.bias[0] = torch.nextafter(nudged.bias[0], torch.tensor(1.0))
    assert digest(nudged, "line") != digest(first, "line")


class Pair(BaseModel):
    a: int
    b: list[float]


def test_returned_validates_a_result_and_says_where_it_is_not():
    done = Future()
    done.set_result({"a": 1, "b": [0.5]})
    assert returned(done, "fit()", Pair, "fit.py") == Pair(a=1, b=[0.5])
    wrong = Future()
    wrong.set_result({"a": 1, "b": "x"})
    with pytest.raises(CheckFailed) as failed:
        returned(wrong, "fit()", Pair, "fit.py")
    assert failed.value.expected == "fit() to return a Pair (see fit.py)" and "; b: " in failed.value.seen


def test_each_seed_names_the_seed_that_failed_unless_hidden_or_alone():
    def fail_at_three(value, seed):
        if seed.value == 3:
            raise CheckFailed("x", "y", "z")

    outcomes = per_seed([Seed(0), Seed(3)], lambda seed: (seed.value,))
    with pytest.raises(CheckFailed) as failed:
        each_seed(outcomes, fail_at_three)
    assert failed.value.expected == "at seed 3: x" and failed.value.hint == "z"
    with pytest.raises(CheckFailed) as failed:
        each_seed(per_seed([Seed(0), Seed(3, hidden=True)], lambda seed: (seed.value,)), fail_at_three)
    assert failed.value.expected == "at the grading's seed: x"
    with pytest.raises(CheckFailed) as failed:
        each_seed(per_seed([Seed(3)], lambda seed: (seed.value,)), fail_at_three)
    assert failed.value.expected == "x"
    raised = per_seed([Seed(0)], lambda seed: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        each_seed(raised, fail_at_three)


class Judged:
    def __init__(self, problem=None, slip=None):
        self.problem, self.slip = problem, slip


def test_expect_honest_raises_a_problem_and_a_slip_only_when_asked():
    slip = CheckFailed("reported", "other", "a slip")
    expect_honest([Judged(), Judged(slip=slip)])
    with pytest.raises(CheckFailed, match="a slip"):
        expect_honest([Judged(), Judged(slip=slip)], reproduces=True)
    with pytest.raises(CheckFailed, match="not the recipe"):
        expect_honest([Judged(problem=CheckFailed("the recipe", "not the recipe"))])


# -- the experiment lab, graded ---------------------------------------------------------------------
@pytest.mark.slow
def test_the_experiment_lab_holds_a_run_to_the_judges_recipe(zygote, tmp_path, monkeypatch):
    """The reference's run is the recipe's at both seeds; one trained a step more, with the
    recipe's losses, is refused for its weights; the judge trains its run once for both gradings."""
    monkeypatch.setattr(memo, "STATE", tmp_path / ".grade")
    monkeypatch.setattr(memo, "_memory", {})
    lab = find_lab(LAB)
    submission = tmp_path / "more"
    submission.mkdir()
    (submission / "fit.py").write_text((LAB / "reference" / "fit.py").read_text().replace(
        "losses = train(model, seed=seed)", "losses = train(model, steps=6, seed=seed)[:5]"))
    results = {}
    for name, folder in (("reference", LAB / "reference"), ("more", submission)):
        zygote.reset()
        results[name] = grade(Request(lab, folder, Device.CPU, Selection(())), zygote)
    assert results["reference"].score == results["reference"].max_score == 2
    assert results["more"].score == 0
    message = results["more"].checks[0].message
    assert "at seed 0: fit().state_dict to be the weights" in message and "right after it" in message
    assert len(list((tmp_path / ".grade").glob("memo-experiment-recipe-*.pt"))) == 2        # one per seed
