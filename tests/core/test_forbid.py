"""`forbid:` in lab.yaml: a forbidden name forbids what it stands for, under any name, and the judge
finds it in a submission's source however it is spelt (the child's trap: tests/judge/test_forbid_trap.py)."""
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from grader.author.check_lab import _left_open
from grader.base.errors import LabError
from grader.core import forbid, forbid_rules
from grader.core.forbid import Hit, scan, sentence
from grader.core.forbid_rules import WATCH, left_open
from grader.judge import meaning
from grader.readers.manifest import find_lab

EXAMPLE = Path(__file__).resolve().parents[1] / "labs" / "example"
FORBID = Path(__file__).resolve().parents[1] / "labs" / "forbid"       # softmax: [torch.softmax], attend: [sdpa]
SOFTMAX = ["torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax"]


def hits(body, imports="import torch\n", names=SOFTMAX):
    """The names scan finds in `softmax`, defined by `body` after `imports`."""
    found = scan(imports + body, {"softmax": names})
    return sorted({hit.name for hit in found.get("softmax", [])})


# -- the source: every spelling, every name of the same thing -------------------------------------
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
    ("import torch\n", "def softmax(x):\n    act = torch.softmax\n    return act(x, -1)\n", "torch.softmax"),
    ("import torch\n", "def softmax(x):\n    def inner(v):\n        return act(v, -1)\n    act = torch.softmax\n"
     "    return inner(x)\n", "torch.softmax"),
    ("from torch import softmax as s\n", "def softmax(x):\n    def inner(s=s):\n        return s(x, -1)\n"
     "    return inner()\n", "torch.softmax"),
    ("import torch\n", "def helper():\n    global ACT\n    ACT = torch.softmax\n\n\n"
     "def softmax(x):\n    return ACT(x, -1)\n", "torch.softmax"),
], ids=["alias", "from-import-as", "import-as", "local-alias", "getattr", "importlib", "__import__",
        "__import__-fromlist", "method", "getattr-method", "map", "module-alias", "helper", "class", "top-level",
        "hidden-def", "own-local", "enclosing-local", "default-argument", "global"])
def test_scan_finds_every_spelling(imports, body, name):
    assert hits(body, imports) == [name]


@pytest.mark.parametrize("imports, use, name", [
    ("import torch\n", "torch.special.softmax(x, -1)", "torch.special.softmax"),
    ("import torch\n", "torch.nn.functional.softmax(x, -1)", "torch.nn.functional.softmax"),
    ("from torch import nn\n", "nn.Softmax(-1)(x)", "torch.nn.Softmax"),
    ("import torch\n", "torch.nn.Softmax2d()(x)", "torch.nn.Softmax2d"),
    ("import torch\n", "torch._C._VariableFunctions.softmax(x, -1)", "torch._C._VariableFunctions.softmax"),
    ("import torch\n", "torch._C.TensorBase.softmax(x, -1)", "torch._C.TensorBase.softmax"),
    ("import torch\n", "torch._softmax(x, -1, False)", "torch._softmax"),
    ("import torch\n", "torch.ops.aten._softmax.default(x, -1, False)", "torch.ops.aten._softmax"),
    ("import torch\n", "torch.ops.aten.softmax.int(x, -1)", "torch.ops.aten.softmax"),
    ("import torch._ops\n", "torch._ops.ops.aten._softmax(x, -1, False)", "torch._ops.ops.aten._softmax"),
    ("import torch\n", "torch.nn.modules.activation.F.softmax(x, -1)", "torch.nn.modules.activation.F.softmax"),
    ("import torch\n", "x.softmax(-1)", "torch.Tensor.softmax"),
    ("import sys\n", "sys.modules['torch'].softmax(x, -1)", "torch.softmax"),
    ("import torch.nn.functional as F\n", "F.__dict__['softmax'](x, -1)", "torch.nn.functional.softmax"),
    ("import torch.nn.functional as F\n", "vars(F)['softmax'](x, -1)", "torch.nn.functional.softmax"),
    ("import torch\n", "torch._C.TensorBase.__dict__['softmax'](x, -1)", "torch._C.TensorBase.softmax"),
    ("import builtins\n", "builtins.__import__('torch').softmax(x, -1)", "torch.softmax"),
    ("import operator\n", "operator.methodcaller('softmax', -1)(x)", "torch.Tensor.softmax"),
    ("import torch\n", "torch.nn.functional.gumbel_softmax(x, tau=1)", "torch.nn.functional.gumbel_softmax"),
    ("import torch\n", "torch._safe_softmax(x, -1)", "torch._safe_softmax"),
    ("import torch._refs\n", "torch._refs.softmax(x, -1)", "torch._refs.softmax"),
], ids=lambda value: value if "(" in value else None)
def test_scan_finds_every_name_of_the_same_op(imports, use, name):
    """A rule of one name, torch.softmax, forbids every name that is the same object or the same ATen op."""
    found = scan(f"{imports}\n\ndef softmax(x):\n    return {use}\n", {"softmax": ["torch.softmax"]})
    assert [(h.name, h.rule) for h in found["softmax"]] == [(name, "torch.softmax")]


