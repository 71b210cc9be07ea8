"""The child's second line against forbidden calls (`forbid:` in lab.yaml; the first is the judge's
reading of the source, grader/forbid.py), and what a forbidden name stands for, which the judge
asks here too: its object in a trusted import of torch, the ATen ops it is, torch's Python
reimplementations of them.

Nothing of torch is replaced, so nothing hands an original back. While a student function with
rules runs, a TorchDispatchMode watches for those ops however they are reached (another name, a
bound method, torch.ops, nn.Softmax, torch's own Python code working for the learner), and a
TorchFunctionMode for the calls of names that are more than their ops (scaled_dot_product_attention).
A forbidden op ends the call with ForbiddenCall before it runs, whatever the code does with the
error. The nearest frame that is not torch's own decides: the handout's given modules may. A frame
is torch's or given only when its code is what that file compiles to: a file name proves nothing.
Threads the learner starts are watched too. Student code could hunt the trap down and undo it: a
second line, for names the source does not show.
"""
import _thread
import contextlib
import functools
import inspect
import os
import sys
import threading
import warnings
from pathlib import Path

NAMESPACES = ("_VariableFunctions", "_nn", "_special", "_linalg", "_fft", "_sparse", "_nested")
PROBES = (lambda x: (x,), lambda x: (x, -1), lambda x: (x, x), lambda x: (x, x, x), lambda x: (x, -1, False))


class ForbiddenCall(BaseException):
    """Raised for a forbidden call: a BaseException, so that `except Exception` does not keep it."""


# -- what a forbidden name stands for ------------------------------------------------------------
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


def footprint(obj):
    """The ATen ops a call of `obj` on a small probe runs, in order, or None when no probe call
    works. A class is probed as a torch.nn module built without arguments. The caller's random
    state is left as it was."""
    import torch

    if isinstance(obj, type):
        try:
            obj = obj() if issubclass(obj, torch.nn.Module) else None
        except Exception:
            return None
    if not callable(obj):
        return None
    for arguments in PROBES:
        recorder = _modes()[0]()
        recorder.ops, args = {}, arguments(torch.rand(2, 3, 4))
        try:
            with torch.random.fork_rng(devices=[]), warnings.catch_warnings(), recorder:
                warnings.simplefilter("ignore")
                obj(*args)
        except Exception:
            continue
        return tuple(recorder.ops)
    return None


def ops_of(obj):
    """(ops, whole) for a forbidden object: the ATen ops that are it (its own op; the one op it comes
    down to; their in-place twins, x.tril_() for tril), and whether they miss part of it, so that
    calls of `obj` itself must be watched as well (a name of several ops, or none)."""
    import torch

    own, found = own_op(obj), footprint(obj)
    single = found is not None and len(found) == 1
    ops = {own} - {None} | (set(found) if single else set())
    ops |= {f"{op}_" for op in ops if torch._C._jit_get_schemas_for_operator(f"{op}_")}
    return frozenset(ops), not single


def stem(name):
    """The word a name's relatives share: "softmax" for torch.special.softmax, aten::_softmax, nn.Softmax."""
    return name.rpartition(":")[2].rpartition(".")[2].strip("_").lower()


def reimplementations(ops, stems):
    """The Python functions torch keeps as other implementations of `ops`, each with the layers
    that wrap it: their decompositions (torch._decomp) and the references of the torch functions
    that are those ops (torch._refs; a relative by name is probed)."""
    import torch._decomp
    from torch._prims.context import torch_to_refs_map

    found = [f for op, f in torch._decomp.decomposition_table.items() if getattr(op, "_schema", op).name in ops]
    for public, ref in torch_to_refs_map().items():
        word = str(getattr(public, "__name__", ""))
        if any(s in word.lower() for s in stems) and (own_op(public) in ops or set(footprint(public) or ()) & ops):
            found.append(ref)
    layers = []
    for function in found:
        while callable(function) and function not in layers:
            layers.append(function)
            function = getattr(function, "__wrapped__", None)
    return layers


