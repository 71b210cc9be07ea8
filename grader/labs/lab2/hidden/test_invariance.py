"""Hidden checks of invariance.py: is_permutation_invariant is right every time.

The layers come from toy_attention.py (each ignores a known set of reorderings) and from the
handout's model.py. The judge computes the truth itself, over every reordering of short
inputs, and only asks questions whose answer is clear: the summed outputs differ either by
float noise (far below atol) or by far more than atol. Every check asks at least one question
whose answer is True and one whose answer is False, so a constant answer earns nothing.
"""
import itertools

import pytest
import torch

from grader.checks import describe, expect
from grader.wire import build

REPEATS = 12    # the same question again: a lucky random shuffle passes 12 times in 4096


TRUTHS = {}      # (layer, input, atol) -> answer: a batch worker computes each only once


def truth(reference, factory, kwargs, x, atol):
    """Is the layer `factory(**kwargs)` ("module:function" of the reference) unchanged in its
    summed output, within atol, by every reordering of x? Checked over all of them (seq <= 6)."""
    key = (factory, tuple(sorted(kwargs.items())), x.cpu().numpy().tobytes(), tuple(x.shape), atol)
    if key not in TRUTHS:
        module, name = factory.split(":")
        layer = getattr(getattr(reference, module), name)(**kwargs).double()
        x = x.cpu().double()
        orders = list(itertools.permutations(range(x.shape[1])))
        with torch.no_grad():       # every reordering in one batch: these layers treat rows apart
            summed = layer(x[:, orders].flatten(0, 1)).sum(1).unflatten(0, (x.shape[0], len(orders)))
            worst = (summed - layer(x).sum(1)[:, None]).abs().max().item()
        assert worst < atol / 10 or worst > atol * 10, f"an unclear question: {worst} vs {atol}"
        TRUTHS[key] = worst < atol / 10
    return TRUTHS[key]


