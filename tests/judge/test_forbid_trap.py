"""`forbid:` in lab.yaml, in the child: the trap watches torch's dispatcher for what a forbidden name
stands for, whatever name the code reached it by at run time, and trusts callers by their code,
not their file name. Each evasion grades a tiny lab (tests/labs/forbid: one call per function)
and costs the function's points with the lab's sentence."""
import sys
from pathlib import Path

import pytest
import torch

from grader.core.request import Device, Request
from grader.core.runner import grade
from grader.judge import trap
from grader.readers.manifest import find_lab

EXAMPLE = Path(__file__).resolve().parents[1] / "labs" / "example"
FORBID = Path(__file__).resolve().parents[1] / "labs" / "forbid"       # softmax: [torch.softmax], attend: [sdpa]
NORMS = Path(__file__).resolve().parents[1] / "labs" / "forbid_norms"      # F.layer_norm, F.rms_norm
MODEL = Path(__file__).resolve().parents[1] / "labs" / "forbid_model"      # softmax, called in a model too
CAUSAL_MASK = '''

def causal_mask(seq_len, device="cpu"):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
'''
BY_HAND = "    e = (x - x.amax(-1, keepdim=True)).exp()\n    return e / e.sum(-1, keepdim=True)\n"
ATTEND = "\n\ndef attend(q, k, v):\n    return torch.softmax(q @ k.T / q.shape[-1] ** 0.5, -1) @ v\n"


# -- the trap, in this process: who may call --------------------------------------------------------
@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    """A Trap for softmax: [torch.softmax] made here (its threads' watch is not installed), with a
    given module that uses torch's F.softmax; call(body) runs a softmax whose body is `body`."""
    folder = tmp_path_factory.mktemp("trap")
    (folder / "given_here.py").write_text("import torch\n\n\ndef normalise(x):\n"
                                          "    return torch.nn.functional.softmax(x, -1)\n")
    made = trap.build({"softmax": ["torch.softmax"]}, folder, ["norm.py"])
    sys.path.insert(0, str(folder))
    try:
        import given_here
    finally:
        sys.path.remove(str(folder))

    def call(body):
        space = {"torch": torch, "given": given_here, "folder": folder}
        exec(f"def softmax(x):\n{body}", space)
        return made.call("softmax", space["softmax"], (torch.tensor([[0.0, 1.0]]),), {})
    return call


@pytest.mark.parametrize("body", [
    "    return eval(compile('torch.softmax(x, -1)', torch.__file__, 'eval'))\n",
    "    return eval(compile('torch.softmax(x, -1)', torch.nn.functional.__file__, 'eval'), vars(torch.nn.functional),"
    " {'x': x})\n",
    "    return eval(compile('torch.softmax(x, -1)', given.__file__, 'eval'), vars(given), {'x': x})\n",
    "    space = dict(vars(given))\n    exec(compile('def normalise(x):\\n    return torch.softmax(x, -1)\\n',"
    " given.__file__, 'exec'), space)\n    return space['normalise'](x)\n",
], ids=["torch-file", "torch-file-and-module", "given-file-and-module", "given-function"])
def test_a_file_name_proves_nothing(in_process, body):
    """Code compiled under torch's or a given module's file name is still the learner's."""
    with pytest.raises(trap.ForbiddenCall, match="torch.softmax"):
        in_process(body)


def test_given_code_and_torch_for_it_may_call_it(in_process):
    """A given module may use it, through torch's own Python code (F.softmax) too."""
    want = torch.softmax(torch.tensor([[0.0, 1.0]]), -1)
    assert in_process("    return given.normalise(x)\n").tolist() == want.tolist()


def test_torch_s_record_shows_an_op_run_with_the_watch_off(in_process):
    """Both modes switched off around the op and on again: the modes saw nothing, torch's record of
    ops did, and the call ends refused."""
    with pytest.raises(trap.ForbiddenCall, match=r"torch.softmax \(as aten::_softmax\), with the judge's watch "
                                                 "switched off"):
        in_process(GUARDS + f"        y = {SOFTMAX}\n    return y\n")


