"""The judge's side of the boundary: workspaces, child processes, calls with time limits.

Student code runs only in children (grader/child.py). A call sends plain data, waits at most
its time limit, and reads back plain data through grader/wire.py. A child that hangs, dies,
floods its output or answers garbage is killed and replaced; the judge carries on.
"""
import functools
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from grader.labs import LabError

CHILD = Path(__file__).with_name("child.py")
WIRE = Path(__file__).with_name("wire.py")
HOME = "/home/student"       # the child's working directory inside bubblewrap
SCRATCH_BYTES = 256 * 2**20  # what a sandboxed child may write, in its home and in /tmp
OUTPUT_LIMIT = 2000          # bytes of a call's output kept for the report
START_TIMEOUT = 120.0        # seconds for a child to import torch and say it is ready
CPU_SECONDS = 600            # a child's total CPU time, a backstop behind the per-call limits


class CallFailed(Exception):
    """A call of student code that did not return a value.

    kind: "raised", "not_implemented", "timeout", "crashed" or "bad_answer".
    """

    def __init__(self, function, kind, message, where=(), output=""):
        super().__init__(message)
        self.function, self.kind, self.message = function, kind, message
        self.where, self.output = list(where), output


class Workspace:
    """A scratch copy of the handout with the submission's student files laid over it."""

    def __init__(self, lab, submission=None):
        self.root = Path(tempfile.mkdtemp(prefix=f"grade-{lab.name}-"))
        self.path = self.root / "work"
        shutil.copytree(lab.handout, self.path, ignore=shutil.ignore_patterns("__pycache__"))
        for module in lab.child_modules:
            shutil.copy(module, self.path / module.name)
        self.missing = []           # student files the submission lacks (stubs stand in)
        if submission is not None:
            for name in lab.manifest.student_files:
                source = Path(submission) / name
                if source.is_file():
                    shutil.copy(source, self.path / name)
                else:
                    self.missing.append(name)

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


class ProcessLauncher:
    """Runs the child as a plain process (no OS sandbox): the fallback everywhere."""

    name = "process"

    def argv(self, workspace, read_fd, write_fd, memory_mb):
        return [sys.executable, "-I", str(CHILD), str(workspace.path),
                str(read_fd), str(write_fd), str(memory_mb), str(CPU_SECONDS)]


