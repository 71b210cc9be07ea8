"""The judge's side of the boundary: children, and calls of student code with limits.

Student code runs only in children (grader/judge/child.py), forked by a zygote
(grader/judge/zygote.py): one for the checks of a submission, one more for each call run apart
(`submit`). The judge sends each child the submission's files down the child's own pipe. A call
sends plain data, waits until it has been charged its time limit (and never past the
submission's time budget), and reads back plain data through grader/judge/wire.py, with every
size limit applied here. Time is charged as grader/judge/clock.py measures it, the
submission's own work, so a busy machine changes no grade; wall time is only a backstop, and a
call stopped by it is the grader's fault ("grader_fault": not graded, regraded), never the
submission's. A child that hangs, dies, floods its output or answers garbage is killed and
replaced; the judge carries on.
"""
import os
import select
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from grader.errors import SetupError
from grader.judge.clock import CallClock, SessionMeter, WallClock, host_pid
from grader.judge.printed import OUTPUT_LIMIT, Printed
from grader.judge.zygote import MESSAGE_LIMIT, ZygoteGone

FILES_TIMEOUT = 60.0         # wall seconds for a new child to take its files (no student code runs yet)
FRAMES = 12                  # frames of a traceback read from a child (innermost last)


class CallFailed(Exception):
    """A call of student code that did not return a value.

    kind: "raised", "not_implemented", "timeout", "budget", "crashed", "bad_answer", "forbidden",
    or "grader_fault": the grader could not run or read the call (a wall-time backstop, an answer
    the wire could not carry); nothing is charged to the submission and it is graded again.
    """

    def __init__(self, function, kind, message, where=()):
        super().__init__(message)
        self.function, self.kind, self.message = function, kind, message
        self.where = list(where)
        self.given = ""             # the file given with the lab where it was raised, if not the learner's


def learner_frames(where, mine):
    """A traceback's frames ("file line N, in f", innermost last) cut to those in the learner's
    files `mine`, then the frame where the error surfaced when that is a file given with the lab,
    named as such: (frames, that file or "")."""
    files = [entry.split(" line ")[0] for entry in where]
    kept = [entry for entry, file in zip(where, files) if file in mine][-3:]
    given = files[-1] if files and files[-1] not in mine else ""
    return kept + ([f"{where[-1]} (given with the lab)"] if given else []), given


def write_files(folder, files):
    """Lay out {relative path: bytes} under `folder`."""
    for name, data in files.items():
        (Path(folder) / name).parent.mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_bytes(data)


# -- children -------------------------------------------------------------------------------------
class Backstop(Exception):
    """A call's wall time ran past its backstop while its charged time had not: the machine, not
    the submission, kept it from finishing."""


class Limit:
    """When a call must end: once charged `seconds` (TimeoutError: the submission's doing) or
    `budget_left()` is spent, or past `backstop` seconds of wall time (Backstop: the grader's)."""

    def __init__(self, clock, seconds, backstop):
        self.clock, self.seconds, self.backstop = clock, seconds, backstop
        self._look = min(seconds / CPUS, backstop)      # charged time grows at most as fast as the
                                                        # CPUs run: no need to look before it could be over

    def wait(self):
        """Seconds to wait before looking again; raises when the call must end now."""
        wall = self.clock.wall()
        if wall >= self._look:
            charged = self.clock.charged()
            if charged >= self.seconds:
                raise TimeoutError
            if wall >= self.backstop:
                raise Backstop
            self._look = wall + max(0.02, min((self.seconds - charged) / CPUS, self.backstop - wall, 2.0))
        return self._look - wall


CPUS = os.cpu_count() or 1


