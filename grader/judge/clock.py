"""What a child's code used, read from the kernel, never from the child, and the limits of a call:
count the submission's own work, not the machine's load.

A call is charged the larger of two times (billed to the submission's time budget):
- the CPU time of all it runs, every thread of every process in the child's session (a child is
  a session leader, and its seccomp filter refuses it and all it starts a new session), reaped
  children included; where the child has a control group of its own (grader/judge/cgroup.py),
  the CPU time the kernel counted there instead, of all it ran: processes reaped by the kernel
  itself (SIGCHLD ignored) add theirs to no process's;
- its own time: the wall time of the call less the time its threads waited for a CPU (the
  kernel's run delay, /proc/TID/schedstat), those of the child's process and, with a control
  group, every thread in it. Time spent sleeping or blocked counts; time lost to other people's
  work does not, whichever thread lost it: a main thread blocked in join() while a helper thread
  waits for a CPU is charged the helper's CPU, not the machine's load (a thread that ended keeps
  the waits seen at the last look). The call ends when its answer is in.
A call reaches its limit when its CPU time does, or its own time SLEEP times over: a generous cap
for sleeping code, which also holds the waits the clock cannot see (a helper process's, where the
child has no control group of its own). So the same work is charged the same at any load: the
machine stretches CPU time in wall time, never in amount.
"""
import contextlib
import math
import os
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
CPUS = os.cpu_count() or 1
SLEEP = 2                           # a call's own time may reach SLEEP times its limit


def host_pid(pid, root, likely=()):
    """The pid in our namespace of the process that is `pid` in its own PID namespace: one of
    `likely` (the sandbox's control group, a read of one file) or else of the processes below
    `root` (the sandbox's, a scan of every process); None where none is (gone already). Never
    `pid` itself, which here is some other process, nor `root`, which the group holds too:
    bubblewrap's outer process, of our namespace, whose pid here may be the child's there (and,
    once the host's pids wrap, is listed first)."""
    from grader.judge.linux import below, processes

    for candidates in ([p for p in likely if p != root], lambda: below([root], processes())[1:]):
        for candidate in candidates() if callable(candidates) else candidates:
            try:
                status = Path(f"/proc/{candidate}/status").read_text()
            except OSError:
                continue
            line = next((line for line in status.splitlines() if line.startswith("NSpid:")), "")
            if line.split()[-1:] == [str(pid)]:
                return candidate
    return None


def process_cpu(entry):
    """(session, CPU seconds with the children it has reaped) of the process in /proc folder
    `entry`; None once it is gone."""
    try:
        fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
        return int(fields[3]), sum(int(value) for value in fields[11:15]) / TICK    # utime stime cutime cstime
    except (OSError, IndexError, ValueError):
        return None


def session_cpu(session):
    """CPU seconds of every process in `session`, with the children each has reaped."""
    seen = (process_cpu(entry) for entry in Path("/proc").iterdir() if entry.name.isdigit())
    return sum(found[1] for found in seen if found and found[0] == session)


def group_cpu(usage):
    """CPU seconds the kernel counted in a control group, read from its file `usage` (v2's
    cpu.stat, v1's cpuacct.usage: group_files); None where it is gone."""
    with contextlib.suppress(OSError, ValueError):      # read twice a call: os calls on plain strings
        data = _read(usage)
        if not usage.endswith("cpu.stat"):
            return int(data) / 1e9
        for line in data.splitlines():
            if line.startswith(b"usage_usec "):
                return int(line.split()[1]) / 1e6
    return None


def group_files(folder):
    """(the file listing its threads, the file counting its CPU time) of the control group in
    `folder`, v2's or v1's, each None where the group has none (a v1 cpu group without cpuacct
    counts no time): found once per child, not tried at every look."""
    v2 = os.path.exists(f"{folder}/cgroup.threads")
    tasks = f"{folder}/cgroup.threads" if v2 else f"{folder}/tasks" if os.path.exists(f"{folder}/tasks") else None
    usage = f"{folder}/cpu.stat" if v2 else f"{folder}/cpuacct.usage" \
        if os.path.exists(f"{folder}/cpuacct.usage") else None
    return tasks, usage


def thread(tid):
    """(seconds run, seconds spent runnable waiting for a CPU, whether runnable now) of a thread;
    no waits where the kernel keeps no such count; None once it is gone. The kernel counts a wait
    only once it is over, when the thread runs again. (Read with os calls on plain strings: the
    judge reads it twice a call, for every thread of the child.)"""
    try:
        fields = _read(f"/proc/{tid}/schedstat").split()
        state = _read(f"/proc/{tid}/stat").rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    ran, waited = (int(field) / 1e9 if field.isdigit() else 0.0 for field in (fields + [b"", b""])[:2])
    return ran, waited, state == b"R"