@pytest.mark.parametrize("imports, body", [
    ("import torch\n", "def softmax(x):\n    e = (x - x.amax(-1, keepdim=True)).exp()\n"
     "    return e / e.sum(-1, True)\n"),
    ("import torch\n", "class Layer:\n    def softmax(self, x):\n        return x.exp() / x.exp().sum()\n\n"
     "    def __call__(self, x):\n        return self.softmax(x)\n\n\ndef softmax(x):\n    return Layer()(x)\n"),
    ("import torch\nimport torch.nn.functional as F\n", "def softmax(x):\n    return F.relu(x)\n"),
    ("import torch\n", "def softmax(x, F=None):\n    return F(x) if F else x.exp()\n\n\n"
     "def F(x):\n    return torch.softmax(x, 0)\n"),
    ("import torch\n", "def softmax(x):\n    return getattr(torch, 'soft' + 'max')(x, -1)\n"),
    ("import torch\n", "def softmax(x):\n    return x.log_softmax(-1).exp() + torch.nn.LogSoftmax(-1)(x)\n"),
    ("import torch\n", "def softmax(x):\n    return torch.Tensor.__dict__ and x.exp() / torch.exp(x).sum()\n"),
    ("import torch\n", "def attend(q):\n    act = torch.softmax\n    return act(q, -1)\n\n\n"
     "def softmax(x):\n    act = x.exp()\n    return act / act.sum(-1, keepdim=True)\n"),
    ("from torch import softmax as s\n",
     "def softmax(x):\n    return torch.stack([s.exp() / s.exp().sum() for s in x])\n"),
    ("from torch import softmax as s\n", "def softmax(x):\n    out = []\n    for s in x:\n"
     "        out.append(s.exp() / s.exp().sum())\n    return out\n"),
    ("from torch import softmax as s\n", "def softmax(x):\n    def s(v):\n        return v.exp() / v.exp().sum()\n"
     "    return s(x)\n"),
    ("from torch import softmax as s\n", "def softmax(x):\n    return (lambda s: s.exp() / s.exp().sum())(x)\n"),
    ("import torch\n", "class Mine:\n    def __call__(self, x):\n        return x.exp() / x.exp().sum()\n\n\n"
     "class Net:\n    def __init__(self):\n        self.softmax = Mine()\n\n    def forward(self, x):\n"
     "        return self.softmax(x)\n\n\ndef softmax(x):\n    return Net().forward(x)\n"),
], ids=["by-hand", "own-method", "other-function", "shadowed", "built-at-run-time", "log-softmax", "neighbours",
        "another-function-s-local", "comprehension-variable", "loop-variable", "local-function", "lambda-parameter",
        "own-attribute"])
def test_scan_leaves_the_rest(imports, body):
    """Nothing forbidden is named: no hit (a name built at run time is the trap's to catch; log_softmax
    is another op, allowed by design)."""
    assert hits(body, imports) == []


