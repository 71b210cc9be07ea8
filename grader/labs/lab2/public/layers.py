"""The layers is_permutation_invariant is asked about, and the truth about them, for the public
and the hidden checks alike (a helper, not checks: pytest collects only test_*.py).

A question hands over a sealed layer (toy_attention.sealed): a plain function whose weights are
masked by noise and recovered only while it runs, so that only running it on reordered inputs
answers. The judge knows the truth from the same weights: the summed output is the same for every
reordering of x, checked over all of them, in float64. Only clear questions are asked (summed
outputs differ by float noise far below atol, or by far more than atol).
"""
import hashlib
import itertools

import torch

from grader.checks import CheckFailed, describe, expect, load_beside
from grader.judge.sandbox import CallFailed
from grader.judge.wire import build

STARTER = ("return the answer as a bool (e.g. return torch.allclose(...)) rather than assert it, and reorder "
           "x's own positions (x.shape[1] of them), not a fixed 5")
EVERY_ORDER = ("try every reordering of the positions (itertools.permutations; stacked along the batch "
               "dimension they take one call of attn)")
TRUTHS = {}     # digest of (layer, input, atol) -> answer: a batch worker computes each only once


toy_attention = load_beside(__file__, "../toy_attention")     # trusted: the lab's, as the child has it


# -- layers, as weights ---------------------------------------------------------------------------------
def toy(seq, gain=None, pair=0.0, mix=None, gate=None):
    """Weights of toy_attention.Layer: identity mixing, no gain, no pairing, no gate unless given."""
    weights = {"mix": torch.eye(seq) if mix is None else mix,
               "gain": torch.zeros(seq) if gain is None else torch.as_tensor(gain, dtype=torch.float32),
               "pair": torch.tensor(float(pair))}
    return weights if gate is None else {**weights, "gate": torch.as_tensor(gate, dtype=torch.float32)}


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


def digest(factory, weights, x, atol):
    key = hashlib.sha256(repr((factory, atol, tuple(x.shape), sorted(weights))).encode())
    for value in [*(weights[name] for name in sorted(weights)), x]:
        key.update(value.detach().cpu().double().numpy().tobytes())
    return key.hexdigest()


def truth(factory, weights, x, atol):
    """Is toy_attention.`factory`(**weights) unchanged in its summed output, within atol, by every
    reordering of x? Checked over all of them, in float64 on the CPU."""
    key = digest(factory, weights, x, atol)
    if key not in TRUTHS:
        layer = getattr(toy_attention, factory)(**{k: v.cpu() for k, v in weights.items()}).double()
        x = x.cpu().double()
        orders = list(itertools.permutations(range(x.shape[1])))
        with torch.no_grad():       # every reordering in one batch: these layers treat rows apart
            summed = layer(x[:, orders].flatten(0, 1)).sum(1).unflatten(0, (x.shape[0], len(orders)))
            worst = (summed - layer(x).sum(1)[:, None]).abs().max().item()
        assert worst < atol / 10 or worst > atol * 10, f"an unclear question: {worst} vs {atol}"
        TRUTHS[key] = worst < atol / 10
    return TRUTHS[key]


def sealed(factory, weights, x, atol):
    """What the child builds: the layer as a plain function of x, its weights masked by noise from
    a seed drawn from the question itself (the same answer for the same submission)."""
    seed = int(digest(factory, weights, x, atol)[:12], 16)
    return build("toy_attention:sealed", factory, toy_attention.mask(weights, seed), seed)


def ask(student, weights, x, atol=1e-5, factory="Layer"):
    """The student's answer about the layer with these weights, and the truth. atol=None asks
    without an atol: the docstring's default, 1e-5, must apply."""
    given = {} if atol is None else {"atol": atol}
    atol = 1e-5 if atol is None else atol
    expected = truth(factory, weights, x, atol)
    try:
        answer = student.is_permutation_invariant(sealed(factory, weights, x, atol), x, **given)
    except CallFailed as failure:       # the lesson's starter as it stands: assert, randperm(5), wherever it surfaces
        starter = failure.message.startswith(("AssertionError", "IndexError")) or \
            getattr(failure, "given", "") == "toy_attention.py"
        if failure.kind == "raised" and starter:
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


def check(student, name, x, hint, atol=1e-5, repeats=1, weights=None):
    """Ask about LAYERS[name] (or `weights`) on x, `repeats` times; every answer must be the truth."""
    weights = weights or LAYERS[name](x.shape[1])
    for _ in range(repeats):
        expected, answer = ask(student, weights, x, atol)
        expect(answer == expected, f"{expected} for {name}, seq {x.shape[1]}", str(answer), hint)


def gated(seq, d, seed, device):
    """A position-weighted layer opened by <x summed over positions, gate>, and two inputs: one that
    keeps it shut in every row (invariant there) and one that opens it (not invariant)."""
    generator = torch.Generator().manual_seed(seed)
    gate = torch.randn(d, generator=generator)
    x = torch.randn(2, seq, d, generator=generator)
    score = x.sum(1) @ gate
    assert score.abs().min() > 0.1, "an unclear question: a row on the gate's edge"
    sign = score.sign()[:, None, None]
    weights = {**weighted(seq), "gate": gate}
    return weights, (-sign * x).to(device), (sign * x).to(device)


def check_gated(student, seq, d, seed, device):
    """The same layer on two inputs: invariant on one, not on the other."""
    weights, shut, opened = gated(seq, d, seed, device)
    for x, expected in ((shut, True), (opened, False)):
        _, answer = ask(student, weights, x)
        expect(answer is expected, f"{expected} for a layer that weights positions only where <x.sum(1), g> > 0, "
               f"on an x where {'no row' if expected else 'a row'} has it so", str(answer),
               "run attn on reordered copies of this x: what a layer does can depend on its input")
