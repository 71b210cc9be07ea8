"""The warm grader (grade.py serve): one judge and one zygote kept running. Two learners' rounds on
it share nothing; only its owner reaches it, for its own checkout and lab; a stale or dead server
is noticed and never trusted; it leaves no process behind."""
import json
import os
import re
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
from grader.base.root import ROOT
from grader.core.request import Device, Request, SandboxKind, Selection
from grader.core.runner import grade as cold_grade
from grader.core.warm import Grader
from grader.judge.launchers import bubblewrap_works
from grader.learner import serve
from grader.learner.runtime import runtime_folder
from grader.readers.manifest import find_lab

from conftest import processes_marked

MARKER = "warm-planted-5d1e"
STATE = f'''import os
import subprocess
import time

import torch


def plant():
    """Leave all a round can: files (home and /tmp), a process, a patched torch, RNG draws."""
    for path in ("planted.txt", "/tmp/planted.txt"):
        with open(path, "w") as file:
            file.write("learner one")
    subprocess.Popen(["/bin/sh", "-c", "sleep 300; true  # {MARKER}"])
    torch.add = lambda *args, **kwargs: "patched"
    torch.Tensor.sum = lambda self, *args, **kwargs: "patched"
    draw = torch.rand(()).item()
    torch.rand(1000)
    torch.manual_seed(12345)
    return draw


def wait(seconds):
    time.sleep(seconds)
    return seconds


def look():
    """What is left of plant() here: each 1 when found, and this round's first draw."""
    def running():
        for pid in os.listdir("/proc"):
            try:
                if pid.isdigit() and b"{MARKER}" in open(f"/proc/{{pid}}/cmdline", "rb").read():
                    return True
            except OSError:
                pass
        return False
    patched = torch.add(torch.ones(1), 1) == "patched" or torch.ones(2).sum() == "patched"
    return {{"file": float(os.path.exists("planted.txt") or os.path.exists("/tmp/planted.txt")),
            "process": float(running()), "patched": float(patched), "draw": torch.rand(()).item()}}
'''
CHECKS = '''import pytest


@pytest.mark.grade(points=1, tags=["plant"])
def test_plant(student, record_property):
    """plants state"""
    record_property("draw", student.plant())


@pytest.mark.grade(points=1, tags=["wait"])
def test_wait(student):
    """waits"""
    assert student.wait(3) == 3


@pytest.mark.grade(points=1, tags=["look"])
def test_look(student, record_property):
    """finds what is left"""
    for name, value in student.look().items():
        record_property(name, value)
'''


@pytest.fixture(scope="module")
def state_lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("course") / "state"
    stub = "".join(f"def {name}(*args):\n    raise NotImplementedError\n\n\n" for name in ("plant", "wait", "look"))
    manifest = {"title": "State", "handout": "handout", "student_files": {"state.py": ["plant", "wait", "look"]},
                "call_timeout": 20, "time_budget": 60}
    for name, text in {"lab.yaml": yaml.safe_dump(manifest), "stubs/state.py": stub, "handout/state.py": stub,
                       "public/test_state.py": CHECKS}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return find_lab(folder)


@pytest.fixture(scope="module")
def runtime():
    """This module's servers keep their sockets in a folder of their own (XDG_RUNTIME_DIR), which
    another user may pass through (the grade/ folder in it is what keeps them out)."""
    folder = Path(tempfile.mkdtemp(prefix="grade-runtime-"))
    os.chmod(folder, 0o711)
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(folder)
    yield folder / "grade"
    if saved is None:
        del os.environ["XDG_RUNTIME_DIR"]
    else:
        os.environ["XDG_RUNTIME_DIR"] = saved
    shutil.rmtree(folder, ignore_errors=True)


def kinds():
    return [SandboxKind.PROCESS, pytest.param(SandboxKind.REQUIRED, marks=pytest.mark.skipif(
        not bubblewrap_works(), reason="bubblewrap is not available here"))]


