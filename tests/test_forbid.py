"""`forbid:` in lab.yaml: the judge finds forbidden calls in a submission's source, however they are
spelt, and the child traps those built at run time; a hit costs that function's points."""
import shutil
from pathlib import Path

import pytest
import yaml

from grader.errors import LabError
from grader.forbid import Hit, scan
from grader.labs import find_lab
from grader.runner import grade

EXAMPLE = Path(__file__).resolve().parent / "labs" / "example"
SOFTMAX = ["torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax"]
CAUSAL_MASK = '''

def causal_mask(seq_len, device="cpu"):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
'''


def hits(body, imports="import torch\n"):
    """The names scan finds in `softmax`, defined by `body` after `imports`."""
    found = scan(imports + body, {"softmax": SOFTMAX})
    return sorted({hit.name for hit in found.get("softmax", [])})


@pytest.mark.parametrize("imports, body, name", [
    ("import torch.nn.functional as F\n", "def softmax(x):\n    return F.softmax(x, -1)\n",
     "torch.nn.functional.softmax"),
    ("from torch.nn import functional as fn\n", "def softmax(x):\n    return fn.softmax(x, -1)\n",
     "torch.nn.functional.softmax"),
    ("from torch import softmax as normalise\n", "def softmax(x):\n    return normalise(x, -1)\n", "torch.softmax"),
    ("import torch as t\n", "def softmax(x):\n    f = t.nn.functional\n    return f.softmax(x, -1)\n",
     "torch.nn.functional.softmax"),
    ("import torch\n", "def softmax(x):\n    return getattr(torch, 'softmax')(x, -1)\n", "torch.softmax"),
    ("import importlib\n", "def softmax(x):\n    m = importlib.import_module('torch.nn.functional')\n"
     "    return m.softmax(x, -1)\n", "torch.nn.functional.softmax"),
    ("", "def softmax(x):\n    return __import__('torch').softmax(x, -1)\n", "torch.softmax"),
    ("", "def softmax(x):\n    return __import__('torch.nn.functional', fromlist=['x']).softmax(x, -1)\n",
     "torch.nn.functional.softmax"),
    ("import torch\n", "def softmax(x):\n    return x.softmax(-1)\n", "torch.Tensor.softmax"),
    ("import torch\n", "def softmax(x):\n    return getattr(x, 'softmax')(-1)\n", "torch.Tensor.softmax"),
    ("import torch\n", "def softmax(x):\n    return torch.stack(list(map(torch.softmax, x, [-1] * len(x))))\n",
     "torch.softmax"),
    ("import torch\nNORMALISE = torch.softmax\n", "def softmax(x):\n    return NORMALISE(x, -1)\n", "torch.softmax"),
    ("import torch\n", "def softmax(x):\n    return _helper(x)\n\n\ndef _helper(x):\n    return torch.softmax(x, -1)\n",
     "torch.softmax"),
    ("import torch\n", "class Norm:\n    def __call__(self, x):\n        return torch.softmax(x, -1)\n\n\n"
     "def softmax(x):\n    return Norm()(x)\n", "torch.softmax"),
    ("import torch\n", "torch.softmax(torch.zeros(2), 0)\n\n\ndef softmax(x):\n    return x\n", "torch.softmax"),
    ("import torch\n", "if True:\n    def softmax(x):\n        return torch.softmax(x, -1)\n", "torch.softmax"),
], ids=["alias", "from-import-as", "import-as", "local-alias", "getattr", "importlib", "__import__",
        "__import__-fromlist", "method", "getattr-method", "map", "module-alias", "helper", "class", "top-level",
        "hidden-def"])
def test_scan_finds_every_spelling(imports, body, name):
    assert hits(body, imports) == [name]


@pytest.mark.parametrize("imports, body", [
    ("import torch\n", "def softmax(x):\n    e = (x - x.amax(-1, keepdim=True)).exp()\n"
     "    return e / e.sum(-1, True)\n"),
    ("import torch\n", "class Layer:\n    def softmax(self, x):\n        return x.exp() / x.exp().sum()\n\n"
     "    def __call__(self, x):\n        return self.softmax(x)\n\n\ndef softmax(x):\n    return Layer()(x)\n"),
    ("import torch\nimport torch.nn.functional as F\n", "def softmax(x):\n    return F.relu(x)\n"),
    ("import torch\n", "def softmax(x, F=None):\n    return F(x) if F else x.exp()\n\n\n"
     "def F(x):\n    return torch.softmax(x, 0)\n"),
    ("import torch\n", "def softmax(x):\n    return getattr(torch, 'soft' + 'max')(x, -1)\n"),
], ids=["by-hand", "own-method", "other-function", "shadowed", "built-at-run-time"])
def test_scan_leaves_the_rest(imports, body):
    """Nothing forbidden is named: no hit (a name built at run time is the trap's to catch)."""
    assert hits(body, imports) == []


