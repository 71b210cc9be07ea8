"""The judge's side of the boundary: the zygote, children, and calls with time limits.

Student code runs only in children (grader/judge/child.py). A zygote process imports torch once and
forks a child per need: one for the checks of a submission, one more for each call run apart
(`submit`). The zygote never sees a submission: the judge sends each child its files down the
child's own pipe. A call sends plain data, waits at most its time limit (and never past the
submission's time budget), and reads back plain data through grader/judge/wire.py, with every size
limit applied here. A child that hangs, dies, floods its output or answers garbage is killed
and replaced; a zygote that stops answering is replaced within seconds; the judge carries on.
Batch grading keeps one zygote per worker and resets it between submissions: every process of
the last submission is killed, and inside bubblewrap each child had mounts of its own.
"""
import itertools
import mmap
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from grader.judge.cgroup import Cgroup
from grader.judge.child import PR_SET_CHILD_SUBREAPER, below, libc, processes, signal_all, stop_then_kill
from grader.judge.launchers import ENV, SCRATCH_BYTES

OUTPUT_LIMIT = 2000          # bytes of a call's output kept for the report
START_TIMEOUT = 120.0        # seconds for the zygote to import torch and say it is ready
ORDER_TIMEOUT = 5.0          # seconds for the zygote to answer an order: past it, it is replaced
RESET_TIMEOUT = 20.0         # seconds for it to kill every process of a submission
FILES_TIMEOUT = 10.0         # seconds for a new child to take its files
MESSAGE_LIMIT = 1000         # characters of an error message kept from a child
CPU_SECONDS = 600            # a child's CPU time, a backstop behind the per-call limits