def alive(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def server(state_lab, runtime):
    """A server for the state lab, started as grade.py serve starts one; stopped afterwards."""
    started = []

    def start(kind=SandboxKind.PROCESS, idle=serve.IDLE_SECONDS):
        started.append(serve.start(state_lab, kind, idle))
        return started[-1]
    yield start
    serve.stop_all()
    for pid in started:
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("kind", kinds())
def test_two_learners_rounds_on_one_warm_grader_share_nothing(state_lab, server, kind, tmp_path):
    """Learner one's round plants a file, a process, a patch of torch and RNG draws; learner two's
    round on the same server finds none of it, and draws what a cold grading draws."""
    server(kind)
    client = serve.WarmClient.for_checkout(state_lab, kind)
    assert client is not None
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "state.py").write_text(STATE)
    planted = client.grade(Request(state_lab, one, Device.CPU, Selection(("plant",)), kind))
    assert planted.checks[0].status == "passed", planted.checks[0].message
    assert not processes_marked(MARKER.encode())          # gone with its round, on the judge's side too
    found = client.grade(Request(state_lab, two, Device.CPU, Selection(("look",)), kind))
    data = found.checks[0].data
    assert found.checks[0].status == "passed", found.checks[0].message
    assert (data["file"], data["process"], data["patched"]) == (0, 0, 0)
    cold = cold_grade(Request(state_lab, two, Device.CPU, Selection(("look",)), kind))
    assert data["draw"] == cold.checks[0].data["draw"]        # the RNG as fresh as a cold grading's
    cold = cold_grade(Request(state_lab, two, Device.CPU, Selection(("look",)), kind))
    assert cold.checks[0].data == data


def test_a_warm_grader_cannot_be_traced_or_written_by_its_user():
    """A warm grader serves round after round: under --sandbox process as a user other than root,
    student code of its own user could open its /proc/PID/mem for writing (tried, as nobody) and
    change the grades of every later round. It makes itself not dumpable: no process of its user
    without CAP_SYS_PTRACE may trace it, or read or write its memory."""
    from grader.judge.linux import PR_SET_DUMPABLE, libc

    get_dumpable = 3
    try:
        grader = Grader(SandboxKind.PROCESS)
        grader.close()
        assert libc.prctl(get_dumpable) == 0
    finally:
        libc.prctl(PR_SET_DUMPABLE, 1)


def test_the_owner_is_served_and_stop_leaves_no_process(state_lab, server, runtime):
    pid = server()
    assert oct(os.stat(runtime).st_mode & 0o777) == "0o700"
    client = serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS)
    assert client is not None
    results = serve.grade(Request(state_lab, None, Device.CPU, sandbox=SandboxKind.PROCESS), client)
    assert {c.status for c in results.checks} == {"not_implemented"} and client.served_by == pid
    client.stop()
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid) and not client.path.exists()
    assert serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS) is None


def ask_raw(path, **changes):
    """One Ask sent straight to the socket at `path`: the server's Said."""
    fields = {"op": "ping", "checkout": str(ROOT), "lab": "", "code": "", "sandbox": SandboxKind.PROCESS}
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(30)
        conn.connect(str(path))
        try:
            serve.send(conn, serve.Ask(**{**fields, **changes}))
        except BrokenPipeError:         # refused before it had asked: the refusal is there to read
            pass
        return serve.receive(conn, serve.Said, serve.SAID_BYTES)


def test_a_request_for_another_checkout_or_lab_is_refused(state_lab, server):
    server()
    path = serve.socket_path(state_lab)
    mine = {"lab": str(state_lab.folder.resolve()), "code": serve.code_stamp(state_lab)}
    assert ask_raw(path, **mine).refused is None
    assert "serves the checkout" in ask_raw(path, **{**mine, "checkout": "/elsewhere/course"}).refused
    assert "serves the lab" in ask_raw(path, **{**mine, "lab": str(ROOT / "grader" / "labs" / "lab2")}).refused
    assert "--sandbox process" in ask_raw(path, **{**mine, "sandbox": SandboxKind.AUTO}).refused
    assert serve.WarmClient.for_checkout(state_lab, SandboxKind.AUTO) is None     # graded cold instead
    assert ask_raw(path, **mine).refused is None                                  # and still serving