def _read(path):
    """The whole of a small kernel file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = chunk = os.read(fd, 65536)
        while chunk:
            data += (chunk := os.read(fd, 65536))
        return data
    finally:
        os.close(fd)


def threads(pid, tasks=None):
    """{tid: thread(tid)} of every thread of process `pid` or, with a control group's file listing
    its threads (`tasks`, which holds the process's own), of every thread in that group; empty once
    they are gone."""
    tids = None
    with contextlib.suppress(OSError, ValueError):
        tids = [int(tid) for tid in _read(tasks).split()] if tasks else None
    if tids is None:
        tids = []
        with contextlib.suppress(OSError, ValueError):
            tids = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    return {tid: seen for tid in tids if (seen := thread(tid)) is not None}


class SessionMeter:
    """The CPU seconds a child's session has used since the child was forked (a fresh fork has
    used none). Where the child has a control group of its own (`group`), the kernel's count
    there, one file read afresh each time. Elsewhere the child's own process is read afresh, and
    the rest of its session (a scan of every process, milliseconds) at most every RESCAN seconds.
    Each call is charged what the session used from the reading its call started from to the last
    one: what a child leaves running between calls is still its own, charged to the next."""

    RESCAN = 0.25

    def __init__(self, pid, group=None):
        self.pid, self.used = pid, 0.0
        self.tasks, self.usage = group_files(group) if group else (None, None)   # its group's files
        self._others, self._read = 0.0, time.monotonic()    # the rest of the session, when last scanned

    def read(self):
        counted = group_cpu(self.usage) if self.usage else None
        if counted is None:
            own = (process_cpu(Path(f"/proc/{self.pid}")) or (0, 0.0))[1]
            if time.monotonic() - self._read >= self.RESCAN:
                self._others, self._read = max(0.0, session_cpu(self.pid) - own), time.monotonic()
            counted = own + self._others
        self.used = max(self.used, counted)
        return self.used


class CallClock:
    """The time one call has been charged so far (see the module's docstring), from `start` (until
    then, only CPU). Once the child is gone, what it was charged when last seen; once the call is
    over (`stop`), its wall time ends there, whatever the judge does with the answer after, and
    its threads are not read again."""

    def __init__(self, meter):
        self.meter, self.pid = meter, meter.pid
        self.billed = False         # added to the submission's time already
        self._started, self._ended, self._cpu = time.monotonic(), None, meter.used
        self._before = None         # not started (start): no call runs, only CPU is charged
        self._settled = False       # its threads were read once it was over: its own time is known
        self._own = self._last = self._seen = self._cpu_seen = self._ran = 0.0

    def start(self):
        """The call's time begins now (the judge's encoding of its request is not the call's time)."""
        self._started = time.monotonic()
        self._ended = None
        self._settled = False
        self._cpu = self.meter.used
        self._before = threads(self.pid, self.meter.tasks)     # tid -> (ran, waited, runnable) at the start
        self._known = dict(self._before)        # ... as last seen: a thread gone keeps what it had
        self._ran = 0.0                         # CPU its threads ran since the start, at the last look
        self._own = self._last = self._seen = self._cpu_seen = 0.0     # _seen: the wall time of the last look

    def wall(self):
        return (self._ended or time.monotonic()) - self._started

    def stop(self):
        """The answer is in: the call's time ends now. The child's main thread ran to write it, so
        any wait for a CPU it is in now began after: the run delay counted now is the call's whole
        (a helper thread still waiting is what the child left running, not the call's)."""
        self._ended = time.monotonic()
        self.charged()

    def cpu(self):
        """CPU seconds of the child's session charged to this call."""
        return self.meter.read() - self._cpu

    def own(self):
        """The call's own time so far: its wall time less its threads' waits for a CPU."""
        self.charged()
        return self._own

    def charged(self):
        """The time the call is charged (billed to the submission): its CPU or its own time."""
        self._cpu_seen = self.cpu()
        seen = None if self._before is None or self._settled else threads(self.pid, self.meter.tasks)
        self._settled = self._ended is not None
        if seen:
            self._known.update(seen)
            zero = (0.0, 0.0, False)
            ran = sum(now[0] - self._before.get(tid, zero)[0] for tid, now in self._known.items())
            delay = sum(now[1] - self._before.get(tid, zero)[1] for tid, now in self._known.items())
            runnable = any(now[2] for now in seen.values())
            wall = self.wall()
            if runnable and self._ended is None:    # perhaps waiting for a CPU now, a wait not
                own = self._own + min(ran - self._ran, wall - self._seen)   # counted yet: only what
                if ran > self._ran:                 # it ran since last seen; it ran: a wait it is in
                    own = max(own, self._seen - delay)      # began after that look
            else:
                own = wall - delay
            self._own, self._ran, self._seen = max(self._own, own), ran, wall
        self._last = max(self._last, self._cpu_seen, self._own)
        return self._last

    def used(self):
        """How much of its limit the call has used: its CPU, or its own time over SLEEP."""
        self.charged()
        return max(self._cpu_seen, self._own / SLEEP)


class WallClock:
    """A clock for waits where no student code runs: nothing is charged, the wall time is all."""

    def __init__(self):
        self._started = time.monotonic()

    def wall(self):
        return time.monotonic() - self._started

    def charged(self):
        return 0.0

    def used(self):
        return 0.0


class Backstop(Exception):
    """A call's wall time ran past its backstop while its charged time had not: the machine, not
    the submission, kept it from finishing."""


class Limit:
    """When a call must end: once it used `seconds` (its CPU, or its own time over SLEEP), or was
    charged what is left of the submission's `budget` (its CPU or its own time, in full): TimeoutError,
    the submission's doing; or past `backstop` seconds of wall time (Backstop: the grader's)."""

    def __init__(self, clock, seconds, backstop, budget=math.inf):
        self.clock, self.seconds, self.backstop, self.budget = clock, seconds, backstop, budget
        self._look = min(min(seconds, budget) / CPUS, backstop)     # charged time grows at most as fast as
                                                                    # the CPUs run: no look before it could end

    def wait(self):
        """Seconds to wait before looking again; raises when the call must end now."""
        wall = self.clock.wall()
        if wall >= self._look:
            used, charged = self.clock.used(), self.clock.charged()
            if used >= self.seconds or charged >= self.budget:
                raise TimeoutError
            if wall >= self.backstop:
                raise Backstop
            left = min(self.seconds - used, self.budget - charged)
            self._look = wall + max(0.02, min(left / CPUS, self.backstop - wall, 2.0))
        return self._look - wall
