"""A hint names a slip only when the function's own answers single it out: every hint of lab 2's
positions and invariance checks (public/slips.py, public/rope.py) against submissions whose slip is
its neighbour, which must not get it (NEIGHBOURS), and the new neighbours' own hints, or none.
Also the helpers that decide: diagnose (one mistake, within a tolerance relative to its values) and
the child's seeding of each call from its arguments."""
from pathlib import Path

import pytest
import torch
from test_lab2_grading import failures, helper, points

from grader.judge.sandbox import Sandbox
from grader.lab_api.checks import diagnose

SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"
MODEL_CALLS = Path(__file__).resolve().parents[2] / "grader" / "labs" / "lab2" / "model_calls.py"
CACHE = {}

# hint -> submissions whose slip is its neighbour: none of them may get it. A hint of slips.py by
# its key; of rope.py by a constant's name or the words a frequency mistake's hint starts with.
NEIGHBOURS = {
    "random": ["fixed_reorderings", "transpositions_only"],
    "exact": ["mean_not_sum", "total_sum"],
    "positionwise": ["total_sum", "exact_equality"],
    "any": ["first_row_only", "total_sum"],
    "total": ["any_rows", "mean_not_sum"],
    "norm": ["exact_equality", "total_sum", "loose_atol", "sorted_positions"],
    "average": ["norm_of_sums", "mean_not_sum", "any_rows"],
    "sorted": ["mistakes_b", "exact_equality", "norm_of_difference"],
    "relative": ["loose_atol", "scaled_atol", "mean_not_sum"],
    "atol": ["exact_equality", "scaled_atol"],
    "mean": ["any_rows", "total_sum"],
    "first_row": ["any_rows", "last_row_only"],
    "last_row": ["any_rows", "first_row_only"],
    "swaps": ["rotations_only", "transpositions_only", "fixed_reorderings"],
    "spread": ["previous_order", "exact_equality", "loose_atol"],
    "unmoved": ["random_shuffles", "transpositions_only"],
    "transpositions": ["random_shuffles", "unmoved_position"],
    "rotations": ["random_shuffles", "fixed_reorderings"],
    "few": ["random_shuffles", "rotations_only"],
    "batch": ["total_sum", "first_row_only", "any_rows"],
    "neighbours": ["loose_atol", "mean_not_sum", "scaled_atol"],
    "no_reorder": ["random_shuffles", "mistakes_a"],
    "positions start at 1": ["angle_in_cycles"],
    "every angle is 0": ["angle_in_cycles"],
    "ON_DEVICE": ["cached_frequencies"],
    "CACHED": ["device_ignored"],
    "DEVICE_LOST": ["unturned_input"],
    "MADE_ON_CPU": ["unturned_input"],
}
FUNCTION = {"positions start at 1": "rope_frequencies", "every angle is 0": "rope_frequencies",
            "ON_DEVICE": "rope_frequencies", "CACHED": "rope_frequencies", "DEVICE_LOST": "apply_rope",
            "MADE_ON_CPU": "apply_rope"}
OWN = {         # the new neighbours: (function, the hint their answers single out, or None: no hint)
    "random_shuffles": ("is_permutation_invariant", "random"),
    "any_rows": ("is_permutation_invariant", "any"),
    "scaled_atol": ("is_permutation_invariant", "mean"),    # the same answers as a mean: its hint says both
    "angle_in_cycles": ("rope_frequencies", None),
    "cached_frequencies": ("rope_frequencies", "CACHED"),
    "unturned_input": ("apply_rope", "RETURNED_X"),     # x itself: the new-tensor clause names it
}
QUICK = {"any_rows", "cached_frequencies"}      # the rest are slow: a grading each


def hint_text(lab2, name):
    slips, rope = helper(lab2, "slips"), helper(lab2, "rope")
    if name in slips.HINTS:
        return slips.HINTS[name][:60]
    return getattr(rope, name, name)[:50]


@pytest.fixture
def hints_of(grade_lab2):
    """hints_of(submission, function) -> (the hints of its failed checks, (score, top)), once per file."""
    def get(name, function):
        if (name, function) not in CACHE:
            results = grade_lab2(SUBMISSIONS / name, [function])
            CACHE[name, function] = [c.hint for c in failures(results, function)], points(results, function)
        return CACHE[name, function]
    return get


def test_every_hint_has_a_neighbour(lab2):
    slips = helper(lab2, "slips")
    assert set(slips.HINTS) <= set(NEIGHBOURS)
    assert all((SUBMISSIONS / name).is_dir() for names in NEIGHBOURS.values() for name in names)


def mark(name):
    return [] if name in QUICK else [pytest.mark.slow]


@pytest.mark.parametrize("hint, neighbour", [pytest.param(h, n, marks=mark(n), id=f"{h} / {n}")
                                             for h, names in NEIGHBOURS.items() for n in names])
def test_no_hint_fires_on_a_neighbour(hints_of, lab2, hint, neighbour):
    hints, _ = hints_of(neighbour, FUNCTION.get(hint, "is_permutation_invariant"))
    assert not [h for h in hints if hint_text(lab2, hint) in h], hints


