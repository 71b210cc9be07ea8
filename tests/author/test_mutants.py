"""`grade.py mutants`: the mutator makes one change per mutant, in a fixed order; mutants are graded
and sorted into killed, surviving and equivalent; the guide's example lab's checks kill all
that can be told apart, and a copy with a weak check shows its survivor."""
import ast
import json
import shutil
from pathlib import Path

import pytest

from grader.author import mutants
from grader.author.mutate import KINDS
from grader.author.mutate import mutants as mutate
from grader.learner.cli import main
from grader.readers.manifest import find_lab

EXAMPLE = Path(__file__).resolve().parents[1] / "labs" / "example"
SOURCE = '''"""A module."""
import itertools

import torch


def keep(x):
    return x + 1


@torch.no_grad()
def scaled(x, n=2):
    """Docstring: never deleted."""
    total = torch.zeros_like(x[:, 0], device=x.device)
    for i in range(1, n):
        if i < n and not x.is_cuda and list(itertools.permutations(range(n))):
            total = total - x[..., :i].sum(-1) * 0.5
    return total.to(torch.float32)
'''


def test_each_mutant_is_one_change_of_one_function():
    """Every kind, among them a new tensor's dtype or device lost, a sum made a mean, the batch
    index fixed to row 0, every permutation narrowed."""
    found = mutate(SOURCE, "m.py", "scaled")
    assert {m.kind for m in found} == set(KINDS)
    texts = [m.source for m in found]
    assert len(set(texts)) == len(texts) and SOURCE not in texts
    for m in found:
        tree = ast.parse(m.source)                              # it compiles, and only `scaled` changed
        assert ast.unparse(tree.body[3]) == ast.unparse(ast.parse(SOURCE).body[3])
        assert m.source.startswith('"""A module."""\nimport itertools\n') and "Docstring: never deleted" in m.source
        assert m.diff.startswith("-") and "\n+" in m.diff
    descriptions = {m.description for m in found}
    assert {"i < n -> i <= n", "0.5 -> 1.0", "range(1, n) -> range(1, n + 1)",
            "range(1, n) -> range(n, 1)", "not x.is_cuda -> x.is_cuda", "total.to(torch.float32) -> total",
            "return total.to(torch.float32) -> return x", "deleted: total = torch.zeros_like(x[:, 0], device=x.device)",
            "x[..., :i].sum(-1) -> x[..., :i].mean(-1)", "x[:, 0] -> x[0:1, 0]", "x[:, 0] -> x[0, 0]",
            "returned as float32 (.float())", "itertools.permutations(range(n)) -> the swaps of two of it",
            "itertools.permutations(range(n)) -> the rotations of it",
            "itertools.permutations(range(n)) -> one random order of it"} <= descriptions
    texts = "\n".join(m.diff for m in found)
    for made in ("torch.zeros(x[:, 0].shape, device=x.device)", "torch.zeros_like(x[:, 0], device='cpu')",
                 "return total.to(torch.float32).float()"):
        assert made in texts, made


def test_the_cap_takes_every_kind_in_turn_and_the_order_is_fixed():
    every = mutate(SOURCE, "m.py", "scaled")
    capped = mutate(SOURCE, "m.py", "scaled", cap=len(KINDS))
    assert capped == mutate(SOURCE, "m.py", "scaled", cap=len(KINDS))
    assert len(capped) == len(KINDS) and {m.kind for m in capped} == {m.kind for m in every}
    assert [every.index(m) for m in capped] == sorted(every.index(m) for m in capped)


def graded(statuses, calls):
    return {"results": {"checks": [{"test": f"hidden/t.py::c{i}", "visibility": v, "status": s}
                                   for i, (s, v) in enumerate(statuses)]}, "calls": calls}


def test_classify():
    mutant = mutate(SOURCE, "m.py", "keep")[0]
    baseline = graded([("passed", "hidden")], [("k1", "a1"), ("k2", "a2")])
    assert mutants.classify(mutant, "graded", graded([("failed", "hidden"), ("passed", "visible")], []),
                            baseline).killers == [("hidden/t.py::c0", "hidden")]
    assert mutants.classify(mutant, "graded", graded([("passed", "hidden")], [("k2", "a2")]),
                            baseline).status == "equivalent"
    assert mutants.classify(mutant, "graded", graded([("passed", "hidden")], [("k1", "other")]),
                            baseline).status == "surviving"
    assert mutants.classify(mutant, "graded", graded([("passed", "hidden")], [("k1", None)]),
                            graded([], [("k1", None)])).status == "surviving"      # no digest: not comparable
    assert mutants.classify(mutant, "error", "the grader failed", baseline).status == "error"


@pytest.mark.slow
def test_the_example_lab_and_a_weak_copy(tmp_path, capsys):
    """Every mutant of the example's reference that its outputs can tell apart is killed; with the
    large-input check gone, shifting by +max instead of -max survives (exact in real numbers)."""
    lab = find_lab(EXAMPLE)
    outcomes, checks = mutants.run(lab, mutants.jobs_for(lab), workers=2)
    status = {(o.mutant.function, o.mutant.description): o.status for found in outcomes.values() for o in found}
    assert mutants.score(outcomes["softmax"]) == mutants.score(outcomes["causal_mask"]) == 1.0
    assert status["causal_mask", "torch.arange(seq_len, device=device) -> torch.arange(seq_len)"] == "equivalent"
    assert status["softmax", "return exp / exp.sum(dim=dim, keepdim=True) -> return x"] == "killed"
    assert status["softmax", "-1 -> 1"] == "killed"                 # the default dim, on a 3-D input
    assert "hidden/test_attention.py::test_softmax_large_inputs" in checks["softmax"]

    weak = tmp_path / "example"
    shutil.copytree(EXAMPLE, weak, ignore=shutil.ignore_patterns("__pycache__"))
    hidden = weak / "hidden" / "test_attention.py"
    hidden.write_text(hidden.read_text().replace("def test_softmax_large_inputs", "def _unused_large_inputs"))
    assert main(["mutants", str(weak), "--function", "softmax", "--max", "5", "--json", str(tmp_path / "m.json")]) == 0
    report = json.loads((tmp_path / "m.json").read_text())["files"]["attention.py"]
    survived = [s["mutation"] for s in report["survived"]]
    assert survived == ["x - x.amax(dim=dim, keepdim=True) -> x + x.amax(dim=dim, keepdim=True)"]
    assert report["score"] == report["killed"] / (report["killed"] + 1)
    assert "Surviving mutants" in capsys.readouterr().out


def test_narrowed_orders_keep_the_first_order_and_run():
    """The narrowed permutations are lists of tuples of the items, x's own order first."""
    source = "import itertools\n\n\ndef orders(n):\n    return list(itertools.permutations(range(n)))\n"
    made = {m.description.split("-> ")[1]: m.source for m in mutate(source, "m.py", "orders") if m.kind == "orders"}
    assert set(made) == {"the swaps of two of it", "the rotations of it", "one random order of it"}
    found = {}
    for name, text in made.items():
        exec(compile(text, "m.py", "exec"), found)
        made[name] = found["orders"](3)
    assert made["the swaps of two of it"] == [(0, 1, 2), (1, 0, 2), (2, 1, 0), (0, 1, 2), (0, 2, 1), (0, 1, 2)]
    assert made["the rotations of it"] == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    assert made["one random order of it"][0] == (0, 1, 2) and sorted(made["one random order of it"][1]) == [0, 1, 2]
