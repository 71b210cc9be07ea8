"""The child's OS sandbox: a hostile submission cannot reach the host, the network or the
answers, and leaves nothing running. Needs bubblewrap; the fallback is tested to say so."""
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml

from grader.base.errors import SetupError
from grader.core.request import Device, Request, SandboxKind, Selection
from grader.core.runner import grade
from grader.judge import launchers
from grader.judge.cgroup import Cgroup, judge_id
from grader.judge.channel import Child
from grader.judge.launchers import bubblewrap_works, launcher_for
from grader.judge.sandbox import Sandbox
from grader.judge.zygote import Zygote, let_go
from grader.readers.manifest import find_lab

from conftest import processes_marked

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = Path(__file__).resolve().parents[1] / "submissions" / "hostile"
needs_bwrap = pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap is not available here")


def daemons():
    return processes_marked(b"grader-daemon-marker")


@pytest.fixture
def listener():
    """A server on 127.0.0.1:47321 that records whatever reaches it."""
    received = []
    server = socket.create_server(("127.0.0.1", 47321), reuse_port=True)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                connection, _ = server.accept()
                received.append(connection.recv(100))
            except OSError:
                pass

    thread = threading.Thread(target=serve)
    thread.start()
    yield received
    stop.set()
    thread.join()
    server.close()


@pytest.mark.slow
@needs_bwrap
def test_hostile_submission_is_contained(listener):
    canary = Path("/tmp/grader-canary")
    canary.write_text("still here")
    created = Path("/tmp/grader-hostile-created")
    created.unlink(missing_ok=True)
    results = grade(Request(find_lab("lab2"), HOSTILE, Device.CPU, Selection(("rope_frequencies",)),
                            SandboxKind.REQUIRED))
    time.sleep(0.5)
    assert results.sandbox == "bubblewrap"
    assert results.score == 0                       # it found no reference to copy
    assert canary.read_text() == "still here" and not created.exists()
    assert listener == []
    assert daemons() == []
    leaked = " ".join(c.output + c.message for c in results.checks)
    assert "mark.grade" not in leaked and "def test_" not in leaked


