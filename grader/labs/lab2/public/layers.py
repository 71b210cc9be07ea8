"""The layers is_permutation_invariant is asked about, and the truth about them, for the public
and the hidden checks alike (a helper, not checks: pytest collects only test_*.py).

A question hands over a sealed layer (toy_attention.sealed): a plain function whose weights are
masked by noise and recovered only while it runs, so that only running it on reordered inputs
answers. The judge knows the truth from the same weights: the summed output is the same for every
reordering of x, checked over all of them, in float64, once per process (CHANGES). Only clear
questions are asked: each number of the summed output moves by less than a tenth of atol (float
noise, or SPREAD_THIN's 0.05 atol in each of many features), or by twice atol or more.
The one question nearer to atol is SPREAD_APART's (NEAR): its orders move the sum by 0.8 atol at most, at
atol 1e-2, where float32's noise on sums near 1 is 1e-7: within atol by a margin of 2000 times that.
A wrong answer's hint names the slip the function's answers to other questions show (slips.py).
"""
import hashlib
import itertools

import torch

from grader.lab_api import CallFailed, build
from grader.lab_api.checks import CheckFailed, describe, expect, load_beside

STARTER = ("return the answer as a bool (e.g. return torch.allclose(...)) rather than assert it, and reorder "
           "x's own positions (x.shape[1] of them), not a fixed 5")
EVERY_ORDER = ("try every reordering of the positions (itertools.permutations; stacked along the batch "
               "dimension they take one call of attn)")
# digest of (layer, input) -> the most a reordering changes its sum: once per process, so that
# a batch worker's and --watch's gradings compute none of their truths again
CHANGES: dict[str, float] = {}
NEAR: set[str] = set()      # digests of (layer, input, atol) whose truth, True, is asked within atol: see spread_apart


toy_attention = load_beside(__file__, "../toy_attention")     # trusted: the lab's, as the child has it


# -- layers, as weights ---------------------------------------------------------------------------------
def toy(seq, gain=None, pair=0.0, mix=None, gate=None):
    """Weights of toy_attention.Layer: identity mixing, no gain, no pairing, no gate unless given."""
    weights = {"mix": torch.eye(seq) if mix is None else torch.as_tensor(mix, dtype=torch.float32),
               "gain": torch.zeros(seq) if gain is None else torch.as_tensor(gain, dtype=torch.float32),
               "pair": torch.tensor(float(pair))}
    return weights if gate is None else {**weights, "gate": torch.as_tensor(gate, dtype=torch.float32)}


def weighted(seq, scale=0.5):
    return toy(seq, gain=scale * torch.arange(seq, dtype=torch.float32))


MIXING = ("a layer averaging each position with the one before, round in a circle (its outputs change with the "
          "order, not as a reordering of them; their sum is x's sum in any order)")
ROTATIONS = "a layer mixing each position with the next, round in a circle (rotations change nothing)"
LAYERS = {      # name shown in messages -> weights on seq positions
    "a layer that weights position t by 1 + t/2": weighted,
    "a layer that ignores positions": toy,
    "a layer that reverses positions (its sum ignores order)": lambda seq: toy(seq, mix=torch.eye(seq).flip(0)),
    MIXING: lambda seq: toy(seq, mix=(torch.eye(seq) + torch.eye(seq).roll(1, 0)) / 2),
    "a layer weighting positions symmetrically (reversal changes nothing)":
        lambda seq: toy(seq, gain=0.5 * (torch.arange(seq) - (seq - 1) / 2) ** 2),
    "a layer weighting positions 0 and 1 alike (swapping them changes nothing)":
        lambda seq: toy(seq, gain=0.5 * (torch.arange(seq) - 1).clamp(min=0)),
    ROTATIONS: lambda seq: toy(seq, pair=0.5),
}
THREE_CYCLE = "a layer no swap of two positions changes on this x, while a 3-cycle does"
SWAPS_KEPT = ("a layer that no swap of two positions, no rotation and not the reversal changes on tokens a a a b b, "
              "while another order does")
LARGE_SUMS = "a layer weighting positions a little, on large x (its sum changes by 3 atol, a small part of the sum)"
SAME_LENGTH = ("a layer that keeps position 1 alone, on tokens a b a ... (b = -a): a reordering flips the sum, "
               "not its length")
SPREAD_THIN = ("a layer that weights position 1 by 1 + 0.00025, on a {d}-feature x: the reversal moves each number of "
               "the sum by 0.05 atol, the norm of the change is {norm:.1f} atol")     # .format(d=, norm=)
