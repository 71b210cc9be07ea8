"""Isolation that holds: a child cannot touch the host as root, one student cannot see or change
the next one's grading, a submission cannot hold the grader, and every limit is the judge's.

A probe lab (one student file, `probe.py`) is built in a temporary folder; each test sends the
probe's source as a student's submission, calls it through the real zygote and children, and
judges what the probe saw from the values it returned."""
import ast
import ctypes
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from grader.core.request import Request, SandboxKind
from grader.core.runner import grade
from grader.judge.launchers import bubblewrap_works, course_traces, launcher_for, namespace_works, python_prefixes
from grader.judge.linux import CHILD_OOM_SCORE, CLONE_NEWNET, ZYGOTE_OOM_SCORE
from grader.judge.sandbox import CallFailed, Sandbox, Settings
from grader.judge.zygote import Zygote
from grader.readers.manifest import ROOT, find_lab

from conftest import processes_marked, zygote_pid

needs_bwrap = pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap is not available here")
FUNCTIONS = ["look", "plant", "act", "slow", "shout", "keyring_put", "keyring_get", "crafted_answer",
             "raw_answer", "hopper", "peek", "beside_packages", "versions", "unseen", "orphan", "hog",
             "behind", "forks"]

# What the probe can do (tests/probe.py); each test's submission is that module, as a student would send it.
PROBE = (Path(__file__).resolve().parents[1] / "probe.py").read_text()
# A child's /tmp is empty but for the way to Python's own folders, when Python lives there
CLONE_NEWPID = 0x20000000
PYTHON_IN_TMP = sorted({Path(p).parts[2] for p in python_prefixes() if Path(p).is_relative_to("/tmp")})


@pytest.fixture(scope="module")
def probe_lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("course") / "probe"
    (folder / "handout").mkdir(parents=True)
    (folder / "handout" / "probe.py").write_text("def look():\n    raise NotImplementedError\n")
    (folder / "stubs").mkdir()
    (folder / "stubs" / "probe.py").write_text("def look():\n    raise NotImplementedError\n")
    (folder / "hidden").mkdir()
    (folder / "lab.yaml").write_text(yaml.safe_dump({
        "title": "Probe", "handout": "handout", "student_files": {"probe.py": FUNCTIONS},
        "call_timeout": 20, "time_budget": 60}))
    return find_lab(folder)


def submission(source=PROBE):
    return {"probe.py": source.encode()}


@pytest.fixture(scope="module", params=["bubblewrap", "process"])
def warm_zygote(request):
    """One zygote per launcher for the module, as a batch worker keeps one: each test starts
    after a reset (every process of the last test killed, its files wiped), and a zygote a test
    killed or stopped is replaced by the next fork, as in grading."""
    if request.param == "bubblewrap" and not bubblewrap_works():
        pytest.skip("bubblewrap is not available here")
    warm = Zygote(launcher_for("auto" if request.param == "bubblewrap" else "process"))
    yield warm
    warm.close()


@pytest.fixture
def zygote(warm_zygote):
    warm_zygote.reset()
    return warm_zygote


@pytest.fixture(scope="module")
def warm_sandboxed():
    if not bubblewrap_works():
        pytest.skip("bubblewrap is not available here")
    warm = Zygote(launcher_for("required"))
    yield warm
    warm.close()


@pytest.fixture
def sandboxed(warm_sandboxed):
    warm_sandboxed.reset()
    return warm_sandboxed


def daemons():
    return processes_marked(b"isolation-daemon")


# -- 1. the host ------------------------------------------------------------------------------------
@needs_bwrap
def test_no_privilege_over_the_host(probe_lab, sandboxed):
    box = Sandbox(probe_lab, submission(), sandboxed)
    assert box.call("act", ["sysctl"]).startswith("refused")
    caps = box.call("act", ["capabilities"])
    assert caps and all(line.split()[1].strip("0") == "" for line in caps), caps
    box.close()


def test_no_capability_comes_back_in_a_user_namespace(probe_lab, zygote):
    box = Sandbox(probe_lab, submission(), zygote)
    assert box.call("act", ["user namespace"]) == "refused: Operation not permitted"
    box.close()


def test_what_a_child_starts_stays_in_its_session(probe_lab, zygote):
    """A process in a session of its own would escape the call's clock and get a scheduler's
    share of its own (autogroup): a hundred of them starved the judge."""
    box = Sandbox(probe_lab, submission(), zygote)
    assert box.call("act", ["new session"]) == "refused: setsid"
    box.close()