@pytest.mark.skipif(os.getuid() != 0, reason="only root can run a client as another user (os.setuid)")
def test_another_users_request_is_refused(state_lab, server, runtime):
    """A client of another uid: the folder (0700) keeps it out; were the folder and socket open to
    all, the server would still refuse it by its uid (SO_PEERCRED)."""
    server()
    path = serve.socket_path(state_lab)
    mine = {"lab": str(state_lab.folder.resolve()), "code": serve.code_stamp(state_lab)}

    def as_nobody(op="ping"):
        read, write = os.pipe()
        if os.fork() == 0:
            os.close(read)
            try:
                os.setgid(65534)
                os.setuid(65534)
                said = ask_raw(path, **mine, op=op, argv=(str(state_lab.folder), "--sandbox", "process"), cwd="/")
                answer = said.refused or "served"
            except PermissionError:
                answer = "no entry"
            except BaseException as error:
                answer = f"{type(error).__name__}: {error}"
            os.write(write, answer.encode())
            os._exit(0)
        os.close(write)
        answer = b""
        while chunk := os.read(read, 1000):
            answer += chunk
        os.close(read)
        os.wait()
        return answer.decode()

    assert as_nobody() == "no entry"
    os.chmod(runtime, 0o755)
    os.chmod(path, 0o666)
    try:
        assert as_nobody() == as_nobody("argv") == "this warm grader serves its owner only"
        assert serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS) is None   # a folder others can open
    finally:
        os.chmod(runtime, 0o700)
        os.chmod(path, 0o600)


def test_a_process_of_the_servers_own_gradings_is_refused(state_lab, runtime):
    """Student code under --sandbox process run by a user other than root is the server's own user
    and sees its socket: were it served, a submission could stop the server, or queue gradings that
    the next learner waits behind. A process below the server is refused, and so is one gone before
    its turn (it could have been below)."""
    server = serve.Server(state_lab, SandboxKind.PROCESS)
    mine = {"lab": str(state_lab.folder.resolve()), "code": server.code}
    try:
        for stay in (True, False):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:            # below the server, as the zygote's children are
                os.close(read)
                try:
                    if stay:
                        answer = ask_raw(server.path, op="stop", **mine).refused or "served"
                    else:
                        with socket.socket(socket.AF_UNIX) as conn:
                            conn.connect(str(server.path))
                            serve.send(conn, serve.Ask(op="stop", checkout=str(ROOT), sandbox="process", **mine))
                        answer = "gone"
                finally:
                    os.write(write, answer.encode())
                    os._exit(0)
            os.close(write)
            conn, _ = server.listener.accept()
            if not stay:
                os.waitpid(pid, 0)
            server._answer(conn)
            with open(read, "rb") as said:
                answer = said.read().decode()
            if stay:
                os.waitpid(pid, 0)
            assert answer in ("this warm grader serves no process of its own gradings", "gone")
            assert not server._stop.is_set()
    finally:
        server.close()


def test_a_client_that_reads_nothing_holds_the_server_a_while_only(state_lab, runtime, tmp_path, monkeypatch):
    """A front door stopped (Ctrl-Z) before it read its results, which fill its socket's buffer:
    the server waits TAKE_SECONDS for it to take them, then lets the next learner's grading go on
    (else the next front door waited for good, and the server never went idle)."""
    monkeypatch.setattr(serve, "TAKE_SECONDS", 1.0)
    monkeypatch.setattr(serve, "_ours", lambda pid: False)      # its clients are this process
    (tmp_path / "state.py").write_text("def look():\n    print(('x' * 99 + '\\n') * 9000)\n    return {}\n")
    server = serve.Server(state_lab, SandboxKind.PROCESS)
    server.grader = Grader(SandboxKind.PROCESS)
    mine = {"checkout": str(ROOT), "lab": str(state_lab.folder.resolve()), "code": server.code,
            "sandbox": SandboxKind.PROCESS}
    stalled = socket.socket(socket.AF_UNIX)
    try:
        stalled.connect(str(server.path))
        serve.send(stalled, serve.Ask(op="grade", submission=str(tmp_path), only=("look",), show_all=True, **mine))
        first = threading.Thread(target=server._answer, args=(server.listener.accept()[0],), daemon=True)
        first.start()
        deadline = time.monotonic() + 30
        while not server._turn.locked() and first.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server._turn.locked()
        client, graded = serve.WarmClient(state_lab, server.path), []
        request = Request(state_lab, None, Device.CPU, Selection(("look",)), SandboxKind.PROCESS)
        second = threading.Thread(target=lambda: graded.append(client.grade(request)), daemon=True)
        second.start()
        threading.Thread(target=server._answer, args=(server.listener.accept()[0],), daemon=True).start()
        second.join(40)
        assert graded and graded[0].checks[0].status == "not_implemented"
        first.join(10)
        assert not first.is_alive()
    finally:
        stalled.close()
        server.close()