LAST_ALONE = "a layer weighting the last of 6 positions alone (only orders that move it change the sum)"
ONE_FEATURE = ("a layer weighting position 1 a little, on a {d}-feature x whose token 1 differs from the others in "
               "one feature: an order that moves it changes that number of the sum by 3 atol, the others not at all")
ONE_ROW = ("a layer weighting position 1 a little, on 8 rows of a {d}-feature x, whose tokens are all alike but "
           "token 1 of the first and the last row, which differs in one feature: an order that moves it changes that "
           "number of those rows' sums by 3 atol, every other number of the 8 rows' sums not at all")
ROWS_CANCEL = ("a layer that weights position t by 1 + t/2, on two rows, the second the first negated: each row's sum "
               "changes, their total over the batch does not")
SPREAD_APART = ("a layer weighting positions a little, on tokens b a a a a a: every order moves the sum by 0.8 atol at "
                "most from x's own (up where b goes last, down where it goes to positions 1 .. 4), so within atol, "
                "while two orders' sums lie 1.6 atol apart, and the mean of all orders' sums 0.4 atol below x's own")
CHAINED = ("a layer weighting positions 0 .. 4 a little, on evenly spaced tokens: from one order to the next (as "
           "itertools.permutations lists them) the sum moves by half atol at most, from x's own by 16 atol")
DEFAULT_ATOL = "a layer weighting positions a little (its sum changes by 8e-5, 8 times the default atol; no atol given)"
ONE_TOKEN = ("a layer that weights position t by 1 + t/2, on an x whose positions all hold one token (no reordering "
             "changes x)")


def three_cycle(seq, batch, d, seed, device):
    """THREE_CYCLE's weights and x. Each row of x is s_t * u (u a unit vector of its own) with
    s = (a, b, c, c, ...) and a * a = b * c; the layer keeps positions 0 and 1 only and sums to
    (c0 * s_0 + c1 * s_1 + s_0**2 * s_1) * u. With c0 = -b (a + c) and c1 = -a**2 every swap
    leaves that sum as it was ((a, b) -> (b, a), (c, b), (a, c) all give the same), while the
    3-cycle to (b, c) changes it by about 0.09."""
    a, b, c = 0.5, 0.25, 1.0
    s = torch.tensor([a, b] + [c] * (seq - 2))
    u = torch.randn(batch, 1, d, generator=torch.Generator().manual_seed(seed))
    x = s[None, :, None] * u / u.norm(dim=-1, keepdim=True)
    gain = torch.zeros(seq)
    gain[:2] = torch.tensor([-b * (a + c), -a * a]) - 1
    return toy(seq, gain=gain, pair=1.0, mix=torch.diag(torch.tensor([1.0, 1.0] + [0.0] * (seq - 2)))), x.to(device)


def swaps_kept(batch, d, seed, device):
    """SWAPS_KEPT's weights and x. Each row of x is s_t * u (u a unit vector of its own), s = (a, a, a,
    b, b); the layer reads positions 0 and 2 alone (mix moves them to 0 and 1) and sums to
    (c0 * p + c1 * q + p**2 * q) * u for p, q the tokens there. Every swap, rotation and the reversal
    of x puts (a, a), (a, b) or (b, a) there, never (b, b): with c1 = -a**2 and c0 = -a (a + b) those
    three give the same sum, and (b, b) changes it by (b - a)**2 (b + a), 0.375 for a = 0.5, b = 1.
    Swaps and rotations together make every order, but tried at x only, they leave it unchanged."""
    a, b = 0.5, 1.0
    s = torch.tensor([a, a, a, b, b])
    u = torch.randn(batch, 1, d, generator=torch.Generator().manual_seed(seed))
    x = s[None, :, None] * u / u.norm(dim=-1, keepdim=True)
    mix = torch.zeros(5, 5)
    mix[0, 0] = mix[1, 2] = 1.0
    gain = torch.tensor([-a * (a + b), -a * a, 0.0, 0.0, 0.0]) - torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0])
    return toy(5, gain=gain, pair=1.0, mix=mix), x.to(device)