@pytest.mark.parametrize("submission", [pytest.param(s, marks=mark(s)) for s in OWN])
def test_the_new_neighbours_lose_points_with_their_own_hint_or_none(hints_of, lab2, submission):
    function, own = OWN[submission]
    hints, (score, top) = hints_of(submission, function)
    assert score < top, hints
    if own is None:
        assert hints and not any(hints), hints
    else:
        assert hints and all(hint_text(lab2, own) in h for h in hints), hints


def test_diagnose_names_one_mistake_within_a_tolerance_relative_to_its_values():
    angles = torch.tensor([1e-4, 2e-4, 3e-4])
    mistakes = {"doubled": 2 * angles, "tripled": 3 * angles, "nearly doubled": 2.0005 * angles}
    assert diagnose(2 * angles, {"tripled": 3 * angles}) is None       # 1e-4 apart: within 1e-3, but by half
    assert diagnose(2.003 * angles, {"doubled": 2 * angles, "tripled": 3 * angles}) is None     # 0.15% off
    assert diagnose(2.0001 * angles, {"doubled": 2 * angles, "tripled": 3 * angles}) == "doubled"
    assert diagnose(2 * angles, mistakes) is None               # two match: the answers do not tell
    assert diagnose(3 * angles, mistakes, slack=1e-9) == "tripled"
    assert diagnose(torch.full((3,), float("nan")), mistakes) is None
    assert diagnose(2 * angles, {"doubled": 2 * angles[:2]}) is None


def test_each_call_meets_luck_of_its_own_arguments(lab2, zygote, tmp_path):
    """The child seeds torch from each call's arguments: the same call gives the same draw in every
    child, whatever ran before it; another call, another draw."""
    files = {"positions.py": b"import torch\n\ndef rope_frequencies(head_dim, seq_len, base=10000.0, device='cpu'):\n"
                             b"    return torch.rand(2), torch.rand(2)\n\ndef apply_rope(x, cos, sin):\n"
                             b"    return torch.rand(x.shape)\n"}
    first, second = Sandbox(lab2, files, zygote), Sandbox(lab2, files, zygote)
    try:
        a = first.call("rope_frequencies", [2, 1])
        b = first.call("rope_frequencies", [2, 2])
        second.call("apply_rope", [torch.zeros(3), torch.zeros(1), torch.zeros(1)])
        again = second.call("rope_frequencies", [2, 1])
        c = first.call("apply_rope", [torch.zeros(3), torch.zeros(1), torch.zeros(1)])
        d = first.call("apply_rope", [torch.ones(3), torch.zeros(1), torch.zeros(1)])
    finally:
        first.close()
        second.close()
    assert torch.equal(a[0], again[0]) and not torch.equal(a[0], b[0]) and not torch.equal(c, d)


# -- the value mistakes of rope.py, judged as the checks judge them, at the checks' own sizes ------
FREQUENCY_SIZES = [(8, 6, 10000.0), (12, 5, 100.0), (4, 3, 10000.0), (6, 4, 10000.0), (64, 50, 10000.0),
                   (2, 9, 10000.0), (6, 7, 10000.0), (128, 3, 10000.0), (98, 4, 10000.0), (32, 40, 500.0),
                   (32, 40, 1e6), (16, 8, 10000.0)]
ROPE_SHAPES = [((2, 3, 5, 8), 10000.0), ((3, 1, 7, 2), 500.0), ((2, 2, 5, 8), 500.0), ((2, 4, 12, 16), 10000.0),
               ((2, 2, 9, 12), 500.0), ((1, 2, 3, 4), 10000.0)]


class Answers:
    """A stand-in for the sandboxed student: its functions give what `angles` or `rotated` make."""

    def __init__(self, angles=None, rotated=None):
        self.angles, self.rotated = angles, rotated

    def rope_frequencies(self, head_dim, seq_len, base=10000.0, device="cpu"):
        cos, sin = self.angles(head_dim, seq_len, base)
        return cos.float().to(device), sin.float().to(device)

    def apply_rope(self, x, cos, sin):
        return self.rotated(x, cos, sin).to(x.dtype)

    def in_model(self, name, *args):
        """The lab's model call of `name` (lab.yaml's model_calls), made with this stand-in's function."""
        import importlib.util
        import sys
        import types
        from unittest import mock

        spec = importlib.util.spec_from_file_location("model_calls", MODEL_CALLS)
        calls = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(calls)
        positions = types.ModuleType("positions")
        positions.apply_rope = self.apply_rope
        with mock.patch.dict(sys.modules, {"positions": positions}):
            return getattr(calls, f"{name}_in_model")(*args)


def frequency_answers(rope, exponents=None, start=0, scale=1.0, swap=False, sign=1.0, base=None):
    def angles(head_dim, seq_len, given_base):
        a = scale * rope.exact_angles(head_dim, seq_len, base or given_base, start, exponents)
        return (sign * a.sin(), a.cos()) if swap else (a.cos(), sign * a.sin())
    return Answers(angles=angles)


