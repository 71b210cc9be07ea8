"""The clock of a call (grader/judge/clock.py): time the submission used is charged, time the
machine's load took from it is not, whichever of its threads lost it, and a call the load kept
from ending is the grader's fault."""
import os
import select
import subprocess
import sys
import time

import pytest
import yaml

from grader.core.request import Request, SandboxKind
from grader.core.runner import grade
from grader.judge import clock, linux
from grader.judge.clock import Backstop, Limit
from grader.readers.manifest import find_lab

SPIN = [sys.executable, "-c", "while True: pass"]
NAP = [sys.executable, "-c", "import time; time.sleep(30)"]


def started(argv, cpu=None):
    process = subprocess.Popen(argv, start_new_session=True)    # a session of its own, as a child's
    if cpu is not None:
        os.sched_setaffinity(process.pid, {cpu})
    return process


def meter_of(process):
    meter = clock.SessionMeter(process.pid)
    meter.RESCAN = 0                # every read a fresh one, here
    call = clock.CallClock(meter)
    call.start()
    return call


def measure(process, seconds):
    meter = meter_of(process)
    time.sleep(seconds)
    return meter.wall(), meter.cpu(), meter.charged()


def ran_for(process):
    """CPU seconds its main thread ran, as the kernel's scheduler counts them."""
    return int(open(f"/proc/{process.pid}/schedstat").read().split()[0]) / 1e9


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


@pytest.mark.slow
def test_a_wait_for_a_cpu_is_not_charged_while_it_lasts():
    """A process runnable all along at the lowest priority, behind a busy one of its session on
    its CPU, read often: the kernel counts each wait for the CPU only once it is over, so a read
    in the middle of one took the wait so far for time of its own, and kept it (the most seen)."""
    code = f"import os\nos.sched_setaffinity(0, {{{min(os.sched_getaffinity(0))}}})\n" \
           "if os.fork() == 0:\n    while True: pass\nos.nice(19)\nwhile True: pass"      # both on one CPU
    process = started([sys.executable, "-c", code])
    try:
        time.sleep(0.5)
        meter = meter_of(process)
        ran = ran_for(process)
        end = time.monotonic() + 3
        while time.monotonic() < end:
            meter.charged()
            time.sleep(0.02)
        ran = ran_for(process) - ran
        assert meter.own() < ran + 0.1, (meter.own(), ran)
    finally:
        os.killpg(process.pid, 9)
        process.wait()


def test_time_spent_asleep_is_charged(processes):
    """In full; against the call's limit SLEEP times over (a sleep may last twice the limit)."""
    processes.append(started(NAP))
    time.sleep(0.3)
    call = meter_of(processes[0])
    time.sleep(1.0)
    wall, used, charged, against = call.wall(), call.cpu(), call.charged(), call.used()
    assert used < 0.1 and charged >= 0.9 * wall and abs(against - charged / clock.SLEEP) < 0.05


def test_a_call_ends_when_its_answer_is_in():
    """A child that slept, answered and still runs a little before it waits for the next call:
    the answer's arrival ends the call's time, all of its sleep is charged (a look while the child
    ran took only what was seen before), and what the judge does after is not."""
    code = "import os, time\nos.write(1, b'u'); time.sleep(0.5); os.write(1, b'a')\n" \
           "t = time.process_time()\nwhile time.process_time() - t < 0.1: pass\ntime.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert process.stdout.read(1) == b"u"
        call = meter_of(process)
        time.sleep(0.2)
        call.charged()                          # a look while it sleeps, as a call's limit takes
        assert process.stdout.read(1) == b"a"
        call.stop()
        own, charged = call.own(), call.charged()
        time.sleep(0.3)
        assert 0.4 <= own <= call.wall() + 0.01 and call.charged() == charged, (own, call.wall())
    finally:
        process.kill()
        process.wait()


def test_what_a_process_starts_in_its_session_is_charged(processes):
    """Two processes started by the measured one, each using 0.55 s of CPU (one still there, one
    ended and reaped), count, while the measured one only sleeps. The wait is for 1.0 s of the
    1.1 s they use: the kernel counts in clock ticks, so 1.1 s can read 1.09 s, never under 1.0 s."""
    work = "import sys, time\nwhile time.process_time() < 0.55: pass\nif sys.argv[1] == 'stay': time.sleep(60)"
    code = "import subprocess, sys, time\n" \
           f"stay, end = (subprocess.Popen([sys.executable, '-c', {work!r}, how]) for how in ('stay', 'end'))\n" \
           "end.wait(); time.sleep(60)"
    processes.append(started([sys.executable, "-c", code]))
    meter = meter_of(processes[0])
    deadline = time.monotonic() + 120
    while meter.cpu() < 1.0 and time.monotonic() < deadline:      # however busy the machine is
        time.sleep(0.1)
    used, charged = meter.cpu(), meter.charged()
    subprocess.run(["pkill", "-KILL", "-s", str(processes[0].pid)])
    assert 1.0 <= used < 1.6 and charged >= used