def test_a_long_call_s_record_is_read_as_it_goes(in_process, monkeypatch):
    """Read every DRAIN ops the modes see, so that it stays small: an op run with the watch off
    before many others is still found (here in the first of several readings, or across two), and
    an honest long call passes."""
    monkeypatch.setattr(trap.Record, "DRAIN", 50)
    for before in (0, 49):
        body = (f"    for _ in range({before}):\n        x = x + 0\n" + GUARDS
                + f"        y = {SOFTMAX}\n    for _ in range(300):\n        y = y + 0\n    return y\n")
        with pytest.raises(trap.ForbiddenCall, match="switched off"):
            in_process(body)
    want = torch.softmax(torch.tensor([[0.0, 1.0]]), -1)
    assert torch.allclose(in_process("    for _ in range(300):\n        x = x + 0\n" + BY_HAND), want)
    assert in_process("    for _ in range(300):\n        x = given.normalise(x)\n    return x\n").shape == (1, 2)


def test_given_code_is_trusted_only_for_the_forbidden_calls_its_own_source_makes(tmp_path):
    """A given function that calls what it is handed (a training loop's model, a callback) ran the
    forbidden builtin a learner handed it as if the handout had called it; a given function whose
    own source names the forbidden call (`trusted`, found by the judge's scan) still may."""
    (tmp_path / "given_apply.py").write_text("import torch\n\n\ndef apply(function, x):\n    return function(x, -1)\n"
                                             "\n\ndef normalise(x):\n    return torch.softmax(x, -1)\n")
    made = trap.build({"softmax": ["torch.softmax"]}, tmp_path, ["norm.py"],
                      {"given_apply.py": {"normalise": ["torch.softmax"]}})
    sys.path.insert(0, str(tmp_path))
    try:
        import given_apply
    finally:
        sys.path.remove(str(tmp_path))
    x = torch.tensor([[0.0, 1.0]])
    with pytest.raises(trap.ForbiddenCall, match="torch.softmax"):
        made.call("softmax", lambda x: given_apply.apply(getattr(torch, "soft" + "max"), x), (x,), {})
    assert made.call("softmax", given_apply.normalise, (x,), {}).tolist() == torch.softmax(x, -1).tolist()


def test_torch_reimplementations_are_the_same_ops(in_process):
    """torch._refs.softmax runs other ops, in torch's Python code: its code on the stack is the rule's
    (here, not graded: it imports sympy first, seconds in a fresh child)."""
    with pytest.raises(trap.ForbiddenCall, match="torch.softmax"):
        in_process("    return getattr(torch._refs, 'soft' + 'max')(x, -1)\n")


def test_torch_is_left_as_it_was(in_process):
    """Nothing is wrapped, so nothing hands an original back: torch's objects are its own."""
    assert torch.softmax is torch._C._VariableFunctions.softmax and torch.Tensor.softmax is torch._C.TensorBase.softmax
    assert not hasattr(torch.softmax, "__wrapped__") and not hasattr(torch.nn.functional.softmax, "__wrapped__")
    with pytest.raises(trap.ForbiddenCall):
        in_process("    import inspect\n    return inspect.unwrap(getattr(torch, 'soft' + 'max'))(x, -1)\n")


# -- graded: each evasion costs the function's points, with the lab's sentence ------------------------
def graded(lab, zygote, tmp_path, softmax, attend=ATTEND, file="norm.py"):
    folder = tmp_path / "submission"
    folder.mkdir(exist_ok=True)
    given = "import given\n" if file == "norm.py" else ""         # the forbid lab's given module
    (folder / file).write_text("import builtins\nimport importlib\nimport operator\nimport sys\n\nimport torch\n"
                               f"{given}\n\n{softmax}{attend}")
    zygote.reset()
    results = grade(Request(lab, folder, Device.CPU), zygote)
    return {f: [c for c in results.checks if c.tags[0] == f] for f in lab.functions}


