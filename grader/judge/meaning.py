"""What a forbidden name (`forbid:` in lab.yaml) stands for in a trusted import of torch: its
object, the ATen ops that are it, and torch's Python reimplementations of those ops. The judge
asks (grader/forbid_rules.py, reading a submission) and the child's trap asks (grader/judge/trap.py,
before student code runs): one answer for both.

A name's ops are its own (a builtin of torch's op namespaces, a Tensor method, a torch.ops
object: "aten::softmax"), the one op a call of it on a small probe comes down to ("aten::_softmax"),
the ops named with its words that a probe call runs, as torch's own record of ops shows them (its
aliases and decompositions: aten::layer_norm and aten::native_layer_norm for F.layer_norm,
aten::rms_norm and aten::_fused_rms_norm for F.rms_norm), the ops of the same word whose
decompositions call those ("aten::_safe_softmax"), and their in-place twins (aten::tril_ for
aten::tril). A name that runs several ops, or none a probe could show, is more than its ops: its
calls must be watched too.
"""
import contextlib
import functools
import inspect
import warnings

NAMESPACES = ("_VariableFunctions", "_nn", "_special", "_linalg", "_fft", "_sparse", "_nested")
PROBES = (lambda x: (x,), lambda x: (x, -1), lambda x: (x, x), lambda x: (x, x, x), lambda x: (x, -1, False),
          lambda x: (x, x.shape[-1:]))       # the last: a norm's normalized_shape


def resolve(name):
    """The object a dotted name (the lab author's) stands for, importing its module; None if none."""
    import importlib

    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        with contextlib.suppress(ImportError):
            found = importlib.import_module(".".join(parts[:cut]))
            return functools.reduce(lambda obj, part: getattr(obj, part, None), parts[cut:], found)
    return None


def own_op(obj):
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


def footprint(obj, record=False):
    """The ATen ops a call of `obj` on a small probe runs, in order, or None when no probe call
    works: as the dispatcher hands them to a mode (what computes), or with `record` as torch's
    record of ops names them (composite ops too, aten::layer_norm above aten::native_layer_norm).
    A class is probed as an instance built without arguments, or of size 4. The caller's random
    state is left as it was."""
    import torch

    if isinstance(obj, type):
        for arguments in ((), (4,)):        # (4,): a layer's size, the probe's last dimension
            try:
                obj = obj(*arguments)
                break
            except Exception:
                continue
        else:
            return None
    if not callable(obj):
        return None
    for arguments in PROBES:
        recorder = _recorder()()
        recorder.ops, args = {}, arguments(torch.rand(2, 3, 4))
        try:
            with torch.random.fork_rng(devices=[]), warnings.catch_warnings(), \
                    _recorded(recorder.ops) if record else recorder:
                warnings.simplefilter("ignore")
                obj(*args)
        except Exception:
            continue
        return tuple(recorder.ops)
    return None


@contextlib.contextmanager
def _recorded(ops):
    """Fills `ops` with the ATen ops torch's record of ops (RecordFunction) shows inside."""
    from torch._C import _autograd, _profiler

    _autograd._enable_profiler_legacy(_profiler.ProfilerConfig(
        _profiler.ProfilerState.CPU, False, False, False, False, False, _profiler._ExperimentalConfig()))
    try:
        yield
    finally:
        events = _autograd._disable_profiler_legacy()
        ops.update((e.name(), None) for thread in events for e in thread
                   if e.kind() == "push" and e.name().startswith("aten::"))


def named(name, obj):
    """The ops a probe call of `obj` runs whose name holds every word of `name`'s stem: the ATen op
    a Python function is (aten::rms_norm for F.rms_norm), and its decompositions named for it
    (aten::native_layer_norm, aten::_fused_rms_norm, aten::_scaled_dot_product_attention_math)."""
    words = set(stem(name).split("_")) - {""}
    return {op for op in footprint(obj, record=True) or () if words and words <= set(stem(op).split("_"))}


def ops_of(obj, name=""):
    """(ops, whole) for a forbidden object (`name`, as lab.yaml writes it): the ATen ops that are it
    (its own op; the one op it comes down to; the ops named for it that it runs; their in-place
    twins, x.tril_() for tril), and whether they miss part of it, so that calls of `obj` itself
    must be watched as well (a name of several ops, or none)."""
    import torch

    own, found = own_op(obj), footprint(obj)
    single = found is not None and len(found) == 1
    ops = {own} - {None} | (set(found) if single else set()) | named(name or getattr(obj, "__name__", ""), obj)
    ops |= kin(ops)
    ops |= {f"{op}_" for op in ops if torch._C._jit_get_schemas_for_operator(f"{op}_")}
    return frozenset(ops), not single


def kin(ops):
    """The ops named with the same word whose decomposition (torch._decomp) calls one of `ops`:
    aten::_safe_softmax, whose decomposition calls torch.softmax (read, not run: running one can
    import sympy, seconds)."""
    import torch._decomp

    stems, found = {stem(op) for op in ops}, set()
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


def stem(name):
    """The word a name's relatives share: "softmax" for torch.special.softmax, aten::_softmax, nn.Softmax."""
    return name.rpartition(":")[2].rpartition(".")[2].strip("_").lower()


def holds(word, stem):
    """Whether a name holds a stem, underscores aside (nn.LayerNorm holds layer_norm)."""
    return stem.replace("_", "") in word.lower().replace("_", "")


def reimplementations(ops, stems):
    """The Python functions torch keeps as other implementations of `ops`, each with the layers
    that wrap it: their decompositions (torch._decomp) and the references of the torch functions
    that are those ops (torch._refs; a relative by name is probed)."""
    import torch._decomp
    from torch._prims.context import torch_to_refs_map

    found = [f for op, f in torch._decomp.decomposition_table.items()
             if getattr(getattr(op, "_schema", None), "name", None) in ops]
    for public, ref in torch_to_refs_map().items():
        word = str(getattr(public, "__name__", ""))
        if any(holds(word, s) for s in stems) and (own_op(public) in ops or set(footprint(public) or ()) & ops):
            found.append(ref)
    layers = []
    for function in found:
        while callable(function) and function not in layers:
            layers.append(function)
            function = getattr(function, "__wrapped__", None)
    return layers
