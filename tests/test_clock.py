"""The clock of a call (grader/judge/clock.py): time the submission used is charged, time the
machine's load took from it is not, and a call the load kept from ending is the grader's fault."""
import os
import subprocess
import sys
import time

import pytest

from grader.judge import clock
from grader.judge.sandbox import Backstop, Limit

SPIN = [sys.executable, "-c", "while True: pass"]
NAP = [sys.executable, "-c", "import time; time.sleep(30)"]


def started(argv, cpu=None):
    process = subprocess.Popen(argv, start_new_session=True)    # a session of its own, as a child's
    if cpu is not None:
        os.sched_setaffinity(process.pid, {cpu})
    return process


def measure(process, seconds):
    meter = clock.CallClock(process.pid)
    time.sleep(seconds)
    return meter.wall(), meter.cpu(), meter.charged()


@pytest.fixture
def processes():
    running = []
    yield running
    for process in running:
        process.kill()
        process.wait()


def test_time_lost_to_other_work_is_not_charged(processes):
    """Four busy processes on one CPU: the measured one runs a quarter of the time, and is
    charged about that, not the wall time."""
    cpu = min(os.sched_getaffinity(0))
    measured = started(SPIN, cpu)
    processes += [measured, *(started(SPIN, cpu) for _ in range(3))]
    time.sleep(0.3)
    wall, used, charged = measure(measured, 2.0)
    assert charged < 0.6 * wall, (wall, used, charged)
    assert abs(charged - used) < 0.25 * wall


def test_time_spent_asleep_is_charged(processes):
    processes.append(started(NAP))
    time.sleep(0.3)
    wall, used, charged = measure(processes[0], 1.0)
    assert used < 0.1 and charged >= 0.9 * wall


def test_what_a_process_starts_in_its_session_is_charged(processes):
    """Two processes started by the measured one, each using 0.5 s of CPU (one still running, one
    reaped), count, while the measured one only sleeps."""
    work = "import time\nwhile time.process_time() < 0.5: pass\ntime.sleep(30)"
    code = "import subprocess, sys, time\n" \
           f"a, b = (subprocess.Popen([sys.executable, '-c', {work!r}]) for _ in range(2))\n" \
           "time.sleep(3); b.kill(); b.wait(); time.sleep(30)"
    processes.append(started([sys.executable, "-c", code]))
    meter = clock.CallClock(processes[0].pid)
    deadline = time.monotonic() + 60
    while meter.cpu() < 1.0 and time.monotonic() < deadline:      # however busy the machine is
        time.sleep(0.1)
    time.sleep(max(0.0, 3.5 - meter.wall()))
    used, charged = meter.cpu(), meter.charged()
    subprocess.run(["pkill", "-KILL", "-s", str(processes[0].pid)])
    assert 1.0 <= used < 1.5 and charged >= used


def test_a_gone_process_keeps_what_it_was_charged(processes):
    processes.append(started(SPIN))
    meter = clock.CallClock(processes[0].pid)
    time.sleep(0.5)
    seen = meter.charged()
    processes[0].kill()
    processes[0].wait()
    assert seen > 0.2 and meter.charged() == seen


def test_the_backstop_is_the_graders_and_the_limit_the_submissions(monkeypatch):
    """A call starved of every CPU (all its time waiting) reaches the wall-time backstop, not its
    limit; one charged its limit is stopped as its own."""
    meter = clock.CallClock(os.getpid())
    monkeypatch.setattr(meter, "charged", lambda: 0.0)
    limit = Limit(meter, seconds=1.0, backstop=0.2)
    time.sleep(0.25)
    with pytest.raises(Backstop):
        limit.wait()
    monkeypatch.setattr(meter, "charged", lambda: 1.0)
    with pytest.raises(TimeoutError):
        Limit(meter, seconds=1.0, backstop=10.0).wait()
