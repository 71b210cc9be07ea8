"""The child's second line against forbidden calls (`forbid:` in lab.yaml; the first is the judge's
reading of the source, grader/core/forbid.py), for names the source does not show.

Nothing of torch is replaced, so nothing hands an original back. While a student function with
rules runs, a TorchDispatchMode watches for the ATen ops its names stand for (grader/judge/meaning.py)
however they are reached (another name, a bound method, torch.ops, nn.Softmax, torch's own Python
code working for the learner, torch's Python reimplementations), and a TorchFunctionMode for the
calls of names that are more than their ops (scaled_dot_product_attention). A forbidden op ends the
call with ForbiddenCall before it runs, whatever the code does with the error. The nearest frame
that is not torch's own decides: the handout's given modules may, where their own source makes
the call (the judge's scan, grader.core.forbid.trusted), not where they call what they are
handed. A frame is torch's or given only when its code is what that file compiles to: a file name
proves nothing. Threads the learner starts are watched too; a process or program it starts could
not be, nor a library it loads: all are refused while a watched function runs.

Modes can be switched off from Python (torch._C.DisableTorchFunction, an _ExcludeDispatchKeyGuard for
the Python key, the mode stacks) and on again before the call ends. So the trap also keeps torch's own
record of every op the call runs (RecordFunction, through the legacy profiler of the calling thread
and of each thread the call starts): the dispatcher writes it in C++ at every op's entry, whatever
the Python key, the torch function state or the mode stacks say. When the call ends, a forbidden op
in that record is refused unless the trap let it through itself (given code; such runs are marked in
the record under a name drawn for the child's life). What skips the record is taken out of the child
before student code runs: the profiler's and RecordFunction's switches (a stand-in refuses them), and
an op's kernel called below the dispatcher (OpOverload.redispatch, ._op_dk, a kernel's call_boxed),
refused while a watched function runs. What the trap cannot hold against is code that hunts down its
own objects (frames, the garbage collector, closures): that is the source scan's line
(grader/core/forbid_rules.py).
"""
import _thread
import contextlib
import functools
import importlib.util
import inspect
import os
import secrets
import sys
import threading
from pathlib import Path

UNWATCHABLE = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                         "os.forkpty", "ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function", "ctypes.cdata",
                         "ctypes.cdata/buffer"})     # audit events: processes, programs, libraries, memory by address
STARTS = frozenset({"os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen",
                    "ctypes.call_function"})      # audit events of what may start a process
UNDONE = "something that undid the judge's watch for forbidden calls"
BELOW = "an op's kernel below torch's dispatcher, where the judge cannot watch it"
SEALED = ("_enable_record_function", "_clear_callbacks", "_enable_profiler", "_disable_profiler", "_prepare_profiler",
          "_enable_profiler_legacy", "_disable_profiler_legacy", "_toggle_collection_dynamic")
COMPOSITE = ("CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor")   # kernels that dispatch again