class Child:
    """One forked child: request and answer pipes, and its output, kept up to a limit."""

    def __init__(self, zygote, pid, request_fd, answer_fd, output_fd, shared, host_pid=None, answer_bytes=0):
        self.zygote, self.pid, self._shared = zygote, pid, shared
        self.host_pid = host_pid or pid     # its pid here, for reading its use of time
        self.meter = SessionMeter(self.host_pid)
        self.answer_bytes = answer_bytes    # bytes of tensors an answer may carry (the lab's answer_mb)
        self._request, self._answer, self._output_fd = request_fd, answer_fd, output_fd
        os.set_blocking(request_fd, False)
        os.set_blocking(output_fd, False)
        self._output, self._dropped = bytearray(), 0
        self.output_limit = OUTPUT_LIMIT
        self.believe_faults = True          # a fault the child reports is the grader's (see Sandbox)
        self._next_id = 0
        self.alive = True

    def _pump_output(self, chunks=16):
        """Read what the child printed so far, a bounded amount per wake-up so that the caller's
        deadline is seen; keep output_limit bytes, count the rest."""
        for _ in range(chunks):
            if self._output_fd is None:
                return
            try:
                chunk = os.read(self._output_fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                os.close(self._output_fd)
                self._output_fd = None
                return
            room = max(0, self.output_limit - len(self._output))
            self._output += chunk[:room]
            self._dropped += len(chunk) - min(room, len(chunk))

    def take_output(self):
        """What the child printed since the last take, as kept: (bytes, how many more were cut)."""
        self._pump_output()
        taken = bytes(self._output), self._dropped
        self._output, self._dropped = bytearray(), 0
        return taken

    def _waiter(self, limit):
        """Block until `fd` is readable, draining output meanwhile, until `limit` ends the call."""
        def wait(fd):
            while True:
                watched = [fd] + ([self._output_fd] if self._output_fd is not None else [])
                readable = select.select(watched, [], [], limit.wait())[0]
                if self._output_fd in readable:
                    self._pump_output()
                if fd in readable:
                    return
        return wait

    def send(self, data, limit):
        """Write a request until `limit` ends the call: a child may stop reading its pipe."""
        view = memoryview(data)
        while view:
            if select.select([], [self._request], [], limit.wait())[1]:
                view = view[os.write(self._request, view):]

    def call(self, module, function, args, kwargs, limit, device, echo=False):
        """Run module.function(*args, **kwargs) in the child; its value, with tensors on `device`.

        With `echo`, the value is (returned value, the positional arguments after the call): tensor
        arguments go in memory shared with the child and are read back here, so what the call did
        to them is seen, not reported; other arguments come back as None.
        """
        from grader.judge import wire

        self._next_id += 1
        args, placed = (self._place(args) if echo else (list(args), []))
        request = {"id": self._next_id, "module": module, "function": function,
                   "args": wire.encode(args), "kwargs": wire.encode(kwargs)}
        try:
            self.send(wire.frame(request), limit)
            answer = wire.recv(self._answer, self._waiter(limit), self.answer_bytes + wire.SLACK)
        except TimeoutError:
            self.kill()
            raise CallFailed(function, "timeout", "no answer in time") from None
        except Backstop:
            self.kill()
            raise CallFailed(function, "grader_fault", f"the machine was too busy: no answer after "
                             f"{limit.clock.wall():.0f} s, of which your code was charged only "
                             f"{limit.clock.charged():.1f} s") from None
        except (EOFError, OSError):
            raise CallFailed(function, "crashed", self._ended()) from None
        except wire.WireError as error:
            self.kill()
            raise CallFailed(function, "bad_answer", f"its answer was not plain data: {error}") from None
        try:
            answer = wire.sanitize(answer, device)
            if type(answer) is not dict:
                raise wire.WireError("an answer that is not a record")
            if answer["id"] != self._next_id:
                raise wire.WireError("an answer to another call")
            if answer["ok"] is True:
                return (answer["value"], self._read_back(placed)) if echo else answer["value"]
            error = answer["error"]
            if type(error) is not dict:
                raise wire.WireError("an error that is not a record")
            kind, text = str(error["type"])[:100], str(error["message"])[:MESSAGE_LIMIT]
            if error["not_implemented"]:
                raise CallFailed(function, "not_implemented", str(error["not_implemented"])[:100])
            if kind == "WireError":
                raise CallFailed(function, "bad_answer", f"returned {text}")
            if kind == "GraderFault":       # the child's word: believed for one more try, not for ever
                raise CallFailed(function, "grader_fault" if self.believe_faults else "bad_answer",
                                 f"the grader could not carry its answer ({text})")
            if kind == "ForbiddenCall":         # grader/judge/trap.py: a call the lab forbids
                raise CallFailed(function, "forbidden", text)
            where = [str(w)[:200] for w in error["where"][-FRAMES:]]
            raise CallFailed(function, "raised", f"{kind}: {text}" if text else kind, where)
        except CallFailed:
            raise
        except Exception as error:      # any field of the wrong kind: a tensor for an id, say
            self.kill()
            raise CallFailed(function, "bad_answer", f"its answer was malformed ({type(error).__name__})") from None

    def _place(self, args):
        """Tensor arguments into the shared memory: (arguments with markers, where each went)."""
        import torch

        from grader.judge import wire

        placed, offset, marked = [], 0, []
        for value in args:
            if not isinstance(value, torch.Tensor):
                placed.append(None)
                marked.append(value)
                continue
            data = wire.raw_bytes(value)
            if offset + len(data) > wire.SHARED_BYTES:
                raise ValueError("arguments too large to share with the child")
            self._shared[offset:offset + len(data)] = data
            placed.append((offset, len(data), value.dtype, tuple(value.shape), value.device))
            marked.append({wire.SHARED: offset, "dtype": str(value.dtype).removeprefix("torch."),
                           "shape": list(value.shape), "device": str(value.device)})
            offset += -(-len(data) // 64) * 64
        return marked, placed

    def _read_back(self, placed):
        """The shared tensor arguments as they are now in memory; None for the others."""
        import torch

        after = []
        for where in placed:
            if where is None:
                after.append(None)
                continue
            offset, size, dtype, shape, device = where
            raw = torch.frombuffer(bytearray(self._shared[offset:offset + size]) or bytearray(1), dtype=torch.uint8)
            after.append(raw[:size].view(dtype).reshape(shape).to(device))
        return after

    def _ended(self):
        """Why the child is gone, from its wait status (the zygote is its parent)."""
        try:
            status = self.zygote.ask({"op": "status", "pid": self.pid, "timeout": 2.0})["status"]
        except ZygoteGone as gone:
            self.close()
            return f"the sandbox was stopped while your code ran ({gone})"
        self.kill()
        if status is None:
            return "the process running your code closed its channel to the grader"
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            hint = " (out of memory?)" if os.WTERMSIG(status) == signal.SIGKILL else ""
            return f"the process running your code was killed by {name}{hint}"
        return f"the process running your code exited with status {os.waitstatus_to_exitcode(status)} " \
               "(sys.exit / os._exit?)"

    def kill(self):
        """Kill the child and everything in its session; idempotent."""
        if self.alive:
            try:
                self.zygote.ask({"op": "kill", "pid": self.pid})
            except ZygoteGone:
                pass
        self.close()

    def close(self):
        self.alive = False
        self._pump_output()
        if not self._shared.closed:
            self._shared.close()
        for fd in (self._request, self._answer, self._output_fd):
            if fd is not None and fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._request = self._answer = -1
        self._output_fd = None


# -- one submission's calls -----------------------------------------------------------------------
class Sandbox:
    """The children grading one submission: a main child reused call after call, and one child
    of its own for each call run apart. A child that fails is replaced by a fresh fork. Every
    call ends once it has been charged its limit or what is left of the submission's time budget
    (`budget` seconds charged to all its calls), whatever it asks for. Wall time only backs these
    up, `backstop` times over (lab.yaml): past it the grader was at fault, not the submission."""

    def __init__(self, lab, files, zygote, budget=None):
        self.lab, self.files, self.zygote = lab, files, zygote
        self.device = "cpu"         # where tensors go; the runner sets the grading device
        self.budget = budget or lab.manifest.time_budget
        self.spent = 0.0            # seconds charged to the calls that have ended
        self.started = None         # when the first child was up: the zygote's start is ours
        self.printed = Printed()    # what calls printed, until their check takes it
        self.believe_faults = True  # a grader fault a child reports: believed on a first try only,
        #                             or a submission could fake one and stay ungraded for ever
        self._main = None
        self._children = []
        self._lock = threading.Lock()

    def _spawn(self, function, replace=None):
        self._left(function)
        from grader.judge import wire

        try:
            forked = self.zygote.fork(self.device, self.lab.manifest.memory_mb)
        except ZygoteGone as gone:
            if gone.never_started:
                raise SetupError(str(gone)) from None
            raise CallFailed(function, "crashed", str(gone)) from None
        own_namespace = self.zygote.launcher.name == "bubblewrap"
        child = Child(self.zygote, *forked, host_pid=host_pid(forked.pid, self.zygote.process.pid)
                      if own_namespace else forked.pid, answer_bytes=self.lab.manifest.answer_mb * 2**20)
        child.output_limit, child.believe_faults = self.printed.limit, self.believe_faults
        try:
            setup = {"files": {**self.files, **(replace or {})}, "answer_bytes": child.answer_bytes,
                     "forbid": self.lab.forbidden, "student": [*self.lab.manifest.student_files]}
            child.send(wire.frame(setup), Limit(WallClock(), float("inf"), FILES_TIMEOUT))
        except Backstop:
            child.kill()
            raise CallFailed(function, "grader_fault", "a new child did not take its files in time") from None
        with self._lock:
            self._children.append(child)
            if self.started is None:
                self.started = time.monotonic()
        return child

    def _left(self, function):
        """Seconds of the budget left to charge; CallFailed("budget") when none are, and
        CallFailed("grader_fault") once the submission's wall-time backstop is past."""
        backstop = self.lab.manifest.backstop * self.budget
        if self.started is not None and time.monotonic() - self.started > backstop:
            raise CallFailed(function, "grader_fault", f"the machine was too busy: the submission was "
                             f"not graded within {backstop:g} s")
        left = self.budget - self.spent
        if left <= 0:
            raise CallFailed(function, "budget", f"the submission's time budget of {self.budget:g} s "
                             "ran out: the remaining checks were not run")
        return left

    def call(self, function: str, args: Sequence[Any] = (), kwargs: dict | None = None,
             timeout: float | None = None, echo: bool = False) -> Any:
        """Call a student function in the main child."""
        if self._main is None or not self._main.alive:
            self._main = self._spawn(function)
        return self._call(self._main, function, args, kwargs or {}, timeout, echo)

    def submit(self, function: str, args: Sequence[Any] = (), kwargs: dict | None = None,
               timeout: float | None = None, replace: dict[str, bytes] | None = None) -> Future:
        """Start a call in a child of its own (run in parallel); returns a Future. `replace`: files
        that child gets instead of the submission's (the lab's own, to grade a function on its own)."""
        future = Future()

        def run():
            try:
                child = self._spawn(function, replace)
                future.set_result(self._call(child, function, args, kwargs or {}, timeout))
                child.kill()
            except BaseException as error:
                future.set_exception(error)

        threading.Thread(target=run, daemon=True).start()
        return future

    def _call(self, child, function, args, kwargs, timeout, echo=False):
        module = self.lab.module_of(function)
        manifest = self.lab.manifest
        timeout = timeout or manifest.timeouts.get(function, manifest.call_timeout)
        left = self._left(function)
        clock = CallClock(child.meter)
        limit = Limit(clock, min(timeout, left), manifest.backstop * timeout)
        try:
            value = child.call(module, function, args, kwargs, limit, self.device, echo)
            if os.environ.get("GRADER_FAULT") == function:      # tests simulate a grader fault
                raise CallFailed(function, "grader_fault", "a simulated grader fault (GRADER_FAULT)")
            return value
        except CallFailed as failure:
            if failure.kind == "raised":
                failure.where, failure.given = learner_frames(failure.where, self.lab.manifest.student_files)
            if failure.kind == "timeout" and left < timeout:
                self._charge(clock)
                self._left(function)            # raises: the budget ended the call
            if failure.kind == "timeout":
                failure.message = f"no answer within {timeout:g} s of its own time (an endless loop?)"
            raise
        finally:
            self._charge(clock)
            self.printed.keep(function, *child.take_output())

    def _charge(self, clock):
        """Add a call's charged time to the submission's, once."""
        if not clock.billed:
            clock.billed = True
            charged = clock.charged()
            with self._lock:
                self.spent += charged

    def close(self):
        with self._lock:
            children, self._children = self._children, []
        for child in children:
            child.kill()
