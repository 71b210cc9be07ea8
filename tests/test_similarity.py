"""Similar code: a copy with renamed variables and new formatting is a pair; the reference and an
independent correct solution in another style are not; what the handout gave counts for nothing."""
import ast
from pathlib import Path

from grader.instructor import similarity

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference" / "lab2"
STUBS = ROOT / "grader" / "labs" / "lab2" / "stubs"
FUNCTIONS = {"rope_frequencies": "positions.py", "apply_rope": "positions.py",
             "is_permutation_invariant": "invariance.py"}

# the reference's positions.py, copied: variables renamed, comments and a docstring added, reformatted
COPIED = '''
import torch

def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    # my own work!
    frequencies = 1.0 / (
        base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    )
    where = torch.arange(seq_len, device=device).float()
    theta = torch.outer(where, frequencies)
    return (torch.cos(theta),
            torch.sin(theta))


def apply_rope(x, cos, sin):
    """Rotate every pair."""
    evens, odds = x[..., 0::2], x[..., 1::2]
    c, s = cos[None, None], sin[None, None]
    first = evens * c - odds * s
    second = evens * s + odds * c
    return torch.stack(
        (first, second), dim=-1
    ).flatten(-2)
'''


def files(folder):
    return {path.name: path.read_text() for path in Path(folder).glob("*.py")}


def pairs(sources):
    return similarity.similar_pairs(sources, FUNCTIONS, files(STUBS))


def test_a_renamed_reformatted_copy_is_a_pair():
    found = pairs({"ada": files(REFERENCE), "bob": {"positions.py": COPIED}})
    assert [(p.function, p.students) for p in found] == [("apply_rope", ("ada", "bob")),
                                                          ("rope_frequencies", ("ada", "bob"))]
    assert all(p.score == 1.0 for p in found) and "evens, odds" in found[0].code[1]


def test_an_independent_solution_in_another_style_is_not():
    assert pairs({"ada": files(REFERENCE), "cy": files(ROOT / "tests" / "submissions" / "alternative_styles")}) == []


def test_comments_docstrings_formatting_and_names_change_no_token():
    def tokens(source):
        return similarity.tokens(ast.parse(source).body[0])
    plain = "def f(x, n):\n    total = x * n\n    return total.sum(dim=0)\n"
    dressed = 'def f(values, count):\n    """Doc."""\n    # a comment\n    acc = (values *\n           count)\n' \
              "    return acc.sum(\n        dim=0)\n"
    assert tokens(plain) == tokens(dressed)
    assert tokens(plain) != tokens(plain.replace("dim=0", "dim=1")) != tokens(plain.replace("sum", "mean"))


def test_what_the_handout_gave_counts_for_nothing():
    stub = files(STUBS)
    assert pairs({"ada": stub, "bob": stub, "cy": files(REFERENCE)}) == []     # two untouched stubs
    given, _ = similarity.fingerprints(stub["positions.py"], "rope_frequencies")
    left, _ = similarity.fingerprints(files(REFERENCE)["positions.py"], "rope_frequencies", given)
    whole, _ = similarity.fingerprints(files(REFERENCE)["positions.py"], "rope_frequencies")
    assert given & whole and not given & left


def test_the_classes_idioms_are_left_out_of_a_large_class():
    same = {f"s{i}": files(REFERENCE) for i in range(similarity.COMMON_MIN)}
    assert pairs(same) == []                    # everyone's code: the lab's idiom, no lead
    assert len(pairs(dict(list(same.items())[:3]))) == 3 * 3    # a small class: three pairs per function