def _beside(name):
    """A module beside this file, by path (inside the sandbox there is no grader package)."""
    spec = importlib.util.spec_from_file_location(f"_grader_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


meaning = _beside("meaning")


class ForbiddenCall(BaseException):
    """Raised for a forbidden call: a BaseException, so that `except Exception` does not keep it."""


# -- who calls: torch's own code and the handout's given modules, or the learner's -------------------
def _same(code, other):
    """Whether two code objects are the same compiled code (== tells specialised code apart)."""
    fields = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_flags")
    if any(getattr(code, f) != getattr(other, f) for f in fields) or len(code.co_consts) != len(other.co_consts):
        return False
    return all(_same(a, b) if isinstance(a, type(code)) and isinstance(b, type(code)) else
               type(a) is type(b) and a == b for a, b in zip(code.co_consts, other.co_consts))


class Callers:
    """Whether a call was made for the learner: by the nearest frame that is not torch's own, unless
    it is given code whose own source makes such a call."""

    def __init__(self, torch_folder, given, own, trusted=None):
        self.folders = tuple({f"{torch_folder}{os.sep}", f"{torch_folder.resolve()}{os.sep}"})
        self.modules = {getattr(m, "__file__", None): vars(m) for m in list(sys.modules.values())
                        if str(getattr(m, "__file__", None)).startswith(self.folders)}      # as at install
        self.given = given          # file -> its source, read at install
        self.trusted = trusted      # file -> {top-level name of its code: the rules it is trusted with} (None: all)
        self.own = own              # the trap's own code, passed over
        self.compiled = {}          # file -> {(first line, qualified name): [code objects]}

    def learners(self, frame, stop, rule=None):
        """Whether the frames from `frame` outwards (up to `stop`, the code that called the student
        function) reach an op of `rule` for the learner: the first that is not torch's is not given
        code, or given code not trusted with the rule (a function that calls what it is handed)."""
        passed = []
        while frame is not None and frame.f_code is not stop:
            file = frame.f_code.co_filename
            if file in self.given:
                source = functools.partial(self.given.__getitem__, file)
                return not (self._genuine(frame, source) and self._trusted(file, frame.f_code, rule)
                            and all(map(self._torch, passed)))
            if frame.f_code not in self.own:
                if not file.startswith(self.folders):
                    return True
                passed.append(frame)
            frame = frame.f_back
        return True

    def _trusted(self, file, code, rule):
        """Whether given code's own source makes a call `rule` forbids where `code` is (its top-level name)."""
        return self.trusted is None or rule in self.trusted.get(file, {}).get(code.co_qualname.split(".")[0], ())

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


# -- torch's record of the ops a call runs -----------------------------------------------------------
class Record:
    """torch's own record of the ops one thread runs (RecordFunction, through the legacy profiler),
    with the marks of what the trap let through: torch's C functions as they are before student code
    runs (seal() takes them out of the child's reach). Read every DRAIN ops the modes see, so that a
    long call's record stays small (a few KB an op), and when the call ends."""

    DRAIN = 4096

    def __init__(self):
        from torch._C import _autograd, _profiler

        self._on, self._off = _autograd._enable_profiler_legacy, _autograd._disable_profiler_legacy
        self._enter = _autograd._record_function_with_args_enter
        self._exit = _autograd._record_function_with_args_exit
        self._config = _profiler.ProfilerConfig(_profiler.ProfilerState.CPU, False, False, False, False, False,
                                                _profiler._ExperimentalConfig())
        self.mark = f"let through by the judge {secrets.token_hex(8)}"
        self.local = threading.local()      # this thread's: the watch's {op: rule}, open frames, ops since read

    def start(self, ops):
        self._on(self._config)
        self.local.__dict__.update(ops=ops, open={}, count=0)

    def stop(self):
        """What the record shows that the trap must refuse, in words (None: nothing): a forbidden op
        it did not let through, or a record that was lost."""
        ops, self.local.ops = getattr(self.local, "ops", None), None
        return self._read(ops) if ops is not None else None

    def drain(self):
        """After each op a mode saw: every DRAIN of them, the record read so far and begun again."""
        local = self.local
        if getattr(local, "ops", None) is None:
            return None
        local.count += 1
        if local.count < self.DRAIN:
            return None
        local.count = 0
        said = self._read(local.ops)
        self._on(self._config)
        return said

    def _read(self, ops):
        try:
            events = self._off()
        except RuntimeError:
            return UNDONE
        found = self.unwatched(events, ops, self.local.open)
        return found and f"{found[1]} (as {found[0]}), with the judge's watch switched off"

    @contextlib.contextmanager
    def let_through(self):
        """Marks what runs inside as let through by the trap (given code's use of a forbidden op)."""
        handle = self._enter(self.mark)
        try:
            yield
        finally:
            self._exit(handle)

    def unwatched(self, events, ops, stacks):
        """(op, its rule) for the first op of `ops` ({op: rule}) in `events` that the trap did not let
        through, or None; `stacks` ({thread: open frames}) carries what is still open from one reading
        to the next. A run let through is marked around the op's run: what it runs is inside the mark,
        and the ops it came from (the op as dispatched to the mode, a composite) hold the mark. Every
        other forbidden op in the record ran where the trap did not see it. Only marks and forbidden
        ops are kept open: the frames between them change nothing."""
        mark = self.mark
        for thread in events:
            if not thread:
                continue
            open_ = stacks.setdefault(thread[0].thread_id(), [])     # [handle, name, rule, in a mark, holds one]
            names = [event.name() for event in thread]
            if not open_ and not any(name in ops or name == mark for name in names):
                continue                                    # the common case: nothing that matters ran
            for event, name in zip(thread, names):
                if name == mark or name in ops:             # pushed (a pop has no name)
                    under = bool(open_) and (open_[-1][1] == mark or open_[-1][3])
                    open_.append([event.handle(), name, ops.get(name), under, False])
                elif open_ and not name and event.kind() == "pop":
                    handle = event.handle()
                    while any(frame[0] == handle for frame in open_):       # (one begun before: none)
                        mine, name, rule, under, holds = open_.pop()
                        if rule and not (under or holds):
                            return name, rule
                        if open_ and (name == mark or rule or holds):
                            open_[-1][4] = True
                        if mine == handle:
                            break
        return None


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
    """(Ops, Calls), made once torch is imported."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class Mode(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):       # else the first op imports torch._dynamo: seconds
            return False

    class Ops(Mode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if self.trap.check(self.watch, getattr(getattr(func, "_schema", None), "name", None), None,
                               sys._getframe(1)):
                with self.trap.record.let_through():
                    out = func(*args, **(kwargs or {}))
            else:
                out = func(*args, **(kwargs or {}))
            said = self.trap.record.drain()
            if said:
                self.trap.refuse(said)
            return out

    class Calls(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if self.trap.undone(self.partner, self.watch):
                self.trap.refuse(UNDONE)
            if self.trap.check(self.watch, None, func, sys._getframe(1)):
                with self.trap.record.let_through():
                    return func(*args, **(kwargs or {}))
            return func(*args, **(kwargs or {}))

    return Ops, Calls


def _stacks():
    """(push, pop, depth, at) of torch's dispatch and function mode stacks, and whether its Python
    dispatch key is switched on (included, not excluded): its C functions as they are now,
    whatever student code puts in their place later."""
    from torch import _C

    python = _C.DispatchKey.Python
    on = (functools.partial(_C._dispatch_tls_is_dispatch_key_included, python),
          functools.partial(_C._dispatch_tls_is_dispatch_key_excluded, python))
    return ((_C._push_on_torch_dispatch_stack, functools.partial(_C._pop_torch_dispatch_stack, None),
             _C._len_torch_dispatch_stack, _C._get_dispatch_stack_at),
            (_C._push_on_torch_function_stack, _C._pop_torch_function_stack,
             _C._len_torch_function_stack, _C._get_function_stack_at), lambda: on[0]() and not on[1]())


class Trap:
    def __init__(self, watches, callers, stacks=None, record=None):
        self.watches, self.callers = watches, callers       # student function -> Watch; Callers
        self.stacks = stacks            # _stacks(), taken before student code runs
        self.record = record            # a Record, made before student code runs
        self.alive = set()              # a token for each thread the learner started that still runs
        self.modes = _modes() if watches else None
        self.handler = self.modes and vars(self.modes[0])["__torch_dispatch__"]
        self.current = None             # the watched student function being called
        self.hit = None                 # what it reached first, in words
        self.started = False            # whether the code may have started a process since the last look
        self.own_ops = {}               # id(func) -> (func, its own op), for calls

    def refuse(self, what):
        """End the watched call: ForbiddenCall, said with the first thing it reached."""
        self.hit = self.hit or what
        raise ForbiddenCall(self.hit)

    def check(self, watch, op, func, frame):
        """ForbiddenCall when the student function's code reaches a forbidden op or object: `watch`'s
        (a call's, bound when its modes were pushed), else the current function's (a thread's)."""
        watch = watch or self.watches.get(self.current)
        if watch is None:
            return
        if func is None:
            rule = watch.ops.get(op)
            if rule is None and watch.codes:
                (frame, rule), op = self._inside(watch.codes, frame), None
        else:
            known = self.own_ops.get(id(func)) or self.own_ops.setdefault(id(func), (func, meaning.own_op(func)))
            rule = watch.calls.get(id(func), (None, None))[1] or watch.ops.get(known[1])
        if rule and self.callers.learners(frame, Trap.call.__code__, rule):
            self.refuse(f"{rule} (as {op})" if op else rule)
        return rule                 # let through: given code's

    @staticmethod
    def _inside(codes, frame):
        """(the frame that called it, its rule) for the innermost of `codes` running, or (None, None)."""
        while frame is not None and frame.f_code is not Trap.call.__code__:
            if frame.f_code in codes:
                return frame.f_back, codes[frame.f_code]
            frame = frame.f_back
        return None, None

    def call(self, name, function, args, kwargs):
        """function(*args, **kwargs) as student function `name`: ForbiddenCall if it made a forbidden
        call, or runs beside a process started before, whose work no watch could see."""
        watch = self.watches.get(name)
        if watch is None:
            return function(*args, **kwargs)
        self.current, self.hit = name, None
        try:
            beside = _company() if self.started else []
            self.started = bool(beside)
            if beside:
                self.refuse(f"a process started before the call (pid {beside[0]}), whose work the judge cannot watch")
            if self.alive:
                self.refuse("a thread started before the call and still running, whose work the judge cannot read")
            with self.watching(watch, top=name):
                value = function(*args, **kwargs)
            if self.alive:
                self.refuse("a thread it left running, whose work the judge cannot read")
        except BaseException:
            if self.hit:
                raise ForbiddenCall(self.hit) from None
            raise
        finally:
            self.current = None
        if self.hit:
            raise ForbiddenCall(self.hit)
        return value

    def undone(self, mode, watch, top=False):
        """Whether the dispatch `mode` no longer watches for `watch`: off torch's stack (`top`: not
        on top of it), its handler or watch replaced, or torch's Python dispatch key switched off."""
        _, _, depth, at = self.stacks[0]
        placed = depth() and at(depth() - 1) is mode if top else any(at(i) is mode for i in range(depth()))
        return not (placed and type(mode) is self.modes[0] and "__torch_dispatch__" not in vars(mode) and
                    vars(type(mode)).get("__torch_dispatch__") is self.handler and mode.watch is watch
                    and mode.trap is self and self.stacks[2]())

    @contextlib.contextmanager
    def watching(self, watch=None, top=None):
        """Both modes over what runs inside, for `watch` (None: the current function's, in a thread),
        pushed with the stacks' own functions, and torch's record of its ops (for `watch`, or in a
        thread for the function current as it starts): ForbiddenCall if the record shows a forbidden
        op the trap did not let through. With `top`, the student function called: ForbiddenCall if at
        its end the modes are not on top, or the trap is not as it was (the code undid them)."""
        ops, calls = (mode() for mode in self.modes[:2])
        calls.partner = ops
        modes = list(zip([ops, calls], self.stacks))
        recorded = watch or self.watches.get(self.current)
        if recorded:
            self.record.start(recorded.ops)
        try:
            for mode, (push, *_) in modes:
                mode.trap, mode.watch = self, watch
                push(mode)
            try:
                yield
                _, _, depth, at = self.stacks[1]
                if top and (self.current != top or self.watches.get(top) is not watch or
                            self.undone(ops, watch, True) or
                            not (depth() and at(depth() - 1) is calls and calls.watch is watch)):
                    self.refuse(UNDONE)
            finally:
                for _, (_, pop, depth, _) in reversed(modes):
                    if depth():
                        pop()
        finally:
            said = self.record.stop() if recorded else None
            if said:
                self.refuse(said)

    def audit(self, event, args):
        """An audit hook: while a watched function runs, what the trap could not watch is refused; a
        second _posixsubprocess (whose fork_exec raises no audit event) is refused at any time."""
        if event == "import" and args[0] == "_posixsubprocess":
            if self.current is None:
                raise ImportError("_posixsubprocess is the judge's in a lab with forbidden calls: use subprocess")
            self.refuse("_posixsubprocess, whose work the judge cannot watch")
        self.started = self.started or event in STARTS
        if event in UNWATCHABLE and self.current is not None:
            self.refuse(f"{event}, whose work the judge cannot watch")

    def watch_threads(self):
        """Threads started from now on run under the watch of whichever student function is current."""
        start = _thread.start_new_thread

        def thread(function, args, kwargs, token):
            try:
                with self.watching():
                    function(*args, **kwargs)
            finally:
                self.alive.discard(token)

        def watched(function, args, kwargs=None):
            token = object()
            self.alive.add(token)
            try:
                return start(thread, (function, args, kwargs or {}, token))
            except BaseException:
                self.alive.discard(token)
                raise

        for module, name in ((_thread, "start_new_thread"), (_thread, "start_new"), (threading, "_start_new_thread")):
            if hasattr(module, name):
                setattr(module, name, watched)

    def guard_programs(self):
        """subprocess's fork_exec, which raises no audit event, refused while a watched function runs:
        the one _posixsubprocess there is, in sys.modules and in subprocess, is a guarded stand-in."""
        real = sys.modules.get("_posixsubprocess")
        if real is None or type(real) is not type(sys):
            return

        def fork_exec(*args, **kwargs):
            if self.current is not None:
                self.refuse("_posixsubprocess.fork_exec, whose work the judge cannot watch")
            self.started = True
            return real.fork_exec(*args, **kwargs)

        stand_in = type(sys)("_posixsubprocess")
        stand_in.fork_exec = fork_exec
        sys.modules["_posixsubprocess"] = stand_in
        if getattr(sys.modules.get("subprocess"), "_fork_exec", None) is real.fork_exec:
            sys.modules["subprocess"]._fork_exec = fork_exec


def _company():
    """The pids of the processes of the session we lead (a child's) but us that run (not zombies)."""
    me, found = os.getpid(), []
    for pid in [int(name) for name in os.listdir("/proc") if name.isdigit()] if os.getsid(0) == me else ():
        with contextlib.suppress(OSError, IndexError), open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
            if pid != me and int(fields[3]) == me and fields[0] not in (b"Z", b"X"):
                found.append(pid)
    return found


def build(rules, workdir, student_files, trusted=None):
    """A Trap for `rules` ({function: [dotted names]}), made before any student code runs. Trusted:
    torch's code, and the handout's given modules (the files of `workdir` now there but the
    student files), as they are now, where `trusted` ({file: {top-level name: rules}}: the judge's
    scan of them, grader.core.forbid.trusted; None: all of them) finds their own code making such a
    call."""
    if not rules:
        return Trap({}, None)
    import torch

    given = {str(p): p.read_text("utf-8", "replace") for p in workdir.rglob("*.py")
             if p.relative_to(workdir).as_posix() not in student_files}
    found = {}
    for name in sorted(set().union(*rules.values())):
        obj = meaning.resolve(name)
        ops, whole = meaning.ops_of(obj, name) if obj is not None else (frozenset(), False)
        again = meaning.reimplementations(ops, {meaning.stem(name), *map(meaning.stem, ops)} - {""}) if ops else []
        found[name] = obj, ops, whole, {getattr(inspect.unwrap(f), "__code__", None) for f in again} - {None}
    ops, calls = _modes()
    own = {ops.__torch_dispatch__.__code__, calls.__torch_function__.__code__}
    return Trap({function: Watch(names, found) for function, names in rules.items()},
                Callers(Path(torch.__file__).parent, given, own,
                        None if trusted is None else {str(workdir / f): n for f, n in trusted.items()}),
                _stacks(), Record())


def seal(made):
    """Takes out of the child what would keep an op off torch's record (before student code runs):
    the profiler's and RecordFunction's switches, in every torch module that holds them (torch's
    autograd and profiler; a stand-in refuses them), and, while a watched function runs, an op's
    kernel called below the dispatcher."""
    import torch
    from torch._C import _autograd

    def stand_in(name):
        def refused(*args, **kwargs):
            if made.current is not None:
                made.refuse(UNDONE)
            raise RuntimeError(f"{name} is the judge's in a lab with forbidden calls")
        return refused

    fakes = {id(real): stand_in(name) for name in SEALED if (real := getattr(_autograd, name, None)) is not None}
    for module in [_autograd] + [m for name, m in list(sys.modules.items())      # torch's holders of them
                                 if name.startswith(("torch.autograd", "torch.profiler"))]:
        space = getattr(module, "__dict__", None)
        for key, value in list(space.items()) if isinstance(space, dict) else ():
            if id(value) in fakes:
                space[key] = fakes[id(value)]

    def below(real, allowed=lambda *args: False):
        def kernel(*args, **kwargs):
            if made.current is not None and not allowed(*args):
                made.refuse(BELOW)
            return real(*args, **kwargs)
        return kernel

    for kind, method in ((torch._C._DispatchOperatorHandle, "redispatch_boxed"),
                         (torch._C._SafeKernelFunction, "call_boxed")):
        if hasattr(kind, method):
            setattr(kind, method, below(getattr(kind, method)))

    def composite(key, *args):      # kernels that dispatch what they run again
        return getattr(key, "name", None) in COMPOSITE

    find = torch._C._get_operation_overload

    def get_operation_overload(*args):
        found = find(*args)
        return found if found is None else (found[0], below(found[1], composite), *found[2:])

    torch._C._get_operation_overload = get_operation_overload
    for space in [v for v in vars(torch.ops).values() if isinstance(v, torch._ops._OpNamespace)]:
        for packet in [v for v in vars(space).values() if isinstance(v, torch._ops.OpOverloadPacket)]:
            for overload in [v for v in vars(packet).values() if isinstance(v, torch._ops.OpOverload)]:
                vars(overload)["_op_dk"] = below(vars(overload)["_op_dk"], composite)


def trap(rules, workdir, student_files, trusted=None):
    """build(...), installed: with rules, the child sealed (seal()), the threads started from now on
    watched too, and the audit hook (which nothing removes) refuses programs and libraries while
    watched functions run."""
    made = build(rules, workdir, student_files, trusted)
    if made.watches:
        seal(made)
        made.watch_threads()
        made.guard_programs()
        sys.addaudithook(made.audit)
    return made