def test_a_stale_server_stops_and_is_not_trusted(state_lab, server):
    pid = server()
    assert serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS) is not None
    checks = state_lab.folder / "public" / "test_state.py"
    os.utime(checks, ns=(time.time_ns(), time.time_ns() + 10**9))     # the lab's checks changed
    assert serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS) is None
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_a_dead_server_is_noticed_and_grading_is_cold(state_lab, server):
    pid = server()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)                              # every thread gone, and its sockets with them
    path = serve.socket_path(state_lab)
    assert path.exists()                            # killed: it could not remove its socket
    assert serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS) is None and not path.exists()
    results = serve.grade(Request(state_lab, None, Device.CPU, sandbox=SandboxKind.PROCESS), None)
    assert {c.status for c in results.checks} == {"not_implemented"}


def test_a_server_that_takes_no_connection_is_not_waited_for(state_lab, runtime, monkeypatch):
    """A server that listens and never accepts (stopped with SIGSTOP, stuck starting) with its queue
    full: a front door grades cold after ANSWER_SECONDS, and leaves its socket (it may yet answer)."""
    monkeypatch.setattr(serve, "ANSWER_SECONDS", 0.5)
    path = serve.socket_path(state_lab)
    with socket.socket(socket.AF_UNIX) as wedged:
        wedged.bind(str(path))
        wedged.listen(0)
        found = []
        asking = threading.Thread(target=lambda: found.extend(
            serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS) for _ in range(3)), daemon=True)
        asking.start()
        asking.join(10)
        assert not asking.is_alive() and found == [None] * 3
        assert path.exists()
        serve.stop_all()                         # not waited for either
    path.unlink()


def test_an_idle_server_stops_and_leaves_no_process(state_lab, server):
    pid = server(idle=1)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid) and not serve.socket_path(state_lab).exists()


def test_a_folder_others_can_open_is_refused(tmp_path, monkeypatch):
    (tmp_path / "grade").mkdir(mode=0o755)
    os.chmod(tmp_path / "grade", 0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with pytest.raises(SetupError, match="0700"):
        runtime_folder()


@pytest.mark.skipif(os.getuid() != 0, reason="only root can make a folder another user owns")
def test_a_folder_another_user_may_change_is_not_the_runtime_folders_parent(tmp_path, monkeypatch):
    """An XDG_RUNTIME_DIR (kept by su) or TMPDIR of another user's: its owner could rename our 0700
    folder in it and leave a link to theirs in its place between our check and our use (a log that
    root opens through it): the temporary folder is used instead, and where that is theirs, none."""
    theirs = tmp_path / "run-user-65534"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(theirs))
    assert not runtime_folder().is_relative_to(theirs)
    monkeypatch.setattr(tempfile, "tempdir", str(theirs))
    with pytest.raises(SetupError, match="another user"):
        runtime_folder()
    os.chown(theirs, 0, 0)
    os.chmod(theirs, 0o777)                 # open to all, and not sticky as /tmp is
    with pytest.raises(SetupError, match="another user"):
        runtime_folder()
    os.chmod(theirs, 0o1777)
    assert runtime_folder() == theirs / "grade"        # root's, sticky: nobody renames ours


def test_a_front_door_that_needs_a_server_starts_one_once(state_lab, runtime):
    """WarmClient.started (the notebook's check): a server when none runs, the same one after."""
    client = serve.WarmClient.started(state_lab, SandboxKind.PROCESS, idle=60)
    try:
        again = serve.WarmClient.started(state_lab, SandboxKind.PROCESS, idle=60)
        assert again.server_pid == client.server_pid and alive(client.server_pid)
    finally:
        client.stop()
    assert not alive(client.server_pid)


