"""Hidden checks of invariance.py: is_permutation_invariant is right every time, on other sizes,
seeds and layers than the public checks (the same clauses; the layers and the truth are
../public/layers.py's). Every check asks at least one question whose answer is True and one whose
answer is False, so a constant answer earns nothing; the layers are sealed, and most checks also ask
about a position-weighted layer on x of one token (True: no reordering changes x), so rules read off
a layer's weights, unsealed, do not answer either.

Some inputs repeat tokens, so that a fixed few reorderings (a swap and a rotation, every adjacent
swap, every rotation and the reversal) leave the sum unchanged while another reordering changes it.
"""
import pytest
import torch

from grader.lab_api.checks import CheckFailed, describe, expect, load_beside

layers = load_beside(__file__, "../public/layers")
slips = load_beside(__file__, "../public/slips")
check, inputs, toy, weighted = layers.check, layers.inputs, layers.toy, layers.weighted
REPEATS = 12    # the same question again: a lucky random shuffle passes 12 times in 4096


def check_invariant_one(student, x, atol=1e-5):
    """The position-free layer, and a position-weighted one on one token: True. Keeps a constant False,
    and rules read off a layer's weights, from scoring."""
    check(student, "a layer that ignores positions", x, ["exact", "positionwise"], atol=atol)
    layers.check_one_token(student, x, atol=atol)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_sum_not_order(student, device):
    """compares the summed output elementwise: reversing the output keeps the sum, so True; weighting positions
    changes it even where the features' total, the batch's total, or the sum's length stays the same; mixing
    positions changes the outputs, not their sum; changes each within atol are within it, whatever their norm"""
    x = inputs(2, 5, 4, 0, device)
    check(student, "a layer that reverses positions (its sum ignores order)", x, ["positionwise"])
    check(student, "a layer that weights position t by 1 + t/2", x)
    layers.check_one_token(student, x)
    check(student, "a layer that weights position t by 1 + t/2, on tokens whose features sum to 0",
          layers.zero_total(inputs(3, 5, 4, 26, device)), ["total"], weights=weighted(5))
    check(student, layers.ROWS_CANCEL, layers.rows_cancel(inputs(1, 5, 4, 30, device)), ["batch"], weights=weighted(5))
    check(student, layers.MIXING, x, ["positionwise", "sorted"])
    for name, (weights, x) in ((layers.SAME_LENGTH, layers.same_length(2, 6, 28, device)),
                               (layers.spread_thin_name(2048), layers.spread_thin(2048, 29, device))):
        check(student, name, x, ["norm"], weights=weights)


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
def test_short_sequences(student, device):
    """right every time for seq 1 and 2, where a random shuffle often moves nothing"""
    check(student, "a layer that weights position t by 1 + t/2", inputs(1, 1, 3, 1, device),
          otherwise="with one position there is nothing to reorder")
    check(student, "a layer that weights position t by 1 + t/2", inputs(1, 2, 3, 2, device), repeats=REPEATS)
    layers.check_one_token(student, inputs(1, 2, 3, 2, device))


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
@pytest.mark.parametrize("name", [
    "a layer weighting positions symmetrically (reversal changes nothing)",
    "a layer mixing each position with the next, round in a circle (rotations change nothing)",
    "a layer weighting positions 0 and 1 alike (swapping them changes nothing)",
], ids=["ignores reversal", "ignores rotations", "ignores a swap"])
def test_partial_invariance(student, device, name):
    """a layer that ignores only some reorderings is not invariant"""
    x = inputs(2, 4, 3, 3, device)
    check(student, name, x, ["rotations", "few"], repeats=4)
    check_invariant_one(student, x)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
@pytest.mark.parametrize("tokens, gain", [
    ("aab", [0.0, 0.5, 0.0]),           # a swap of the first two, a rotation by one, the reversal: no change
    ("abb", [0.0, 0.5, 0.0]),           # the swap of the last two, a rotation back, the reversal: no change
    ("aaab", [0.0, 0.5, 0.0, 0.0]),     # every adjacent swap, a rotation either way: no change
    ("abab", [0.5, 0.0, 0.0, 0.5]),     # every rotation and the reversal: no change
], ids=["aab", "abb", "aaab", "abab"])
def test_repeated_tokens(student, device, tokens, gain):
    """repeated tokens: a fixed few reorderings can change nothing while another changes the sum"""
    x = inputs(2, len(tokens), 3, 13, device, tokens)
    check(student, f"a position-weighted layer (gains {gain}) on tokens {' '.join(tokens)}", x, ["few"],
          weights=toy(len(tokens), gain=gain))
    check_invariant_one(student, x)


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
@pytest.mark.parametrize("seq, seed", [(3, 21), (6, 22)], ids=["seq 3", "seq 6"])
def test_depends_on_input(student, device, seq, seed):
    """the same layer is invariant on one input and not on another: only running it tells"""
    layers.check_gated(student, seq, 4, seed, device)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_three_cycle(student, device):
    """every reordering of every position, not every swap: on tokens a b c c no swap changes the layer's sum, a
    3-cycle does; nor every swap and rotation: on tokens a a a b b none of them changes a layer's sum, another
    order does; on 6 positions, only orders that move the last change a layer's sum"""
    weights, x = layers.three_cycle(4, 2, 3, 23, device)
    check(student, layers.THREE_CYCLE, x, ["transpositions"], weights=weights)
    weights, x = layers.swaps_kept(3, 4, 34, device)
    check(student, layers.SWAPS_KEPT, x, ["swaps"], weights=weights)
    check_invariant_one(student, x)
    check(student, layers.LAST_ALONE, inputs(1, 6, 2, 32, device), ["unmoved"], weights=layers.last_of(6))


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_every_row(student, device):
    """every row of the batch counts: one row keeps its sum under every reordering, the other (row 0 or 1) not"""
    layers.check_gated(student, 5, 3, 24, device, rows=True)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_sum_not_mean(student, device):
    """summed, not averaged: a change of 2.5 atol in the sum is half atol in the mean over 5 positions; nor
    averaged over features: a change of 3 atol in one number of 32 is a change, as it is in two rows
    of 8"""
    x = inputs(3, 5, 2, 25, device)
    check(student, "a layer weighting positions a little (its sum changes by 2.5 atol)", x, ["mean"], atol=1e-3,
          weights=layers.sum_sized(x, 1e-3, times=2.5))
    check_invariant_one(student, x, atol=1e-3)
    weights, one = layers.one_feature(5, 32, 33, device, 1e-3)
    check(student, layers.ONE_FEATURE.format(d=32), one, ["average"], atol=1e-3, weights=weights)
    weights, one = layers.one_feature(4, 3, 35, device, 1e-3, rows=8)
    check(student, layers.ONE_ROW.format(d=3), one, ["average"], atol=1e-3, weights=weights)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
