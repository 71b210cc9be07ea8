"""`grade.py serve LAB`: a warm grader (grader/core/warm.py) behind a Unix socket (as dmypy does)
for this checkout and lab: `grade.py LAB`, --watch and the notebook's check are then answered by it
(`WarmClient`), and grading is cold as ever where none runs. Only its owner reaches it: the socket
lies in a folder only that user can open (0700, checked), and the server checks each peer's uid
(SO_PEERCRED) and refuses another user, another checkout, another lab or code that changed since
it started (it then stops, and is replaced). It stops on `grade.py serve --stop`, Ctrl-C, SIGTERM,
or after IDLE_SECONDS with no request, and leaves no process behind.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader.base.errors import GraderError, LabError, SetupError, UsageError
from grader.base.root import ROOT, lab_folder
from grader.core.request import Device, Observers, Output, Request, SandboxKind, Selection
from grader.core.warm import Grader
from grader.learner.runtime import exactly, runtime_folder, socket_for

if TYPE_CHECKING:
    from grader.core.results import LabResults
    from grader.readers.manifest import Lab

IDLE_SECONDS = 900.0            # a server with no request this long stops
START_SECONDS = 30.0            # for a server just started to answer
ASK_BYTES = 2**20               # the most a request may weigh on the wire
SAID_BYTES = 64 * 2**20         # the most an answer may (a results document)
ANSWER_SECONDS = 10.0           # for a server to take a client's connection, and to answer a ping
TAKE_SECONDS = 60.0             # for a client to take what its server sends, once its buffer is full
ARGUMENTS = 1000                # the most an argv request may hold (argparse reads N in time N squared)
ERRORS = {error.__name__: error for error in (LabError, UsageError, SetupError)}     # said, raised again


# -- where a server listens -------------------------------------------------------------------------
def socket_path(lab: Lab) -> Path:
    """The socket of this checkout's server for `lab`."""
    return socket_for(lab.folder)