@pytest.mark.slow
def test_a_ping_is_answered_while_a_grading_runs(state_lab, server, tmp_path):
    """A grading that takes a while (a --watch round training models) does not make the server look
    dead or stale to another front door: it answers at once, and grades after."""
    server()
    (tmp_path / "state.py").write_text(STATE)
    request = Request(state_lab, tmp_path, Device.CPU, Selection(("wait",)), SandboxKind.PROCESS)
    client = serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS)
    graded = []
    waiting = threading.Thread(target=lambda: graded.append(client.grade(request)))
    waiting.start()
    time.sleep(1)
    asked = time.monotonic()
    assert serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS) is not None
    assert time.monotonic() - asked < 1.5 and not graded
    waiting.join(60)
    assert graded[0].checks[0].status == "passed"


def grade_py(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "grade.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.slow
def test_grade_py_is_answered_by_the_server_with_no_heavy_import_and_as_cold(state_lab, server, tmp_path):
    """grade.py LAB (grader/learner/express.py): the arguments as typed go to the server, which reads
    them as grade.py does (a --submission and --json relative to where they were typed), grades,
    writes the JSON and sends the report; the client imports neither pydantic, rich nor torch. Its
    report, JSON and exit status are a cold grading's."""
    server(SandboxKind.PROCESS)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "state.py").write_text(STATE)
    asked = ["--submission", "mine", "-k", "wait", "--sandbox", "process"]
    warm = grade_py(str(state_lab.folder), *asked, "--json", "warm.json", cwd=tmp_path)
    imported = {line.split("|")[-1].strip() for line in warm.stderr.splitlines() if line.startswith("import time:")}
    assert not imported & {"pydantic", "rich", "torch", "yaml"}, sorted(imported)
    quiet = tmp_path / "quiet"
    quiet.mkdir(mode=0o700)
    cold = grade_py(str(state_lab.folder), *asked, "--json", "cold.json", cwd=tmp_path,
                    env={**os.environ, "XDG_RUNTIME_DIR": str(quiet)})
    assert warm.returncode == cold.returncode == 0, warm.stdout + cold.stdout
    assert "graded by this checkout's warm grader" in warm.stdout
    timed = re.compile(r"\d+\.\d s")
    report = [timed.sub("T", line) for line in warm.stdout.splitlines() if "warm grader" not in line
              and "--stop" not in line]
    assert report == [timed.sub("T", line) for line in cold.stdout.splitlines()]
    for name in ("warm.json", "cold.json"):
        assert json.loads((tmp_path / name).read_text())["score"] == 1


def test_what_grade_py_asks_beyond_a_grading_is_not_the_servers(state_lab, server, tmp_path):
    """Another command, --watch, another sandbox, a lab with no server: None, and grade.py runs as
    ever; an error a user can fix comes back as grade.py says it cold (exit 2)."""
    from grader.learner import express

    assert express.answer([str(state_lab.folder), "-k", "wait"]) is None        # none listens yet
    server(SandboxKind.PROCESS)
    lab = str(state_lab.folder)
    for argv in (["quiz", "lab2"], [lab, "--watch"], [lab, "--sandbox", "required"], [lab, "--help"], ["lab2"]):
        assert express.answer(argv) is None, argv
    refused = grade_py(lab, "-k", "nosuch", "--sandbox", "process", cwd=tmp_path)
    assert refused.returncode == 2 and "error:" in refused.stdout and "nosuch" in refused.stdout