def frequency_hints(lab2, student):
    """The hint of every frequency check at the checks' sizes that fails."""
    rope = helper(lab2, "rope")
    from grader.lab_api.checks import CheckFailed

    hints = []
    for head_dim, seq_len, base in FREQUENCY_SIZES:
        try:
            rope.check_frequencies(student, head_dim, seq_len, base, torch.device("cpu"), base=base)
        except CheckFailed as failure:
            hints.append(failure.hint)
    return hints


FREQUENCY_SLIPS = {     # the words of a mistake's hint in rope.frequency_mistakes -> what gives them
    "cos and sin are swapped": dict(swap=True),
    "the angle has the wrong sign": dict(sign=-1.0),
    "positions start at 1": dict(start=1),
    "the exponent uses i / head_dim": dict(exponents=lambda i, d: i / d),
    "the exponent is rounded to a whole number: 2i // head_dim": dict(exponents=lambda i, d: 2 * i // d),
    "the exponent counts pairs from 1": dict(exponents=lambda i, d: (2 * i + 2) / d),
    "the exponent is (2i + 1) / head_dim": dict(exponents=lambda i, d: (2 * i + 1) / d),
    "every angle is 0": dict(scale=0.0),
    "the base argument is ignored": dict(base=10000.0),
}
FREQUENCY_NEIGHBOURS = {    # slips no hint names: every failure says what differs, with no hint
    "an angle in cycles (times 2 pi)": dict(scale=2 * torch.pi),
    "an angle in degrees' stead (times 180 / pi)": dict(scale=180 / torch.pi),
    "positions from 2": dict(start=2),
    "half the angle": dict(scale=0.5),
    "the exponent 2i / (head_dim - 2)": dict(exponents=lambda i, d: 2 * i / max(d - 2, 1)),
}


@pytest.mark.parametrize("words", FREQUENCY_SLIPS)
def test_a_frequency_mistake_is_named_only_by_its_own_hint(lab2, words):
    hints = frequency_hints(lab2, frequency_answers(helper(lab2, "rope"), **FREQUENCY_SLIPS[words]))
    assert hints and any(h and words in h for h in hints), hints
    assert all(h is None or words in h for h in hints), hints


@pytest.mark.parametrize("neighbour", FREQUENCY_NEIGHBOURS)
def test_a_frequency_slip_no_hint_describes_gets_none(lab2, neighbour):
    hints = frequency_hints(lab2, frequency_answers(helper(lab2, "rope"), **FREQUENCY_NEIGHBOURS[neighbour]))
    assert hints and not any(hints), hints


def rope_hints(lab2, rotated):
    rope = helper(lab2, "rope")
    from grader.lab_api.checks import CheckFailed

    hints = []
    for shape, base in ROPE_SHAPES:
        try:
            rope.check_rope(Answers(rotated=rotated), *rope.rope_inputs(shape, 3, "cpu", base), torch.device("cpu"))
        except CheckFailed as failure:
            hints.append(failure.hint)
    return hints


def rope_slips(rope):
    """The words of a mistake's hint in rope.rope_mistakes -> an apply_rope that makes it."""
    default = lambda x: rope.exact_angles(x.shape[-1], x.shape[-2], 10000.0)     # noqa: E731
    return {"half-split rotate_half": lambda x, c, s: rope.rotate(x, c, s, "half"),
            "the angle has the wrong sign": lambda x, c, s: rope.rotate(x, c, s, sign=-1.0),
            "cos and sin are swapped": lambda x, c, s: rope.rotate(x, s, c),
            "concatenated": lambda x, c, s: rope.rotate(x, c, s, "concatenated"),
            "x came back unrotated": lambda x, c, s: x.clone(),
            "the cos and sin it is given are not used": lambda x, c, s: rope.rotate(x, default(x).cos(),
                                                                                    default(x).sin())}


def rope_neighbours(rope):
    """apply_rope slips no hint describes."""
    return {"the angle doubled": lambda x, c, s: rope.rotate(x, c * c - s * s, 2 * s * c),
            "no sin term": lambda x, c, s: rope.rotate(x, c, 0 * s),
            "x times cos": lambda x, c, s: x * c.repeat_interleave(2, -1),
            "pairs turned by the next position's angle": lambda x, c, s: rope.rotate(x, c.roll(-1, 0), s.roll(-1, 0))}


@pytest.mark.parametrize("words", ["half-split rotate_half", "the angle has the wrong sign", "cos and sin are swapped",
                                   "concatenated", "x came back unrotated", "the cos and sin it is given are not used"])
def test_an_apply_rope_mistake_is_named_only_by_its_own_hint(lab2, words):
    hints = rope_hints(lab2, rope_slips(helper(lab2, "rope"))[words])
    assert hints and any(h and words in h for h in hints), hints
    assert all(h is None or words in h for h in hints), hints


@pytest.mark.parametrize("neighbour", ["the angle doubled", "no sin term", "x times cos",
                                       "pairs turned by the next position's angle"])
def test_an_apply_rope_slip_no_hint_describes_gets_none(lab2, neighbour):
    hints = rope_hints(lab2, rope_neighbours(helper(lab2, "rope"))[neighbour])
    assert hints and not any(hints), hints