@pytest.mark.parametrize("seq", [3, 5], ids=["seq 3", "seq 5"])
def test_positional_layers(student, device, seq):
    """position-weighted layers are not invariant; position-free ones are"""
    check(student, "a layer that weights position t by 1 + t/2", inputs(3, seq, 5, seq, device), repeats=3)
    check(student, "a layer that ignores positions", inputs(3, seq, 5, seq, device))
    layers.check_one_token(student, inputs(3, seq, 5, seq, device))


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_atol(student, device):
    """atol decides: a change of about 0.01 is within atol=1 but not atol=1e-5; 1e-5 when none is given; an
    absolute one, on large sums too; each order's sum held to x's own, not to the previous order's, nor to the other
    orders' spread or mean"""
    x = inputs(1, 4, 2, 7, device)
    for atol in (1.0, 1e-5):
        check(student, "a layer that weights position t by 1 + t/500", x, ["atol"], atol=atol,
              weights=weighted(4, scale=0.002))
    check(student, layers.DEFAULT_ATOL, x, ["atol"], atol=None, weights=layers.sum_sized(x, 1e-5, times=8.0))
    weights, chain = layers.chained(2, 31, device)
    check(student, layers.CHAINED, chain, ["neighbours"], weights=weights)
    weights, apart = layers.spread_apart(4, 36, device, 1e-2)
    check(student, layers.SPREAD_APART, apart, ["spread"], atol=1e-2, weights=weights)
    layers.check_one_token(student, x)
    big = layers.large(inputs(3, 2, 4, 27, device))
    check(student, layers.LARGE_SUMS, big, ["relative"], atol=1e-2, weights=layers.sum_sized(big, 1e-2))


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_returns_bool(student, device):
    """returns the right Python bool and leaves x unchanged"""
    x = inputs(2, 5, 4, 8, device)
    for weights, expected in ((toy(5), True), (weighted(5), False)):
        answer, (_, x_after) = student.with_inputs("is_permutation_invariant",
                                                   layers.sealed("Layer", weights, x, 1e-5), x)
        expect(type(answer) is bool, "a Python bool (bool(...) or torch.allclose)", describe(answer))
        expect(answer is expected, f"{expected} for a layer that {'ignores' if expected else 'weights'} positions",
               str(answer))
        expect(isinstance(x_after, torch.Tensor) and torch.equal(x_after.cpu(), x.cpu()),
               "x unchanged", "x was modified", "index into x to reorder it: x[:, perm] makes a copy")


ATTENTION = dict(d_model=16, n_heads=2, seed=3)
ONE_TOKEN = ", on an x whose positions all hold one token (no reordering changes x)"


def check_attention(student, reference, x, pos, causal, where=""):
    """Ask about the handout's attention_layer(pos, causal), handed over sealed."""
    layer = reference.model.attention_layer(pos=pos, causal=causal, **ATTENTION)
    weights = reference.toy_attention.attention_weights(layer, x.shape[1])
    expected, answer = layers.ask(student, weights, x, factory="Attention")
    if answer != expected:
        raise CheckFailed(f"{expected} for attention_layer(pos={pos!r}, causal={causal}){where}", str(answer),
                          slips.hint(student, x.device) or "without positions and mask, attention sees a bag of "
                          "vectors; anything positional breaks that")


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
def test_attention_layers(student, reference, device):
    """attention is invariant without positions, not with learned/sinusoidal/ALiBi ones or a mask"""
    x = inputs(2, 5, 16, 11, device)
    for pos, causal in (("none", False), ("none", True), ("learned", False), ("sinusoidal", False),
                        ("alibi", False)):
        check_attention(student, reference, x, pos, causal)
    check_attention(student, reference, layers.one_token(x), "learned", False, ONE_TOKEN)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_rope_attention(student, reference, device):
    """attention with RoPE is not permutation-invariant"""
    x = inputs(2, 5, 16, 12, device)
    check_attention(student, reference, x, "none", False)
    check_attention(student, reference, x, "rope", False)
    check_attention(student, reference, layers.one_token(x), "rope", False, ONE_TOKEN)