@pytest.mark.slow
def test_grade_py_answered_warm_reads_and_shows_paths_as_typed(state_lab, server, tmp_path):
    """The server grades in the client's folder: a submission lacking a file, one that does not
    exist and a --json that is a folder are said with the paths as typed, as cold says them (the
    server once made them absolute, and let --json FOLDER fail after the grading)."""
    server(SandboxKind.PROCESS)
    (tmp_path / "empty").mkdir()
    (tmp_path / "out").mkdir()
    quiet = tmp_path / "quiet"
    quiet.mkdir(mode=0o700)
    cold_env = {**os.environ, "XDG_RUNTIME_DIR": str(quiet)}
    timed, said = re.compile(r"\d+\.\d s"), {}
    for asked in (["--submission", "empty", "-k", "look"], ["--submission", "nosuch"],
                  ["--submission", "empty", "--json", "out"]):
        argv = [str(state_lab.folder), *asked, "--sandbox", "process"]
        warm, cold = grade_py(*argv, cwd=tmp_path), grade_py(*argv, cwd=tmp_path, env=cold_env)
        assert warm.returncode == cold.returncode, asked
        shown = [timed.sub("T", line) for line in warm.stdout.splitlines() if "warm grader" not in line
                 and "--stop" not in line]
        assert shown == [timed.sub("T", line) for line in cold.stdout.splitlines()], asked
        said[asked[-1]] = (warm.returncode, " ".join(warm.stdout.split()))
    assert said["look"][0] == 1 and "state.py is not in empty:" in said["look"][1]
    assert said["nosuch"] == (2, "error: --submission nosuch does not exist")
    assert said["out"][0] == 2 and "--json out: that is a folder" in said["out"][1]


def test_a_report_is_rendered_as_rich_would_on_the_clients_screen():
    """Colour and width are what grade.py's own console would take on the client's screen:
    FORCE_COLOR and TTY_COMPATIBLE on a pipe, a dumb terminal's 80 columns, COLUMNS, the width of a
    terminal on stdin when stdout is piped (grade.py lab2 | less), 80 where none is."""
    def console(**screen):
        return serve._console(serve.Screen(**screen))

    assert console(terminal=False, environ={"FORCE_COLOR": "1"}).is_terminal
    assert not console(terminal=True, environ={"TTY_COMPATIBLE": "0"}).is_terminal
    assert console(terminal=True, width=130, environ={"TERM": "dumb"}).width == 80
    assert console(terminal=False, width=130).width == 130
    assert console(terminal=True, width=130, environ={"COLUMNS": "50"}).width == 50
    assert console(terminal=False).width == 80 and not console(terminal=False).is_terminal


def test_grade_py_does_not_wait_for_a_server_that_takes_no_request(state_lab, runtime, monkeypatch):
    """A server stopped (Ctrl-Z in its terminal) or wedged: its socket takes the connection and the
    request, and nothing comes back. grade.py grades cold after ANSWER_SECONDS (it once waited for
    good): the server says it took a request at once, then grades when its turn comes."""
    from grader.learner import express

    monkeypatch.setattr(express, "ANSWER_SECONDS", 0.5)
    path = serve.socket_path(state_lab)
    with socket.socket(socket.AF_UNIX) as wedged:
        wedged.bind(str(path))
        wedged.listen(8)
        found = []
        asking = threading.Thread(target=lambda: found.append(express.answer([str(state_lab.folder)])), daemon=True)
        asking.start()
        asking.join(10)
        assert not asking.is_alive() and found == [None]
    path.unlink()


def test_an_argv_request_is_graded_only_for_this_lab_in_a_folder_that_is(state_lab, server, tmp_path):
    """A request of grade.py's arguments that names no lab of this server (serve, quiz), or comes
    from a folder that is relative or gone, is refused: the server grades only what grade.py would."""
    server(SandboxKind.PROCESS)
    path = serve.socket_path(state_lab)
    mine = {"op": "argv", "lab": str(state_lab.folder.resolve()), "cwd": str(tmp_path)}
    assert "serves the lab" in ask_raw(path, **mine, argv=("serve", "--sandbox", "process")).refused
    assert "serves the lab" in ask_raw(path, **mine, argv=("lab2", "--sandbox", "process")).refused
    for cwd in ("relative", str(tmp_path / "gone"), ""):
        said = ask_raw(path, **{**mine, "cwd": cwd}, argv=(str(state_lab.folder), "--sandbox", "process"))
        assert said.refused in ("not a plain grading by this warm grader", "not a folder to grade in"), cwd
    said = ask_raw(path, **mine, argv=(str(state_lab.folder), "--sandbox", "process"))
    assert said.refused is None and not said.done          # taken: its grading follows