@pytest.mark.parametrize("use, name", [
    ("torch.special.softmax(x, -1)", "torch.special.softmax"),
    ("torch.nn.Softmax(-1)(x)", "torch.nn.Softmax"),
    ("torch._C._VariableFunctions.softmax(x, -1)", "torch._C._VariableFunctions.softmax"),
    ("torch._C.TensorBase.softmax(x, -1)", "torch._C.TensorBase.softmax"),
    ("torch._softmax(x, -1, False)", "torch._softmax"),
    ("torch.ops.aten._softmax(x, -1, False)", "torch.ops.aten._softmax"),
    ("torch.ops.aten.softmax.int(x, -1)", "torch.ops.aten.softmax"),
    ("x.softmax(-1)", "torch.Tensor.softmax"),
    ("sys.modules['torch'].softmax(x, -1)", "torch.softmax"),
    ("torch.nn.functional.__dict__['softmax'](x, -1)", "torch.nn.functional.softmax"),
    ("torch._C.TensorBase.__dict__['softmax'](x, -1)", "torch._C.TensorBase.softmax"),
    ("builtins.__import__('torch').softmax(x, -1)", "torch.softmax"),
    ("operator.methodcaller('softmax', -1)(x)", "torch.Tensor.softmax"),
], ids=lambda value: value if "(" not in value else None)
def test_another_name_in_the_source_costs_the_function(zygote, tmp_path, use, name):
    checks = graded(find_lab(FORBID), zygote, tmp_path, f"def softmax(x):\n    return {use}\n")
    assert [c.status for c in checks["softmax"]] == ["failed"]
    same = "" if name == "torch.softmax" else ", the same as torch.softmax"
    assert f"saw norm.py line 11 uses {name}{same}" in checks["softmax"][0].message
    assert "this lab asks you to write softmax yourself, without torch.softmax" in checks["softmax"][0].message
    assert [c.status for c in checks["attend"]] == ["passed"]


@pytest.mark.parametrize("body", [
    "    return getattr(torch, 'soft' + 'max')(x, -1)\n",
    "    return getattr(importlib.import_module('torch.' + 'special'), 'soft' + 'max')(x, -1)\n",
    "    return operator.methodcaller('soft' + 'max', -1)(x)\n",
    "    return getattr(x, 'soft' + 'max')(-1)\n",
    "    return vars(torch._C.TensorBase)['soft' + 'max'](x, -1)\n",
    "    return getattr(torch.nn.functional.__dict__, 'get')('soft' + 'max')(x, -1)\n",
    "    return getattr(sys.modules['to' + 'rch'], '_soft' + 'max')(x, -1, False)\n",
    "    return getattr(getattr(builtins, '__imp' + 'ort__')('torch').ops.aten, 'soft' + 'max').int(x, -1)\n",
    "    return getattr(getattr(torch, '_o' + 'ps').ops.aten, '_soft' + 'max').default(x, -1, False)\n",
    "    return getattr(torch.nn, 'Soft' + 'max')(-1)(x)\n",
    "    return getattr(torch.distributions, 'Categ' + 'orical')(logits=x).probs\n",
    "    return getattr(torch.nn.functional, 'soft' + 'min')(-x, -1)\n",
    "    return getattr(torch, '_safe_soft' + 'max')(x, -1)\n",
    "    ones = torch.ones(*x.shape[:-1], 1, 1)\n    eye = torch.eye(x.shape[-1]).expand(*x.shape[:-1], -1, -1)\n"
    "    attend = getattr(torch.nn.functional, 'scaled_dot_product_' + 'attention')\n"
    "    return attend(ones, x[..., :, None], eye, scale=1.0)[..., 0, :]\n",
    "    try:\n        return getattr(torch, 'soft' + 'max')(x, -1)\n    except BaseException:\n"
    + BY_HAND.replace("    ", "        "),
    "    return eval(compile('torch.softmax(x, -1)', torch.__file__, 'eval'))\n",
    "    from concurrent.futures import ThreadPoolExecutor\n\n    with ThreadPoolExecutor(1) as pool:\n"
    "        return pool.submit(getattr(torch, 'soft' + 'max'), x, -1).result()\n",
], ids=["getattr", "importlib", "methodcaller", "bound-method", "Tensor.__dict__", "functional.__dict__",
        "sys.modules", "builtins.__import__", "torch._ops", "nn-module", "torch-python-code", "softmin",
        "safe-softmax", "attention-of-one-query", "swallowed", "torch-file-name", "thread"])