def test_python_shows_nothing_of_the_course(probe_lab, zygote):
    """The venv holds the course's package metadata (the whole README, with how the lab is
    checked) and an editable install's finder (the course's folders): no child reads them, and
    torch still imports."""
    traces, needle = course_traces(), "## How it works"
    if not traces:
        pytest.skip("the course is not installed in the Python running the tests")
    if not zygote.launcher.own_user:
        pytest.skip("a plain child that is the judge's user reads the course itself")
    files = [path for trace in map(Path, traces) for path in ([*trace.iterdir()] if trace.is_dir() else [trace])]
    assert any(needle.encode() in path.read_bytes() for path in files)      # what the judge sees
    assert any(str(ROOT / "grader").encode() in path.read_bytes() for path in files)
    box = Sandbox(probe_lab, submission(), zygote)
    assert all(box.call("peek", [path]) in ("", [], "PermissionError") for path in traces)
    assert box.call("beside_packages", [needle]) == []
    assert box.call("beside_packages", [str(ROOT / "grader")]) == []     # the venv lies in the course: not its path
    imported, installed = box.call("versions")
    assert imported == installed
    box.close()


# -- 2. one student, then the next -----------------------------------------------------------------
@needs_bwrap
def test_nothing_of_one_student_reaches_the_next(probe_lab, sandboxed):
    first = Sandbox(probe_lab, submission(PROBE + "\n# STUDENT-ONE-" + "SECRET-4f1c\n"), sandboxed)
    assert first.call("plant") is True
    first.close()
    sandboxed.reset()
    second = Sandbox(probe_lab, submission(), sandboxed)
    seen = second.call("look", ["STUDENT-ONE-", "SECRET-4f1c"])
    assert seen["/tmp"] == PYTHON_IN_TMP and seen["/dev/shm"] in ([], ["PermissionError"])
    assert seen["/home/student"] == ["work"]
    assert not any("isolation-daemon" in p for p in seen["processes"])
    assert seen["found"] is False           # not in any memory this child inherited
    second.close()


def test_nothing_of_one_student_reaches_the_child_forked_ahead(probe_lab, zygote):
    """--watch forks the next round's child right after the reset: what the last round left
    (files, a daemon, its source in memory) reaches it no more than a child forked later."""
    first = Sandbox(probe_lab, submission(PROBE + "\n# STUDENT-ONE-" + "SECRET-7a2e\n"), zygote)
    assert first.call("plant") is True
    first.close()
    zygote.reset()
    zygote.prepare(first.device, probe_lab.manifest.memory_mb)
    ahead = zygote._spare[1]
    second = Sandbox(probe_lab, submission(), zygote)
    sandboxed = zygote.launcher.name == "bubblewrap"     # a plain child may not read its own memory
    seen = second.call("look", ["STUDENT-ONE-", "SECRET-7a2e"] if sandboxed else [])
    assert zygote._spare is None and ahead.pid in [child.pid for child in second._children]
    assert "planted" not in str(seen) and not any("isolation-daemon" in p for p in seen["processes"])
    assert seen["found"] is False
    second.close()


def test_the_next_room_s_child_is_forked_ahead_after_every_process_of_the_last(probe_lab, zygote):
    """As the rooms change, the next room's main child is forked ahead, once the reset has killed
    every process of the last room: what that room left reaches it no more than a child forked
    later, and the room's first call is answered by it. A submitted call's child is forked anew."""
    box = Sandbox(probe_lab, submission(), zygote)
    box.serve("visible check", "visible")
    assert box.call("plant") is True
    box.serve("hidden check", "hidden")
    with box._in("hidden"):             # the room changes: the reset, then the fork ahead
        pass
    zygote._settle()
    ahead = zygote._spare[1]
    submitted = box.submit("look", hidden=True).result(60)
    assert zygote._spare is not None and ahead.pid not in [child.pid for child in box._children]
    seen = box.call("look")
    assert zygote._spare is None and box._main["hidden"].pid == ahead.pid
    for looked in (seen, submitted):
        assert "planted" not in str(looked) and not any("isolation-daemon" in p for p in looked["processes"])
    box.close()