@pytest.mark.slow
def test_ctrl_c_in_grade_py_answered_warm_ends_as_cold_and_frees_the_server(state_lab, server, tmp_path):
    """Ctrl-C while the server grades: 'interrupted' and exit status 130 as grade.py's cold (once a
    traceback); the server stops that grading and serves the next learner."""
    server(SandboxKind.PROCESS)
    (tmp_path / "state.py").write_text(STATE)
    argv = [sys.executable, str(ROOT / "grade.py"), str(state_lab.folder), "--submission", str(tmp_path),
            "-k", "wait", "-k", "look", "--sandbox", "process"]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert "checking" in client.stderr.readline() + client.stderr.readline()
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 130 and out.strip() == "interrupted" and "Traceback" not in err, err
    again = grade_py(str(state_lab.folder), "-k", "look", "--sandbox", "process", cwd=tmp_path)
    assert again.returncode == 1 and "warm grader" in again.stdout


@pytest.mark.slow
def test_a_submission_path_not_in_utf8_is_graded_as_cold(state_lab, server, tmp_path):
    """A folder whose name is no UTF-8 (bytes a shell passes as typed): no frame can carry it, so
    grade.py grades it as it would with no server (once 'the grader itself failed', exit 2)."""
    server(SandboxKind.PROCESS)
    name = os.fsdecode(b"mine\xff")
    (tmp_path / name).mkdir()
    quiet = tmp_path / "quiet"
    quiet.mkdir(mode=0o700)
    argv = [sys.executable, str(ROOT / "grade.py"), str(state_lab.folder), "--submission", name, "-k", "look",
            "--sandbox", "process"]
    warm = subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=120)
    cold = subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=120,
                          env={**os.environ, "XDG_RUNTIME_DIR": str(quiet)})
    assert warm.returncode == cold.returncode == 1, warm.stdout
    timed = re.compile(rb"\d+\.\d s")
    assert timed.sub(b"T", warm.stdout) == timed.sub(b"T", cold.stdout)


@pytest.mark.slow
def test_a_server_killed_mid_grading_is_said_in_one_line_and_grading_goes_on_cold(state_lab, server, tmp_path):
    """The server dies as it grades: grade.py says so in one line and grades cold (its progress
    then shown again), never waits or fails."""
    pid = server(SandboxKind.PROCESS)
    (tmp_path / "state.py").write_text(STATE)
    argv = [sys.executable, str(ROOT / "grade.py"), str(state_lab.folder), "--submission", str(tmp_path),
            "-k", "wait", "-k", "look", "--sandbox", "process"]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "checking" in client.stderr.readline() + client.stderr.readline()
    os.kill(pid, signal.SIGKILL)
    out, err = client.communicate(timeout=120)
    assert client.returncode == 0 and "warm grader" not in out, out + err
    assert err.count("the warm grader stopped answering: grading without it") == 1, err


def test_a_warm_grading_shows_a_relative_submission_as_typed(state_lab, server, tmp_path, monkeypatch):
    """WarmClient (--watch, and grade.py where express is not answered): the server grades in the
    client's folder, so what it says of a submission typed relative is what a cold grading says
    (it once said the absolute path)."""
    server(SandboxKind.PROCESS)
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    request = Request(state_lab, Path("empty"), Device.CPU, Selection(("look",)), SandboxKind.PROCESS)
    client = serve.WarmClient.for_checkout(state_lab, SandboxKind.PROCESS)
    warm = client.grade(request)
    assert client.served_by is not None
    assert warm.problems == cold_grade(request).problems and "state.py is not in empty:" in warm.problems[0]


def test_a_request_of_thousands_of_arguments_is_turned_away_at_once(state_lab, server, tmp_path):
    """argparse reads N arguments in time N squared (30 000 -k: minutes of a core): a request of more
    than grade.py is ever typed with is not read; grade.py then reads them itself, as with no server."""
    server(SandboxKind.PROCESS)
    ask = {"op": "argv", "checkout": str(ROOT), "lab": str(state_lab.folder.resolve()), "cwd": str(tmp_path),
           "argv": [str(state_lab.folder), *["-k", "look"] * 2500, "--sandbox", "process"]}
    data = json.dumps(ask).encode()
    with socket.socket(socket.AF_UNIX) as conn, pytest.raises(EOFError):
        conn.settimeout(30)
        conn.connect(str(serve.socket_path(state_lab)))
        conn.sendall(len(data).to_bytes(4, "big") + data)
        serve.receive(conn, serve.Said, serve.SAID_BYTES)