def test_another_name_built_at_run_time_is_trapped(zygote, tmp_path, body):
    checks = graded(find_lab(FORBID), zygote, tmp_path, "def softmax(x):\n" + body)
    assert [c.status for c in checks["softmax"]] == ["failed"]
    assert "this lab asks you to write softmax yourself: it called torch.softmax" in checks["softmax"][0].message
    assert [c.status for c in checks["attend"]] == ["passed"]


def test_a_forbidden_call_handed_to_given_code_is_the_learner_s(zygote, tmp_path):
    """given.apply(f, x) calls f: handed torch.softmax (by a name built at run time), the call is
    the learner's; given.normalise, whose own code uses it, may."""
    body = "    return given.apply(getattr(torch, 'soft' + 'max'), x)\n"
    checks = graded(find_lab(FORBID), zygote, tmp_path, "def softmax(x):\n" + body)
    assert [c.status for c in checks["softmax"]] == ["failed"]
    assert "it called torch.softmax" in checks["softmax"][0].message
    checks = graded(find_lab(FORBID), zygote, tmp_path, "def softmax(x):\n    return given.normalise(x)\n")
    assert [c.status for c in checks["softmax"]] == ["passed"]


def test_given_code_trusted_with_one_rule_is_not_trusted_with_another(zygote, tmp_path):
    """given.normalise may use softmax; its module's torch swapped for one whose softmax is
    scaled_dot_product_attention (a builtin: no frame of the learner's), it ran attend's forbidden
    call as if the handout had made it."""
    attend = ("\n\ndef attend(q, k, v):\n    import functools\n    import types\n\n"
              "    sdpa = getattr(torch.nn.functional, 'scaled_dot_product_' + 'attention')\n"
              "    call = functools.partial(sdpa, q[None], k[None], v[None])\n"
              "    space = types.SimpleNamespace\n"
              "    fake = space(nn=space(functional=space(softmax=call)))\n"
              "    saved, given.torch = given.torch, fake\n    try:\n"
              "        return given.normalise(torch.zeros(q.shape[0], k.shape[0]))[0]\n"
              "    finally:\n        given.torch = saved\n")
    checks = graded(find_lab(FORBID), zygote, tmp_path, "def softmax(x):\n" + BY_HAND, attend)
    assert [c.status for c in checks["attend"]] == ["failed"]
    assert "it called torch.nn.functional.scaled_dot_product_attention" in checks["attend"][0].message


def test_a_model_call_of_the_function_is_watched_as_the_function(zygote, tmp_path):
    """The lab's model calling the learner's softmax (model_calls) ran it unwatched: torch.softmax
    by a name built at run time earned the check."""
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "norm.py").write_text("import torch\n\n\ndef softmax(x):\n    return " + SOFTMAX + "\n")
    zygote.reset()
    checks = grade(Request(find_lab(MODEL), folder, Device.CPU), zygote).checks
    assert [c.status for c in checks] == ["failed"]
    assert "this lab asks you to write softmax yourself: it called torch.softmax" in checks[0].message
    (folder / "norm.py").write_text("import torch\n\n\ndef softmax(x):\n" + BY_HAND)
    zygote.reset()
    assert [c.status for c in grade(Request(find_lab(MODEL), folder, Device.CPU), zygote).checks] == ["passed"]


SOFTMAX = "getattr(torch, 'soft' + 'max')(x, -1)"        # names built at run time: past the source scan
C = "getattr(torch._C, "
UNDONE = "it called something that undid the judge's watch for forbidden calls"
FRAME = "getattr(getattr(sys, '_get' + 'frame')(1), 'f_lo' + 'cals')['self']"
GUARDS = (f"    with {C}'DisableTorch' + 'Function')(), {C}'_ExcludeDispatch' + 'KeyGuard')(\n"
          "            torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):\n")
CPU = "torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)"
OP = "getattr(torch.ops.aten, '_soft' + 'max').default"
FORK_EXEC = ("    read, write = importlib.import_module('os').pipe()\n"
             "    fork_exec = getattr(importlib.import_module('subp' + 'rocess'), '_fork' + '_exec')\n"
             "    fork_exec([b'/bin/true'], [b'/bin/true'], True, (), None, None, *[-1] * 6, read, write,\n"
             "              True, False, -1, None, None, None, -1, None, False)\n")


