"""The judge's side of the boundary: the zygote, children, and calls with time limits.

Student code runs only in children (grader/child.py). A zygote process imports torch once and
forks a child per need: one for the checks of a submission, one more for each call run apart
(`submit`). A call sends plain data, waits at most its time limit, and reads back plain data
through grader/wire.py. A child that hangs, dies, floods its output or answers garbage is
killed and replaced; the judge carries on. Batch grading keeps one zygote per worker and
resets it between submissions.
"""
import functools
import itertools
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from grader.labs import ROOT, LabError

CHILD = Path(__file__).with_name("child.py")
WIRE = Path(__file__).with_name("wire.py")
HOME = "/home/student"       # where children work inside bubblewrap
SCRATCH_BYTES = 256 * 2**20  # what sandboxed children may write, in their home and in /tmp
OUTPUT_LIMIT = 2000          # bytes of a call's output kept for the report
START_TIMEOUT = 120.0        # seconds for the zygote to import torch and say it is ready
CPU_SECONDS = 600            # a child's CPU time, a backstop behind the per-call limits
ENV = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "PYTHONHASHSEED": "0", "LANG": "C.UTF-8"}


class CallFailed(Exception):
    """A call of student code that did not return a value.

    kind: "raised", "not_implemented", "timeout", "crashed" or "bad_answer".
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


# -- launchers: how the zygote is started ---------------------------------------------------------
class ProcessLauncher:
    """The zygote as a plain process (no OS sandbox): the fallback everywhere."""

    name = "process"

    def argv(self, scratch, control_fd):
        return [sys.executable, "-I", str(CHILD), str(scratch), str(control_fd), "plain"]


class BubblewrapLauncher:
    """The zygote in bubblewrap: read-only system and Python, a private home and /tmp of limited
    size, no network, its own PID namespace, no capabilities. Its children get the handout and
    submission files over the control socket and see nothing of the grader, the reference or
    the host: only Python's own folders are bound, and those must not hold the course."""

    name = "bubblewrap"

    def argv(self, scratch, control_fd):
        binds = []
        for path in ["/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/sys", *python_prefixes()]:
            if Path(path).exists():
                binds += ["--ro-bind", path, path]
        if any(ROOT.is_relative_to(p) for p in python_prefixes()):
            raise LabError(f"Python's environment {sys.prefix} holds the course folder {ROOT}: the sandbox "
                           "could not hide the reference and the checks. Make the venv in a subfolder (.venv)")
        for device in sorted(Path("/dev").glob("nvidia*")):              # CUDA grading
            binds += ["--dev-bind", str(device), str(device)]
        return ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL",
                "--proc", "/proc", "--dev", "/dev",
                "--size", str(SCRATCH_BYTES), "--tmpfs", "/tmp",          # first: Python may live
                "--size", str(SCRATCH_BYTES), "--tmpfs", HOME, *binds,    # under /tmp, or a home
                "--ro-bind", str(CHILD), "/grader/child.py", "--ro-bind", str(WIRE), "/grader/wire.py",
                "--chdir", HOME, "--setenv", "HOME", HOME,
                sys.executable, "-I", "/grader/child.py", HOME, str(control_fd), "sandboxed"]


def python_prefixes():
    """Folders the Python running the grader lives in (a venv, and the Python it was made from)."""
    return sorted({str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


@functools.cache
def bubblewrap_works():
    """Whether bwrap is installed and can make its namespaces here (it cannot in some containers)."""
    if not shutil.which("bwrap"):
        return False
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc",
                            "--dev", "/dev", "true"], capture_output=True)
    return probe.returncode == 0


def launcher_for(mode):
    """The launcher for --sandbox MODE: "auto" (bubblewrap when it works, else a plain process),
    "required" (bubblewrap or refuse) or "process"."""
    if mode != "process" and bubblewrap_works():
        return BubblewrapLauncher()
    if mode == "required":
        raise LabError("--sandbox required: bubblewrap is not installed or cannot run here "
                       "(Debian/Ubuntu: apt install bubblewrap)")
    return ProcessLauncher()


# -- the zygote -----------------------------------------------------------------------------------
class ZygoteGone(Exception):
    """The zygote died (student code can kill it) or never started."""