# -- who calls: torch's own code and the handout's given modules, or the learner's -------------------
def _same(code, other):
    """Whether two code objects are the same compiled code (== tells specialised code apart)."""
    fields = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_flags")
    if any(getattr(code, f) != getattr(other, f) for f in fields) or len(code.co_consts) != len(other.co_consts):
        return False
    return all(_same(a, b) if isinstance(a, type(code)) and isinstance(b, type(code)) else
               type(a) is type(b) and a == b for a, b in zip(code.co_consts, other.co_consts))


class Callers:
    """Whether a call was made for the learner: by the nearest frame that is not torch's own."""

    def __init__(self, torch_folder, given, own):
        self.folders = tuple({f"{torch_folder}{os.sep}", f"{torch_folder.resolve()}{os.sep}"})
        self.modules = {getattr(m, "__file__", None): vars(m) for m in list(sys.modules.values())
                        if str(getattr(m, "__file__", None)).startswith(self.folders)}      # as at install
        self.given = given          # file -> its source, read at install
        self.own = own              # the trap's own code, passed over
        self.compiled = {}          # file -> {(first line, qualified name): [code objects]}

    def learners(self, frame, stop):
        """Whether the frames from `frame` outwards (up to `stop`, the code that called the student
        function) reach an op for the learner: the first that is not torch's is not given code."""
        passed = []
        while frame is not None and frame.f_code is not stop:
            file = frame.f_code.co_filename
            if file in self.given:
                source = functools.partial(self.given.__getitem__, file)
                return not (self._genuine(frame, source) and all(map(self._torch, passed)))
            if frame.f_code not in self.own:
                if not file.startswith(self.folders):
                    return True
                passed.append(frame)
            frame = frame.f_back
        return True

    def _torch(self, frame):
        file = frame.f_code.co_filename
        return frame.f_globals is self.modules.get(file) and self._genuine(frame, Path(file).read_text)

    def _genuine(self, frame, source):
        """Whether the frame runs code compiled from its file's source (`source()`)."""
        file, code = frame.f_code.co_filename, frame.f_code
        if file not in self.compiled:
            codes = {}
            try:
                todo = [compile(source(), file, "exec", dont_inherit=True)]
            except (OSError, ValueError, SyntaxError):
                todo = []
            while todo:
                one = todo.pop()
                codes.setdefault((one.co_firstlineno, one.co_qualname), []).append(one)
                todo += [c for c in one.co_consts if isinstance(c, type(one))]
            self.compiled[file] = codes
        return any(_same(code, c) for c in self.compiled[file].get((code.co_firstlineno, code.co_qualname), ()))


# -- the trap ----------------------------------------------------------------------------------------
class Watch:
    """What one student function must not reach: {op: rule} in the dispatcher, {code: rule} of torch's
    Python reimplementations of those ops on the stack, and, for names that are more than their
    ops, {id(object): (object, rule)} where they are called."""

    def __init__(self, names, found):
        self.ops, self.codes, self.calls = {}, {}, {}
        for name in names:
            obj, ops, whole, codes = found[name]
            self.ops.update({op: name for op in ops if op not in self.ops})
            self.codes.update({code: name for code in codes if code not in self.codes})
            if whole and obj is not None:
                self.calls.setdefault(id(obj), (obj, name))