@pytest.mark.parametrize("body, said", [
    (f"    trap = {FRAME}\n    name, trap.current = trap.current, None\n"
     f"    y = {SOFTMAX}\n    trap.current = name\n    return y\n", "it called torch.softmax"),
    (f"    {FRAME}.watches.clear()\n" + BY_HAND, UNDONE),
    ("    from torch.utils import _python_dispatch as d\n\n"
     f"    with getattr(d, '_disable_current_' + 'modes')():\n        return {SOFTMAX}\n", UNDONE),
    (f"    mode = {C}'_pop_torch_' + 'dispatch_stack')(None)\n    try:\n        return {SOFTMAX}\n"
     f"    finally:\n        {C}'_push_on_torch_' + 'dispatch_stack')(mode)\n", UNDONE),
    (f"    with {C}'_ExcludeDispatch' + 'KeyGuard')(torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):\n"
     f"        return {SOFTMAX}\n", UNDONE),
    (f"    with {C}'_DisableTorch' + 'Dispatch')():\n        return {SOFTMAX}\n", UNDONE),
    (f"    kind = type({C}'_get_dispatch_' + 'stack_at')(0))\n    handler = kind.__torch_dispatch__\n"
     "    kind.__torch_dispatch__ = lambda self, func, types, args=(), kwargs=None: func(*args, **(kwargs or {}))\n"
     f"    try:\n        return {SOFTMAX}\n    finally:\n        kind.__torch_dispatch__ = handler\n", UNDONE),
    ("    import subprocess\n\n    subprocess.run([sys.executable, '-c', 'import torch'])\n" + BY_HAND,
     "it called subprocess.Popen, whose work the judge cannot watch"),
    (FORK_EXEC + BY_HAND,
     "it called _posixsubprocess.fork_exec, whose work the judge cannot watch"),
    ("    del sys.modules['_posix' + 'subprocess']\n    importlib.import_module('_posix' + 'subprocess')\n" + BY_HAND,
     "it called _posixsubprocess, whose work the judge cannot watch"),
    ("    import ctypes\n\n    ctypes.CDLL(None).getpid()\n" + BY_HAND, "it called ctypes.dlopen, whose work"),
    ("    os = importlib.import_module('os')\n    read, write = os.pipe()\n    if os.fork() == 0:\n"
     + GUARDS.replace("\n    ", "\n        ").replace("    with", "        with", 1)
     + f"            os.write(write, repr({SOFTMAX}.tolist()).encode())\n        os._exit(0)\n"
     "    return torch.tensor(eval(os.read(read, 1000)))\n", "it called os.fork, whose work the judge cannot watch"),
], ids=["trap-state-restored", "trap-watches", "modes-disabled", "mode-popped", "key-excluded", "dispatch-disabled",
        "handler-replaced", "program", "fork-exec", "posixsubprocess-again", "library", "fork"])
def test_undoing_the_watch_or_leaving_it_costs_the_function(zygote, tmp_path, body, said):
    """What switches off the watch of torch's dispatcher is seen by the function mode beside it or
    when the call ends, even once put back; the trap's state, cleared for a while, watches the call
    still; a program or library, which the trap could not follow, is refused."""
    checks = graded(find_lab(FORBID), zygote, tmp_path, "def softmax(x):\n" + body)
    assert [c.status for c in checks["softmax"]] == ["failed"]
    assert said in checks["softmax"][0].message