def test_no_child_forked_ahead_outlives_a_reset(probe_lab, zygote):
    """A child forked ahead on a thread of its own (a grading's start, a room's) is waited for by
    the reset, which kills it: none is kept past a reset, to be given to the next room or student."""
    zygote.prepare_soon("cpu", probe_lab.manifest.memory_mb)
    zygote.reset()
    assert zygote._spare is None and zygote._preparing is None
    zygote.prepare_soon("cpu", probe_lab.manifest.memory_mb)
    zygote._settle()
    ahead = zygote._spare[1]
    zygote.reset()
    assert zygote._spare is None and not Path(f"/proc/{ahead.host_pid}/stat").exists() or \
        Path(f"/proc/{ahead.host_pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")


@needs_bwrap
def test_children_of_one_student_share_no_files(probe_lab, sandboxed):
    box = Sandbox(probe_lab, submission(), sandboxed)
    assert box.submit("plant").result(30) is True
    seen = box.call("look")
    assert seen["/tmp"] == PYTHON_IN_TMP and "planted" not in str(seen)
    box.close()


def test_a_daemon_dies_with_the_grading(probe_lab, zygote):
    box = Sandbox(probe_lab, submission(), zygote)
    box.call("plant")
    time.sleep(0.2)
    assert daemons()
    box.close()
    zygote.reset()
    time.sleep(0.2)
    assert daemons() == []


def test_a_daemon_dies_when_its_zygote_was_killed(probe_lab):
    """Plain process: the student kills the zygote; its daemon still does not outlive grading."""
    warm = Zygote(launcher_for("process"))
    box = Sandbox(probe_lab, submission(), warm)
    box.call("plant")
    try:
        box.call("act", ["kill zygote"])
    except CallFailed:
        pass
    box.close()
    warm.close()
    time.sleep(0.2)
    assert daemons() == []


# -- 3. holding the grader ---------------------------------------------------------------------------
def test_a_stopped_zygote_is_replaced_within_seconds(probe_lab, zygote):
    box = Sandbox(probe_lab, submission(), zygote)
    box.call("act", ["stop zygote"])
    box.close()
    started = time.monotonic()
    zygote.reset()
    again = Sandbox(probe_lab, submission(), zygote)
    assert again.call("slow", [0]) == 0
    assert time.monotonic() - started < 15
    again.close()


@pytest.mark.slow
def test_the_time_budget_ends_a_slow_submission(probe_lab, zygote):
    box = Sandbox(probe_lab, submission(), zygote, Settings(budget=3))
    assert box.call("slow", [0]) == 0            # the clock starts with the first child
    started = time.monotonic()
    failures = []
    for _ in range(6):
        try:
            box.call("slow", [1.2])
        except CallFailed as failure:
            failures.append(failure.kind)
    assert time.monotonic() - started < 5
    assert failures and set(failures) == {"budget"}
    box.close()


def test_what_a_child_leaves_dies_with_it(probe_lab, zygote):
    """A busy process left in another process group of a child that ended would be on no call's
    clock: it could take the CPU from the submission's next calls, stalling them until the
    wall-time backstop made every grading of it a grader fault (regraded, never scored)."""
    box = Sandbox(probe_lab, submission(), zygote)
    with pytest.raises(CallFailed) as failure:
        box.call("orphan", [60])
    assert failure.value.kind == "crashed"
    deadline = time.monotonic() + 5
    while daemons() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not daemons(), "a process of an ended child still runs"
    box.close()


def test_work_the_kernel_reaps_is_charged(probe_lab, zygote):
    """Processes reaped by the kernel (their parent ignores SIGCHLD) add their CPU time to no
    process's: uncounted, their work could starve the call's own main thread (pinned to their
    CPU, at the lowest priority) so that an endless loop was charged a fraction of its wall time
    and ended at the backstop, a grader fault, instead of its limit. Their CPU is the call's."""
    box = Sandbox(probe_lab, submission(), zygote)
    box.call("slow", [0])
    before = box._main[None].meter.read()
    used = box.call("unseen", [1.0])
    time.sleep(box._main[None].meter.RESCAN)
    assert box._main[None].meter.read() - before >= 0.8 * used, "the CPU time of reaped processes was not counted"
    box.close()