def code_stamp(lab: Lab) -> str:
    """What a server's answers depend on: the engine's files and the lab's (names, sizes and times),
    and this Python. A server whose stamp differs from its client's is stale."""
    from grader.readers.manifest import ENGINE, engine_files

    digest = hashlib.sha256(f"{sys.executable}\0{sys.version}".encode())
    paths = [ENGINE / name for name in engine_files()]
    for top in filter(None, [lab.folder, lab.handout, lab.reference, *lab.child_modules]):
        paths += sorted(top.rglob("*.py")) if top.is_dir() else [top]
    paths += sorted(lab.folder.rglob("*.yaml"))
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            continue
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def peer(conn: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket, as the kernel saw it connect."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return pid, uid


# -- the wire -----------------------------------------------------------------------------------------
class Screen(BaseModel):
    """Where a client shows what it is sent, as rich would find it there: whether its stdout is a
    terminal, the width of the first of its stdin, stdout and stderr that is one (None: none is),
    and the variables rich reads for colour and size (TERM, NO_COLOR, FORCE_COLOR, COLUMNS...)."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    terminal: bool
    width: int | None = Field(None, ge=10, le=1000)
    environ: dict[str, str] = Field({}, max_length=20)


class Ask(BaseModel):
    """What a client asks a server: to grade (a Request's fields, or `grade.py`'s own arguments as
    typed in `cwd`, "argv": grader/learner/express.py), to say it is there (ping), or to stop."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    op: Literal["grade", "argv", "ping", "stop"]
    checkout: str
    lab: str
    code: str = ""                  # argv: the server reads its own code's stamp again
    sandbox: SandboxKind = SandboxKind.AUTO
    submission: str | None = None
    device: Device = Device.AUTO
    only: tuple[str, ...] = ()
    first: tuple[str, ...] = ()
    show_all: bool = False
    argv: tuple[str, ...] = Field(default=(), max_length=ARGUMENTS)
    cwd: str = ""                   # grade, argv: the client's folder, where its paths are read
    screen: Screen | None = None


class Said(BaseModel):
    """One frame of a server's answer: progress, the results, or why it would not or could not."""
    model_config = ConfigDict(extra="forbid")
    progress: tuple[int, int, str] | None = None
    results: dict | None = None
    refused: str | None = None
    error: tuple[str, str] | None = None       # (the GraderError's class, its message)
    text: str | None = None                    # argv: what grade.py prints, for the client's screen
    status: int | None = None                  # argv: grade.py's exit status
    done: bool = False


def send(conn, model):
    data = model.model_dump_json(exclude_defaults=True).encode()     # a server of older code reads it
    conn.sendall(struct.pack(">I", len(data)) + data)


def receive(conn, model, limit):
    """The next frame, as `model`; EOFError when the other end is gone or says nonsense."""
    head = exactly(conn, 4)
    size = struct.unpack(">I", head)[0]
    if size > limit:
        raise EOFError(f"a frame of {size} bytes")
    try:
        return model.model_validate_json(exactly(conn, size))
    except ValidationError as error:
        raise EOFError(f"a malformed frame ({error.error_count()} errors)") from None


def _progress_to(conn, gone):
    """The observer that sends a grading's progress to its client; a client gone (noted in `gone`)
    stops pytest, and the grading with it."""
    def progress(done, total, function):
        try:
            send(conn, Said(progress=(done, total, function)))
        except OSError:
            gone.append(True)
            raise KeyboardInterrupt from None
    return progress


def _gone(conn) -> bool:
    """Whether the client's end is closed (it went: Ctrl-C), looked at without waiting: a client
    only reads once it has asked, so its end is readable only once it is closed."""
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


@contextlib.contextmanager
def _ended_with(conn, grader):
    """While a grading runs for `conn`: a client that goes ends the call running now, not only the
    next check's start (a check training models would hold the next learner for its whole length).
    Its children are killed (the zygote's reset), and so is each one the check starts after, so its
    calls fail at once; the grading stops where it cannot send its progress (the check's end), and
    nothing of it is answered or written."""
    done = threading.Event()

    def watch():
        while not done.wait(0.1):
            if _gone(conn):
                grader.end_calls()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


# -- the server ----------------------------------------------------------------------------------------
class Server:
    """A Grader behind this checkout's socket for one lab (grade.py serve LAB --foreground). Each
    client is answered on a thread of its own (a ping while a grading runs is answered at once);
    gradings take turns."""

    def __init__(self, lab: Lab, kind: SandboxKind = SandboxKind.AUTO, idle: float = IDLE_SECONDS):
        self.lab, self.kind, self.idle = lab, SandboxKind(kind), idle
        self.code = code_stamp(lab)
        self.path = socket_path(lab)
        self.listener, self._inode = _bind(self.path)
        self.grader = None
        self._turn = threading.Lock()       # one grading at a time
        self._stop = threading.Event()
        self._last = time.monotonic()       # when the last grading ended

    def serve(self):
        """Answer requests until stopped, idle too long, or interrupted; then leave nothing behind."""
        previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            self.grader = Grader(self.kind)
            self._warm_up()
            self._last = time.monotonic()
            self.listener.settimeout(min(1.0, self.idle))
            while not self._stop.is_set() and not self._idle():
                try:
                    conn, _ = self.listener.accept()
                except socket.timeout:
                    continue
                threading.Thread(target=self._answer, args=(conn,), daemon=True).start()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.close()

    def _idle(self):
        return not self._turn.locked() and time.monotonic() - self._last > self.idle

    def close(self):
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:      # ours, not a successor's
                self.path.unlink()
                self.path.with_suffix(".log").unlink(missing_ok=True)
        self.listener.close()
        if self.grader:
            self.grader.close()
            self.grader = None

    def _warm_up(self):
        """Import what a grading needs (torch, pytest, the checks) by grading the lab's stubs."""
        if self.lab.stubs is not None:
            with contextlib.suppress(GraderError):
                self.grader.grade(Request(self.lab, self.lab.stubs, Device.CPU))

    def _answer(self, conn):
        """One client's request: refused unless it is of this user, checkout, lab, code and sandbox."""
        with conn:
            conn.settimeout(10)
            try:
                self._handle(conn)
            except (OSError, EOFError):
                pass                # the client went (Ctrl-C): its grading was stopped with it

    def _handle(self, conn):
        pid, uid = peer(conn)
        if uid != os.getuid():
            send(conn, Said(refused="this warm grader serves its owner only", done=True))
            return
        if _ours(pid):
            send(conn, Said(refused="this warm grader serves no process of its own gradings", done=True))
            return
        ask = receive(conn, Ask, ASK_BYTES)
        if ask.checkout != str(ROOT):
            send(conn, Said(refused=f"this warm grader serves the checkout {ROOT}", done=True))
            return
        why = None if ask.op == "stop" else self._refusal(ask)    # stop: any of this checkout's
        if why or ask.op not in ("grade", "argv"):
            send(conn, Said(refused=why, done=True))
            if ask.op == "stop" or why == STALE:
                self._stop.set()
            return
        conn.settimeout(TAKE_SECONDS)     # a client stopped (Ctrl-Z) holds no other's grading for long
        args = None
        if ask.op == "argv":
            args, why = _arguments(ask, self.lab, self.kind)
            send(conn, Said(refused=why, done=True) if why else Said())    # taken: the client now waits
            if why:                                                         # for its turn, however long
                return
        with self._turn:
            try:
                if args is not None:
                    self._grade_argv(conn, args, ask)
                else:
                    self._grade(conn, ask)
            finally:
                self._last = time.monotonic()

    def _refusal(self, ask):
        if ask.lab != str(self.lab.folder.resolve()):
            return f"this warm grader serves the lab {self.lab.name} of {self.lab.folder}"
        if (ask.code if ask.op != "argv" else code_stamp(self.lab)) != self.code:
            return STALE
        if ask.sandbox != self.kind and ask.op != "argv":
            return f"this warm grader runs --sandbox {self.kind}"
        if ask.cwd and not (Path(ask.cwd).is_absolute() and Path(ask.cwd).is_dir()):
            return "not a folder to grade in"
        return None

    def _grade(self, conn, ask):
        gone: list[bool] = []
        progress = _progress_to(conn, gone)

        try:
            with _in_folder(ask.cwd or ROOT):       # the client's folder: its paths shown as typed there
                request = Request(self.lab, ask.submission and Path(ask.submission), ask.device,
                                  Selection(ask.only, ask.first), self.kind, Output(ask.show_all),
                                  Observers(progress))
                with _ended_with(conn, self.grader):
                    results = self.grader.grade(request)
        except GraderError as error:
            send(conn, Said(error=(type(error).__name__, str(error)), done=True))
            return
        except KeyboardInterrupt:
            if gone:
                return
            raise
        send(conn, Said(results=results.model_dump(mode="json"), done=True))
        self.grader.prepare(results, self.lab)

    def _grade_argv(self, conn, args, ask):
        """grade.py's own arguments (read by _arguments), graded in the client's folder (its paths
        read, and shown, as typed there) and finished (runner.finish: --json, lesson progress) as
        grade.py would, the report written for the client's screen."""
        with _in_folder(ask.cwd):
            self._graded_argv(conn, args, ask.screen or Screen(terminal=False))

    def _graded_argv(self, conn, args, screen):
        from grader.learner import arguments, report

        console = _console(screen)
        try:
            request = arguments.grading_request(args, self.lab)
        except GraderError as error:
            send(conn, Said(text=report.said(error, console), status=2, done=True))
            return
        gone: list[bool] = []
        progress = _progress_to(conn, gone)

        results = None
        try:
            with _ended_with(conn, self.grader):
                results = self.grader.grade(dataclasses.replace(request, observers=Observers(progress)))
            if _gone(conn):         # it went after the last check: no grade, so no --json, no progress
                return
            status = report.ended(results, request, console, os.getpid())
        except GraderError as error:
            status = 2
            report.said(error, console)
        except KeyboardInterrupt:
            if gone:
                return
            raise
        send(conn, Said(text=console.file.getvalue(), status=status, done=True))
        if results is not None:
            self.grader.prepare(results, self.lab)


STALE = "this warm grader runs code that changed since it started: it stops"


def _arguments(ask: Ask, lab: Lab, kind: SandboxKind):
    """(grade.py's arguments as it reads them, None), or (None, why this server leaves them to
    grade.py): anything but a plain grading of `lab` with sandbox `kind` typed in a folder that is.
    Read before the request's turn: nothing here may depend on this process's folder."""
    from grader.learner import arguments

    args = arguments.plain_grading(ask.argv)
    if args is None or SandboxKind(args.sandbox) != kind or not ask.cwd:
        return None, "not a plain grading by this warm grader"
    if lab_folder(args.lab, Path(ask.cwd)).resolve() != lab.folder.resolve():
        return None, f"this warm grader serves the lab {lab.name}"
    return args, None


@contextlib.contextmanager
def _in_folder(folder):
    """This process in `folder` while a grading's turn lasts (one grading at a time; nothing else
    here reads the process's folder), then back (contextlib.chdir, from Python 3.11 on)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _console(screen: Screen):
    """A console that writes to a string what grade.py's own would write on the client's `screen`:
    rich decides colour and width from the client's variables and terminal, not this server's."""
    from rich.console import Console

    columns = screen.environ.get("COLUMNS", "")
    return Console(file=_Written(screen.terminal), width=None if columns.isdigit() else screen.width or 80,
                   highlight=False, _environ=screen.environ)


class _Written(io.StringIO):
    """A report written for a client's stdout: a terminal or not, as the client's is."""

    def __init__(self, terminal: bool):
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


def _interrupt(*_):
    raise KeyboardInterrupt


def _bind(path):
    """A listening socket at `path`, put there only once it listens (a client that found the file
    and no listener would take it for a dead server's); a socket left there by a server that died is
    replaced, a live one is refused (SetupError). Returns it and the inode of its file."""
    if _listening(path):
        raise SetupError(f"a warm grader already serves this lab here ({path}): grade.py serve --stop stops it")
    making = path.with_name(f"{path.stem}.{os.getpid()}.new")
    making.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(making))
    os.chmod(making, 0o600)
    listener.listen(8)
    os.replace(making, path)            # a dead server's socket goes with it
    return listener, os.stat(path).st_ino


# -- the client ----------------------------------------------------------------------------------------
class WarmGone(Exception):
    """The server went away or would not answer: grade cold instead."""


class WarmClient:
    """A front door's end of this checkout's warm grader for a lab."""

    def __init__(self, lab: Lab, path: Path):
        self.lab, self.path = lab, path
        self.code = code_stamp(lab)
        self.server_pid = None      # the server's, as the kernel says (SO_PEERCRED)
        self.served_by = None       # the pid of the server that answered the last grading

    @classmethod
    def for_checkout(cls, lab: Lab, kind: SandboxKind = SandboxKind.AUTO) -> WarmClient | None:
        """The client of the server running for this checkout and `lab` with this sandbox kind,
        or None: none runs, it is dead (its socket is removed), stale (it is stopped), or serves
        another sandbox kind."""
        try:
            path = socket_path(lab)
        except (SetupError, OSError):
            return None
        if not path.exists():
            return None
        client = cls(lab, path)
        try:
            said = client._ask(Ask(op="ping", **client._whose(kind)))
        except WarmGone:
            if path.exists() and not _listening(path):    # it died as it answered
                with contextlib.suppress(OSError):
                    path.unlink()
            return None
        if said.refused == STALE:
            return None
        return None if said.refused else client

    @classmethod
    def started(cls, lab: Lab, kind: SandboxKind = SandboxKind.AUTO, idle: float = IDLE_SECONDS) -> WarmClient:
        """The client of this checkout's server for `lab`, one started (in the background) when none
        runs: for a front door that wants one (the notebook's check). SetupError if none comes up."""
        client = cls.for_checkout(lab, kind)
        if client is None:
            start(lab, kind, idle)
            client = cls.for_checkout(lab, kind)
        if client is None:
            raise SetupError("the warm grader started, then stopped answering")
        return client

    def _whose(self, kind):
        return {"checkout": str(ROOT), "lab": str(self.lab.folder.resolve()), "code": self.code,
                "sandbox": SandboxKind(kind)}

    def _connect(self):
        conn = socket.socket(socket.AF_UNIX)
        conn.settimeout(ANSWER_SECONDS)     # a server that takes no connection (stopped, its queue full)
        try:                                # is not waited for: grading is cold
            conn.connect(str(self.path))
        except FileNotFoundError:
            conn.close()
            raise WarmGone("no server") from None
        except ConnectionRefusedError:
            conn.close()
            with contextlib.suppress(OSError):
                self.path.unlink()          # nobody listens there: a dead server's
            raise WarmGone("a dead server") from None
        except OSError as error:
            conn.close()
            raise WarmGone(f"a server that takes no connection ({error or 'timed out'})") from None
        pid, uid = peer(conn)
        if uid != os.getuid():              # a socket of someone else's: never trusted
            conn.close()
            raise WarmGone("a server of another user")
        self.server_pid = pid
        return conn

    def _ask(self, ask):
        with contextlib.closing(self._connect()) as conn:
            try:
                send(conn, ask)
                return receive(conn, Said, SAID_BYTES)
            except (OSError, EOFError, ValueError) as error:    # ValueError: a path not in UTF-8, unsent
                raise WarmGone(str(error)) from None

    def grade(self, request: Request) -> LabResults:
        """Grade `request` on the server; progress goes to the request's observer. WarmGone when the
        server goes (or refuses) before the results come: grade cold then. On-answer observers
        cannot travel: a request with some is graded cold."""
        from grader.core.results import LabResults

        if request.observers.on_answer:
            raise WarmGone("observers of calls run in the grading's own process")
        try:
            cwd = os.getcwd()
        except OSError:
            raise WarmGone("no folder to grade in") from None
        ask = Ask(op="grade", **self._whose(request.sandbox), cwd=cwd,
                  submission=str(request.submission) if request.submission else None,
                  device=request.device, only=request.selection.only, first=request.selection.first,
                  show_all=request.output.show_all)
        on_progress = request.observers.on_progress or (lambda done, total, function: None)
        with contextlib.closing(self._connect()) as conn:
            conn.settimeout(None)           # a check may take minutes between its progress frames
            try:
                send(conn, ask)
                while not (said := receive(conn, Said, SAID_BYTES)).done:
                    if said.progress:
                        on_progress(*said.progress)
            except (OSError, EOFError, ValueError) as error:    # ValueError: a path not in UTF-8, unsent
                raise WarmGone(str(error)) from None
        if said.error:
            kind, message = said.error
            raise ERRORS.get(kind, LabError)(message)
        if said.refused or said.results is None:
            raise WarmGone(said.refused or "no results")
        self.served_by = self.server_pid
        return LabResults.model_validate(said.results)

    def prepare(self, results: LabResults, lab: Lab):
        """Nothing: the server forks its next child itself once it has answered."""

    def close(self):
        """Nothing: the server stays for whoever grades next (grade.py serve --stop stops it)."""

    def stop(self):
        """Ask the server to stop, and wait (10 s at most) until it has, its zygote closed."""
        with contextlib.suppress(WarmGone):
            self._ask(Ask(op="stop", **self._whose(SandboxKind.AUTO)))
        deadline = time.monotonic() + 10
        while (self.path.exists() or _running(self.server_pid)) and time.monotonic() < deadline:
            time.sleep(0.02)


# -- the front doors' use ------------------------------------------------------------------------------
def grade(request: Request, client: WarmClient | None) -> LabResults:
    """Grade `request` on `client`'s server (WarmClient.for_checkout) when there is one and it
    answers (`client.served_by` then names it), else cold, in this process."""
    from grader.core import runner

    if client is not None:
        with contextlib.suppress(WarmGone):
            return client.grade(request)
    return runner.grade(request)


def start(lab: Lab, kind: SandboxKind = SandboxKind.AUTO, idle: float = IDLE_SECONDS) -> int:
    """Start a server for `lab` in a session of its own (it outlives this command); return its pid
    once it listens. SetupError when it did not come up."""
    log = runtime_folder() / f"{socket_path(lab).stem}.log"
    with open(log, "wb") as said:
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "grade.py"), "serve", str(lab.folder), "--foreground",
             "--sandbox", str(kind), "--idle", f"{idle:g}"],
            stdin=subprocess.DEVNULL, stdout=said, stderr=said, start_new_session=True, cwd=ROOT)
    deadline = time.monotonic() + START_SECONDS
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SetupError(f"the warm grader stopped as it started: {log.read_text()[-500:].strip()}")
            if WarmClient.for_checkout(lab, kind) is not None:
                return process.pid
            time.sleep(0.05)
    except BaseException:
        process.terminate()
        raise
    process.terminate()
    raise SetupError(f"the warm grader did not answer within {START_SECONDS:g} s")


def stop_all() -> int:
    """Stop every server of this checkout (grade.py serve --stop): how many were running."""
    stopped = 0
    for path in runtime_folder().glob("*.sock"):
        conn = socket.socket(socket.AF_UNIX)
        conn.settimeout(ANSWER_SECONDS)
        try:
            conn.connect(str(path))
            if peer(conn)[1] != os.getuid():
                continue
            send(conn, Ask(op="stop", checkout=str(ROOT), lab="", code="", sandbox=SandboxKind.AUTO))
            stopped += receive(conn, Said, SAID_BYTES).refused is None
        except (OSError, EOFError):
            with contextlib.suppress(OSError):
                if not _listening(path):
                    path.unlink()
        finally:
            conn.close()
    return stopped


def _ours(pid):
    """Whether process `pid` is of this server's own gradings (below it: student code, which under
    --sandbox process as a user other than root is its owner's user and sees its socket) or is gone
    already (it could have been: a client waits for its answer)."""
    from grader.judge.linux import below, processes

    table = processes()
    return pid not in table or pid in below([os.getpid()], table)


def _running(pid):
    """Whether process `pid` runs (a zombie waits only to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _listening(path):
    """Whether a server listens at `path`, asked without waiting: one whose queue of connections is
    full (busy, or stopped) listens still."""
    probe = socket.socket(socket.AF_UNIX)
    probe.setblocking(False)
    try:
        probe.connect(str(path))
        return True
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        probe.close()