@needs_bwrap
def test_sandbox_is_named_in_report_and_json(tmp_path):
    out = tmp_path / "results.json"
    run = subprocess.run([sys.executable, "grade.py", "lab2", "--submission", "reference/lab2",
                          "-k", "rope_frequencies", "--json", str(out)], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert run.returncode == 0 and "sandbox bubblewrap" in run.stdout
    assert json.loads(out.read_text())["extra_data"]["sandbox"] == "bubblewrap"


def test_without_bubblewrap_the_fallback_says_so(tmp_path):
    """With bwrap off the PATH: `auto` grades in a plain process and says so, `required` refuses."""
    env = {**os.environ, "PATH": str(tmp_path), "COLUMNS": "200"}
    out = tmp_path / "results.json"
    run = subprocess.run([sys.executable, "grade.py", "lab2", "--submission", "reference/lab2",
                          "-k", "rope_frequencies", "--json", str(out)], cwd=ROOT,
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0 and "sandbox process" in run.stdout and "bubblewrap" in run.stdout
    assert json.loads(out.read_text())["extra_data"]["sandbox"] == "process"
    run = subprocess.run([sys.executable, "grade.py", "lab2", "--sandbox", "required"], cwd=ROOT,
                         capture_output=True, text=True, env=env)
    assert run.returncode == 2 and "bubblewrap" in run.stdout



def test_a_submission_has_a_cpu_share_of_its_own():
    """As root with cgroups: a hundred busy processes of one submission get one share of the CPU
    between them, so they slow only that submission; without, the report says how it is done."""
    assert "no cpu control group" in Cgroup.fairness(None)
    group = Cgroup.make(f"grader-{judge_id()}-cpu")
    if group is None:
        pytest.skip("no control groups here")
    try:
        assert group.cpu and Cgroup.fairness(group).startswith("a control group")
        shares = [folder for folder in group.folders if (folder / "cpu.weight").exists() or
                  (folder / "cpu.shares").exists()]
        assert shares, group.folders
    finally:
        group.remove()


def test_groups_of_killed_judges_are_swept(monkeypatch):
    """A judge beside us (another test's) may sweep the gone judges' groups first, as it should:
    then the daemon never joined its group, and the end is the same."""
    probe = Cgroup.make(f"grader-{judge_id()}-999992")      # numbers no zygote of this process takes
    if probe is None:
        pytest.skip("no control groups here")
    probe.remove()
    monkeypatch.setattr(Cgroup, "sweep", staticmethod(lambda: None))     # until all are made

    def staged(name):
        return Cgroup.make(name) or Cgroup([])

    gone = subprocess.Popen(["true"])
    namespace, _, started = judge_id(gone.pid).split(".")
    gone.wait()                                     # a judge killed before it removed its group
    left = staged(f"grader-{namespace}.{gone.pid}.{started}-0")
    reused = staged(f"grader-{namespace}.{os.getppid()}.0-0")   # its pid since taken by another
    alive = Cgroup.make(f"grader-{judge_id(os.getppid())}-0")
    elsewhere = Cgroup.make(f"grader-1.{gone.pid}.{started}-0")     # a judge in another PID namespace
    daemon = subprocess.Popen(left.wrap(["sleep", "300"]), start_new_session=True)   # a student's, left
    deadline = time.monotonic() + 5
    while left.folders and daemon.pid not in left.pids() and daemon.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    monkeypatch.undo()
    Cgroup.make(f"grader-{judge_id()}-999991").remove()  # the next judge's start sweeps
    assert daemon.wait(5) == -9 or not left.folders or not left.folders[0].exists()
    assert not any(folder.exists() for folder in left.folders + reused.folders)
    assert all(folder.exists() for folder in alive.folders + elsewhere.folders), "another judge's groups"
    alive.remove()
    elsewhere.remove()


SWEEP = """
import shutil, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from grader.judge import cgroup
cgroup.CGROUPS = Path(sys.argv[2])                                   # the staged tree
cgroup.Cgroup.remove = lambda group: shutil.rmtree(group.folders[0])  # its folders are no groups
cgroup.Cgroup.sweep()
"""


@pytest.mark.skipif(os.getuid() != 0 or platform.machine() != "x86_64", reason="tests/container.py: root, x86_64")
def test_a_judge_in_a_container_leaves_the_groups_of_judges_beside_it(tmp_path):
    """A judge as Docker runs one (root without CAP_SYS_PTRACE, tests/container.py) may not read the
    PID namespace of a judge with more capabilities: it took every judge beside it for gone, and
    its start killed what their groups held, their zygotes (exit status -9) mid-grading. Staged: a
    folder for the cgroup tree, each group holding a process of ours; the live judge's (this one's)
    is left alone, and a gone judge's is still swept."""
    gone = subprocess.Popen(["true"])
    dead = judge_id(gone.pid)
    gone.wait()
    held = {}
    for judge in (judge_id(), dead):
        held[judge] = subprocess.Popen(["sleep", "60"], start_new_session=True)    # a zygote, say
        group = tmp_path / "memory" / f"grader-{judge}-0"
        group.mkdir(parents=True)
        (group / "cgroup.procs").write_text(f"{held[judge].pid}\n")
    try:
        run = subprocess.run([sys.executable, str(ROOT / "tests" / "container.py"), "--", sys.executable, "-I", "-c",
                              SWEEP, str(ROOT), str(tmp_path)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert held[dead].wait(5) == -9 and not (tmp_path / "memory" / f"grader-{dead}-0").exists()
        assert held[judge_id()].poll() is None, "a live judge's group was swept"
    finally:
        for process in held.values():
            process.kill()
            process.wait()


@pytest.mark.parametrize("mode", ["required", "process"])
def test_python_under_tmp_stays_whole_in_a_child(tmp_path, monkeypatch, mode):
    """A learner's venv in /tmp: the child's empty /tmp must not hide what Python imports late."""
    if mode == "required" and not bubblewrap_works():
        pytest.skip("bubblewrap is not available here")
    venv = tmp_path / "venv"                        # under /tmp, as pytest's tmp_path is
    (venv / "late").mkdir(parents=True)
    (venv / "late" / "module.py").write_text("LATE = 'imported'\n")
    real = launchers.python_prefixes()
    monkeypatch.setattr(launchers, "python_prefixes", lambda: sorted([*real, str(venv)]))
    lab = tmp_path / "course" / "late"
    for part in ("handout", "stubs", "hidden"):
        (lab / part).mkdir(parents=True)
    (lab / "handout" / "late.py").write_text("def read(path):\n    raise NotImplementedError\n")
    (lab / "stubs" / "late.py").write_text("def read(path):\n    raise NotImplementedError\n")
    (lab / "lab.yaml").write_text(yaml.safe_dump({"title": "Late", "handout": "handout",
                                                  "student_files": {"late.py": ["read"]}}))
    source = b"def read(path):\n    return open(path).read()\n"
    warm = Zygote(launcher_for(mode))
    box = Sandbox(find_lab(lab), {"late.py": source}, warm)
    try:
        assert box.call("read", [str(venv / "late" / "module.py")]) == "LATE = 'imported'\n"
    finally:
        box.close()
        warm.close()


@pytest.mark.parametrize("mode", ["auto", "process"])
def test_a_child_forked_ahead_is_used_once_and_only_fresh(mode):
    """--watch forks the next round's child while the learner reads: the next fork for the same
    device takes it; a fork for another device, a reset and a close each drop it."""
    lab = find_lab("lab2")
    memory = lab.manifest.memory_mb
    zygote = Zygote(launcher_for(mode))
    try:
        zygote.prepare("cpu", memory)
        ahead = zygote._spare[1]
        assert zygote.fork("cpu", memory) is ahead and zygote._spare is None
        let_go(ahead)
        for drop in (lambda: let_go(zygote.fork("meta", memory)), zygote.reset):
            zygote.prepare("cpu", memory)
            left = zygote._spare[1]
            drop()
            assert zygote._spare is None and left.shared.closed
        zygote.prepare("cpu", memory)       # killed while it waited (out of memory, say): not used
        os.kill(zygote._spare[1].host_pid, signal.SIGKILL)
        time.sleep(0.2)
        left = zygote._spare[1]
        let_go(zygote.fork("cpu", memory))
        assert left.shared.closed
        zygote.reset()
        zygote.prepare("cpu", memory)       # a real grading on the child forked ahead
        results = grade(Request(lab, ROOT / "reference" / "lab2", Device.CPU, Selection(("positions.py",))), zygote)
        assert results.score == results.max_score > 0 and zygote._spare is None
        zygote.prepare("cpu", memory)
    finally:
        zygote.close()
    assert zygote._spare is None


@pytest.mark.parametrize("mode", ["auto", "process"])
def test_a_child_forked_ahead_and_dropped_leaves_no_control_group(mode):
    """A spare that no round took (a reset, a fork for another device) is killed before its own
    control groups are removed: removed while it still ran, they stayed behind, one pair a
    dropped spare, for the zygote's life (a --watch session), and a later child given the same
    pid got no group of its own, so no kernel count of its CPU time."""
    memory = find_lab("lab2").manifest.memory_mb
    zygote = Zygote(launcher_for(mode))
    try:
        if zygote.cgroup is None:
            pytest.skip("no control groups here (not root)")
        dropped = []
        for drop in (zygote.reset, lambda: let_go(zygote.fork("meta", memory))):
            zygote.prepare("cpu", memory)
            dropped += zygote._spare[1].groups
            drop()
        assert dropped and not [folder for folder in dropped if folder.exists()]
    finally:
        zygote.close()


def test_a_zygote_gone_while_a_child_is_forked_ahead_is_replaced_for_a_submitted_call(monkeypatch):
    """A submitted call forks anew, without waiting for a fork ahead (a room's main child) still
    running on its thread. Found the zygote gone (killed: a plain process's student may, or the
    kernel out of memory), it replaced it holding the zygote's lock, and the replacement waits for
    the fork ahead, which needed that lock to end: the judge hung for ever, its grading never ended."""
    from grader.judge import zygote as module

    memory = find_lab("lab2").manifest.memory_mb
    zygote, submitted = Zygote(launcher_for("process")), None
    try:
        let_go(zygote.fork("cpu", memory))          # ready
        inside, go_on = threading.Event(), threading.Event()
        real = module.first_to_go

        def slow(pid):                  # the fork ahead, past its order, not yet kept as the spare
            if threading.current_thread() is zygote._preparing:
                inside.set()
                go_on.wait(5)
            real(pid)

        monkeypatch.setattr(module, "first_to_go", slow)
        zygote.prepare_soon("cpu", memory)
        assert inside.wait(30)
        os.killpg(zygote.process.pid, signal.SIGKILL)
        zygote.process.wait()
        threading.Timer(0.5, go_on.set).start()
        forked = []
        submitted = threading.Thread(target=lambda: forked.append(zygote.fork("cpu", memory, ahead=False)),
                                     daemon=True)
        submitted.start()
        submitted.join(60)
        assert forked, "the judge hung: a zygote replaced under its lock waited for a fork ahead that needed it"
        let_go(forked[0])
    finally:
        go_on.set()
        if submitted is None or not submitted.is_alive():
            zygote.close()


def test_a_zygote_closed_before_it_is_ready_does_not_wait_for_its_fork_ahead():
    """Ctrl-C as a grading starts: a fork ahead waits for a zygote that is not ready yet (it imports
    torch; here it never will). Its close kills it first, so that the fork ahead ends at once: it
    waited for it under the zygote's lock, as long as a zygote may take to start (minutes)."""
    launcher = launcher_for("process")
    launcher.argv = lambda scratch, control_fd: [sys.executable, "-c", "import time; time.sleep(120)"]
    zygote = Zygote(launcher)
    zygote.prepare_soon("cpu", 1024)
    time.sleep(0.2)
    began = time.monotonic()
    zygote.close()
    assert time.monotonic() - began < 10 and zygote._spare is None and zygote.process.poll() is not None


def test_no_fork_ahead_begins_while_a_zygote_gone_is_replaced():
    """A reset or a fork that finds the zygote gone replaces it outside its lock, once any fork ahead
    has ended: none may begin meanwhile, or the close would wait, under the lock, for a fork that
    needs it. A reset whose order fails replaces the zygote."""
    memory = find_lab("lab2").manifest.memory_mb
    zygote = Zygote(launcher_for("process"))
    try:
        let_go(zygote.fork("cpu", memory))
        zygote._replacing = True
        zygote.prepare_soon("cpu", memory)
        assert zygote._preparing is None and zygote._spare is None
        zygote._replacing = False
        first = zygote.process.pid
        os.killpg(first, signal.SIGKILL)
        zygote.process.wait()
        zygote.reset()
        assert zygote.process.pid != first and not zygote.broken
        let_go(zygote.fork("cpu", memory))
    finally:
        zygote.close()


@pytest.mark.parametrize("mode", ["auto", "process"])
def test_a_grading_s_first_child_is_forked_ahead_and_a_zygote_ended_leaves_nothing(mode):
    """A grading forks its first child ahead, on a thread, while pytest collects its checks; its
    first call takes that child. A grading whose zygote ends next (cli's) leaves its last reset to
    that end. end() sends the zygote its end without waiting (the report is written meanwhile);
    close() then waits, and leaves no process or control group behind."""
    lab = find_lab("lab2")
    zygote = Zygote(launcher_for(mode))
    try:
        forks = []
        fork = zygote._fork

        def counted(*args):
            forks.append(threading.current_thread())
            return fork(*args)

        zygote._fork = counted
        request = Request(lab, ROOT / "reference" / "lab2", Device.CPU, Selection(("positions.py",)))
        results = grade(request, zygote)
        assert results.score == results.max_score > 0
        assert forks[0] is not threading.main_thread()      # the first child: forked ahead
        resets, reset = [], zygote.reset
        zygote.reset = lambda *args: resets.append(1) or reset(*args)
        again = grade(request, zygote, ending=True)         # cli's: the zygote's end comes next
        assert again.score == results.score and len(resets) == 1      # the change of room's alone
        pid, folders = zygote.process.pid, list(zygote.cgroup.folders if zygote.cgroup else [])
        began = time.monotonic()
        zygote.end()
        zygote.end()
        assert time.monotonic() - began < 0.5
    finally:
        zygote.close()
    assert not Path(f"/proc/{pid}").exists() and not [folder for folder in folders if folder.exists()]


def test_the_sandboxed_zygote_is_given_its_modules_compiled():
    """bubblewrap binds the compiled forms Python keeps of the modules the zygote loads beside
    them, where Python looks for them: it reads them, not compiling each again every grading."""
    import compileall
    import importlib.util

    for source in launchers.IN_SANDBOX:
        compileall.compile_file(str(source), quiet=1)
    argv = launchers.BubblewrapLauncher().argv("/tmp", 3)
    for source in launchers.IN_SANDBOX[1:]:
        cached = importlib.util.cache_from_source(str(source))
        at = argv.index(cached)
        assert argv[at - 1:at + 2] == ["--ro-bind", cached, f"/grader/__pycache__/{Path(cached).name}"]


def test_a_learner_s_own_user_starts_the_sandbox(monkeypatch):
    """Not root (a learner's own machine), bubblewrap makes the user namespace and the zygote stays
    the learner's user: no user of its own is drawn, which only root can take. One was drawn for
    every argv, so every grading in bubblewrap refused to start ("no user of its own for the
    sandbox") for anyone but root."""
    def root_only(pid):
        raise SetupError("no user of its own for the sandbox")

    monkeypatch.setattr(os, "getuid", lambda: 1000)
    monkeypatch.setattr(launchers, "_drawn_uid", root_only)
    launcher = launchers.BubblewrapLauncher()
    assert not launcher.own_user
    argv = launcher.argv("/tmp", 3)
    assert argv[argv.index("sandboxed") + 1] == "1000"


def test_a_zygote_gone_while_it_starts_is_started_once_more(monkeypatch):
    """A first zygote gone before it was ready (killed by something else: no student code has run)
    is started again; only a second that cannot start says that this machine runs none (exit 2).
    Staged: the first closes its channel and waits, as one killed while the judge waits for it."""
    launcher, starts = launcher_for("process"), []
    argv = launcher.argv

    def first_gone(scratch, control_fd):
        starts.append(control_fd)
        if len(starts) > 1:
            return argv(scratch, control_fd)
        return [sys.executable, "-c", f"import os, time; os.close({control_fd}); time.sleep(60)"]

    monkeypatch.setattr(launcher, "argv", first_gone)
    zygote = Zygote(launcher)
    try:
        let_go(zygote.fork("cpu", 1024))
        assert len(starts) == 2 and zygote.proven
    finally:
        zygote.close()


def test_a_child_closed_by_threads_at_once_is_closed_once_and_quietly(monkeypatch):
    """A call run apart ends in its own thread while the sandbox closes (the grading is over):
    both close the child. Neither may fail, nor read or close a pipe another has closed (a number
    closed may by then be another file's): a TypeError in the judge's thread was seen in a full
    run. Reads are slowed here, as a busy machine slows them, to widen the race."""
    memory = find_lab("lab2").manifest.memory_mb
    read = os.read
    monkeypatch.setattr(os, "read", lambda fd, size: (time.sleep(0.05), read(fd, size))[1])
    zygote = Zygote(launcher_for("process"))
    errors = []
    try:
        for _ in range(5):
            child = Child(zygote, zygote.fork("cpu", memory))
            barrier = threading.Barrier(4)

            def close(child=child, barrier=barrier):
                barrier.wait()
                try:
                    child.kill()
                except BaseException as error:
                    errors.append(error)
            threads = [threading.Thread(target=close) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        zygote.close()
    assert not errors, errors


@pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap is not available here")
def test_a_new_child_not_found_is_a_zygote_gone(monkeypatch):
    """A child not found among the sandbox's processes has no pid here to count, limit or kill:
    its pid in the sandbox, some other process here, is never taken for it. The zygote is given
    up (a grader fault: regrade) and the next fork is a new zygote's."""
    from grader.judge import zygote as module
    from grader.judge.zygote import ZygoteGone

    memory = find_lab("lab2").manifest.memory_mb
    zygote = Zygote(launcher_for("required"))
    try:
        monkeypatch.setattr(module, "host_pid", lambda *args, **kwargs: None)
        with pytest.raises(ZygoteGone, match="not found"):
            zygote.fork("cpu", memory, ahead=False)
        first = zygote.process.pid
        monkeypatch.undo()
        forked = zygote.fork("cpu", memory, ahead=False)
        assert zygote.process.pid != first and Path(f"/proc/{forked.host_pid}").exists()
        let_go(forked)
    finally:
        zygote.close()


def _as_nobody(command, **kwargs):
    return subprocess.run(command, user=65534, group=65534, extra_groups=[], capture_output=True, text=True,
                          timeout=300, **kwargs)


@pytest.mark.slow
@pytest.mark.skipif(os.getuid() != 0, reason="only root can grade as another user")
def test_a_learner_who_is_not_root_grades_in_bubblewrap():
    """The whole grading as a learner runs it on a machine of their own: not root, bubblewrap making
    the user namespace. Every other test runs as root, as CI does, where the sandbox takes a user
    of its own: a grading that only root could start went unseen for days."""
    if not bubblewrap_works() or _as_nobody(["bwrap", "--ro-bind", "/", "/", "--unshare-user", "true"]).returncode:
        pytest.skip("no bubblewrap for a user who is not root here")
    try:
        readable = _as_nobody([sys.executable, "-c", "import torch"], cwd="/").returncode == 0
    except OSError:                 # not even started: this Python lies in a folder of root's own
        readable = False
    if not readable:
        pytest.skip("this Python and its packages cannot be read by another user")
    with tempfile.TemporaryDirectory() as home:         # (pytest's own folders are root's alone)
        course = Path(home, "course")       # a copy the learner owns: the grading writes .grade/ there
        shutil.copytree(ROOT, course, ignore=shutil.ignore_patterns(".venv", ".git", ".grade", "__pycache__"))
        subprocess.run(["chown", "-R", "65534:65534", home], check=True)
        report = Path(home, "results.json")
        ran = _as_nobody([sys.executable, "grade.py", "lab2", "--submission", "reference/lab2", "-k",
                          "positions.py", "--json", str(report)], cwd=course, env={**os.environ, "HOME": home})
        assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
        results = json.loads(report.read_text())
    assert results["score"] == 49 and results["extra_data"]["sandbox"] == "bubblewrap"
