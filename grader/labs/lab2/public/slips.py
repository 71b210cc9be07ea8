"""Which slip a wrong is_permutation_invariant made, from its answers to questions that tell the
usual slips apart (a helper of layers.py, not checks). A right function answers every question
right; a slip is named only when the answers show it (a rule that fires for right code would name
what the code already does). The questions are asked only once a check has failed, each at most
once per grading (a slow function pays for a few calls, and only when it is wrong).
"""
import weakref

import torch

from grader.lab_api import CallFailed
from grader.lab_api.checks import CheckFailed, load_beside

layers = load_beside(__file__, "layers")
RANDOM_TRIES = 6            # each question of RANDOM again, its layer masked anew (the child seeds each call
#                             from its arguments): a strategy that draws a few random orders answers some of
#                             them differently, one that draws many rarely errs at all
RANDOM = ("positional 2", "aab", "3-cycle", "one in 6")    # orders that change the sum: 1/2, 1/3, 1/3, 1/6 of all
AGAIN = 3                   # a slip's telling answers, asked this often: a random strategy does not give them alike
HINTS = {
    "random": "a random shuffle gives different answers from call to call, and torch.randperm(2) leaves the "
              "order unchanged half the time: ",
    "exact": "exact equality (== or torch.equal) fails on float noise: summed in another order, the same numbers "
             "differ in their last bits; compare with torch.allclose(..., rtol=0, atol=atol)",
    "positionwise": "compare attn(x).sum(1), not the outputs position by position",
    "sorted": "compare the sums over positions, attn(x).sum(1), not the outputs as a set of positions (sorted): a "
              "layer can mix positions so that its outputs change with the order while their sum does not",
    "average": "hold every number of the sum to atol (torch.allclose(..., rtol=0, atol=atol)), not their average "
               "(.mean(), mse_loss), over features or over rows: a change of 3 atol in one number is a change, however "
               "many others stay",
    "any": "every number of the summed output must stay within atol (.all(), or torch.allclose), not just some "
           "of them (.any())",
    "relative": "atol is absolute: compare with rtol=0, atol=atol; a tolerance relative to the values (rtol, "
                "torch.allclose's default 1e-5 aside) lets sums in the hundreds change by far more than atol",
    "total": "compare attn(x).sum(1) elementwise, one number per row and feature, not one total: here the total "
             "stays the same under every reordering while its parts change",
    "norm": "compare attn(x).sum(1) number by number, each within atol (torch.allclose(..., rtol=0, atol=atol)), "
            "not through a norm: the norm of a difference adds up changes that are each within atol, and two sums "
            "of the same norm can hold other numbers",
    "atol": "compare with atol=atol, the argument, whose default is 1e-5",
    "mean": "compare the sums over positions (.sum(1)) within atol itself: a mean over positions, or atol scaled "
            "by seq, lets through a change of the sum up to seq times atol",
    "first_row": "every row of the batch counts: here row 0 keeps its sum under every reordering and row 1 does "
                 "not; compare all of attn(x).sum(1), not its first row",
    "last_row": "every row of the batch counts: here row 1 keeps its sum under every reordering and row 0 does "
                "not; compare all of attn(x).sum(1), not its last row",
    "unmoved": "some position is never moved: reorder every position, 0 .. seq - 1 (permutations of range(1, seq) "
               "or range(seq - 1), or of a few positions only, leave the others in place); ",
    "transpositions": "no swap of two positions changes this layer's sum on this x, but a 3-cycle does: swaps one "
                      "at a time are not every reordering; ",
    "rotations": "this layer ignores rotations but not other reorderings: ",
    "swaps": "every swap of two positions and every rotation (and the reversal), each tried at x, are still not "
             "every order: with repeated tokens none of them may change the sum while another order does: ",
    "few": "a few chosen reorderings (a swap, a rotation, the reversal) are not every order: a layer can ignore "
           "them, and with repeated tokens they can leave x as it was, while another order changes the sum: ",
    "batch": "each row's sum counts on its own: compare attn(x).sum(1), one number per row and feature; summed over "
             "the batch as well (.sum((0, 1))), the changes of two rows can cancel",
    "neighbours": "hold every order's sum to x's own, attn(x).sum(1), not to the previous order's: changes each within "
                  "atol from one order to the next add up to more than atol",
    "spread": "hold every order's sum to x's own, attn(x).sum(1), within atol: not to the other orders' sums (their "
              "spread, max - min) or to their mean: orders each within atol of x's own can lie up to 2 atol apart",
    "no_reorder": "it answers True even for a layer that weights positions, as if no order it tries changed "
                  "the sum: shuffle the positions of x along dim 1 before calling attn again, and hold every "
                  "number of each order's sum to x's own (.all(), not .any(): x's own order always matches)",
}
ORDER = list(HINTS)                         # the most telling first: a random shuffle fails anything
EVERY = {"random", "unmoved", "transpositions", "rotations", "few", "swaps"}    # hints that end with layers.EVERY_ORDER
STOP = "stop"
SEEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()      # student -> {question: answer}, per grading