@pytest.mark.parametrize("body", [
    GUARDS + f"        y = {SOFTMAX}\n    return y\n",
    f"    with {C}'DisableTorch' + 'Function')(), {C}'_DisableTorch' + 'Dispatch')():\n"
    f"        y = {SOFTMAX}\n    return y\n",
    f"    return getattr({OP}, 'redis' + 'patch')({CPU}, x, -1, False)\n",
    f"    return getattr({OP}, '_op' + '_dk')(torch._C.DispatchKey.CPU, x, -1, False)\n",
    f"    kernel = {C}'_dispatch_get_computed_kernel_for_' + 'dispatch_key')(\n"
    "        'aten::_softmax', torch._C.DispatchKey.CPU)\n"
    f"    return getattr(kernel, 'call' + '_boxed')({CPU}, x, -1, False)\n",
    "    on = getattr(torch._C._autograd, '_enable_record' + '_function')\n    on(False)\n"
    "    try:\n" + GUARDS.replace("\n    ", "\n        ").replace("    with", "        with", 1)
    + f"            y = {SOFTMAX}\n    finally:\n        on(True)\n    return y\n",
    "    def off():\n" + GUARDS.replace("\n    ", "\n        ").replace("    with", "        with", 1)
    + f"            return {SOFTMAX}\n\n    from concurrent.futures import ThreadPoolExecutor\n\n"
    "    with ThreadPoolExecutor(1) as pool:\n        return pool.submit(off).result()\n",
], ids=["guards-entered-and-left", "dispatch-disabled-too", "redispatch", "op-dk", "kernel", "record-function-off",
        "in-a-thread"])
def test_a_forbidden_op_while_the_watch_is_off_costs_the_function(zygote, tmp_path, body):
    """The watch switched off for a while inside the call (torch function modes disabled and the Python
    dispatch key excluded, then both restored; an op's kernel called below the dispatcher) is no way
    round it: torch's record of every op the call ran shows the forbidden op."""
    checks = graded(find_lab(FORBID), zygote, tmp_path, "def softmax(x):\n" + body)
    assert [c.status for c in checks["softmax"]] == ["failed"]
    assert "it called " in checks["softmax"][0].message
    assert [c.status for c in checks["attend"]] == ["passed"]


def test_a_thread_left_running_costs_the_function(zygote, tmp_path):
    """A thread's record is read when it ends: one still running when the call answers could work
    for it unseen."""
    body = "    import threading\n    import time\n\n    threading.Thread(target=time.sleep, args=(30,)).start()\n"
    checks = graded(find_lab(FORBID), zygote, tmp_path, "def softmax(x):\n" + body + BY_HAND)
    assert [c.status for c in checks["softmax"]] == ["failed"]
    assert "it called a thread it left running" in checks["softmax"][0].message


def test_a_process_started_before_the_call_costs_the_function(zygote, tmp_path):
    """One started at import (no watch yet) could work for the learner unseen: a watched call refuses
    to run beside it."""
    helper = "import os\n\nif os.fork() == 0:\n    import time\n\n    time.sleep(30)\n    os._exit(0)\n\n\n"
    checks = graded(find_lab(FORBID), zygote, tmp_path, helper + "def softmax(x):\n" + BY_HAND)
    assert [c.status for c in checks["softmax"]] == ["failed"]
    assert "it called a process started before the call" in checks["softmax"][0].message


def test_patching_torch_at_import_does_not_undo_the_watch(zygote, tmp_path):
    """The trap pushes its modes with torch's C functions taken before student code ran."""
    patch = ("import torch.utils._python_dispatch as _d\n\n_d.TorchDispatchMode.__enter__ = lambda self: self\n"
             "setattr(_d, '_get_current_dispatch_' + 'mode_stack', lambda: [])\n"
             "setattr(torch._C, '_push_on_torch_' + 'dispatch_stack', print)\n"
             "setattr(torch._C, '_push_on_torch_' + 'function_stack', print)\n\n\n")
    checks = graded(find_lab(FORBID), zygote, tmp_path, patch + "def softmax(x):\n"
                    "    return getattr(torch, 'soft' + 'max')(x, -1)\n")
    assert "it called torch.softmax" in checks["softmax"][0].message


@pytest.mark.parametrize("attend, how", [
    ("torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0]",
     "uses torch.nn.functional.scaled_dot_product_attention"),
    ("getattr(torch.nn.functional, 'scaled_dot_product_' + 'attention')(q[None], k[None], v[None])[0]", "it called"),
    ("getattr(torch.ops.aten, 'scaled_dot_product_' + 'attention')(q[None], k[None], v[None])[0]", "it called"),
], ids=["source", "run-time", "torch.ops"])
def test_a_name_of_several_ops_is_watched_where_it_is_called(zygote, tmp_path, attend, how):
    checks = graded(find_lab(FORBID), zygote, tmp_path, "def softmax(x):\n" + BY_HAND,
                    f"\n\ndef attend(q, k, v):\n    return {attend}\n")
    assert [c.status for c in checks["attend"]] == ["failed"]
    assert how in checks["attend"][0].message and "scaled_dot_product_attention" in checks["attend"][0].message
    assert [c.status for c in checks["softmax"]] == ["passed"]