def sum_sized(x, atol, times=3.0, upto=None):
    """Weights of a position-weighted layer whose summed output some reordering of x changes by
    `times` atol at most, no more: its mean over x.shape[1] > `times` positions changes by less than atol.
    `upto`: only positions before it are weighted (t by t), so that orders of a few positions change
    the sum by more than atol too (a search that leaves some positions in place is not charged here)."""
    gains = weighted(x.shape[1], scale=1.0)["gain"]
    if upto is not None:
        gains[upto:] = 0.0
    worst = change(toy(x.shape[1], gain=gains), x)
    return toy(x.shape[1], gain=gains * (times * atol / worst))


def last_of(seq):
    """LAST_ALONE's weights: position seq - 1 weighted by 1.5, the others by 1."""
    return toy(seq, gain=torch.eye(seq)[seq - 1] / 2)


def same_length(batch, seq, seed, device):
    """SAME_LENGTH's weights and x: each row holds -a at position 1 and a at the others (a's
    features all positive, so they sum far from 0), and the layer keeps position 1 alone. An order
    that moves -a away turns the sum from -a to a: each number moves by 2 |a_i| >= 1, its norm not at all."""
    a = torch.randn(batch, 1, 4, generator=torch.Generator().manual_seed(seed)).abs() + 0.5
    x = a.expand(-1, seq, -1).clone()
    x[:, 1] = -x[:, 1]
    gain = -torch.ones(seq)
    gain[1] = 0.0
    return toy(seq, gain=gain), x.to(device)


def spread_thin_name(d):
    return SPREAD_THIN.format(d=d, norm=0.05 * d ** 0.5)