def hint(student, device, own=()):
    """The hint naming the slip the function's answers show ("random", then a tolerance too loose,
    which lets through what a narrowed search or a mean would, then `own`, then the rest in ORDER),
    or None when they show none."""
    answers = Answers(student, torch.device(device))
    asked = [("random", SLIPS["random"]), ("atol", loose), *((s, SLIPS[s]) for s in dict.fromkeys([*own, *ORDER]))]
    for slip, shows in asked:
        try:
            if shows(answers):
                return HINTS[slip] + (layers.EVERY_ORDER if slip in EVERY else "")
        except Unanswered as unanswered:
            if unanswered.args[0] == STOP:
                return None
    return None


class Unanswered(Exception):
    """A question the function did not answer: it raised (that slip is not shown), or its time ran
    out (STOP: no more questions this grading)."""


class Answers:
    """The function's answers to the questions below, each asked once per grading."""

    def __init__(self, student, device):
        self.student, self.device = student, device
        self.seen = SEEN.setdefault(student, {})

    def __call__(self, name, again=0):
        if self.seen.get(STOP):
            raise Unanswered(STOP)
        key = (name, again, self.device.type)
        if key not in self.seen:
            weights, x, atol = QUESTIONS[name](self.device)
            try:
                self.seen[key] = layers.ask(self.student, weights, x, atol, again=again)[1]
            except CheckFailed:
                self.seen[key] = None
            except CallFailed as failure:
                self.seen[key] = None
                self.seen[STOP] = failure.kind in ("timeout", "budget", "grader_fault")
        if self.seen[key] is None:
            raise Unanswered(STOP if self.seen.get(STOP) else name)
        return self.seen[key]


def _noisy(device):
    """A position-free layer on x whose positions hold 1, 2**-24, 2**-24: float32 sums of them in
    another order differ by 2**-23, far within atol."""
    return layers.toy(3), torch.tensor([1.0, 2.0 ** -24, 2.0 ** -24])[None, :, None].expand(1, 3, 2).to(device), 1e-5


def _sum_sized(batch, seq, seed, times):
    """A layer whose summed output some reordering changes by `times` atol: its mean by times / seq."""
    def question(device):
        x = layers.inputs(batch, seq, 3, seed, device)
        return layers.sum_sized(x, 1e-2, times), x, 1e-2
    return question


def _large(device):
    """A layer whose summed output changes by 3 atol on x of values in the hundreds: within a relative
    tolerance, not within atol."""
    x = layers.large(layers.inputs(2, 2, 3, 56, device))
    return layers.sum_sized(x, 1e-2), x, 1e-2


def _zero_total(device):
    """The position-weighted layer on tokens whose features sum to 0 (so does its output, in any order)."""
    return layers.weighted(3), layers.zero_total(layers.inputs(2, 3, 4, 50, device)), 1e-5


def _gated(which):
    def question(device):
        weights, shut, opened, mixed = layers.gated(4, 3, 49, device)
        return weights, {"opened": opened, "mixed": mixed, "row 0": torch.cat((opened[:1], shut[1:]))}[which], 1e-5
    return question


def _one_in(seq):
    """A layer weighting position 0 alone, on tokens a a ... a b: only the orders that bring b to
    position 0 change its sum, 1 in seq."""
    tokens = "a" * (seq - 1) + "b"
    return lambda d: (layers.toy(seq, gain=torch.eye(seq)[0] / 2), layers.inputs(2, seq, 3, 53, d, tokens), 1e-5)