@pytest.mark.slow
def test_a_sibling_cannot_starve_a_call_into_a_grader_fault(probe_lab, zygote, monkeypatch):
    """A call run apart (an experiment's), busy on one CPU, and the main child's endless loop at
    the lowest priority on the same CPU: the loop was kept waiting behind its own submission's
    work, charged almost nothing, until the wall-time backstop called it a grader fault (every
    grading of it regraded, never a 0). Each child has an equal share of the submission's CPU."""
    monkeypatch.setattr(probe_lab.manifest, "backstop", 10)
    box = Sandbox(probe_lab, submission(), zygote)
    box.call("slow", [0])
    box.submit("hog", [45], timeout=60)
    deadline = time.monotonic() + 30
    while not (box._children[1:] and box._children[1].meter.read() > 0.5) and time.monotonic() < deadline:
        time.sleep(0.1)                                     # it runs
    with pytest.raises(CallFailed) as failure:
        box.call("behind", [60], timeout=5)
    assert failure.value.kind == "timeout", failure.value.message
    box.close()


def test_the_judge_s_own_work_is_not_charged(probe_lab, zygote, monkeypatch):
    """The judge encoding a request and parsing an answer, slowed as a busy machine slows it (a
    request of 90,000 floats took 0.35 s to encode here under load, all charged to the call while
    its child waited for it): a call that does nothing is charged only its child's little time."""
    from grader.judge import wire

    box = Sandbox(probe_lab, submission(), zygote)
    box.call("slow", [0])
    encode, loads = wire.encode, wire.loads
    monkeypatch.setattr(wire, "encode", lambda *args: (time.sleep(0.5), encode(*args))[1])
    monkeypatch.setattr(wire, "loads", lambda data: (time.sleep(0.5), loads(data))[1])
    spent = box.spent
    assert box.call("slow", [0]) == 0
    assert box.spent - spent < 0.3, box.spent - spent
    box.close()


def test_short_calls_are_charged_their_cpu_once(probe_lab, zygote):
    """Twenty calls of 0.05 s of CPU each: each is charged its own time, and a call whose look read
    the session's CPU afresh was charged too all the CPU since the last reading, the calls' before
    it included (1.6 s charged for 1.05 s used, more or less as the machine's load spaced them)."""
    source = PROBE + '''
def spin(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    return time.process_time()
'''
    box = Sandbox(probe_lab, {"probe.py": source.encode()}, zygote)
    probe_lab.functions["spin"] = "probe.py"
    try:
        first, spent = box.call("spin", [0]), box.spent
        for _ in range(20):
            used = box.call("spin", [0.05]) - first
        assert box.spent - spent < 1.25 * used, (box.spent - spent, used)
    finally:
        del probe_lab.functions["spin"]
        box.close()


# -- 4. and 5. what the judge believes ----------------------------------------------------------------
def test_sizes_are_cut_by_the_judge(probe_lab, zygote):
    uncut = ("\nimport __main__\n__main__.describe = lambda error, workdir: {'type': 'ValueError', "
             "'message': str(error), 'where': ['x' * 10**4] * 50, 'not_implemented': None}\n")
    box = Sandbox(probe_lab, submission(PROBE + uncut), zygote)
    with pytest.raises(CallFailed) as failure:
        box.call("shout", [500_000, "raise"])
    assert len(failure.value.message) < 1100 and failure.value.message.startswith("ValueError: xxx")
    assert len(box.call("shout", [500_000, "return"])) < 5000
    with pytest.raises(CallFailed) as failure:          # past what a frame's tree may hold: refused
        box.call("shout", [5_000_000, "return"])
    assert failure.value.kind == "bad_answer"
    box.close()


@needs_bwrap
def test_the_zygote_output_is_out_of_reach(probe_lab, sandboxed):
    box = Sandbox(probe_lab, submission(), sandboxed)
    assert box.call("act", ["zygote output"]).startswith("refused")
    box.close()


# -- the whole grading ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_spent_budget_is_one_line(tmp_path):
    """A lab whose checks each take a while: past the budget the rest is skipped with one reason.
    Each call's second of sleep is charged in full, however busy the machine: two checks pass."""
    lab = tmp_path / "slowlab"
    (lab / "handout").mkdir(parents=True)
    (lab / "hidden").mkdir()
    (lab / "handout" / "probe.py").write_text("import time\n\ndef slow(s):\n    time.sleep(s)\n    return s\n")
    (lab / "stubs").mkdir()
    (lab / "stubs" / "probe.py").write_text((lab / "handout" / "probe.py").read_text())
    (lab / "hidden" / "test_slow.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.grade(points=1, tags=['slow'])\n@pytest.mark.parametrize('n', range(8))\n"
        "def test_slow(student, n):\n    assert student.slow(1.0) == 1.0\n")
    (lab / "lab.yaml").write_text(yaml.safe_dump({"title": "Slow", "handout": "handout",
                                                  "student_files": {"probe.py": ["slow"]},
                                                  "call_timeout": 5, "time_budget": 2.5}))
    results = grade(Request(find_lab(lab), sandbox=SandboxKind.PROCESS))
    assert "time budget of 2.5 s ran out" in results.stopped
    assert results.score == 2
    assert {c.status for c in results.checks[int(results.score):]} <= {"failed", "skipped"}