def test_scan_charges_only_the_functions_that_forbid():
    source = "import torch\n\ndef softmax(x):\n    return x\n\ndef causal_mask(n):\n    return torch.softmax(n, 0)\n"
    assert scan(source, {"softmax": SOFTMAX}) == {}
    assert scan(source, {"causal_mask": SOFTMAX}) == {"causal_mask": [Hit("torch.softmax", 7)]}


def lab_copy(tmp_path, forbid=None, given=None):
    """A copy of the example lab, with another `forbid:` and a given module in its handout."""
    folder = tmp_path / "example"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = yaml.safe_load((folder / "lab.yaml").read_text())
    if forbid is not None:
        manifest["forbid"] = forbid
    (folder / "lab.yaml").write_text(yaml.safe_dump(manifest))
    if given:
        (folder / "handout" / "given.py").write_text(given)
    return find_lab(folder)


@pytest.mark.parametrize("forbid, problem", [
    ({"softmaxx": ["torch.softmax"]}, "forbid names softmaxx, not a student function"),
    (["torch.softmax()"], "'torch.softmax()' is not a dotted name"),
])
def test_manifest_refuses(tmp_path, forbid, problem):
    with pytest.raises(LabError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        lab_copy(tmp_path, forbid=forbid)


def test_a_list_forbids_for_every_function(tmp_path):
    assert lab_copy(tmp_path, forbid=["torch.tril"]).forbidden == {"softmax": ["torch.tril"],
                                                                   "causal_mask": ["torch.tril"]}


def graded(lab, zygote, tmp_path, softmax):
    folder = tmp_path / "submission"
    folder.mkdir(exist_ok=True)
    (folder / "attention.py").write_text("import importlib\n\nimport torch\n\n\n" + softmax + CAUSAL_MASK)
    zygote.reset()
    results = grade(lab, submission=folder, device="cpu", zygote=zygote)
    return {f: [c for c in results.checks if c.tags[0] == f] for f in lab.functions}


def test_a_forbidden_call_in_the_source_costs_the_function(zygote, tmp_path):
    checks = graded(find_lab(EXAMPLE), zygote, tmp_path,
                    "def softmax(x, dim=-1):\n    return torch.nn.functional.softmax(x, dim)\n")
    assert {c.status for c in checks["softmax"]} == {"failed"}
    assert "saw attention.py line 7 uses torch.nn.functional.softmax" in checks["softmax"][0].message
    assert "this lab asks you to write softmax yourself" in checks["softmax"][0].message
    assert {c.status for c in checks["causal_mask"]} == {"passed"}


@pytest.mark.parametrize("softmax, name", [
    ("def softmax(x, dim=-1):\n    try:\n        return getattr(torch, 'soft' + 'max')(x, dim)\n"
     "    except Exception:\n        e = (x - x.amax(dim, True)).exp()\n        return e / e.sum(dim, True)\n",
     "torch.softmax"),
    ("def softmax(x, dim=-1):\n    module = importlib.import_module('torch.nn.' + 'functional')\n"
     "    return getattr(module, 'soft' + 'max')(x, dim)\n",
     "torch.nn.functional.softmax"),
    ("def softmax(x, dim=-1):\n    return getattr(x, ''.join(['soft', 'max']))(dim)\n", "torch.Tensor.softmax"),
], ids=["getattr-swallowed", "importlib", "method"])
def test_a_forbidden_call_built_at_run_time_is_trapped(zygote, tmp_path, softmax, name):
    checks = graded(find_lab(EXAMPLE), zygote, tmp_path, softmax)
    assert {c.status for c in checks["softmax"]} == {"failed"}
    assert f"this lab asks you to write softmax yourself: it called {name}" in checks["softmax"][0].message
    assert {c.status for c in checks["causal_mask"]} == {"passed"}


def test_given_code_and_torch_itself_may_call_it(zygote, tmp_path):
    """The trap spares calls made by the handout's given modules and inside torch (F.softmax calls
    Tensor.softmax), and functions the rule does not name."""
    lab = lab_copy(tmp_path, forbid={"softmax": ["torch.Tensor.softmax"], "causal_mask": ["torch.softmax"]},
                   given="import torch\n\n\ndef normalise(x, dim):\n    return x.softmax(dim)\n")
    checks = graded(lab, zygote, tmp_path, "import given\n\n\ndef softmax(x, dim=-1):\n"
                    "    return given.normalise(x, dim) if x.dim() > 2 else torch.nn.functional.softmax(x, dim)\n")
    assert all(c.status == "passed" for found in checks.values() for c in found)
