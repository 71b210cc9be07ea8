"""A learner's attacks on `forbid:`, graded: `python benchmarks/forbid_attacks.py`.

Each attack is a softmax for the forbid lab (tests/labs/forbid: softmax may not use torch.softmax)
that computes a softmax with torch's own code by a way the judge might miss; a line says whether
the grading caught it, and where: in the source (the judge's scan) or at run time (the child's
trap; names built at run time pass the scan), or the attack earned the point. The tests hold
every attack the judge catches (tests/core/test_forbid.py, tests/judge/test_forbid_trap.py); the ones that
still earn it are what stays open, listed here so that the claim can be checked.
"""
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from grader.core.request import Device, Request
from grader.core.runner import grade
from grader.judge.launchers import launcher_for
from grader.judge.zygote import Zygote
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parent.parent
HEAD = "import sys\n\nimport torch\n\n\n"
HELPER = ("import os\nimport pickle\n\nASK, TOLD = os.pipe()\nREAD, ANSWER = os.pipe()\n\nif os.fork() == 0:\n"
          "    x = pickle.loads(os.read(ASK, 1 << 20))\n"
          "    os.write(ANSWER, pickle.dumps(getattr(torch, 'soft' + 'max')(x, -1)))\n    os._exit(0)\n\n\n")
ATTEND = "\n\ndef attend(q, k, v):\n    return torch.softmax(q @ k.T / q.shape[-1] ** 0.5, -1) @ v\n"
SOFTMAX = "getattr(torch, 'soft' + 'max')"          # a name built at run time: the source cannot see it
C = "getattr(torch._C, "
PUSHED = ("    pop_d, push_d = {C}'_pop_torch_' + 'dispatch_stack'), {C}'_push_on_torch_' + 'dispatch_stack')\n"
          "    pop_f, push_f = {C}'_pop_torch_' + 'function_stack'), {C}'_push_on_torch_' + 'function_stack')\n")