def test_inputs_are_seen_not_reported(probe_lab, zygote):
    """An argument changed in place is seen in shared memory, whatever the child echoes back."""
    import torch

    source = PROBE + '''
import __main__
__main__.echo = lambda argument, wire: wire.encode(argument.clone() * 0 + 1)   # a lying echo

def scale(x):
    x.mul_(2)
    return True
'''
    box = Sandbox(probe_lab, {"probe.py": source.encode()}, zygote)
    probe_lab.functions["scale"] = "probe.py"
    try:
        x = torch.arange(6.0).reshape(2, 3)
        value, (after,) = box.call("scale", [x], echo=True)
        assert value is True and torch.equal(after, x * 2) and torch.equal(x, torch.arange(6.0).reshape(2, 3))
    finally:
        del probe_lab.functions["scale"]
        box.close()


@needs_bwrap
def test_no_grader_s_control_group_is_seen(probe_lab, sandboxed):
    """The host's control groups name every grader (its judge's pid) and count what each uses:
    another student's grading could be timed from them."""
    box = Sandbox(probe_lab, submission(), sandboxed)
    assert box.call("peek", ["/sys/fs/cgroup"]) == []
    assert box.call("peek", ["/sys/devices/system/cpu/online"]) not in ("", "FileNotFoundError")  # torch's view
    box.close()


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nsenter"),
                    reason="pids are renumbered only as root, with nsenter (util-linux)")
def test_the_last_student_s_processes_leave_no_count_behind(probe_lab, sandboxed):
    """A submission's pids went on from the last one's, in the sandbox's own PID namespace, and
    its zygote's times held what the last one's children used: a number the last student's code
    counted out in forks or CPU (its hidden inputs) was the next one's to read."""
    seen = []
    for count in (0, 300):
        first = Sandbox(probe_lab, submission(), sandboxed)
        last = max(first.call("forks", [count]))
        first.close()
        second = Sandbox(probe_lab, submission(), sandboxed)
        seen.append([pid - last for pid in second.call("forks", [1])])
        assert second.call("peek", ["/proc/1/stat"]) == "FileNotFoundError"
        second.close()
    assert not any(0 < pid < 64 for pid in seen[0] + seen[1]), seen     # the count went on


def test_the_kernel_keyring_is_out_of_reach(probe_lab, zygote):
    first = Sandbox(probe_lab, submission(), zygote)          # a key outlives its maker's user
    assert first.call("keyring_put", ["the hidden inputs were ..."]) is False
    first.close()
    zygote.reset()
    second = Sandbox(probe_lab, submission(), zygote)
    assert second.call("keyring_get") is None
    second.close()


@needs_bwrap
def test_signals_do_not_reach_the_zygote(probe_lab, sandboxed):
    box = Sandbox(probe_lab, submission(), sandboxed)
    assert box.call("act", ["interrupt zygote"]) == "done"
    time.sleep(0.5)
    box.close()
    sandboxed.reset()
    assert not sandboxed.broken and sandboxed.process.poll() is None


def test_a_crafted_answer_cannot_hold_the_judge(probe_lab, zygote):
    box = Sandbox(probe_lab, submission(), zygote)
    box.call("slow", [0])
    started = time.monotonic()
    with pytest.raises(CallFailed) as failure:
        box.call("crafted_answer", [500_000], timeout=2)     # 1 MB of JSON: within MAX_TREE
    assert failure.value.kind == "bad_answer" and time.monotonic() - started < 4
    box.close()