def test_a_gone_process_keeps_what_it_was_charged(processes):
    processes.append(started(NAP))
    meter = meter_of(processes[0])
    time.sleep(0.5)
    seen = meter.charged()
    processes[0].kill()
    processes[0].wait()
    assert seen > 0.2 and meter.charged() == seen


def test_the_backstop_is_the_graders_and_the_limit_the_submissions(monkeypatch):
    """A call starved of every CPU (all its time waiting) reaches the wall-time backstop, not its
    limit; one that used its limit is stopped as its own."""
    meter = clock.CallClock(clock.SessionMeter(os.getpid()))
    monkeypatch.setattr(meter, "used", lambda: 0.0)
    limit = Limit(meter, seconds=1.0, backstop=0.2)
    time.sleep(0.25)
    with pytest.raises(Backstop):
        limit.wait()
    meter = clock.CallClock(clock.SessionMeter(os.getpid()))
    monkeypatch.setattr(meter, "used", lambda: 0.1)
    limit = Limit(meter, seconds=0.1, backstop=10.0)
    time.sleep(0.1)
    with pytest.raises(TimeoutError):
        limit.wait()


def test_a_sleep_that_spins_at_every_look_is_charged():
    """A process asleep but for a spin around each look of the judge (the looks of a call's limit
    come at times a submission can foresee: half its limit, then every 2 s): seen runnable at
    every look, it was charged only the CPU it ran between looks, never reached its limit, and
    ran on to the wall-time backstop, a grader fault ("the machine was too busy") of its own
    making, graded again and never failed. A look that sees it runnable, having run since the
    look before, is charged at least the time up to that look."""
    code = "import os, time\nfor _ in range(5):\n    t = time.monotonic()\n    os.write(1, b'r')\n" \
           "    while time.monotonic() - t < 0.05: pass\n    time.sleep(0.5)\ntime.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        call = meter_of(process)
        for _ in range(5):
            assert process.stdout.read(1) == b"r"
            call.charged()                      # a look while it spins
        assert call.own() >= 0.5 * call.wall(), (call.own(), call.wall())
    finally:
        process.kill()
        process.wait()


def test_a_helper_threads_wait_for_a_cpu_is_not_charged(processes):
    """The main thread waits in join() while a helper thread uses 0.5 s of CPU, on one CPU shared
    with three busy processes: the call is charged the helper's CPU, not the wall time the load
    stretched it to (a wait in join() is no wait for a CPU: the main thread's run delay alone would
    charge the helper's waits as the call's own time)."""
    cpu = min(os.sched_getaffinity(0))
    code = ("import os, threading, time\n"
            "def spin():\n    t = time.thread_time()\n    while time.thread_time() - t < 0.5: pass\n"
            "os.write(1, b's'); helper = threading.Thread(target=spin); helper.start(); helper.join()\n"
            "os.write(1, b'd'); time.sleep(60)")
    measured = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    os.sched_setaffinity(measured.pid, {cpu})
    processes += [measured, *(started(SPIN, cpu) for _ in range(3))]
    assert measured.stdout.read(1) == b"s"
    call = meter_of(measured)
    while not select.select([measured.stdout], [], [], 0.2)[0]:
        call.charged()                          # looks, as a call's limit takes them
    assert measured.stdout.read(1) == b"d"
    call.stop()
    wall, used, charged = call.wall(), call.cpu(), call.charged()
    assert wall > 1.2 and charged < 0.6 * wall and charged <= used + 0.4, (wall, used, charged)   # a thread that
    # ended keeps the waits seen at the last look: what it waited after that (a look every 0.2 s) is charged


WORK = '''import threading
import time


def spin(seconds):
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass
    return seconds


def here(seconds):
    return spin(seconds)


def helped(seconds):
    done = []
    helper = threading.Thread(target=lambda: done.append(spin(seconds)))
    helper.start()
    helper.join()
    return done[0]
'''


@pytest.mark.slow
def test_the_same_work_scores_the_same_in_a_helper_thread_on_a_busy_machine(tmp_path, processes):
    """0.8 s of CPU, in the calling thread or in a helper thread it joins, with a 2 s limit, while
    three busy processes per CPU stretch it to several seconds of wall time: both pass (the main
    thread's wait in join() is no wait for a CPU, and was once charged as its own time)."""
    lab = tmp_path / "threadlab"
    (lab / "handout").mkdir(parents=True)
    (lab / "hidden").mkdir()
    (lab / "handout" / "work.py").write_text(WORK)
    (lab / "hidden" / "test_work.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.grade(points=1, tags=['here'])\ndef test_here(student):\n    assert student.here(0.8) == 0.8\n\n"
        "@pytest.mark.grade(points=1, tags=['helped'])\ndef test_helped(student):\n"
        "    assert student.helped(0.8) == 0.8\n")
    (lab / "lab.yaml").write_text(yaml.safe_dump({"title": "Threads", "handout": "handout",
                                                  "student_files": {"work.py": ["here", "helped"]},
                                                  "call_timeout": 2, "time_budget": 30, "backstop": 20}))
    processes += [started(SPIN) for _ in range(3 * len(os.sched_getaffinity(0)))]
    results = grade(Request(find_lab(lab), sandbox=SandboxKind.PROCESS))
    assert [(c.tags[0], c.status) for c in results.checks] == [("here", "passed"), ("helped", "passed")], \
        [c.message for c in results.checks]


