"""Hidden checks of invariance.py: is_permutation_invariant is right every time.

The truth is "the summed output is the same for every reordering of x": the judge computes it
itself, over every reordering of these short inputs, and only asks questions whose answer is
clear (summed outputs differ by float noise far below atol, or by far more than atol). Every
check asks at least one question whose answer is True and one whose answer is False, so a
constant answer earns nothing.

Layers are handed over as weights only (toy_attention.py's Layer and Attention): what a layer
does with positions is in its numbers, never in a name or attribute the student's code could read.
Some inputs repeat tokens, so that a fixed few reorderings (a swap and a rotation, every adjacent
swap, every rotation and the reversal) leave the sum unchanged while another reordering changes it.
"""
import hashlib
import itertools

import pytest
import torch

from grader.checks import CheckFailed, describe, expect
from grader.judge.sandbox import CallFailed
from grader.judge.wire import build

REPEATS = 12    # the same question again: a lucky random shuffle passes 12 times in 4096
STARTER = ("return the answer as a bool (e.g. return torch.allclose(...)) rather than assert it, and reorder "
           "x's own positions (x.shape[1] of them), not a fixed 5")
EVERY_ORDER = ("try every reordering of the positions (itertools.permutations; stacked along the batch "
               "dimension they take one call of attn)")
TRUTHS = {}     # (weights, input, atol) -> answer: a batch worker computes each only once


# -- layers, as weights ---------------------------------------------------------------------------------
def toy(seq, gain=None, pair=0.0, mix=None):
    """Weights of toy_attention.Layer: identity mixing, no gain, no pairing unless given."""
    return {"mix": torch.eye(seq) if mix is None else mix,
            "gain": torch.zeros(seq) if gain is None else torch.as_tensor(gain, dtype=torch.float32),
            "pair": torch.tensor(float(pair))}


def weighted(seq, scale=0.5):
    return toy(seq, gain=scale * torch.arange(seq, dtype=torch.float32))


LAYERS = {      # name shown in messages -> weights on seq positions
    "a layer that weights position t by 1 + t/2": weighted,
    "a layer that ignores positions": toy,
    "a layer that reverses positions (its sum ignores order)": lambda seq: toy(seq, mix=torch.eye(seq).flip(0)),
    "a layer weighting positions symmetrically (reversal changes nothing)":
        lambda seq: toy(seq, gain=0.5 * (torch.arange(seq) - (seq - 1) / 2) ** 2),
    "a layer weighting positions 0 and 1 alike (swapping them changes nothing)":
        lambda seq: toy(seq, gain=0.5 * (torch.arange(seq) - 1).clamp(min=0)),
    "a layer mixing each position with the next, round in a circle (rotations change nothing)":
        lambda seq: toy(seq, pair=0.5),
}


def truth(reference, factory, weights, x, atol):
    """Is toy_attention.`factory`(**weights) unchanged in its summed output, within atol, by every
    reordering of x? Checked over all of them, in float64 on the CPU."""
    digest = hashlib.sha256(repr((factory, atol, tuple(x.shape))).encode())
    for value in [*weights.values(), x]:
        digest.update(value.detach().cpu().double().numpy().tobytes())
    key = digest.hexdigest()
    if key not in TRUTHS:
        layer = getattr(reference.toy_attention, factory)(**{k: v.cpu() for k, v in weights.items()}).double()
        x = x.cpu().double()
        orders = list(itertools.permutations(range(x.shape[1])))
        with torch.no_grad():       # every reordering in one batch: these layers treat rows apart
            summed = layer(x[:, orders].flatten(0, 1)).sum(1).unflatten(0, (x.shape[0], len(orders)))
            worst = (summed - layer(x).sum(1)[:, None]).abs().max().item()
        assert worst < atol / 10 or worst > atol * 10, f"an unclear question: {worst} vs {atol}"
        TRUTHS[key] = worst < atol / 10
    return TRUTHS[key]


def ask(student, reference, weights, x, atol=1e-5, factory="Layer"):
    """The student's answer about the layer with these weights, and the truth."""
    expected = truth(reference, factory, weights, x, atol)
    sent = {k: v.to(x.device) for k, v in weights.items()}
    try:
        answer = student.is_permutation_invariant(build(f"toy_attention:{factory}", **sent), x, atol=atol)
    except CallFailed as failure:       # the lesson's starter as it stands: assert, randperm(5)
        if failure.kind == "raised" and failure.message.startswith(("AssertionError", "IndexError")):
            raise CheckFailed(f"{expected} for a layer on seq {x.shape[1]}",
                              f"{failure.function} raised {failure.message}", STARTER) from None
        raise
    return expected, as_bool(answer)