QUESTIONS = {   # name -> device -> (weights, x, atol); a right function answers as the comment says
    "positional 2": lambda d: (layers.weighted(2), layers.inputs(1, 2, 3, 40, d), 1e-5),           # False
    "positional 3": lambda d: (layers.weighted(3), layers.inputs(2, 3, 3, 41, d), 1e-5),           # False
    "positional 3, one row": lambda d: (layers.weighted(3, scale=5.0), layers.inputs(1, 3, 3, 41, d), 1e-5),  # False
    "noisy": _noisy,                                                                                # True
    "free": lambda d: (layers.toy(3), layers.inputs(2, 3, 3, 54, d), 1e-5),                          # True
    "large sums": _large,                                                                           # False
    "one token, weighted": lambda d: (layers.weighted(3), layers.inputs(2, 3, 3, 43, d, "aaa"), 1e-5),  # True
    "reversal, whole numbers": lambda d: (layers.toy(4, mix=torch.eye(4).flip(0)),                 # True
                                          layers.inputs(2, 4, 3, 42, d).mul(3).round(), 1e-5),
    "mixing": lambda d: (layers.LAYERS[layers.MIXING](4), layers.inputs(2, 4, 3, 61, d), 1e-5),         # True
    "one token": lambda d: (layers.toy(3), layers.inputs(2, 3, 3, 43, d, "aaa"), 1e-5),             # True
    "atol 1": lambda d: (layers.weighted(3, scale=0.002), layers.inputs(1, 3, 3, 44, d), 1.0),       # True
    "default atol": lambda d: (layers.weighted(3, scale=0.002), layers.inputs(1, 3, 3, 44, d), None),  # False
    "default atol, close": lambda d: (layers.sum_sized(layers.inputs(1, 3, 3, 44, d), 1e-5, times=8.0),  # False
                                      layers.inputs(1, 3, 3, 44, d), None),
    "rows cancel": lambda d: (layers.weighted(3), layers.rows_cancel(layers.inputs(1, 3, 3, 59, d)), 1e-5),  # False
    "chained": lambda d: (*layers.chained(1, 60, d), 1e-5),                                        # False
    "spread apart": lambda d: (*layers.spread_apart(3, 66, d, 1e-2), 1e-2),                        # True
    "sum sized": _sum_sized(2, 6, 45, 3.0),                                                         # False
    "sum sized 3": _sum_sized(1, 3, 51, 2.5),                                                       # False
    "zero total": _zero_total,                                                                      # False
    "same length": lambda d: (*layers.same_length(2, 5, 57, d), 1e-5),                              # False
    "spread thin": lambda d: (*layers.spread_thin(1024, 58, d), 1e-5),                               # True
    "one feature": lambda d: (*layers.one_feature(2, 16, 63, d, 1e-5, times=5.0), 1e-5),               # False
    "one row": lambda d: (*layers.one_feature(2, 3, 65, d, 1e-5, rows=8), 1e-5),                      # False
    **{f"weighted at {t} of {seq}": lambda d, t=t, seq=seq: (layers.toy(seq, gain=torch.eye(seq)[t] / 2),  # False
                                                            layers.inputs(2, seq, 3, 52, d), 1e-5)
       for t, seq in ((0, 3), (1, 3), (2, 3), (3, 4), (5, 6))},
    "opened": _gated("opened"),                                                                     # False
    "row 1 opened": _gated("mixed"),                                                                # False
    "row 0 opened": _gated("row 0"),                                                                # False
    "one in 6": _one_in(6),                                                                         # False
    "3-cycle": lambda d: (*layers.three_cycle(3, 2, 3, 47, d), 1e-5),                               # False
    "rotations": lambda d: (layers.LAYERS[layers.ROTATIONS](4), layers.inputs(2, 4, 3, 48, d), 1e-5),  # False
    "aab": lambda d: (layers.toy(3, gain=[0.0, 0.5, 0.0]), layers.inputs(2, 3, 3, 49, d, "aab"), 1e-5),  # False
    "swaps kept": lambda d: (*layers.swaps_kept(2, 3, 64, d), 1e-5),                                # False
}
WEIGHTED_AT = [n for n in QUESTIONS if n.startswith("weighted at")]   # False from a function that tries every swap


