"""The judge's side of the boundary: children, and calls of student code with time limits.

Student code runs only in children (grader/judge/child.py), forked by a zygote
(grader/judge/zygote.py): one for the checks of a submission, one more for each call run apart
(`submit`). The judge sends each child the submission's files down the child's own pipe. A call
sends plain data, waits at most its time limit (and never past the submission's time budget),
and reads back plain data through grader/judge/wire.py, with every size limit applied here. A
child that hangs, dies, floods its output or answers garbage is killed and replaced; the judge
carries on.
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
from grader.judge.zygote import MESSAGE_LIMIT, ZygoteGone

OUTPUT_LIMIT = 2000          # bytes of a call's output kept for the report
FILES_TIMEOUT = 10.0         # seconds for a new child to take its files


class CallFailed(Exception):
    """A call of student code that did not return a value.

    kind: "raised", "not_implemented", "timeout", "budget", "crashed", "bad_answer" or "forbidden".
    """

    def __init__(self, function, kind, message, where=(), output=""):
        super().__init__(message)
        self.function, self.kind, self.message = function, kind, message
        self.where, self.output = list(where), output


def write_files(folder, files):
    """Lay out {relative path: bytes} under `folder`."""
    for name, data in files.items():
        (Path(folder) / name).parent.mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_bytes(data)


# -- children -------------------------------------------------------------------------------------
class Child:
    """One forked child: request and answer pipes, and its output, kept up to a limit."""

    def __init__(self, zygote, pid, request_fd, answer_fd, output_fd, shared):
        self.zygote, self.pid, self._shared = zygote, pid, shared
        self._request, self._answer, self._output_fd = request_fd, answer_fd, output_fd
        os.set_blocking(request_fd, False)
        os.set_blocking(output_fd, False)
        self._output, self._dropped = bytearray(), 0
        self._next_id = 0
        self.alive = True

    def _pump_output(self, chunks=16):
        """Read what the child printed so far, a bounded amount per wake-up so that the caller's
        deadline is seen; keep OUTPUT_LIMIT bytes, count the rest."""
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
            room = max(0, OUTPUT_LIMIT - len(self._output))
            self._output += chunk[:room]
            self._dropped += len(chunk) - min(room, len(chunk))

    def take_output(self):
        """What the child printed since the last take, cut to a sane size."""
        self._pump_output()
        text = self._output.decode("utf-8", "replace")
        if self._dropped:
            text += f"\n[... {self._dropped} more bytes of output cut]"
        self._output, self._dropped = bytearray(), 0
        return text

    def _waiter(self, deadline):
        """Block until `fd` is readable, draining output meanwhile; TimeoutError at deadline."""
        def wait(fd):
            while True:
                left = deadline - time.monotonic()
                watched = [fd] + ([self._output_fd] if self._output_fd is not None else [])
                readable = select.select(watched, [], [], left)[0] if left > 0 else []
                if not readable:
                    raise TimeoutError
                if self._output_fd in readable:
                    self._pump_output()
                if fd in readable:
                    return
        return wait

    def send(self, data, deadline):
        """Write a request, giving up at the deadline: a child may stop reading its pipe."""
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [self._request], [], left)[1]:
                raise TimeoutError
            view = view[os.write(self._request, view):]

    def call(self, module, function, args, kwargs, timeout, device, echo=False):
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
        deadline = time.monotonic() + timeout
        try:
            self.send(wire.frame(request), deadline)
            answer = wire.recv(self._answer, self._waiter(deadline))
        except TimeoutError:
            self.kill()
            raise CallFailed(function, "timeout", "no answer in time") from None
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
            if kind == "ForbiddenCall":         # grader/judge/trap.py: a call the lab forbids
                raise CallFailed(function, "forbidden", text)
            where = [str(w)[:200] for w in error["where"][:3]]
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
            data = value.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
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
    call ends by the submission's time budget (`budget` seconds from its first child's start),
    whatever it asks for."""

    def __init__(self, lab, files, zygote, budget=None):
        self.lab, self.files, self.zygote = lab, files, zygote
        self.device = "cpu"         # where tensors go; the runner sets the grading device
        self.budget = budget or lab.manifest.time_budget
        self.deadline = None        # set when the first child is up: the zygote's start is ours
        self._main = None
        self._children = []
        self._lock = threading.Lock()

    def _spawn(self, function):
        self._left(function)
        from grader.judge import wire

        try:
            child = Child(self.zygote, *self.zygote.fork(self.device, self.lab.manifest.memory_mb))
        except ZygoteGone as gone:
            if gone.never_started:
                raise SetupError(str(gone)) from None
            raise CallFailed(function, "crashed", str(gone)) from None
        try:
            setup = {"files": self.files, "forbid": self.lab.forbidden, "student": [*self.lab.manifest.student_files]}
            child.send(wire.frame(setup), time.monotonic() + FILES_TIMEOUT)
        except TimeoutError:
            child.kill()
            raise CallFailed(function, "crashed", "a new child did not take its files in time") from None
        with self._lock:
            self._children.append(child)
            if self.deadline is None:
                self.deadline = time.monotonic() + self.budget
        return child

    def _left(self, function):
        """Seconds left of the budget; CallFailed("budget") when none are."""
        left = self.budget if self.deadline is None else self.deadline - time.monotonic()
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
               timeout: float | None = None) -> Future:
        """Start a call in a child of its own (run in parallel); returns a Future."""
        future = Future()

        def run():
            try:
                child = self._spawn(function)
                future.set_result(self._call(child, function, args, kwargs or {}, timeout))
                child.kill()
            except BaseException as error:
                future.set_exception(error)

        threading.Thread(target=run, daemon=True).start()
        return future

    def _call(self, child, function, args, kwargs, timeout, echo=False):
        module = self.lab.module_of(function)
        timeout = timeout or self.lab.manifest.call_timeout
        left = self._left(function)
        try:
            return child.call(module, function, args, kwargs, min(timeout, left), self.device, echo)
        except CallFailed as failure:
            failure.output = child.take_output()
            if failure.kind == "timeout" and left < timeout:
                self._left(function)            # raises: the budget ended the call
            if failure.kind == "timeout":
                failure.message = f"no answer within {timeout:g} s (an endless loop?)"
            raise
        finally:
            child.take_output()

    def close(self):
        with self._lock:
            children, self._children = self._children, []
        for child in children:
            child.kill()