class Child:
    """One child process: request and answer pipes, and its output, kept up to a limit."""

    def __init__(self, launcher, workspace, memory_mb):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        argv = launcher.argv(workspace, to_child_r, from_child_w, memory_mb)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "HOME": str(workspace.path)}
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            pass_fds=(to_child_r, from_child_w), cwd=workspace.path, env=env,
            start_new_session=True)
        os.close(to_child_r)
        os.close(from_child_w)
        self._output_fd = self.process.stdout.fileno()
        os.set_blocking(self._output_fd, False)
        self._output, self._dropped = bytearray(), 0
        self._ready = False
        self._next_id = 0

    def _pump_output(self):
        """Read what the child printed so far; keep OUTPUT_LIMIT bytes, count the rest."""
        while self._output_fd is not None:
            try:
                chunk = os.read(self._output_fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
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
                readable = select.select(watched, [], [], max(left, 0))[0] if left > 0 else []
                if not readable:
                    raise TimeoutError
                if self._output_fd in readable:
                    self._pump_output()
                if fd in readable:
                    return
        return wait

    def _receive(self, deadline, function):
        from grader import wire     # imports torch: not before the child is on its way

        try:
            return wire.recv(self._from_child, self._waiter(deadline))
        except TimeoutError:
            self.kill()
            raise CallFailed(function, "timeout", "no answer in time") from None
        except (EOFError, OSError):
            raise CallFailed(function, "crashed", self._ended()) from None
        except wire.WireError as error:
            self.kill()
            raise CallFailed(function, "bad_answer", f"its answer was not plain data: {error}") from None

    def call(self, module, function, args, kwargs, timeout, device, echo=False):
        """Run module.function(*args, **kwargs) in the child; its value, with tensors on `device`.

        With `echo`, the value is (returned value, the positional arguments after the call).
        """
        from grader import wire

        if not self._ready:
            self._receive(time.monotonic() + START_TIMEOUT, function)
            self.take_output()                      # start-up chatter is nobody's fault
            self._ready = True
        self._next_id += 1
        request = {"id": self._next_id, "module": module, "function": function, "echo": echo,
                   "args": wire.encode(list(args)), "kwargs": wire.encode(kwargs)}
        try:
            wire.send(self._to_child, request)
        except OSError:
            raise CallFailed(function, "crashed", self._ended()) from None
        answer = self._receive(time.monotonic() + timeout, function)
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
        """Why the child is gone: its exit status, once it has had a moment to report it."""
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        return _exit_reason(self.process.returncode)

    def kill(self):
        """Kill the child and everything it started in its session; idempotent."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        self._pump_output()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self._to_child = self._from_child = -1

    @property
    def alive(self):
        return self.process.poll() is None


def _exit_reason(code):
    """Words for an exit status; bubblewrap reports a child killed by signal N as 128 + N."""
    signal_number = -code if code < 0 else code - 128 if code > 128 else None
    if signal_number in signal.Signals._value2member_map_:
        name = signal.Signals(signal_number).name
        hint = " (out of memory?)" if signal_number == signal.SIGKILL else ""
        return f"the process running your code was killed by {name}{hint}"
    return f"the process running your code exited with status {code} (sys.exit / os._exit?)"


class Sandbox:
    """Children for one grading: a main child reused call after call, fresh ones on demand."""

    def __init__(self, lab, workspace, launcher=None):
        self.lab, self.workspace = lab, workspace
        self.device = "cpu"         # where returned tensors go; the runner sets the grading device
        self.launcher = launcher or ProcessLauncher()
        self._main = None
        self._spares = []
        self._lock = threading.Lock()

    def _spawn(self):
        return Child(self.launcher, self.workspace, self.lab.manifest.memory_mb)

    def warm(self, count=1):
        """Start children now so that their torch import overlaps the judge's own."""
        with self._lock:
            if self._main is None:
                self._main = self._spawn()
            while len(self._spares) < count - 1:
                self._spares.append(self._spawn())

    def call(self, function, args=(), kwargs=None, timeout=None, echo=False):
        """Call a student function in the main child; a failed child is replaced afterwards."""
        self.warm()
        child = self._main
        try:
            return self._call(child, function, args, kwargs or {}, timeout, echo)
        finally:
            if not child.alive:
                with self._lock:
                    self._main = None

    def submit(self, function, args=(), kwargs=None, timeout=None):
        """Start a call in a child of its own (run in parallel); returns a Future."""
        with self._lock:
            child = self._spares.pop() if self._spares else self._spawn()
        future = Future()

        def run():
            try:
                future.set_result(self._call(child, function, args, kwargs or {}, timeout))
            except BaseException as error:
                future.set_exception(error)
            finally:
                child.kill()

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
            for child in [self._main, *self._spares]:
                if child is not None:
                    child.kill()
            self._main, self._spares = None, []


class BubblewrapLauncher:
    """Runs the child in bubblewrap: read-only system and Python, a private writable home and
    /tmp of limited size, no network, its own PID namespace, no capabilities. It sees the
    handout and submission files, and nothing of the grader, the reference or the host."""

    name = "bubblewrap"

    def argv(self, workspace, read_fd, write_fd, memory_mb):
        binds = []
        for path in ["/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/sys", *python_prefixes()]:
            if Path(path).exists():
                binds += ["--ro-bind", path, path]
        grader = Path(__file__).resolve().parent
        if any(grader.is_relative_to(p) for p in python_prefixes()):   # an installed grader
            binds += ["--tmpfs", str(grader)]
        for device in sorted(Path("/dev").glob("nvidia*")):              # CUDA grading
            binds += ["--dev-bind", str(device), str(device)]
        files = [arg for entry in sorted(workspace.path.iterdir())
                 for arg in ("--ro-bind", str(entry), f"{HOME}/{entry.name}")]
        return ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL",
                "--proc", "/proc", "--dev", "/dev", *binds,
                "--size", str(SCRATCH_BYTES), "--tmpfs", "/tmp",
                "--size", str(SCRATCH_BYTES), "--tmpfs", HOME, *files,
                "--ro-bind", str(CHILD), "/grader/child.py", "--ro-bind", str(WIRE), "/grader/wire.py",
                "--chdir", HOME, "--setenv", "HOME", HOME,
                sys.executable, "-I", "/grader/child.py", HOME,
                str(read_fd), str(write_fd), str(memory_mb), str(CPU_SECONDS)]


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