def test_scan_charges_only_the_functions_that_forbid():
    source = "import torch\n\ndef softmax(x):\n    return x\n\ndef causal_mask(n):\n    return torch.softmax(n, 0)\n"
    assert scan(source, {"softmax": SOFTMAX}) == {}
    assert scan(source, {"causal_mask": SOFTMAX}) == {"causal_mask": [Hit("torch.softmax", 7, "torch.softmax")]}


def test_the_sentence_names_the_rule():
    expected, seen, hint = sentence("softmax", "norm.py", Hit("torch.special.softmax", 3, "torch.softmax"))
    assert seen == "norm.py line 3 uses torch.special.softmax, the same as torch.softmax"
    assert hint == "this lab asks you to write softmax yourself, without torch.softmax"


@pytest.mark.parametrize("use, name", [
    ("torch.utils._python_dispatch._disable_current_modes()", "torch.utils._python_dispatch._disable_current_modes"),
    ("torch._C._pop_torch_dispatch_stack(None)", "torch._C._pop_torch_dispatch_stack"),
    ("torch._C._ExcludeDispatchKeyGuard(x)", "torch._C._ExcludeDispatchKeyGuard"),
    ("off()", "torch._C._DisableTorchDispatch"),
    ("torch.DisableTorchFunction()", "torch.DisableTorchFunction"),
    ("torch.ops.aten.exp.default.redispatch(x)", ".redispatch"),
    ("torch.ops.aten.exp.default._op_dk(x)", "._op_dk"),
    ("sys._getframe(1)", "sys._getframe"),
    ("gc.get_referrers(x)", "gc.get_referrers"),
    ("x.__traceback__.tb_frame", ".tb_frame"),
    ("subprocess._fork_exec", "subprocess._fork_exec"),
    ("sys.modules['inspect'].getclosurevars(x)", "inspect.getclosurevars"),
    ("object.__subclasses__()", ".__subclasses__"),
], ids=lambda value: value if "(" not in value else None)
def test_what_would_undo_the_watch_is_refused_wherever_a_function_has_rules(use, name):
    """torch's mode stacks and dispatch-key guards (under any name: torch.DisableTorchFunction is
    torch._C's), an op's calls below Python, programs started unseen, and what leads to the trap's
    own objects; not in a function without rules."""
    source = ("import gc\nimport subprocess\nimport sys\n\nimport torch\nfrom torch._C import _DisableTorchDispatch as "
              f"off\n\n\ndef softmax(x):\n    return {use}\n\n\ndef mask(x):\n    return {use}\n")
    assert {f: [(h.name, h.rule) for h in found] for f, found in scan(source, {"softmax": SOFTMAX}).items()} == \
        {"softmax": [(name, WATCH)]}
    expected, seen, hint = sentence("softmax", "norm.py", scan(source, {"softmax": SOFTMAX})["softmax"][0])
    assert seen == f"norm.py line 10 uses {name}"
    assert hint == (f"this lab watches torch's dispatcher for the calls softmax may not make, and {name} would "
                    "switch that watch off or reach into it: write softmax without it")


def test_a_name_stands_for_its_ops():
    """torch.softmax is aten::softmax, which comes down to aten::_softmax, and aten::_safe_softmax's
    decomposition calls it: all are watched; a name of several ops is watched where it is called too."""
    softmax = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax"})
    assert meaning.ops_of(torch.softmax) == (softmax, False)
    assert meaning.ops_of(torch.tril) == (frozenset({"aten::tril", "aten::tril_"}), False)
    assert meaning.ops_of(torch.nn.functional.scaled_dot_product_attention)[1] is True