@pytest.mark.parametrize("body", [
    BY_HAND,
    "    return given.normalise(x)\n",
    "    return x.log_softmax(-1).exp()\n",
], ids=["by-hand", "given-code", "another-op"])
def test_what_the_rule_does_not_forbid_passes(zygote, tmp_path, body):
    """By hand, through the handout's given code, or from another op (log_softmax, by design): full
    marks; attend may use torch.softmax, which only softmax's rule forbids."""
    checks = graded(find_lab(FORBID), zygote, tmp_path, "def softmax(x):\n" + body)
    assert [c.status for found in checks.values() for c in found] == ["passed", "passed"]


def test_a_forbidden_call_in_the_example_lab_costs_the_function(zygote, tmp_path):
    checks = graded(find_lab(EXAMPLE), zygote, tmp_path,
                    "def softmax(x, dim=-1):\n    return torch.nn.functional.softmax(x, dim)\n", CAUSAL_MASK,
                    file="attention.py")
    assert {c.status for c in checks["softmax"]} == {"failed"}
    assert "saw attention.py line 10 uses torch.nn.functional.softmax" in checks["softmax"][0].message
    assert "this lab asks you to write softmax yourself" in checks["softmax"][0].message
    assert {c.status for c in checks["causal_mask"]} == {"passed"}


LAYER_NORM = "    c = x - x.mean(-1, keepdim=True)\n    return c / (c.pow(2).mean(-1, keepdim=True) + eps).sqrt()\n"
RMS_NORM = "    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()\n"


def graded_norms(zygote, tmp_path, layer_norm=LAYER_NORM, rms_norm=RMS_NORM):
    folder = tmp_path / "submission"
    folder.mkdir(exist_ok=True)
    (folder / "norms.py").write_text(f"import torch\n\n\ndef layer_norm(x, eps=1e-5):\n{layer_norm}\n\n"
                                     f"def rms_norm(x, eps=1e-6):\n{rms_norm}")
    zygote.reset()
    results = grade(Request(find_lab(NORMS), folder, Device.CPU), zygote)
    return {c.tags[0]: (c.status, c.message) for c in results.checks}


@pytest.mark.parametrize("layer_norm, rms_norm, said", [
    ("    return torch.native_layer_norm(x, x.shape[-1:], None, None, eps)[0]\n", RMS_NORM,
     {"layer_norm": "uses torch.native_layer_norm, the same as torch.nn.functional.layer_norm"}),
    (LAYER_NORM, "    return torch.rms_norm(x, x.shape[-1:], eps=eps)\n",
     {"rms_norm": "uses torch.rms_norm, the same as torch.nn.functional.rms_norm"}),
    ("    return getattr(torch, 'native_layer' + '_norm')(x, x.shape[-1:], None, None, eps)[0]\n",
     "    return getattr(torch, 'rms' + '_norm')(x, x.shape[-1:], eps=eps)\n",
     {"layer_norm": "it called torch.nn.functional.layer_norm", "rms_norm": "it called torch.nn.functional.rms_norm"}),
    (LAYER_NORM, RMS_NORM, {}),
], ids=["native-layer-norm", "rms-norm", "at-run-time", "by-hand"])
def test_a_rule_covers_the_ops_of_its_other_names(zygote, tmp_path, layer_norm, rms_norm, said):
    """forbid: F.layer_norm and F.rms_norm: torch.native_layer_norm and torch.rms_norm, the ops they
    come down to, are refused in the source and at run time; by hand scores in full."""
    checks = graded_norms(zygote, tmp_path, layer_norm, rms_norm)
    for function, (status, message) in checks.items():
        assert status == ("failed" if function in said else "passed"), (function, message)
        assert said.get(function, "") in message
