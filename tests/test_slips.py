"""A hint names a slip only when the function's own answers single it out: every hint of lab 2's
positions and invariance checks (public/slips.py, public/rope.py) against submissions whose slip is
its neighbour, which must not get it (NEIGHBOURS), and the new neighbours' own hints, or none.
Also the helpers that decide: diagnose (one mistake, within a tolerance relative to its values) and
the child's seeding of each call from its arguments."""
from pathlib import Path

import pytest
import torch
from test_lab2_grading import failures, helper, points

from grader.checks import diagnose
from grader.judge.sandbox import Sandbox

SUBMISSIONS = Path(__file__).parent / "submissions"
CACHE = {}

# hint -> submissions whose slip is its neighbour: none of them may get it. A hint of slips.py by
# its key; of rope.py by a constant's name or the words a frequency mistake's hint starts with.
NEIGHBOURS = {
    "random": ["fixed_reorderings", "transpositions_only"],
    "exact": ["mean_not_sum", "total_sum"],
    "positionwise": ["total_sum", "exact_equality"],
    "any": ["first_row_only", "total_sum"],
    "total": ["any_rows", "mean_not_sum"],
    "atol": ["exact_equality", "scaled_atol"],
    "mean": ["any_rows", "total_sum"],
    "first_row": ["any_rows"],
    "unmoved": ["random_shuffles", "transpositions_only"],
    "transpositions": ["random_shuffles", "unmoved_position"],
    "rotations": ["random_shuffles", "fixed_reorderings"],
    "few": ["random_shuffles", "rotations_only"],
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
    "unturned_input": ("apply_rope", None),
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