class Zygote:
    """The process that forks children; it has imported torch and runs no student code."""

    def __init__(self, launcher):
        self.launcher = launcher
        self._lock = threading.RLock()
        self._names = itertools.count()
        self._start()

    def _start(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="grade-"))
        self._log = tempfile.TemporaryFile()
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            self.launcher.argv(self.scratch, theirs.fileno()), pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=ENV,
            cwd=self.scratch, start_new_session=True)
        theirs.close()
        self.control = ours
        self.ready = False

    def ask(self, order, fds=()):
        """Send the zygote an order (with file descriptors to hand over); return its reply."""
        from grader import wire     # imports torch: not before the zygote is on its way

        with self._lock:
            try:
                if not self.ready:
                    self.control.settimeout(START_TIMEOUT)
                    wire.recv_with_fds(self.control)
                    self.ready = True
                self.control.settimeout(30)
                wire.send_with_fds(self.control, order, fds)
                reply = wire.recv_with_fds(self.control)[0]
            except (OSError, EOFError, wire.WireError) as error:
                raise ZygoteGone(self._why(error)) from None
        if "error" in reply:
            raise ZygoteGone(f"the sandbox refused: {reply['error']}")
        return reply

    def _why(self, error):
        self.process.poll()
        self._log.seek(0)
        said = self._log.read()[-800:].decode("utf-8", "replace").strip()
        return f"the sandbox's zygote stopped ({error or type(error).__name__}; " \
               f"exit status {self.process.returncode}){': ' + said if said else ''}"

    def fork(self, files, device, memory_mb):
        """A new child holding `files`, ready for calls; restarts the zygote if it died."""
        with self._lock:
            if self.process.poll() is not None:
                self.close()
                self._start()
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        output_r, output_w = os.pipe()
        order = {"op": "fork", "name": f"w{next(self._names)}", "files": files, "device": str(device),
                 "memory_mb": memory_mb, "cpu_seconds": CPU_SECONDS}
        try:
            pid = self.ask(order, [request_r, answer_w, output_w])["pid"]
        except ZygoteGone:
            for fd in (request_w, answer_r, output_r):
                os.close(fd)
            raise
        finally:
            for fd in (request_r, answer_w, output_w):
                os.close(fd)
        return Child(self, pid, request_w, answer_r, output_r)

    def reset(self):
        """Between submissions: kill every child and wipe their files."""
        with self._lock:
            try:
                self.ask({"op": "reset"})
            except ZygoteGone:
                self.close()
                self._start()

    def close(self):
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        self.control.close()
        self._log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


# -- children -------------------------------------------------------------------------------------
class Child:
    """One forked child: request and answer pipes, and its output, kept up to a limit."""

    def __init__(self, zygote, pid, request_fd, answer_fd, output_fd):
        self.zygote, self.pid = zygote, pid
        self._request, self._answer, self._output_fd = request_fd, answer_fd, output_fd
        os.set_blocking(request_fd, False)
        os.set_blocking(output_fd, False)
        self._output, self._dropped = bytearray(), 0
        self._next_id = 0
        self.alive = True

    def _pump_output(self):
        """Read what the child printed so far; keep OUTPUT_LIMIT bytes, count the rest."""
        while self._output_fd is not None:
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

    def _send(self, data, deadline):
        """Write a request, giving up at the deadline: a child may stop reading its pipe."""
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [self._request], [], left)[1]:
                raise TimeoutError
            view = view[os.write(self._request, view):]

    def call(self, module, function, args, kwargs, timeout, device, echo=False):
        """Run module.function(*args, **kwargs) in the child; its value, with tensors on `device`.

        With `echo`, the value is (returned value, the positional arguments after the call).
        """
        from grader import wire

        self._next_id += 1
        request = {"id": self._next_id, "module": module, "function": function, "echo": echo,
                   "args": wire.encode(list(args)), "kwargs": wire.encode(kwargs)}
        deadline = time.monotonic() + timeout
        try:
            self._send(wire.frame(request), deadline)
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
                return (answer["value"], answer["args"]) if echo else answer["value"]
            error = answer["error"]
            if error["not_implemented"]:
                raise CallFailed(function, "not_implemented", str(error["not_implemented"]))
            if error["type"] == "WireError":
                raise CallFailed(function, "bad_answer", f"returned {error['message']}")
            message = f"{error['type']}: {error['message']}" if error["message"] else error["type"]
            raise CallFailed(function, "raised", message, error["where"])
        except (KeyError, TypeError, wire.WireError) as error:
            self.kill()
            raise CallFailed(function, "bad_answer", f"its answer was malformed ({error})") from None

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
    of its own for each call run apart. A child that fails is replaced by a fresh fork."""

    def __init__(self, lab, files, zygote):
        self.lab, self.files, self.zygote = lab, files, zygote
        self.device = "cpu"         # where tensors go; the runner sets the grading device
        self._main = None
        self._children = []
        self._lock = threading.Lock()

    def _spawn(self, function):
        try:
            child = self.zygote.fork(self.files, self.device, self.lab.manifest.memory_mb)
        except ZygoteGone as gone:
            raise CallFailed(function, "crashed", str(gone)) from None
        with self._lock:
            self._children.append(child)
        return child

    def call(self, function, args=(), kwargs=None, timeout=None, echo=False):
        """Call a student function in the main child."""
        if self._main is None or not self._main.alive:
            self._main = self._spawn(function)
        return self._call(self._main, function, args, kwargs or {}, timeout, echo)

    def submit(self, function, args=(), kwargs=None, timeout=None):
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
        try:
            return child.call(module, function, args, kwargs, timeout, self.device, echo)
        except CallFailed as failure:
            failure.output = child.take_output()
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