ONE_FLOAT = '{"__tensor__":{"__tensor__":{"at":0,"size":4,"dtype":"float32","shape":[1]}},"device":"cpu"}'
TWO_INTS = '{"__tensor__":{"__tensor__":{"at":0,"size":16,"dtype":"int64","shape":[2]}},"device":"cpu"}'
CRAFTED = {   # answers whose reading or use makes torch itself fail, in the judge: all bad answers
    "shape past int64": '{"id":{id},"ok":true,"value":{"__tensor__":{"at":0,"size":0,"dtype":"float32",'
                        '"shape":[0,9223372036854775808]}}}',
    "strides overflow": '{"id":{id},"ok":true,"value":{"__tensor__":{"at":0,"size":0,"dtype":"float32",'
                        '"shape":[0,4611686018427387904,4611686018427387904]}}}',
    "device past int64": '{"id":{id},"ok":true,"value":{"__device__":100000000000000000000000000000}}',
    "a tensor for an answer": ONE_FLOAT,
    "a tensor for an id": '{"id":' + TWO_INTS + ',"ok":true,"value":1}',
    "a tensor for an error": '{"id":{id},"ok":false,"error":' + ONE_FLOAT + '}',
    "a tensor for a flag": '{"id":{id},"ok":false,"error":{"type":"x","message":"y","where":[],'
                           '"not_implemented":' + TWO_INTS + '}}'}


@pytest.mark.parametrize("crafted", CRAFTED)
def test_a_crafted_answer_is_a_bad_answer(probe_lab, zygote, crafted):
    box = Sandbox(probe_lab, submission(), zygote)
    box.call("slow", [0])
    child = box._main[None]
    with pytest.raises(CallFailed) as failure:
        box.call("raw_answer", [CRAFTED[crafted], "00" * 16], timeout=5)
    assert failure.value.kind == "bad_answer" and not child.alive
    box.close()


def unix_socket_in_network_of(pid):
    """A unix datagram socket made in process `pid`'s network namespace, whose abstract addresses
    are that namespace's (a plain child as root has one of its own)."""
    made = []

    def make():                     # setns moves this thread alone, which ends here
        if os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat("/proc/self/ns/net").st_ino:
            return made.append(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
        with open(f"/proc/{pid}/ns/net") as namespace:
            if ctypes.CDLL(None).setns(namespace.fileno(), CLONE_NEWNET) != 0:
                raise OSError("setns")
        made.append(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))

    thread = threading.Thread(target=make)
    thread.start()
    thread.join()
    return made[0]


def test_a_hopping_daemon_dies_in_the_plain_process_too(probe_lab):
    address = f"grader-hop-{os.getpid()}"
    warm = Zygote(launcher_for("process"))
    box = Sandbox(probe_lab, submission(), warm)
    assert box.call("hopper", [address, 60]) is True
    with unix_socket_in_network_of(box._main[None].host_pid) as beats:
        beats.bind("\0" + address)
        beats.settimeout(5)
        assert beats.recv(16) == b"beat"                               # it runs
        box.close()
        warm.reset()
        warm.close()
        beats.setblocking(False)
        while select.select([beats], [], [], 0)[0]:                    # beaten before it died
            beats.recv(16)
        time.sleep(1)
        assert not select.select([beats], [], [], 0)[0], "the daemon still beats after the grading ended"


def test_out_of_memory_a_child_goes_before_its_zygote_and_the_judge_last(probe_lab, zygote):
    """The zygote is the largest process of a submission's group (torch): at its children's OOM
    score it was the kernel's choice when a child's memory ran out, and every call after lost its
    sandbox. Children go first, and as root may not lower their score (in bubblewrap, where
    the judge holds CAP_SYS_RESOURCE, which sets the least they may set); the judge goes last."""
    box = Sandbox(probe_lab, submission(), zygote)
    score, lowered = box.call("act", ["oom score"])
    box.close()
    zygote_score = int(Path(f"/proc/{zygote_pid(zygote)}/oom_score_adj").read_text())
    assert zygote_score == ZYGOTE_OOM_SCORE < int(score) == CHILD_OOM_SCORE
    assert int(Path("/proc/self/oom_score_adj").read_text()) < ZYGOTE_OOM_SCORE
    effective = int(next(line for line in open("/proc/self/status") if line.startswith("CapEff")).split()[1], 16)
    if os.getuid() == 0 and (zygote.launcher.name == "process" or effective >> 24 & 1):     # CAP_SYS_RESOURCE
        assert lowered == "PermissionError"