def test_a_new_child_is_found_among_its_control_group_before_every_process_is_scanned(monkeypatch):
    """host_pid reads the few processes of the sandbox's own control group first: a scan of
    every process on the machine (milliseconds, each fork) only where they do not hold it."""
    from grader.judge import linux

    def scanned():
        raise AssertionError("every process was scanned")

    monkeypatch.setattr(linux, "processes", scanned)
    me = os.getpid()
    assert clock.host_pid(me, 1, likely=[1, me]) == me


def test_a_new_child_not_found_is_no_other_process():
    """A child's pid in the sandbox's namespace names some other process here (the judge, another
    student's zygote): where no process below the sandbox's is that child, none is answered, not
    that pid, which would be counted, limited and killed as the child."""
    idle = subprocess.Popen(["sleep", "60"])        # a sandbox's outer process, with nothing below it
    try:
        assert clock.host_pid(os.getpid(), idle.pid) is None
        assert clock.host_pid(os.getpid(), idle.pid, likely=[idle.pid]) is None
    finally:
        idle.kill()
        idle.wait()


def test_a_child_s_threads_are_read_from_its_control_group_alone(tmp_path, monkeypatch):
    """With a control group, its file of threads (which holds the child's own) is all that is read;
    /proc/PID/task only without one, or where the file cannot be read."""
    tasks = tmp_path / "tasks"
    tasks.write_text(f"{os.getpid()}\n")
    listed = []
    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: listed.append(path) or real(path))
    assert set(clock.threads(os.getpid(), str(tasks))) == {os.getpid()} and listed == []
    assert os.getpid() in clock.threads(os.getpid(), str(tmp_path / "gone")) and listed


def test_a_control_group_s_files_are_known_once(tmp_path):
    """v1's cpuacct group lists its threads in `tasks` and counts in cpuacct.usage, v2's in
    cgroup.threads and cpu.stat: which, is found once per child, not tried at every look."""
    v1, v2, none, cpu = tmp_path / "v1", tmp_path / "v2", tmp_path / "none", tmp_path / "cpu"
    for folder, files in ((v1, {"tasks": "", "cpuacct.usage": "2500000000\n"}),
                          (v2, {"cgroup.threads": "", "cpu.stat": "usage_usec 1500000\nuser_usec 1\n"}), (none, {}),
                          (cpu, {"tasks": "", "cpu.shares": "1024\n"})):
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
    assert clock.group_files(v1) == (f"{v1}/tasks", f"{v1}/cpuacct.usage")
    assert clock.group_files(v2) == (f"{v2}/cgroup.threads", f"{v2}/cpu.stat")
    assert clock.group_files(none) == (None, None) and clock.group_files(cpu) == (f"{cpu}/tasks", None)
    assert clock.group_cpu(clock.group_files(v1)[1]) == 2.5 and clock.group_cpu(clock.group_files(v2)[1]) == 1.5
    meter = clock.SessionMeter(os.getpid(), none)
    assert (meter.tasks, meter.usage) == (None, None) and meter.read() > 0


@pytest.mark.skipif(os.getuid() != 0, reason="a PID namespace of its own needs root")
def test_the_sandbox_s_own_process_is_never_taken_for_a_new_child():
    """The sandbox's control group holds bubblewrap's outer process (`root`), of our PID namespace:
    its pid here may be the pid a new child has in the sandbox's (a student steers the sandbox's
    pids with threads; the host's pids wrap), and once they wrap it is listed before the child.
    Taken for the child, the child's CPU went uncharged (bubblewrap's group was read) and
    bubblewrap was moved into the child's group. Here `root` is process 1, and the child is
    PID 1 of a namespace of its own."""
    outer = subprocess.Popen(["unshare", "--pid", "--fork", "sleep", "60"])
    try:
        deadline = time.monotonic() + 5
        while not (inner := [pid for pid, (parent, _, _) in linux.processes().items() if parent == outer.pid]):
            assert time.monotonic() < deadline, "unshare started no process"
            time.sleep(0.01)
        assert clock.host_pid(1, 1, likely=[1, inner[0]]) == inner[0]
    finally:
        outer.kill()
        outer.wait()
