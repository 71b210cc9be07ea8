"""What a forbidden name (`forbid:` in lab.yaml) stands for in a trusted import of torch: its
object, the ATen ops that are it, and torch's Python reimplementations of those ops. The judge
asks (grader/forbid_rules.py, reading a submission) and the child's trap asks (grader/judge/trap.py,
before student code runs): one answer for both.

A name's ops are its own (a builtin of torch's op namespaces, a Tensor method, a torch.ops
object: "aten::softmax"), the one op a call of it on a small probe comes down to ("aten::_softmax"),
the ops of the same word whose decompositions call those ("aten::_safe_softmax"), and their in-place
twins (aten::tril_ for aten::tril). A name that runs several ops, or none a probe
could show, is more than its ops: its calls must be watched too.
"""
import contextlib
import functools
import inspect
import warnings
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any

NAMESPACES = ("_VariableFunctions", "_nn", "_special", "_linalg", "_fft", "_sparse", "_nested")
PROBES = (lambda x: (x,), lambda x: (x, -1), lambda x: (x, x), lambda x: (x, x, x), lambda x: (x, -1, False))


def resolve(name: str) -> Any:
    """The object a dotted name (the lab author's) stands for, importing its module; None if none."""
    import importlib

    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        with contextlib.suppress(ImportError):
            found = importlib.import_module(".".join(parts[:cut]))
            return functools.reduce(lambda obj, part: getattr(obj, part, None), parts[cut:], found)  # type: ignore[arg-type, return-value]
    return None


def own_op(obj: object) -> str | None:
    """The ATen op ("aten::softmax") an op object, or a builtin of torch's op namespaces or Tensor
    method, is by its name; None for anything else."""
    import torch

    if isinstance(obj, torch._ops.OpOverload):
        return obj._schema.name
    if isinstance(obj, torch._ops.OpOverloadPacket):
        return obj._qualified_op_name
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return None
    if getattr(obj, "__objclass__", None) is torch._C.TensorBase or \
            any(getattr(getattr(torch._C, space, None), name, None) is obj for space in NAMESPACES):
        return f"aten::{name}" if torch._C._jit_get_schemas_for_operator(f"aten::{name}") else None
    return None


@functools.cache
def _recorder():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        """The ATen ops run under it that compute (views and detach are not what a rule is about)."""

        @classmethod
        def _should_skip_dynamo(cls):       # else the first op imports torch._dynamo: seconds
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            schema = getattr(func, "_schema", None)
            returns = schema.returns if schema else ()
            if schema and not (returns and returns[0].alias_info and not returns[0].alias_info.is_write) \
                    and schema.name != "aten::detach":
                self.ops[schema.name] = None
            return func(*args, **(kwargs or {}))

    return Recorder


def footprint(obj: object) -> tuple[str, ...] | None:
    """The ATen ops a call of `obj` on a small probe runs, in order, or None when no probe call
    works. A class is probed as an instance built without arguments. The caller's random
    state is left as it was."""
    import torch

    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception:
            return None
    if not callable(obj):
        return None
    for arguments in PROBES:
        recorder = _recorder()()
        recorder.ops, args = {}, arguments(torch.rand(2, 3, 4))
        try:
            with torch.random.fork_rng(devices=[]), warnings.catch_warnings(), recorder:
                warnings.simplefilter("ignore")
                obj(*args)
        except Exception:
            continue
        return tuple(recorder.ops)
    return None


def ops_of(obj: object) -> tuple[frozenset[str], bool]:
    """(ops, whole) for a forbidden object: the ATen ops that are it (its own op; the one op it comes
    down to; their in-place twins, x.tril_() for tril), and whether they miss part of it, so that
    calls of `obj` itself must be watched as well (a name of several ops, or none)."""
    import torch

    own, found = own_op(obj), footprint(obj)
    single = found is not None and len(found) == 1
    ops = ({own} if own else set()) | (set(found) if found is not None and single else set())
    ops |= kin(ops)
    ops |= {f"{op}_" for op in ops if torch._C._jit_get_schemas_for_operator(f"{op}_")}
    return frozenset(ops), not single


def kin(ops: AbstractSet[str]) -> set[str]:
    """The ops named with the same word whose decomposition (torch._decomp) calls one of `ops`:
    aten::_safe_softmax, whose decomposition calls torch.softmax (read, not run: running one can
    import sympy, seconds)."""
    import torch._decomp

    stems, found = {stem(op) for op in ops}, set[str]()
    for op, decomposition in torch._decomp.decomposition_table.items():
        name = str(getattr(getattr(op, "_schema", None), "name", ""))
        if name not in ops | found and stems & set(stem(name).split("_")) and \
                any(own_op(named) in ops for named in _named(decomposition)):
            found.add(name)
    return found


def _named(function):
    """The objects a function's code names through its globals and their attributes (torch.softmax)."""
    import dis

    function = inspect.unwrap(function)
    code, space, named = getattr(function, "__code__", None), getattr(function, "__globals__", {}), None
    for instruction in dis.get_instructions(code) if code else ():
        if instruction.opname == "LOAD_GLOBAL":
            named = space.get(instruction.argval)
        elif instruction.opname in ("LOAD_ATTR", "LOAD_METHOD") and named is not None:
            named = getattr(named, instruction.argval, None)
        else:
            named = None
        if named is not None:
            yield named


def stem(name: str) -> str:
    """The word a name's relatives share: "softmax" for torch.special.softmax, aten::_softmax, nn.Softmax."""
    return name.rpartition(":")[2].rpartition(".")[2].strip("_").lower()


def reimplementations(ops: AbstractSet[str], stems: Iterable[str]) -> list[Callable]:
    """The Python functions torch keeps as other implementations of `ops`, each with the layers
    that wrap it: their decompositions (torch._decomp) and the references of the torch functions
    that are those ops (torch._refs; a relative by name is probed)."""
    import torch._decomp
    from torch._prims.context import torch_to_refs_map

    found = [f for op, f in torch._decomp.decomposition_table.items()
             if getattr(getattr(op, "_schema", None), "name", None) in ops]
    for public, ref in torch_to_refs_map().items():
        word = str(getattr(public, "__name__", ""))
        if any(s in word.lower() for s in stems) and (own_op(public) in ops or set(footprint(public) or ()) & ops):
            found.append(ref)
    layers: list[Callable] = []
    function: Any
    for function in found:
        while callable(function) and function not in layers:
            layers.append(function)
            function = getattr(function, "__wrapped__", None)
    return layers