ATTACKS = {
    "torch's mode stack, cleared for a while": "    from torch.utils import _python_dispatch as d\n\n"
    f"    with d._disable_current_modes():\n        return {SOFTMAX}(x, -1)\n",
    "the trap's mode popped and pushed back": "    mode = torch._C._pop_torch_dispatch_stack(None)\n    try:\n"
    f"        return {SOFTMAX}(x, -1)\n    finally:\n        torch._C._push_on_torch_dispatch_stack(mode)\n",
    "the Python dispatch key excluded": "    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.Python)\n"
    f"    with torch._C._ExcludeDispatchKeyGuard(keys):\n        return {SOFTMAX}(x, -1)\n",
    "torch._C._DisableTorchDispatch": f"    with torch._C._DisableTorchDispatch():\n        return {SOFTMAX}(x, -1)\n",
    "torch._C._DisableTorchDispatch, by a name built at run time": f"    with {C}'_DisableTorch' + 'Dispatch')():\n"
    f"        return {SOFTMAX}(x, -1)\n",
    "the mode stack cleared, by a name built at run time": "    from torch.utils import _python_dispatch as d\n\n"
    f"    with getattr(d, '_disable_current_' + 'modes')():\n        return {SOFTMAX}(x, -1)\n",
    "both modes popped and pushed back, by names built at run time": PUSHED.format(C=C) +
    f"    modes = pop_f(), pop_d(None)\n    try:\n        return {SOFTMAX}(x, -1)\n    finally:\n"
    "        push_d(modes[1])\n        push_f(modes[0])\n",
    "the dispatch mode's handler replaced, then put back": f"    kind = type({C}'_get_dispatch_' + 'stack_at')(0))\n"
    "    handler = kind.__torch_dispatch__\n"
    "    kind.__torch_dispatch__ = lambda self, func, types, args=(), kwargs=None: func(*args, **(kwargs or {}))\n"
    f"    try:\n        return {SOFTMAX}(x, -1)\n    finally:\n        kind.__torch_dispatch__ = handler\n",
    "an op redispatched below Python": "    op = getattr(torch.ops.aten, '_soft' + 'max').default\n"
    "    return op.redispatch(torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), x, -1, False)\n",
    "an op redispatched, by names built at run time": "    op = getattr(torch.ops.aten, '_soft' + 'max').default\n"
    "    return getattr(op, 'redis' + 'patch')(torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), x, -1, False)\n",
    "an op's CPU kernel called by key, by names built at run time":
    "    op = getattr(torch.ops.aten, '_soft' + 'max')\n"
    "    return getattr(op.default, '_op' + '_dk')(torch._C.DispatchKey.CPU, x, -1, False)\n",
    "the trap's state cleared, then restored":
    "    trap = getattr(getattr(sys, '_get' + 'frame')(1), 'f_lo' + 'cals')['self']\n"
    f"    name, trap.current = trap.current, None\n    y = {SOFTMAX}(x, -1)\n    trap.current = name\n    return y\n",
    "the trap's state cleared for good": "    sys._getframe(1).f_locals['self'].current = None\n"
    f"    return {SOFTMAX}(x, -1)\n",
    "a subprocess": "    import subprocess\n\n    subprocess.run([sys.executable, '-c', 'import torch'])\n"
    f"    return {SOFTMAX}(x, -1)\n",
    "a program by _posixsubprocess.fork_exec (no audit event)": "    import os\n    import subprocess\n\n"
    "    read, write = os.pipe()\n    getattr(subprocess, '_fork' + '_exec')([b'/bin/true'], [b'/bin/true'], True, (),"
    " None, None, *[-1] * 6, read, write, True, False, -1, None, None, None, -1, None, False)\n"
    f"    return {SOFTMAX}(x, -1)\n",
    "a process started at import, working for the call": "    os.write(TOLD, pickle.dumps(x))\n"
    "    return pickle.loads(os.read(READ, 1 << 20))\n",
    "a thread": "    from concurrent.futures import ThreadPoolExecutor\n\n    with ThreadPoolExecutor(1) as pool:\n"
    f"        return pool.submit({SOFTMAX}, x, -1).result()\n",
    "a fork": "    import os\n    import pickle\n\n    read, write = os.pipe()\n    if os.fork() == 0:\n"
    f"        os.write(write, pickle.dumps({SOFTMAX}(x, -1)))\n        os._exit(0)\n    os.close(write)\n"
    "    return pickle.loads(os.read(read, 1 << 20))\n",
    "torch.vmap": f"    return torch.vmap(lambda row: {SOFTMAX}(row, -1))(x)\n",
    "torch.jit, from a string": "    source = 'def f(x):\\n    return torch.' + 'soft' + 'max(x, -1)\\n'\n"
    "    return torch.jit.CompilationUnit(source).f(x)\n",
    "torch._safe_softmax": "    return getattr(torch, '_safe_soft' + 'max')(x, -1)\n",
    "attention of one query, 3-d": "    ones = torch.ones(*x.shape[:-1], 1, 1)\n"
    "    eye = torch.eye(x.shape[-1]).expand(*x.shape[:-1], -1, -1)\n"
    "    attend = torch.nn.functional.scaled_dot_product_attention\n"
    "    return attend(ones, x[..., :, None], eye, scale=1.0)[..., 0, :]\n",
    "attention of one query, 4-d": "    n = x.shape[-1]\n    q = torch.ones(1, *x.shape[:-1], 1, 8)\n"
    "    k = torch.zeros(1, *x.shape[:-1], n, 8)\n    k[..., 0] = x\n"
    "    v = torch.eye(n, 8).expand(1, *x.shape[:-1], n, 8)\n"
    "    return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=1.0)[0, ..., 0, :n]\n",
    "torch._masked_softmax": "    keep = torch.zeros_like(x, dtype=torch.bool)\n"
    "    return getattr(torch, '_masked_soft' + 'max')(x, keep)\n",
    "the trap's watch emptied, reached through torch's mode stack by a name built at run time":
    f"    getattr(torch._C, '_get_dispatch_' + 'stack_at')(0).watch.ops.clear()\n    return {SOFTMAX}(x, -1)\n",
    "the trap's classes patched, found by object.__subclasses__()":
    "    kinds = {kind.__name__: kind for kind in object.__subclasses__()}\n"
    "    kinds['Trap'].check = lambda *args: None\n    kinds['Record'].unwatched = lambda *args: None\n"
    f"    return {SOFTMAX}(x, -1)\n",
    "the trap found in the closure of its thread watch (inspect.getclosurevars)": "    import _thread\n"
    "    import inspect\n\n    found = inspect.getclosurevars(_thread.start_new_thread).nonlocals['self']\n"
    "    for watch in found.watches.values():\n        watch.ops.clear()\n        watch.codes.clear()\n"
    f"    return {SOFTMAX}(x, -1)\n",
    "log_softmax, then exp (another op)": "    return x.log_softmax(-1).exp()\n",
    "the gradient of logsumexp (other ops)": "    x = x.detach().requires_grad_()\n"
    "    torch.logsumexp(x, -1).sum().backward()\n    return x.grad\n",
}


def main():
    lab, zygote = find_lab(ROOT / "tests" / "labs" / "forbid"), Zygote(launcher_for("auto"))
    table = Table(title="attacks on forbid: (softmax may not use torch.softmax), graded")
    for column in ("attack", "verdict", "what the learner reads"):
        table.add_column(column)
    try:
        for name, body in ATTACKS.items():
            with tempfile.TemporaryDirectory() as folder:
                helper = HELPER if "at import" in name else ""
                (Path(folder) / "norm.py").write_text(f"{HEAD}{helper}def softmax(x):\n{body}{ATTEND}")
                zygote.reset()
                check = next(c for c in grade(Request(lab, folder, Device.CPU), zygote).checks
                             if c.tags[0] == "softmax")
            said = check.message.splitlines()[-1].strip() if check.message else ""
            where = "in the source" if check.message.startswith("expected") else "at run time"
            table.add_row(name, "open: earns the point" if check.status == "passed" else f"caught {where}", said[:90])
    finally:
        zygote.close()
    Console().print(table)


if __name__ == "__main__":
    main()