@functools.cache
def _modes():
    """(Recorder, Ops, Calls), made once torch is imported."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class Mode(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):       # else the first op imports torch._dynamo: seconds
            return False

    class Recorder(Mode):
        """The ATen ops run under it that compute (views and detach are not what a rule is about)."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            schema = getattr(func, "_schema", None)
            returns = schema.returns if schema else ()
            if schema and not (returns and returns[0].alias_info and not returns[0].alias_info.is_write) \
                    and schema.name != "aten::detach":
                self.ops[schema.name] = None
            return func(*args, **(kwargs or {}))

    class Ops(Mode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.trap.check(getattr(getattr(func, "_schema", None), "name", None), None, sys._getframe(1))
            return func(*args, **(kwargs or {}))

    class Calls(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.trap.check(None, func, sys._getframe(1))
            return func(*args, **(kwargs or {}))

    return Recorder, Ops, Calls


class Trap:
    def __init__(self, watches, callers):
        self.watches, self.callers = watches, callers       # student function -> Watch; Callers
        self.current = None             # the watched student function being called
        self.hit = None                 # what it reached first, in words
        self.own_ops = {}               # id(func) -> (func, its own op), for calls

    def check(self, op, func, frame):
        """ForbiddenCall when the current student function's code reaches a forbidden op or object."""
        watch = self.watches.get(self.current)
        if watch is None:
            return
        if func is None:
            rule = watch.ops.get(op)
            if rule is None and watch.codes:
                frame, rule = self._inside(watch.codes, frame)
        else:
            known = self.own_ops.get(id(func)) or self.own_ops.setdefault(id(func), (func, own_op(func)))
            rule = watch.calls.get(id(func), (None, None))[1] or watch.ops.get(known[1])
        if rule and self.callers.learners(frame, Trap.call.__code__):
            self.hit = self.hit or (f"{rule} (as {op})" if op else rule)
            raise ForbiddenCall(self.hit)

    @staticmethod
    def _inside(codes, frame):
        """(the frame that called it, its rule) for the innermost of `codes` running, or (None, None)."""
        while frame is not None and frame.f_code is not Trap.call.__code__:
            if frame.f_code in codes:
                return frame.f_back, codes[frame.f_code]
            frame = frame.f_back
        return None, None

    def call(self, name, function, args, kwargs):
        """function(*args, **kwargs) as student function `name`: ForbiddenCall if it made a forbidden call."""
        watch = self.watches.get(name)
        if watch is None:
            return function(*args, **kwargs)
        self.current, self.hit = name, None
        try:
            with self.watching(bool(watch.calls), top=True):
                value = function(*args, **kwargs)
        except BaseException:
            if self.hit:
                raise ForbiddenCall(self.hit) from None
            raise
        finally:
            self.current = None
        if self.hit:
            raise ForbiddenCall(self.hit)
        return value

    @contextlib.contextmanager
    def watching(self, calls, top=False):
        """The modes over what runs inside (the function mode too with `calls`); with `top`,
        ForbiddenCall if they are not on top at its end (the code took them off)."""
        from torch.overrides import _get_current_function_mode_stack
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        modes = [mode() for mode in _modes()[1:3 if calls else 2]]
        with contextlib.ExitStack() as stack:
            for mode in modes:
                mode.trap = self
                stack.enter_context(mode)
            yield
            if top and (_get_current_dispatch_mode_stack()[-1:] != modes[:1] or
                        calls and _get_current_function_mode_stack()[-1:] != modes[1:]):
                self.hit = self.hit or "the judge's watch for forbidden calls (it was taken off)"
                raise ForbiddenCall(self.hit)

    def watch_threads(self):
        """Threads started from now on run under the watch of whichever student function is current."""
        start, calls = _thread.start_new_thread, any(w.calls for w in self.watches.values())

        def thread(function, args, kwargs):
            with self.watching(calls):
                function(*args, **kwargs)

        def watched(function, args, kwargs=None):
            return start(thread, (function, args, kwargs or {}))

        for module, name in ((_thread, "start_new_thread"), (_thread, "start_new"), (threading, "_start_new_thread")):
            if hasattr(module, name):
                setattr(module, name, watched)


def build(rules, workdir, student_files):
    """A Trap for `rules` ({function: [dotted names]}), made before any student code runs. Trusted:
    torch's code, and the handout's given modules (the files of `workdir` now there but the
    student files), as they are now."""
    if not rules:
        return Trap({}, None)
    import torch

    given = {str(p): p.read_text("utf-8", "replace") for p in workdir.rglob("*.py")
             if p.relative_to(workdir).as_posix() not in student_files}
    found = {}
    for name in sorted(set().union(*rules.values())):
        obj = resolve(name)
        ops, whole = ops_of(obj) if obj is not None else (frozenset(), False)
        again = reimplementations(ops, {stem(name), *map(stem, ops)} - {""}) if ops else []
        found[name] = obj, ops, whole, {getattr(inspect.unwrap(f), "__code__", None) for f in again} - {None}
    _, ops, calls = _modes()
    own = {ops.__torch_dispatch__.__code__, calls.__torch_function__.__code__}
    return Trap({function: Watch(names, found) for function, names in rules.items()},
                Callers(Path(torch.__file__).parent, given, own))


def trap(rules, workdir, student_files):
    """build(...), installed: with rules, the threads started from now on are watched too."""
    made = build(rules, workdir, student_files)
    if made.watches:
        made.watch_threads()
    return made
