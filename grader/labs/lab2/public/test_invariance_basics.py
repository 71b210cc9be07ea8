"""Public checks of invariance.py: every clause of is_permutation_invariant's docstring, on layers
whose truth the grader computes over every reordering (layers.py). Each check asks a True and a
False question, so a constant answer earns nothing; a wrong answer's hint names the slip the
function's answers to other questions show (slips.py). The course's hidden checks ask the same
clauses on other sizes, seeds and layers."""
import pytest
import torch

from grader.lab_api.checks import describe, expect, load_beside

layers = load_beside(__file__, "layers")
check, inputs = layers.check, layers.inputs
POSITIONAL = "a layer that weights position t by 1 + t/2"
FREE = "a layer that ignores positions"


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_position_free_and_positional(student, device):
    """True for a layer that ignores positions, False for one that weights them"""
    x = inputs(2, 6, 4, 100, device)
    check(student, FREE, x, ["exact", "positionwise"])
    check(student, POSITIONAL, x, ["no_reorder"])
    layers.check_one_token(student, x)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_summed_output(student, device):
    """compares summed outputs elementwise: a layer that reverses positions keeps the sum, so True; one that
    weights them changes it even where the features' total, the batch's total, or the sum's length stays the
    same, so False; one that mixes positions changes its outputs and keeps their sum, so True; changes each
    within atol are within it, whatever their norm, so True"""
    x = inputs(3, 4, 2, 101, device)
    check(student, "a layer that reverses positions (its sum ignores order)", x, ["positionwise"])
    check(student, POSITIONAL, x)
    layers.check_one_token(student, x)
    check(student, POSITIONAL + ", on tokens whose features sum to 0", layers.zero_total(inputs(2, 4, 3, 110, device)),
          ["total"], weights=layers.weighted(4))
    check(student, layers.ROWS_CANCEL, layers.rows_cancel(inputs(1, 4, 3, 113, device)), ["batch"],
          weights=layers.weighted(4))
    check(student, layers.MIXING, x, ["positionwise", "sorted"])
    for name, (weights, x) in ((layers.SAME_LENGTH, layers.same_length(2, 4, 111, device)),
                               (layers.spread_thin_name(1024), layers.spread_thin(1024, 112, device))):
        check(student, name, x, ["norm"], weights=weights)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_every_time(student, device):
    """right every time on two positions, where a random shuffle moves nothing half the time"""
    check(student, POSITIONAL, inputs(2, 2, 3, 102, device), repeats=12)
    check(student, FREE, inputs(2, 2, 3, 102, device))
    layers.check_one_token(student, inputs(2, 2, 3, 102, device))


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_every_reordering(student, device):
    """a layer that ignores some reorderings (a swap, the reversal, rotations) but not all is not invariant"""
    x = inputs(2, 5, 3, 103, device)
    for name in ("a layer weighting positions 0 and 1 alike (swapping them changes nothing)",
                 "a layer weighting positions symmetrically (reversal changes nothing)", layers.ROTATIONS):
        check(student, name, x, ["few", "rotations"])
    check(student, FREE, x)
    layers.check_one_token(student, x)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_three_cycle(student, device):
    """every reordering of every position, not every swap: a layer no swap changes on this x, but a 3-cycle
    does; nor every swap and every rotation: a layer none of them changes on tokens a a a b b, another order
    does; a layer only orders that move the last of 6 positions change"""
    weights, x = layers.three_cycle(3, 2, 3, 108, device)
    check(student, layers.THREE_CYCLE, x, ["transpositions"], weights=weights)
    weights, x = layers.swaps_kept(2, 3, 117, device)
    check(student, layers.SWAPS_KEPT, x, ["swaps"], weights=weights)
    check(student, FREE, x)
    layers.check_one_token(student, x)
    check(student, layers.LAST_ALONE, inputs(2, 6, 3, 115, device), ["unmoved"], weights=layers.last_of(6))


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_repeated_tokens(student, device):
    """with repeated tokens a few chosen reorderings change nothing, another order does"""
    x = inputs(2, 3, 4, 104, device, "aab")
    check(student, "a position-weighted layer (gains 0, 0.5, 0) on tokens a a b", x, ["few"],
          weights=layers.toy(3, gain=[0.0, 0.5, 0.0]))
    check(student, FREE, x)
    layers.check_one_token(student, x)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_depends_on_input(student, device):
    """the same layer is invariant on one input and not on another: only running it tells"""
    layers.check_gated(student, 4, 3, 105, device)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_every_row(student, device):
    """every row of the batch counts: one row keeps its sum under every reordering, the other (row 0 or 1) not"""
    layers.check_gated(student, 4, 3, 105, device, rows=True)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_sum_not_mean(student, device):
    """summed, not averaged: a change of 3 atol in the sum is half atol in the mean over 6 positions; nor averaged
    over features: a change of 3 atol in one number of 16 is a change, as it is in two rows of 8"""
    x = inputs(2, 6, 3, 109, device)
    check(student, "a layer weighting positions a little (its sum changes by 3 atol)", x, ["mean"], atol=1e-2,
          weights=layers.sum_sized(x, 1e-2, upto=3))
    check(student, FREE, x, atol=1e-2)
    layers.check_one_token(student, x, atol=1e-2)
    weights, one = layers.one_feature(6, 16, 116, device, 1e-2)
    check(student, layers.ONE_FEATURE.format(d=16), one, ["average"], atol=1e-2, weights=weights)
    weights, one = layers.one_feature(3, 4, 118, device, 1e-2, rows=8)
    check(student, layers.ONE_ROW.format(d=4), one, ["average"], atol=1e-2, weights=weights)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_atol(student, device):
    """atol decides: a change of about 0.01 is within atol=1 but not atol=1e-5; with no atol given, 1e-5
    applies; it is absolute: on sums in the hundreds, a change of 3 atol is not within it; and every order's
    sum is held to x's own, where changes within atol from one order to the next add up, and orders each within
    atol of x's own lie further apart from one another"""
    x = inputs(1, 3, 3, 106, device)
    for atol in (1.0, 1e-5):
        check(student, "a layer that weights position t by 1 + t/500", x, ["atol"], atol=atol,
              weights=layers.weighted(3, scale=0.002))
    check(student, layers.DEFAULT_ATOL, x, ["atol"], atol=None, weights=layers.sum_sized(x, 1e-5, times=8.0))
    weights, chain = layers.chained(1, 114, device)
    check(student, layers.CHAINED, chain, ["neighbours"], weights=weights)
    weights, apart = layers.spread_apart(3, 119, device, 1e-2)
    check(student, layers.SPREAD_APART, apart, ["spread"], atol=1e-2, weights=weights)
    big = layers.large(inputs(2, 2, 3, 111, device))
    check(student, layers.LARGE_SUMS, big, ["relative"], atol=1e-2, weights=layers.sum_sized(big, 1e-2))


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_bool_and_x_unchanged(student, device):
    """returns a Python bool and leaves x unchanged"""
    x = inputs(2, 4, 3, 107, device)
    for weights, expected in ((layers.toy(4), True), (layers.weighted(4), False)):
        answer, (_, x_after) = student.with_inputs("is_permutation_invariant",
                                                   layers.sealed("Layer", weights, x, 1e-5), x)
        expect(type(answer) is bool, "a Python bool (bool(...) or torch.allclose)", describe(answer),
               layers.STARTER if answer is None else None)
        expect(answer is expected, f"{expected} for a layer that {'ignores' if expected else 'weights'} positions",
               str(answer))
        expect(isinstance(x_after, torch.Tensor) and torch.equal(x_after.cpu(), x.cpu()),
               "x unchanged", "x was modified", "index into x to reorder it: x[:, perm] makes a copy")