def test_a_name_stands_for_its_aliases_and_decompositions():
    """A Python function is the ATen op of its name that it runs, and that op's decompositions named
    for it: F.layer_norm is aten::layer_norm and aten::native_layer_norm, F.rms_norm aten::rms_norm
    and aten::_fused_rms_norm; their other names are refused in the source."""
    layer_norm, rms_norm = "torch.nn.functional.layer_norm", "torch.nn.functional.rms_norm"
    assert meaning.ops_of(torch.nn.functional.layer_norm, layer_norm) == (
        frozenset({"aten::layer_norm", "aten::native_layer_norm"}), False)
    assert meaning.ops_of(torch.nn.functional.rms_norm, rms_norm)[0] == {"aten::rms_norm", "aten::_fused_rms_norm"}
    norms = {"layer_norm": [layer_norm], "rms_norm": [rms_norm]}
    source = ("import torch\n\n\ndef layer_norm(x):\n    return torch.native_layer_norm(x, [4], None, None, 1e-5)[0]\n"
              "\n\ndef rms_norm(x):\n    return torch.rms_norm(x, [4])\n")
    assert {f: [(h.name, h.rule) for h in hits] for f, hits in scan(source, norms).items()} == {
        "layer_norm": [("torch.native_layer_norm", layer_norm)], "rms_norm": [("torch.rms_norm", rms_norm)]}
    for name in ("torch.nn.LayerNorm", "torch.layer_norm", "torch.ops.aten.native_layer_norm"):
        assert forbid_rules.rules((layer_norm,)).match(name) == (name, layer_norm)
    for name in ("torch.nn.RMSNorm", "torch._fused_rms_norm"):
        assert forbid_rules.rules((rms_norm,)).match(name) == (name, rms_norm)


def test_check_lab_says_what_stays_open():
    said = {left.rule: left for left in left_open(["torch.softmax", "torch.no_such_thing"])}
    assert "torch.softmax is refused as the ATen ops aten::_safe_softmax, aten::_softmax, aten::softmax" in \
        said["torch.softmax"].said
    assert "torch._masked_softmax" in said["torch.softmax"].open             # computes it, from an op of its own
    assert "torch.log_softmax" in said["torch.softmax"].other                # a probe shows other ops
    assert "torch.special.softmax" not in said["torch.softmax"].open + said["torch.softmax"].other
    assert not [name for name in said["torch.softmax"].open if "backward" in name]
    assert "torch.no_such_thing is nothing in this torch" in said["torch.no_such_thing"].said
    assert said["torch.no_such_thing"].open == ("torch.no_such_thing",)
    said = left_open(["numpy.exp"])                 # the trap watches torch's dispatcher only
    assert said[0].said == ("forbid: numpy.exp is not torch's: it is refused in the source alone, under the names "
                            "the file gives it, never at run time, where the child watches torch's dispatcher only")


def test_check_lab_names_given_code_that_uses_it():
    _, notes = _left_open(find_lab(FORBID))
    assert "the given given.py line 6 uses torch.nn.functional.softmax, which lab.yaml forbids: learners may " \
           "reach it through the given module" in notes


# -- the manifest ------------------------------------------------------------------------------------
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


def test_given_code_is_trusted_where_its_own_source_makes_the_call():
    """The child trusts a given module's code with a forbidden call only in the top-level names whose
    own code makes it, for that rule alone (grader/judge/trap.py), never in one that calls what it
    is handed."""
    given = (b"import torch\nimport torch.nn.functional as F\n\n\ndef apply(function, x):\n    return function(x)\n\n\n"
             b"def normalise(x):\n    return _inner(x)\n\n\ndef _inner(x):\n    return F.softmax(x, -1)\n\n\n"
             b"class Head(torch.nn.Module):\n    def forward(self, x):\n        return x.softmax(-1)\n")
    files = {"given.py": given, "norm.py": b"import torch\n\n\ndef softmax(x):\n    return torch.softmax(x, -1)\n",
             "data.txt": b"torch.softmax", "broken.py": b"def (:\n"}
    softmax = ["torch.softmax"]
    rules = {"softmax": softmax, "attend": ["torch.nn.functional.scaled_dot_product_attention"]}
    assert forbid.trusted(rules, files, ["norm.py"]) == \
        {"given.py": {"Head": softmax, "_inner": softmax, "normalise": softmax}}
    assert forbid.trusted({}, files, ["norm.py"]) == {}
    at_import = b"import torch\n\nONE = torch.softmax(torch.zeros(2), 0)\n\n\ndef apply(f, x):\n    return f(x)\n"
    assert forbid.trusted({"softmax": softmax}, {"given.py": at_import}, []) == \
        {"given.py": {"<module>": softmax, "ONE": softmax}}