def varies(ask):
    """Whether the function answers some question of RANDOM differently when asked it again."""
    return any(len({ask(name, again) for again in range(RANDOM_TRIES)}) > 1 for name in RANDOM)


def always(ask, name, answer=True):
    """Whether the function gives `answer` to the question every time it is asked, AGAIN times."""
    return all(ask(name, again) is answer for again in range(AGAIN))


def loose(ask):
    """A change of 0.01, or of 8 times 1e-5, let through at the default atol, by a function that does
    reorder (one row or two): the atol slip, too loose (the argument ignored, or a default of its
    own), asked before a check's own slips, which it mimics."""
    return (ask("default atol") or ask("default atol, close")) and not ask("positional 3") \
        and not ask("positional 3, one row") and runs_it(ask)


def runs_it(ask):
    """Whether the function answers as one that runs attn on x reordered along dim 1 does, where
    nothing but that tells: True for a position-free layer, and for a position-weighted one on x of
    one token (which no reordering changes), unless it compares outputs position by position.
    Reordering another dim, or rules read off the layer's weights, answer False: no atol is to blame."""
    return ask("free") and (ask("one token, weighted") or SLIPS["positionwise"](ask))


SLIPS = {       # slip -> does what the function answered show it? (a right function: never; each
    #             also asks what tells it from its neighbours: tests/lab2/test_slips.py)
    "random": varies,
    "exact": lambda ask: not ask("noisy") and ask("reversal, whole numbers"),
    "positionwise": lambda ask: not ask("reversal, whole numbers") and ask("one token"),
    "atol": lambda ask: ((not ask("atol 1") and ask("noisy")) or loose(ask)) and runs_it(ask),
    "relative": lambda ask: ask("large sums") and not ask("positional 2") and not ask("positional 3")
    and not ask("row 1 opened") and runs_it(ask),
    "total": lambda ask: ask("zero total") and not ask("positional 3") and not ask("row 1 opened"),
    "norm": lambda ask: (ask("same length") or not ask("spread thin")) and ask("noisy") and ask("atol 1")
    and not ask("positional 2") and ask("mixing") and runs_it(ask),
    "average": lambda ask: (ask("one feature") or ask("one row")) and ask("spread thin") and not ask("same length")
    and not ask("positional 2") and not ask("row 1 opened") and runs_it(ask),
    "sorted": lambda ask: not ask("mixing") and ask("reversal, whole numbers") and ask("noisy") and ask("one token")
    and not ask("positional 3") and runs_it(ask),
    "mean": lambda ask: ask("sum sized") and ask("sum sized 3") and not ask("positional 3") and not ask("row 1 opened"),
    "first_row": lambda ask: ask("row 1 opened") and not ask("opened") and not ask("row 0 opened"),
    "last_row": lambda ask: ask("row 0 opened") and not ask("opened") and not ask("row 1 opened"),
    "any": lambda ask: ask("row 1 opened") and ask("row 0 opened") and not ask("opened"),
    "unmoved": lambda ask: any(always(ask, name) for name in WEIGHTED_AT) and not ask("positional 3"),
    "transpositions": lambda ask: always(ask, "3-cycle") and always(ask, "one in 6", False)
    and not ask("positional 3") and not any(map(ask, WEIGHTED_AT)),
    "rotations": lambda ask: always(ask, "rotations") and not ask("positional 3"),
    "few": lambda ask: always(ask, "aab") and not ask("positional 3"),
    "swaps": lambda ask: always(ask, "swaps kept") and not ask("positional 3") and not always(ask, "3-cycle")
    and not always(ask, "rotations") and not always(ask, "aab") and not any(map(ask, WEIGHTED_AT)),
    "batch": lambda ask: ask("rows cancel") and not ask("zero total") and not ask("positional 3")
    and not ask("row 1 opened"),
    "neighbours": lambda ask: ask("chained") and not ask("positional 3") and runs_it(ask),
    "spread": lambda ask: not ask("spread apart") and not ask("chained") and ask("noisy") and not ask("positional 3")
    and runs_it(ask),
    "no_reorder": lambda ask: ask("positional 3"),
}