class CallFailed(Exception):
    """A call of student code that did not return a value.

    kind: "raised", "not_implemented", "timeout", "budget", "crashed" or "bad_answer".
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


# -- the zygote -----------------------------------------------------------------------------------
class ZygoteGone(Exception):
    """The zygote died (student code can kill it) or never started."""


class Zygote:
    """The process that forks children; it has imported torch and runs no student code."""

    live = set()                    # pids of this process's running zygotes
    _serial = itertools.count()     # names their control groups

    def __init__(self, launcher):
        self.launcher = launcher
        self._lock = threading.RLock()
        if launcher.name == "process":      # orphans of a killed zygote come back to us, to be killed
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
        self._start()

    def _start(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="grade-"))
        self._log = tempfile.TemporaryFile()
        ours, theirs = socket.socketpair()
        argv = self.launcher.argv(self.scratch, theirs.fileno())
        self.cgroup = Cgroup.make(f"grader-{os.getpid()}-{next(Zygote._serial)}")
        self.process = subprocess.Popen(
            self.cgroup.wrap(argv) if self.cgroup else argv, pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=ENV,
            cwd=self.scratch, start_new_session=True)
        Zygote.live.add(self.process.pid)
        theirs.close()
        self.control = ours
        self.ready = self.broken = False

    def ask(self, order, fds=()):
        """Send the zygote an order (with file descriptors to hand over); return its reply.
        A zygote that does not answer within ORDER_TIMEOUT is broken, and replaced at the next fork."""
        from grader.judge import wire  # imports torch: not before the zygote is on its way

        with self._lock:
            if self.broken:
                raise ZygoteGone("the sandbox's zygote stopped answering")
            try:
                if not self.ready:
                    self.control.settimeout(START_TIMEOUT)
                    wire.recv_with_fds(self.control, limit=wire.SMALL_FRAME)
                    self.ready = True
                self.control.settimeout(RESET_TIMEOUT if order["op"] == "reset" else ORDER_TIMEOUT)
                wire.send_with_fds(self.control, order, fds)
                reply, fds = wire.recv_with_fds(self.control, limit=wire.SMALL_FRAME)
                for fd in fds:      # nothing should hand the judge descriptors
                    os.close(fd)
                reply = wire.sanitize(reply)
            except (OSError, EOFError, wire.WireError) as error:
                self.broken = True
                raise ZygoteGone(self._why(error)) from None
        if type(reply) is not dict or "error" in reply:
            raise ZygoteGone(f"the sandbox refused: {str(reply)[:MESSAGE_LIMIT]}")
        return reply

    def _why(self, error):
        self.process.poll()
        said = ""
        if not self.ready:          # what it said while starting (bwrap's own errors); later its
            self._log.seek(0)       # output is nobody's business: children could have written it
            said = self._log.read(800).decode("utf-8", "replace").strip()
        return f"the sandbox's zygote stopped ({error or type(error).__name__}; " \
               f"exit status {self.process.returncode}){': ' + said if said else ''}"

    def fork(self, files, device, memory_mb):
        """A new child, handed `files` down its own pipe, ready for calls; a zygote that died or
        stopped answering is replaced first."""
        from grader.judge import wire

        with self._lock:
            if self.broken or self.process.poll() is not None:
                self.close()
                self._start()
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        output_r, output_w = os.pipe()
        shared = os.memfd_create("grader-arguments", os.MFD_CLOEXEC)
        os.ftruncate(shared, wire.SHARED_BYTES)
        order = {"op": "fork", "device": str(device), "memory_mb": memory_mb, "cpu_seconds": CPU_SECONDS,
                 "scratch_bytes": SCRATCH_BYTES, "own_user": self.launcher.own_user}
        try:
            reply = self.ask(order, [request_r, answer_w, output_w, shared])
        except ZygoteGone:
            for fd in (request_w, answer_r, output_r):
                os.close(fd)
            raise
        finally:
            for fd in (request_r, answer_w, output_w):
                os.close(fd)
            memory = mmap.mmap(shared, wire.SHARED_BYTES)
            os.close(shared)
        child = Child(self, reply.get("pid"), request_w, answer_r, output_r, memory)
        try:
            child.send(wire.frame({"files": files}), time.monotonic() + FILES_TIMEOUT)
        except TimeoutError:
            child.kill()
            raise ZygoteGone("a new child did not take its files in time") from None
        return child

    def reset(self):
        """Between submissions: kill every process of the last one (and wipe a plain process's files)."""
        with self._lock:
            try:
                self.ask({"op": "reset"})
            except ZygoteGone:
                self.close()
                self._start()

    def close(self):
        if self.launcher.name == "process" and not self.broken and self.process.poll() is None:
            try:                    # the zygote kills its children's daemons while it can
                self.ask({"op": "reset"})
            except ZygoteGone:
                pass
        if self.process.poll() is None:
            # bubblewrap's end cannot signal a zygote that changed user: the zygote, PID 1 of its
            # namespace, is killed here, and every process in that namespace with it
            zygotes = children_of(self.process.pid)
            signal_all(zygotes, signal.SIGKILL)
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + 2.0       # gone when its namespace is: PID 1 is a zombie
            while not _dead(zygotes) and time.monotonic() < deadline:   # only once all else exited
                for pid in zygotes:                 # ours to reap if it came back to us
                    try:
                        os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        pass
                time.sleep(0.01)
        self.process.wait()
        Zygote.live.discard(self.process.pid)
        if self.cgroup:             # what is still in the group belonged to this zygote
            stop_then_kill(self.cgroup.pids)
            self.cgroup.remove()
        if self.launcher.name == "process":
            sweep_orphans()
        self.control.close()
        self._log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _dead(pids):
    """Whether every one of `pids` has exited (a zombie waits only to be reaped)."""
    table = processes()
    return all(table.get(pid, (0, 0, "Z"))[2] == "Z" for pid in pids)


def children_of(parent):
    return [pid for pid, (ppid, _, _) in processes().items() if ppid == parent]


def sweep_orphans():
    """Kill what came back to us when a plain-process zygote died: its children, still dying,
    and their daemons. We are their subreaper; what we start ourselves stays in our session,
    zygotes have sessions of their own and are known, so any other child of ours in another
    session is a stray, and so is everything below it."""
    def strays():
        table = processes()
        ours = [pid for pid, (parent, session, _) in table.items()
                if parent == os.getpid() and session != os.getsid(0) and pid not in Zygote.live]
        for pid in ours:            # the dead are reaped as we go: they cannot come back
            if table[pid][2] == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        return below([pid for pid in ours if table[pid][2] != "Z"], table)

    for pid in stop_then_kill(strays):
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:   # not ours: its own parent reaps it
            pass


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
            if answer["id"] != self._next_id:
                raise wire.WireError("an answer to another call")
            if answer["ok"] is True:
                return (answer["value"], self._read_back(placed)) if echo else answer["value"]
            error = answer["error"]
            kind, text = str(error["type"])[:100], str(error["message"])[:MESSAGE_LIMIT]
            if error["not_implemented"]:
                raise CallFailed(function, "not_implemented", str(error["not_implemented"])[:100])
            if kind == "WireError":
                raise CallFailed(function, "bad_answer", f"returned {text}")
            where = [str(w)[:200] for w in error["where"][:3]]
            raise CallFailed(function, "raised", f"{kind}: {text}" if text else kind, where)
        except (KeyError, TypeError, wire.WireError) as error:
            self.kill()
            raise CallFailed(function, "bad_answer", f"its answer was malformed ({error})") from None

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
        try:
            child = self.zygote.fork(self.files, self.device, self.lab.manifest.memory_mb)
        except ZygoteGone as gone:
            raise CallFailed(function, "crashed", str(gone)) from None
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