def as_bool(value):
    """The student's answer as a bool (a one-element bool tensor is accepted here)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.dtype == torch.bool:
        return bool(value)
    expect(type(value) is bool, "a bool", describe(value), STARTER if value is None else None)
    return value


def inputs(batch, seq, d, seed, device, tokens=None):
    """Random (batch, seq, d) inputs; `tokens` like "aab" repeats a token wherever a letter does."""
    x = torch.randn(batch, seq, d, generator=torch.Generator().manual_seed(seed))
    if tokens:
        x = x[:, ["abcdefgh".index(letter) for letter in tokens]]
    return x.to(device)


def check(student, reference, name, x, hint, atol=1e-5, repeats=1, weights=None):
    weights = weights or LAYERS[name](x.shape[1])
    for _ in range(repeats):
        expected, answer = ask(student, reference, weights, x, atol)
        expect(answer == expected, f"{expected} for {name}, seq {x.shape[1]}", str(answer), hint)


def check_invariant_one(student, reference, x):
    """The position-free layer: True. Keeps a constant False from scoring."""
    check(student, reference, "a layer that ignores positions", x, "compare attn(x).sum(1) within atol")


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_sum_not_order(student, reference, device):
    """compares the summed output: reversing the output keeps the sum, so True"""
    x = inputs(2, 5, 4, 0, device)
    check(student, reference, "a layer that reverses positions (its sum ignores order)", x,
          "compare attn(x).sum(1), not the outputs position by position")
    check(student, reference, "a layer that weights position t by 1 + t/2", x, None)


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
def test_short_sequences(student, reference, device):
    """right every time for seq 1 and 2, where a random shuffle often moves nothing"""
    check(student, reference, "a layer that weights position t by 1 + t/2", inputs(1, 1, 3, 1, device),
          "with one position there is nothing to reorder")
    check(student, reference, "a layer that weights position t by 1 + t/2", inputs(1, 2, 3, 2, device),
          "torch.randperm(2) leaves the order unchanged half the time: " + EVERY_ORDER, repeats=REPEATS)


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
@pytest.mark.parametrize("name", [
    "a layer weighting positions symmetrically (reversal changes nothing)",
    "a layer mixing each position with the next, round in a circle (rotations change nothing)",
    "a layer weighting positions 0 and 1 alike (swapping them changes nothing)",
], ids=["ignores reversal", "ignores rotations", "ignores a swap"])
def test_partial_invariance(student, reference, device, name):
    """a layer that ignores only some reorderings is not invariant"""
    x = inputs(2, 4, 3, 3, device)
    check(student, reference, name, x, "this layer ignores some reorderings but not all: " + EVERY_ORDER, repeats=4)
    check_invariant_one(student, reference, x)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
@pytest.mark.parametrize("tokens, gain", [
    ("aab", [0.0, 0.5, 0.0]),           # a swap of the first two, a rotation by one, the reversal: no change
    ("abb", [0.0, 0.5, 0.0]),           # the swap of the last two, a rotation back, the reversal: no change
    ("aaab", [0.0, 0.5, 0.0, 0.0]),     # every adjacent swap, a rotation either way: no change
    ("abab", [0.5, 0.0, 0.0, 0.5]),     # every rotation and the reversal: no change
], ids=["aab", "abb", "aaab", "abab"])
def test_repeated_tokens(student, reference, device, tokens, gain):
    """repeated tokens: a fixed few reorderings can change nothing while another changes the sum"""
    x = inputs(2, len(tokens), 3, 13, device, tokens)
    check(student, reference, f"a position-weighted layer (gains {gain}) on tokens {' '.join(tokens)}", x,
          "with repeated tokens a few chosen reorderings (a swap, a rotation) can leave x as it was, or "
          "change it in ways this layer ignores, while another order changes the sum: " + EVERY_ORDER,
          weights=toy(len(tokens), gain=gain))
    check_invariant_one(student, reference, x)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
@pytest.mark.parametrize("seq", [3, 5], ids=["seq 3", "seq 5"])
def test_positional_layers(student, reference, device, seq):
    """position-weighted layers are not invariant; position-free ones are"""
    check(student, reference, "a layer that weights position t by 1 + t/2", inputs(3, seq, 5, seq, device), None,
          repeats=3)
    check(student, reference, "a layer that ignores positions", inputs(3, seq, 5, seq, device), None)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_atol(student, reference, device):
    """atol decides: a change of about 0.01 is within atol=1 but not atol=1e-5"""
    x = inputs(1, 4, 2, 7, device)
    for atol in (1.0, 1e-5):
        check(student, reference, "a layer that weights position t by 1 + t/500", x,
              "compare with atol=atol, the argument", atol=atol, weights=weighted(4, scale=0.002))


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_returns_bool(student, device):
    """returns the right Python bool and leaves x unchanged"""
    x = inputs(2, 5, 4, 8, device)
    for weights, expected in ((toy(5), True), (weighted(5), False)):
        layer = build("toy_attention:Layer", **{k: v.to(device) for k, v in weights.items()})
        answer, (_, x_after) = student.with_inputs("is_permutation_invariant", layer, x)
        expect(type(answer) is bool, "a Python bool (bool(...) or torch.allclose)", describe(answer))
        expect(answer is expected, f"{expected} for a layer that {'ignores' if expected else 'weights'} positions",
               str(answer))
        expect(isinstance(x_after, torch.Tensor) and torch.equal(x_after.cpu(), x.cpu()),
               "x unchanged", "x was modified", "index into x to reorder it: x[:, perm] makes a copy")


ATTENTION = dict(d_model=16, n_heads=2, seed=3)


def check_attention(student, reference, x, pos, causal):
    """Ask about the handout's attention_layer(pos, causal), handed over as Attention's weights."""
    layer = reference.model.attention_layer(pos=pos, causal=causal, **ATTENTION)
    weights = reference.toy_attention.attention_weights(layer, x.shape[1])
    expected, answer = ask(student, reference, weights, x, factory="Attention")
    expect(answer == expected, f"{expected} for attention_layer(pos={pos!r}, causal={causal})", str(answer),
           "without positions and mask, attention sees a bag of vectors; anything positional breaks that")


@pytest.mark.grade(points=2, tags=["is_permutation_invariant"])
def test_attention_layers(student, reference, device):
    """attention is invariant without positions, not with learned/sinusoidal/ALiBi ones or a mask"""
    x = inputs(2, 5, 16, 11, device)
    for pos, causal in (("none", False), ("none", True), ("learned", False), ("sinusoidal", False),
                        ("alibi", False)):
        check_attention(student, reference, x, pos, causal)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_rope_attention(student, reference, device):
    """attention with RoPE is not permutation-invariant"""
    x = inputs(2, 5, 16, 12, device)
    check_attention(student, reference, x, "none", False)
    check_attention(student, reference, x, "rope", False)