def test_the_width_sent_is_the_one_rich_takes(monkeypatch):
    """The first of stdin, stdout and stderr that is a terminal gives the width; one of 0 columns
    (a pseudo-terminal nobody sized: script, docker exec -t) is rich's 80, not 10 columns."""
    from grader.learner import express

    def sizes(*found):
        def size(stream):
            if found[stream] is None:
                raise OSError("not a terminal")
            return os.terminal_size((found[stream], 24))
        monkeypatch.setattr(os, "get_terminal_size", size)

    sizes(None, 130, 90)
    assert express._width() == 130
    sizes(0, 130, 90)
    assert express._width() is None and serve._console(serve.Screen(terminal=True, width=None)).width == 80
    sizes(None, None, None)
    assert express._width() is None
    sizes(5000, None, None)
    assert express._width() == 1000


@pytest.mark.slow
def test_grade_py_on_a_stale_server_grades_cold_and_the_server_stops(state_lab, server, tmp_path):
    """The lab's checks changed since the server started: grade.py is not answered by its old
    code (refused, and the server stops) and grades as with no server."""
    pid = server(SandboxKind.PROCESS)
    checks = state_lab.folder / "public" / "test_state.py"
    os.utime(checks, ns=(time.time_ns(), time.time_ns() + 10**9))
    graded = grade_py(str(state_lab.folder), "-k", "look", "--sandbox", "process", cwd=tmp_path)
    assert graded.returncode == 1 and "warm grader" not in graded.stdout, graded.stdout + graded.stderr
    assert "Traceback" not in graded.stderr
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


@pytest.mark.slow
def test_ctrl_c_during_a_long_call_frees_the_server_at_once(state_lab, server, tmp_path):
    """A learner's Ctrl-C in grade.py answered warm ends the call running now (its children are
    killed), not only the checks after it: the next grading is not held behind a call of 15 s, and
    the one stopped writes no --json."""
    server(SandboxKind.PROCESS)
    (tmp_path / "state.py").write_text(STATE + "\n\ndef wait(seconds):\n    time.sleep(15)\n    return seconds\n")
    argv = [sys.executable, str(ROOT / "grade.py"), str(state_lab.folder), "--submission", str(tmp_path),
            "-k", "wait", "--sandbox", "process", "--json", str(tmp_path / "stopped.json")]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert "checking" in client.stderr.readline() + client.stderr.readline()
    client.send_signal(signal.SIGINT)
    assert client.wait(timeout=60) == 130
    started = time.monotonic()
    again = grade_py(str(state_lab.folder), "-k", "look", "--sandbox", "process", cwd=tmp_path)
    assert again.returncode == 1 and "warm grader" in again.stdout
    assert time.monotonic() - started < 10, "the next grading waited for the stopped call"
    assert not (tmp_path / "stopped.json").exists()


def test_a_report_nobody_reads_is_not_graded_again(state_lab, server, tmp_path):
    """grade.py answered warm whose reader went (grade.py ... | head): its exit status is the
    grading's, and it does not grade the submission again cold (it once did, on the failed write)."""
    server(SandboxKind.PROCESS)
    (tmp_path / "state.py").write_text(STATE)
    read, write = os.pipe()
    os.close(read)                  # the reader is gone before the report comes
    run = subprocess.run([sys.executable, str(ROOT / "grade.py"), str(state_lab.folder), "--submission", str(tmp_path),
                          "-k", "look", "--sandbox", "process"], stdout=write, stderr=subprocess.PIPE, text=True,
                         timeout=120)
    os.close(write)
    assert run.returncode == 0, run.stderr          # look's one check passed: exit 0, as cold
    assert run.stderr.count("grading: starting") == 1 and "without it" not in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr
