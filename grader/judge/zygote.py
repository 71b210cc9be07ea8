"""The zygote: the process in the sandbox that imports torch once and forks the children that
run student code (grader/judge/child.py is its other side).

It runs no student code and never sees a submission: a fork order hands it the new child's
pipes, and the judge sends the files down them itself (grader/judge/sandbox.py). A zygote that
stops answering (30 s) is broken and replaced; one kept by a batch worker or --watch
is reset between submissions, which kills every process of the last one. Closing it kills
its whole PID namespace and removes its control group.
"""
import fcntl
import itertools
import mmap
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

from grader.judge.cgroup import Cgroup, forget, judge_id
from grader.judge.clock import host_pid
from grader.judge.launchers import ENV, SCRATCH_BYTES
from grader.judge.linux import (
    PR_SET_CHILD_SUBREAPER,
    ZYGOTE_OOM_SCORE,
    below,
    first_to_go,
    libc,
    processes,
    remove,
    renumber,
    signal_all,
    stop_then_kill,
)

START_TIMEOUT = 300.0        # wall seconds for the zygote to import torch and say it is ready (a backstop)
ORDER_TIMEOUT = 30.0         # wall seconds for the zygote to answer an order: past it, it is replaced
RESET_TIMEOUT = 60.0         # wall seconds for it to kill every process of a submission
MESSAGE_LIMIT = 1000         # characters of an error message kept from the sandbox
CPU_SECONDS = 600            # a child's CPU time, a backstop behind the per-call limits


class Forked(NamedTuple):
    """A new child as the zygote hands it over: its pid, our ends of its pipes, shared memory,
    its pid in our namespace and its own control groups (before it has run any student code)."""
    pid: int
    request_fd: int
    answer_fd: int
    output_fd: int
    shared: mmap.mmap
    host_pid: int
    groups: list


class ZygoteGone(Exception):
    """The zygote died or never started: no student's doing, unless it happens again (a child
    of the judge's own user may kill it; one whose memory ran out might make the kernel do so)."""

    def __init__(self, message, never_started=False):
        super().__init__(message)
        self.never_started = never_started      # none of ours ever started: the machine cannot run one


class Zygote:
    """The process that forks children; it has imported torch and runs no student code."""

    live: set[int] = set()          # pids of this process's running zygotes
    _serial = itertools.count()     # names their control groups

    def __init__(self, launcher):
        self.launcher = launcher
        self._lock = threading.RLock()
        self.proven = False             # some zygote of ours was ready once
        self._spare = None              # ((device, memory_mb), Forked): a child forked ahead (prepare)
        self._preparing = None          # the thread of a prepare_soon still forking
        self._replacing = False         # a zygote gone is being replaced: no fork ahead begins
        if launcher.name == "process":      # orphans of a killed zygote come back to us, to be killed
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
        self._start()

    def _start(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="grade-"))
        self._log = tempfile.TemporaryFile()
        ours, theirs = socket.socketpair()
        argv = self.launcher.argv(self.scratch, theirs.fileno())
        self.cgroup = Cgroup.make(f"grader-{judge_id()}-{next(Zygote._serial)}")
        self.process = subprocess.Popen(
            second_to_go(self.cgroup.wrap(argv) if self.cgroup else argv), pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=ENV,
            cwd=self.scratch, start_new_session=True)
        Zygote.live.add(self.process.pid)
        theirs.close()
        self.control = ours
        self.ready = self.broken = self._ending = False
        self._afresh_due = False        # the next pids to start at a random place (reset), at the next fork
        self._zygotes = []              # the zygote as end() found it, to wait for

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
                    self.ready = self.proven = True
                self.control.settimeout(RESET_TIMEOUT if order["op"] == "reset" else ORDER_TIMEOUT)
                if order["op"] == "fork" and self._afresh_due:     # before the first pid is taken,
                    self._afresh_due = False                        # not at the reset: off the path of
                    for pid in children_of(self.process.pid):       # a grading's results (the zygote, in
                        renumber(f"/proc/{pid}/ns/pid")             # the namespace, forks nothing unasked)
                wire.send_with_fds(self.control, order, fds)
                reply, fds = wire.recv_with_fds(self.control, limit=wire.SMALL_FRAME)
                for fd in fds:      # nothing should hand the judge descriptors
                    os.close(fd)
                reply = wire.sanitize(reply)
            except (OSError, EOFError, wire.WireError) as error:
                self.broken = True
                raise ZygoteGone(self._why(error), never_started=not self.proven) from None
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

    def fork(self, device, memory_mb, ahead=True):
        """A new child, waiting for its files on its request pipe: the one forked `ahead` for this
        device and memory when there is one and it may be taken, else a new one; a zygote that
        died or stopped answering is replaced first. A first zygote that died starting (killed by
        something else, a machine out of memory) is replaced once before the machine is said to run none."""
        if not ahead:
            return self._fork_anew(device, memory_mb)
        self._settle()
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            if spare[0] == (str(device), memory_mb) and not self.broken and self.process.poll() is None \
                    and _running(spare[1].host_pid):
                return spare[1]
            self._let_go(spare[1])
        return self._fork_anew(device, memory_mb)

    def _fork_anew(self, device, memory_mb):
        try:
            return self._fork(device, memory_mb)
        except ZygoteGone as gone:
            if not gone.never_started:
                raise
        return self._fork(device, memory_mb)

    def prepare(self, device, memory_mb):
        """Fork the next child now, while nobody waits (--watch, between rounds): no student code
        runs in it before the next submission's files come, and a reset kills it."""
        with self._lock:
            if self._spare is not None:
                return
        try:
            forked = self._fork(device, memory_mb)
        except ZygoteGone:
            return                      # the next fork replaces the zygote, and says why if it must
        with self._lock:
            self._spare = ((str(device), memory_mb), forked)

    def prepare_soon(self, device, memory_mb):
        """prepare() on a thread of its own, at the start of a grading, before any of its student code
        runs: the first child is forked while the judge collects its checks. Every later fork,
        reset or close waits for it first: no child forked ahead outlives a reset."""
        with self._lock:
            if self._spare is not None or self._preparing is not None or self._replacing:
                return
            self._preparing = threading.Thread(target=self.prepare, args=(device, memory_mb), daemon=True)
            self._preparing.start()

    def _settle(self):
        """Wait for a prepare_soon still forking."""
        preparing = self._preparing
        if preparing is not None and preparing is not threading.current_thread():
            preparing.join()
            with self._lock:
                if self._preparing is preparing:
                    self._preparing = None

    def _drop_spare(self):
        self._settle()
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            self._let_go(spare[1])

    def _let_go(self, forked):
        """Let go of a spare: killed and reaped by the zygote before its groups are removed (a
        group cannot be removed while the child is in it: it would stay for the zygote's life)."""
        if not self.broken and self.process.poll() is None:
            try:
                self.ask({"op": "kill", "pid": forked.pid})
            except ZygoteGone:
                pass
        let_go(forked)

    def _fork(self, device, memory_mb):
        from grader.judge import wire

        if self._gone():
            self._replace()
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        output_r, output_w = os.pipe()
        shared = sealed_memory("grader-arguments", wire.SHARED_BYTES)
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
        pid = reply.get("pid")
        pid_here = pid
        if self.launcher.name == "bubblewrap":          # its own PID namespace
            pid_here = host_pid(pid, self.process.pid, self.cgroup.members() if self.cgroup else ())
        if pid_here is None:        # no process of ours to count, limit or kill: no child to use
            self.broken = True
            raise ZygoteGone(f"the new child {pid} was not found among the sandbox's processes")
        groups = self.cgroup.account(pid_here) if self.cgroup else []     # before any student code
        first_to_go(pid_here)       # by root with CAP_SYS_RESOURCE: the least it may set (no zygote can)
        return Forked(pid, request_w, answer_r, output_r, memory, pid_here, groups)

    def reset(self, afresh=True):
        """Between submissions: kill every process of the last one (and wipe a plain process's files),
        and, `afresh`, have the next pids start at a random place (what comes next may not read
        what came before off them), once the next fork is ordered. Nothing to do once the zygote's
        end is sent: it kills them all."""
        if self._ending:
            return
        self._drop_spare()
        with self._lock:
            try:
                self.ask({"op": "reset"})
                self._afresh_due |= afresh and self.launcher.name == "bubblewrap"  # its own PID namespace
                return
            except ZygoteGone:
                self.broken = True
        self._replace()

    def _gone(self):
        return self.broken or self.process.poll() is not None

    def _replace(self):
        """Close this zygote, found gone or broken, and start another: outside the lock, which a fork
        ahead still running needs to end (close() waits for it: under the lock, for ever), and with
        no fork ahead begun meanwhile. Another thread may have replaced it first."""
        self._replacing = True
        try:
            self._settle()
            with self._lock:
                if self._ending:    # closing: none is started again
                    raise ZygoteGone("the sandbox's zygote is closing")
                if self._gone():
                    self.close()
                    self._start()
        finally:
            self._replacing = False

    def renew(self):
        """Close this zygote and start another in its place: a PID namespace, and all else it kept
        across resets (its pids, its times), new for what comes next."""
        self._settle()
        with self._lock:
            self.close()
            self._start()

    def end(self):
        """Begin close() without waiting: every process of the zygote is sent its end, and dies while
        the judge goes on (its report); close() then waits for what is left."""
        if self._ending:
            return
        self._ending = True
        if self.ready:              # a fork ahead ends first; one still waiting for a zygote not ready
            self._drop_spare()      # (Ctrl-C as it starts) ends as that zygote is killed, below
            if self.launcher.name == "process" and not self.broken and self.process.poll() is None:
                try:                # the zygote kills its children's daemons while it can (one not ready has none)
                    self.ask({"op": "reset"})
                except ZygoteGone:
                    pass
        if self.process.poll() is None:
            # bubblewrap's end cannot signal a zygote that changed user: the zygote, PID 1 of its
            # namespace, is killed here, and every process in that namespace with it
            self._zygotes = children_of(self.process.pid)
            signal_all(self._zygotes, signal.SIGKILL)
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._drop_spare()

    def close(self):
        self.end()
        zygotes = self._zygotes
        deadline = time.monotonic() + 2.0       # gone when its namespace is: PID 1 is a zombie
        while zygotes and not _dead(zygotes) and time.monotonic() < deadline:   # only once all else exited
            for pid in zygotes:                 # ours to reap if it came back to us
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
            time.sleep(0.005)
        self.process.wait()
        Zygote.live.discard(self.process.pid)
        if self.cgroup:             # what is still in the group belonged to this zygote
            stop_then_kill(self.cgroup.pids)
            self.cgroup.remove()
        if self.launcher.name == "process":
            sweep_orphans()
        self.control.close()
        self._log.close()
        remove(self.scratch)


def second_to_go(argv):
    """`argv` run by a shell that first takes ZYGOTE_OOM_SCORE, then becomes the command (same
    pid): out of memory, the kernel kills the zygote after its children, before the judge. Root's
    shell, with CAP_SYS_RESOURCE, also makes it the least the zygote and its children may set."""
    return ["/bin/sh", "-c", f'echo {ZYGOTE_OOM_SCORE} > /proc/self/oom_score_adj; exec "$@"', "sh", *argv]


def let_go(forked):
    """Let go of a child that got no files: it ends when its request pipe closes."""
    for fd in (forked.request_fd, forked.answer_fd, forked.output_fd):
        os.close(fd)
    forked.shared.close()
    for folder in forked.groups:
        forget(folder)


def sealed_memory(name, size):
    """A memory file of `size` bytes that no holder can shrink or grow: a child that cut the file
    under the judge's mapping of it would make the judge's next read of it a SIGBUS."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def _running(pid):
    """Whether process `pid` (ours to see) runs: a child forked ahead waits for minutes, and may be
    killed meanwhile (out of memory); the zygote reaps it only when told, so its pid stays its own."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


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