def as_bool(value):
    """The student's answer as a bool (a one-element bool tensor is accepted here)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.dtype == torch.bool:
        return bool(value)
    expect(type(value) is bool, "a bool", describe(value))
    return value


def ask(student, reference, name, x, atol=1e-5, repeats=1, **kwargs):
    """Ask the student about toy layer `name` on x, `repeats` times; compare with the truth."""
    expected = truth(reference, "toy_attention:layer", {"name": name, **kwargs}, x, atol)
    for _ in range(repeats):
        answer = as_bool(student.is_permutation_invariant(
            build("toy_attention:layer", name, **kwargs), x, atol=atol))
        yield expected, answer


def inputs(batch, seq, d, seed, device):
    return torch.randn(batch, seq, d, generator=torch.Generator().manual_seed(seed)).to(device)


def check(student, reference, layer, x, hint, atol=1e-5, repeats=1, **kwargs):
    for expected, answer in ask(student, reference, layer, x, atol, repeats, **kwargs):
        expect(answer == expected, f"{expected} for {layer}{kwargs or ''} with seq {x.shape[1]}",
               str(answer), hint)


def check_invariant_one(student, reference, x):
    """The position-free layer: True. Keeps a constant False from scoring."""
    check(student, reference, "PositionWeighted", x, "compare attn(x).sum(1) within atol", pattern="flat")


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_sum_not_order(student, reference, device):
    """compares the summed output: reversing the output keeps the sum, so True"""
    x = inputs(2, 5, 4, 0, device)
    check(student, reference, "Reverse", x, "compare attn(x).sum(1), not the outputs position by position")
    check(student, reference, "PositionWeighted", x, None, pattern="linear")


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
def test_short_sequences(student, reference, device):
    """right every time for seq 1 and 2, where a random shuffle often moves nothing"""
    check(student, reference, "PositionWeighted", inputs(1, 1, 3, 1, device),
          "with one position there is nothing to reorder", pattern="linear")
    check(student, reference, "PositionWeighted", inputs(1, 2, 3, 2, device),
          "torch.randperm(2) leaves the order unchanged half the time: choose a reordering that moves tokens",
          repeats=REPEATS, pattern="linear")


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
@pytest.mark.parametrize("layer, kwargs, ignores", [
    ("PositionWeighted", {"pattern": "symmetric"}, "reversal"),
    ("NeighbourMix", {}, "rotations"),
    ("PositionWeighted", {"pattern": "first_two_tied"}, "swapping the first two positions"),
], ids=["ignores reversal", "ignores rotations", "ignores a swap"])
def test_partial_invariance(student, reference, device, layer, kwargs, ignores):
    """a layer that ignores only some reorderings is not invariant"""
    x = inputs(2, 4, 3, 3, device)
    check(student, reference, layer, x,
          f"this layer ignores {ignores} but not every reordering: try reorderings that together "
          "produce every order (a swap of the first two and a rotation by one)", repeats=4, **kwargs)
    check_invariant_one(student, reference, x)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
@pytest.mark.parametrize("seq", [3, 5], ids=["seq 3", "seq 5"])
def test_positional_layers(student, reference, device, seq):
    """position-weighted layers are not invariant; position-free ones are"""
    check(student, reference, "PositionWeighted", inputs(3, seq, 5, seq, device), None,
          repeats=3, pattern="linear")
    check(student, reference, "PositionWeighted", inputs(3, seq, 5, seq, device), None, pattern="flat")


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_atol(student, reference, device):
    """atol decides: a change of about 0.01 is within atol=1 but not atol=1e-5"""
    x = inputs(1, 4, 2, 7, device)
    check(student, reference, "PositionWeighted", x, "compare with atol=atol, the argument",
          atol=1.0, pattern="linear", scale=0.002)
    check(student, reference, "PositionWeighted", x, "compare with atol=atol, the argument",
          atol=1e-5, pattern="linear", scale=0.002)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_returns_bool(student, device):
    """returns the right Python bool and leaves x unchanged"""
    x = inputs(2, 5, 4, 8, device)
    for pattern, expected in (("flat", True), ("linear", False)):
        layer = build("toy_attention:layer", "PositionWeighted", pattern=pattern)
        answer, (_, x_after) = student.with_inputs("is_permutation_invariant", layer, x)
        expect(type(answer) is bool, "a Python bool (bool(...) or torch.allclose)", describe(answer))
        expect(answer is expected, f"{expected} for PositionWeighted({pattern!r})", str(answer))
        expect(isinstance(x_after, torch.Tensor) and torch.equal(x_after.cpu(), x.cpu()),
               "x unchanged", "x was modified", "index into x to reorder it: x[:, perm] makes a copy")


ATTENTION = dict(d_model=16, n_heads=2, seed=3)


def check_attention(student, reference, x, pos, causal):
    expected = truth(reference, "model:attention_layer", {"pos": pos, "causal": causal, **ATTENTION}, x, 1e-5)
    answer = as_bool(student.is_permutation_invariant(
        build("model:attention_layer", pos=pos, causal=causal, device=str(x.device), **ATTENTION), x))
    what = f"attention_layer(pos={pos!r}, causal={causal})"
    expect(answer == expected, f"{expected} for {what}", str(answer),
           "without positions and mask, attention sees a bag of vectors; anything positional breaks that")


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
def test_attention_layers(student, reference, device):
    """attention is invariant without positions, not with learned/sinusoidal/ALiBi ones or a mask"""
    x = inputs(2, 5, 16, 11, device)
    for pos, causal in (("none", False), ("none", True), ("learned", False), ("sinusoidal", False),
                        ("alibi", False)):
        check_attention(student, reference, x, pos, causal)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant", "apply_rope", "rope_frequencies"])
def test_rope_attention(student, reference, device):
    """attention with your RoPE is not permutation-invariant"""
    x = inputs(2, 5, 16, 12, device)
    check_attention(student, reference, x, "none", False)
    check_attention(student, reference, x, "rope", False)