def spread_thin(d, seed, device, atol=1e-5):
    """SPREAD_THIN's weights and x: two positions holding 0.1 + a and 0.1 - a, every feature of a
    +-1e-3 (as many of each sign), and a layer weighting position 1 by 1 + 25 atol. The reversal moves
    every number of the sum (about 0.2) by 0.05 atol, within a tolerance relative to it too, and the
    change as a whole, its norm, by sqrt(d) times that."""
    signs = torch.ones(d)
    signs[d // 2:] = -1.0
    a = 1e-3 * signs[torch.randperm(d, generator=torch.Generator().manual_seed(seed))]
    return toy(2, gain=[0.0, 25 * atol]), torch.stack((0.1 + a, 0.1 - a))[None].to(device)


def rows_cancel(x):
    """ROWS_CANCEL's x: x's first row, then that row negated. A position-weighted layer without
    gate or pairing is linear, so row 1's output is row 0's negated, in every order: summed over
    the batch as well as the positions, every order gives 0."""
    return torch.cat((x[:1], -x[:1]))


CHAIN = (0.85, 0.19, 0.07, 0.03, 0.0)     # gains, in steps of 0.25 between tokens: see chained


def chained(batch, seed, device, atol=1e-5):
    """CHAINED's weights and x: tokens x_k = r + 0.25 k (r random, k = 0 .. 4) and gains s * CHAIN.
    A reordering p changes every number of the sum by s * 0.25 * sum_t CHAIN[t] (p(t) - t): by
    16 atol at most, while two orders next to each other in itertools.permutations' list differ
    by 0.12 of that, about half atol. A function that holds each order's sum to the previous
    one's, not to x's own, lets changes within atol add up."""
    x = torch.randn(batch, 1, 3, generator=torch.Generator().manual_seed(seed)) + 0.25 * torch.arange(5.0)[:, None]
    return toy(5, gain=torch.tensor(CHAIN) * 16 * atol / (0.25 * 3.72)), x.to(device)


def spread_apart(d, seed, device, atol):
    """SPREAD_APART's weights and x (one row, 6 positions): every position holds r (small, random) but
    position 0, which holds r + e_k, and the layer weights positions by 1 + atol * (0, -0.8, -0.8, -0.8,
    -0.8, 0.8). An order moves number k of the sum by 0.8 atol at most, either way, and no other number:
    True. A function that holds the orders' sums to one another (max - min) or to their mean rather
    than to x's own answers False. The truth is asked within atol (NEAR), by a margin far above noise."""
    generator = torch.Generator().manual_seed(seed)
    r = 1e-3 * torch.randn(d, generator=generator)
    k = int(torch.randint(d, (1,), generator=generator))
    x = r.repeat(1, 6, 1)
    x[0, 0, k] += 1.0
    weights = toy(6, gain=atol * torch.tensor([0.0, -0.8, -0.8, -0.8, -0.8, 0.8]))
    NEAR.add(digest("Layer", weights, x, atol))
    return weights, x.to(device)


def one_feature(seq, d, seed, device, atol, times=3.0, rows=1):
    """ONE_FEATURE's weights and x: every position holds r (small, random), but position 1 holds
    r + e_k (e_k the k-th unit vector), and a layer weighting position 1 by 1 + `times` atol. An order
    that moves token 1 moves number k of the sum by `times` atol, and its length by about as much,
    and leaves the other numbers exactly as they were: their mean over features moves by `times`
    atol / d, over positions by `times` atol / seq. With `rows` (ONE_ROW), only the first and the last
    row have token 1 so (a function that compares one of them alone sees the change): the other
    rows, all r, keep their sums, and the change's mean over rows is 2 `times` atol / rows."""
    generator = torch.Generator().manual_seed(seed)
    r = 1e-3 * torch.randn(d, generator=generator)
    k = int(torch.randint(d, (1,), generator=generator))
    x = r.repeat(rows, seq, 1)
    x[[0, -1], 1, k] += 1.0
    return toy(seq, gain=torch.eye(seq)[1] * times * atol), x.to(device)


def large(x):
    """x shifted by 100: every summed output in the hundreds, where a tolerance relative to them
    (rtol) lets through changes far above atol."""
    return 100 + x


def zero_total(x):
    """x with each token's features summing to 0: a position-weighted layer's output then sums to 0
    over positions and features whatever the order, while its sums over positions do not."""
    return x - x.mean(-1, keepdim=True)


def gated(seq, d, seed, device):
    """A position-weighted layer opened by <x summed over positions, gate>, and three inputs: one
    that keeps it shut in every row (invariant there), one that opens it in every row (not
    invariant), and one that keeps row 0 shut and opens row 1 (not invariant: rows answer apart)."""
    generator = torch.Generator().manual_seed(seed)
    gate = torch.randn(d, generator=generator)
    x = torch.randn(2, seq, d, generator=generator)
    score = x.sum(1) @ gate
    assert score.abs().min() > 0.1, "an unclear question: a row on the gate's edge"
    sign = score.sign()[:, None, None]
    shut, opened = -sign * x, sign * x
    weights = {**weighted(seq), "gate": gate}
    return weights, shut.to(device), opened.to(device), torch.cat((shut[:1], opened[1:])).to(device)


# -- the truth ------------------------------------------------------------------------------------
def digest(factory, weights, x, atol):
    key = hashlib.sha256(repr((factory, atol, tuple(x.shape), sorted(weights))).encode())
    for value in [*(weights[name] for name in sorted(weights)), x]:
        key.update(value.detach().cpu().double().numpy().tobytes())
    return key.hexdigest()


def change(weights, x, factory="Layer"):
    """The most any reordering of x changes toy_attention.`factory`(**weights)(x).sum(1) by, in
    float64 on the CPU: computed once per process for each layer and input."""
    key = digest(factory, weights, x, None)
    if key not in CHANGES:
        CHANGES[key] = _change(weights, x, factory)
    return CHANGES[key]


def _change(weights, x, factory):
    """change(), computed: every reordering in one batch (these layers treat rows apart)."""
    layer = getattr(toy_attention, factory)(**{k: v.cpu() for k, v in weights.items()}).double()
    x = x.cpu().double()
    orders = list(itertools.permutations(range(x.shape[1])))
    with torch.no_grad():
        summed = layer(x[:, orders].flatten(0, 1)).sum(1).unflatten(0, (x.shape[0], len(orders)))
        return (summed - layer(x).sum(1)[:, None]).abs().max().item()


def truth(factory, weights, x, atol):
    """Is toy_attention.`factory`(**weights) unchanged in its summed output, within atol, by every
    reordering of x?"""
    worst = change(weights, x, factory)
    if digest(factory, weights, x, atol) in NEAR:
        assert 0.6 * atol <= worst <= 0.85 * atol, f"an unclear question: {worst} vs {atol}"
        return True
    assert worst < atol / 10 or worst > atol * 2, f"an unclear question: {worst} vs {atol}"
    return worst < atol / 10


def sealed(factory, weights, x, atol, key=None, again=0):
    """What the child builds: the layer as a plain function of x, its weights masked by noise from
    a seed drawn from the question itself (the same answer for the same submission), and from
    `again` when it is asked again: the child seeds each call from its arguments
    (grader/judge/child.py), so a question asked again meets fresh luck, and a random strategy
    shows as random."""
    key = key or digest(factory, weights, x, atol)
    seed = int((hashlib.sha256(f"{key} {again}".encode()).hexdigest() if again else key)[:12], 16)
    return build("toy_attention:sealed", factory, toy_attention.mask(weights, seed), seed)


# -- asking ---------------------------------------------------------------------------------------------
def ask(student, weights, x, atol=1e-5, factory="Layer", again=0):
    """The student's answer about the layer with these weights, and the truth. atol=None asks
    without an atol: the docstring's default, 1e-5, must apply. `again` > 0: the same question
    asked once more, its layer masked anew."""
    given = {} if atol is None else {"atol": atol}
    atol = 1e-5 if atol is None else atol
    key = digest(factory, weights, x, atol)
    expected = truth(factory, weights, x, atol)
    try:
        answer = student.is_permutation_invariant(sealed(factory, weights, x, atol, key, again), x, **given)
    except CallFailed as failure:       # the lesson's starter as it stands: assert, randperm(5), wherever it surfaces
        starter = failure.message.startswith(("AssertionError", "IndexError")) or \
            getattr(failure, "given", "") == "toy_attention.py"
        if failure.kind == "raised" and starter:
            raise CheckFailed(f"{expected} for a layer on seq {x.shape[1]}",
                              f"{failure.function} raised {failure.message}", STARTER) from None
        raise
    return expected, as_bool(answer)


def as_bool(value):
    """The student's answer as a bool (a one-element bool tensor with a value is accepted here)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.dtype == torch.bool \
            and value.device.type != "meta":
        return bool(value)
    expect(type(value) is bool, "a bool", describe(value), STARTER if value is None else None)
    return value


def inputs(batch, seq, d, seed, device, tokens=None):
    """Random (batch, seq, d) inputs; `tokens` like "aab" repeats a token wherever a letter does."""
    x = torch.randn(batch, seq, d, generator=torch.Generator().manual_seed(seed))
    if tokens:
        x = x[:, ["abcdefgh".index(letter) for letter in tokens]]
    return x.to(device)


def check(student, name, x, own=(), atol=1e-5, repeats=1, weights=None, otherwise=None):
    """Ask about LAYERS[name] (or `weights`) on x, `repeats` times; every answer must be the truth.
    A wrong one's hint names the slip the function's answers show, those in `own` tried first
    (slips.py); `otherwise` is the hint when none does."""
    weights = weights or LAYERS[name](x.shape[1])
    for again in range(repeats):
        expected, answer = ask(student, weights, x, atol, again=again)
        if answer != expected:
            raise CheckFailed(f"{expected} for {name}, seq {x.shape[1]}", str(answer),
                              _slips().hint(student, x.device, own) or otherwise)


def check_one_token(student, x, atol=1e-5):
    """ONE_TOKEN on x's first token at each of (at most 3) positions: True, as no reordering changes
    x. Only running attn on reordered x tells: rules read off a layer's weights (which a student can
    unseal: the layer must hold what recovers them) answer False for a layer that weights positions,
    at any length (3 positions: 6 reorderings to try, where x's own length may need hundreds)."""
    one = one_token(x)
    check(student, ONE_TOKEN, one, atol=atol, weights=weighted(one.shape[1]))


def one_token(x, most=3):
    """x's first token at each of min(most, x's) positions."""
    return x[:, :1].expand(-1, min(most, x.shape[1]), -1).contiguous()


def check_gated(student, seq, d, seed, device, rows=False):
    """The same layer on two inputs: invariant on one, not on the other; with `rows`, on an input
    whose row 0 keeps it shut and row 1 opens it, and on one the other way round: not invariant
    (every row counts, the first as well as the last)."""
    weights, shut, opened, mixed = gated(seq, d, seed, device)
    asked = [(shut, True, "no row"), (mixed if rows else opened, False, "row 1 but not row 0" if rows else "a row")]
    if rows:
        asked.append((torch.cat((opened[:1], shut[1:])), False, "row 0 but not row 1"))
    answers = [ask(student, weights, x)[1] for x, _, _ in asked]
    for (_, expected, where), answer in zip(asked, answers):
        if answer is not expected:
            same = "run attn on reordered copies of this x: what a layer does can depend on its input"
            raise CheckFailed(f"{expected} for a layer that weights positions only where <x.sum(1), g> > 0, on an "
                              f"x where {where} has it so", str(answer),
                              _slips().hint(student, device, ["first_row", "last_row"] if rows else ())
                              or (same if answers[0] == answers[1] else None))


def _slips():
    return load_beside(__file__, "slips")     # it asks its questions with ask(): loaded once it is needed