@pytest.mark.slow
def test_what_a_submission_holds_is_counted_together(probe_lab, monkeypatch):
    """As root with cgroups: memory held in memfds, outside any process's address space, still
    counts against the submission; past its limit the kernel kills in the submission's group
    (the child, not its zygote: it goes on), never elsewhere."""
    from grader.judge import cgroup

    monkeypatch.setattr(cgroup, "SUBMISSION_MEMORY", 1536 * 2**20)
    probe = cgroup.Cgroup.make("grader-probe-test")
    if probe is None:
        pytest.skip("no cgroup can be made here (not root, or no writable cgroup filesystem)")
    probe.remove()
    warm = Zygote(launcher_for("auto"))
    folders, process = list(warm.cgroup.folders), warm.process
    box = Sandbox(probe_lab, submission(PROBE + HOARD), warm)
    probe_lab.functions["hoard"] = "probe.py"
    try:
        with pytest.raises(CallFailed) as failure:
            box.call("hoard", [3072])
        assert failure.value.kind == "crashed" and "killed by SIGKILL" in failure.value.message
        assert box.call("slow", [0]) == 0                       # and grading goes on
        assert warm.process is process and process.poll() is None
    finally:
        del probe_lab.functions["hoard"]
        box.close()
        warm.close()
    assert folders and not any(folder.exists() for folder in folders)     # gone with its zygote


HOARD = '''
def hoard(megabytes):
    """Hold `megabytes` in memfds: written, never mapped, so outside RLIMIT_AS."""
    global KEEP
    KEEP, chunk = [], b"\\1" * (16 << 20)
    for i in range(megabytes // 16):
        fd = os.memfd_create(f"hoard{i}")
        os.write(fd, chunk)
        KEEP.append(fd)
    return len(KEEP) * 16
'''


# A judge as Gradescope runs one, in a container of its own: PID 1 of a fresh PID namespace. It
# grades the probe in the process sandbox, says what each `act` gave, then waits for its stdin to close.
CONTAINED_JUDGE = """
import sys
from pathlib import Path
from grader.judge.launchers import ProcessLauncher
from grader.judge.sandbox import Sandbox
from grader.judge.zygote import Zygote
from grader.readers.manifest import find_lab
lab, probe, *acts = sys.argv[1:]
zygote = Zygote(ProcessLauncher())
box = Sandbox(find_lab(lab), {"probe.py": Path(probe).read_bytes()}, zygote)
for what in acts:
    print(repr(box.call("act", [what])), flush=True)
sys.stdin.read()
box.close()
zygote.close()
"""


def contained_judge(probe_lab, *acts):
    if os.getuid() != 0 or not namespace_works(CLONE_NEWPID) or not shutil.which("unshare"):
        pytest.skip("needs root and PID namespaces, as a container host has")
    return subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", CONTAINED_JUDGE,
                             str(probe_lab.folder), str(Path(__file__).resolve().parents[1] / "probe.py"), *acts],
                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_judges_in_two_containers_share_no_user(probe_lab):
    """Gradescope grades many submissions at once on one host, each judge in a container of its
    own, where its pid is the same small number. The kernel counts a user's processes across the
    whole host (RLIMIT_NPROC), so a sandbox user made of the judge's pid was every container's,
    and one student who started all the processes that user may have left the next student's
    code unable to start one."""
    crowded = contained_judge(probe_lab, "user", "crowd")
    try:
        crowded_user, started = (ast.literal_eval(crowded.stdout.readline()) for _ in range(2))
        assert started > 0
        other = contained_judge(probe_lab, "user", "start")
        other_user, start = (ast.literal_eval(line) for line in other.communicate("", timeout=300)[0].splitlines())
    finally:
        crowded.communicate("", timeout=120)
    assert crowded_user != other_user and start == "done"
    assert daemons() == []


def test_a_user_that_runs_a_process_anywhere_is_not_drawn_for_the_sandbox(monkeypatch):
    """The sandbox's user runs no process on the machine, in this container or another: one
    that does (started here as that user) is passed over for the next drawn."""
    if os.getuid() != 0:
        pytest.skip("a user of its own is drawn as root only")
    from grader.judge import launchers

    taken, free = 7_000_001, 7_000_002
    draws = iter([taken - launchers.SANDBOX_UID_BASE, free - launchers.SANDBOX_UID_BASE])
    monkeypatch.setattr(launchers.secrets, "randbelow", lambda _: next(draws))
    running = subprocess.Popen(["/bin/sleep", "30"], user=taken, group=taken, extra_groups=[], cwd="/")
    try:
        assert launchers._drawn_uid(-1) == free                 # -1: no judge's, a draw of its own
    finally:
        running.kill()
        running.wait()
        launchers._drawn_uid.cache_clear()
