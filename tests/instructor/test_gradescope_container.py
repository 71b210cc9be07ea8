"""The Gradescope bundle in Gradescope's container: Docker's default seccomp profile and
capabilities (tests/container.py) refuse bubblewrap's namespaces, so the bundle grades in the
process sandbox as root, says so, and keeps the judge's files (hidden checks, reference,
results, Gradescope's metadata) from the submission. The fast tests cover the choice of sandbox
and what each gives; the slow one runs setup.sh and run_autograder in such a container."""
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
import yaml
from test_printed import SHARED

from grader.base.errors import SetupError
from grader.core.results import GradescopeResults
from grader.instructor import gradescope
from grader.judge import launchers
from grader.judge.sandbox import Sandbox
from grader.judge.zygote import Zygote
from grader.readers.manifest import find_lab

from conftest import processes_marked

ROOT = Path(__file__).resolve().parents[2]
CONTAINER = Path(__file__).resolve().parents[1] / "container.py"
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "gradescope_results.schema.json").read_text())
pytestmark = [pytest.mark.skipif(os.getuid() != 0, reason="Gradescope runs its autograder as root"),
              pytest.mark.skipif(platform.machine() != "x86_64", reason="tests/container.py's filter is x86_64's")]


SYSTEM = {"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "run", "sbin", "sys", "tmp",
          "usr", "var"}


def in_container(command, env=None, binds=(), **kwargs):
    """`command` as Gradescope runs its scripts: Docker's default profile (tests/container.py),
    a /tmp of its own, and an image's files only: every other top-level folder of this host (the
    course, its copies and worktrees, a CI checkout beside them) out of sight but for the Python
    running us, whose folders every user may enter, as an image's are."""
    options = ["--tmp", *[arg for pair in binds for arg in ("--bind", *map(str, pair))]]
    for top in sorted(Path("/").iterdir()):
        if top.is_dir() and not top.is_symlink() and top.name not in SYSTEM:
            kept = {p for p in (sys.prefix, sys.base_prefix) if Path(p).is_relative_to(top)}
            options += ["--hide", str(top), *[arg for p in sorted(kept) for arg in ("--keep", p)]]
    return subprocess.run([sys.executable, str(CONTAINER), *options, "--", *command], capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", **(env or {})},
                          **kwargs)


# -- fast: which sandbox, and what it gives --------------------------------------------------------
def test_the_container_refuses_what_bubblewrap_needs_and_the_process_sandbox_says_what_it_gets():
    probe = ("import json, sys; sys.path.insert(0, sys.argv[1]); from grader.judge import launchers as j; "
             "print(json.dumps([j.bubblewrap_works(), j.namespace_works(j.CLONE_NEWNET), "
             "j.ProcessLauncher().facts()]))")
    run = in_container([sys.executable, "-I", "-c", probe, str(ROOT)], binds=[(ROOT, ROOT)], timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    bubblewrap, network_namespace, facts = json.loads(run.stdout)
    assert not bubblewrap and not network_namespace
    assert facts == {"sandbox": "process", "user": "own", "mounts": "the host's",
                     "network": "none but unix sockets (seccomp)"}


def test_the_strongest_sandbox_that_works_is_chosen(monkeypatch):
    monkeypatch.setattr(launchers, "bubblewrap_works", lambda: True)
    assert gradescope.choose_launcher("auto").name == "bubblewrap"
    assert gradescope.choose_launcher("auto", verdict="process").name == "process"   # setup.sh saw it fail
    monkeypatch.setattr(launchers, "bubblewrap_works", lambda: False)
    assert gradescope.choose_launcher("auto").name == "process"
    with pytest.raises(SetupError, match="grades only in bubblewrap"):
        gradescope.choose_launcher("required")
    monkeypatch.setattr(os, "getuid", lambda: 1000)
    with pytest.raises(SetupError, match="only as root"):          # the judge's own user: no sandbox
        gradescope.choose_launcher("auto")


@pytest.mark.slow
def test_setup_fails_loudly_only_where_no_sandbox_keeps_the_judge_safe(tmp_path, monkeypatch, capsys):
    """setup.sh's check: bubblewrap whose zygote cannot start gives way to the process sandbox,
    which it records; a bundle that wants bubblewrap alone fails, saying why."""
    monkeypatch.setattr(launchers, "bubblewrap_works", lambda: True)
    monkeypatch.setattr(launchers.BubblewrapLauncher, "argv", lambda self, scratch, fd: ["/bin/false"])
    assert gradescope.check_sandbox(tmp_path, "lab2") == 0
    assert (tmp_path / "source" / gradescope.VERDICT).read_text() == "process\n"
    assert "grading in the sandbox process" in capsys.readouterr().out
    assert gradescope.check_sandbox(tmp_path, "lab2", "required") == 1
    said = capsys.readouterr().out
    assert "no sandbox here keeps a submission from the judge" in said and "bubblewrap failed" in said


def test_the_judges_files_are_root_s_alone(tmp_path):
    """All but the venv: what else the image keeps beside them (a copy of the bundle, say) too."""
    for folder in ("source", "venv/bin", "harness"):
        (tmp_path / folder).mkdir(parents=True, mode=0o755)
    for file in (gradescope.METADATA, "autograder.zip", "run_autograder"):
        (tmp_path / file).write_text("{}")
        (tmp_path / file).chmod(0o755)
    gradescope.lock_judge_files(tmp_path)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert modes == {"source": 0o700, "results": 0o700, "submission": 0o700, gradescope.METADATA: 0o700,
                     "autograder.zip": 0o700, "run_autograder": 0o700, "harness": 0o700, "venv": 0o755}
    assert tmp_path.stat().st_mode & 0o777 == 0o711            # entered on the way to the venv, not listed


NETWORK = '''
import socket

def reach(port, address):
    """A server on 127.0.0.1:port, then one at an abstract unix address; and a unix socket pair,
    which grading itself may use."""
    seen = []
    for family, target in ((socket.AF_INET, ("127.0.0.1", port)), (socket.AF_UNIX, "\\0" + address)):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.settimeout(2)
                sock.connect(target)
            seen.append("connected")
        except OSError as error:
            seen.append(type(error).__name__)
    left, right = socket.socketpair()
    left.sendall(b"x")
    return seen + [right.recv(1).decode()]
'''


@pytest.mark.slow
def test_a_process_child_has_no_network(tmp_path):
    """Seccomp refuses a process child every socket but unix ones; where the zygote can have a
    network namespace, the host's abstract unix sockets are out of reach too."""
    folder = tmp_path / "net"
    for part in ("handout", "stubs"):
        (folder / part).mkdir(parents=True)
        (folder / part / "net.py").write_text("def reach(port, address):\n    raise NotImplementedError\n")
    (folder / "lab.yaml").write_text(yaml.safe_dump({"title": "Net", "handout": "handout",
                                                     "student_files": {"net.py": ["reach"]}}))
    address = f"grader-net-{os.getpid()}"
    with socket.create_server(("127.0.0.1", 0)) as server, socket.socket(socket.AF_UNIX) as unix:
        unix.bind("\0" + address)
        unix.listen()
        launcher = launchers.ProcessLauncher()
        assert launcher.offline == launchers.namespace_works(launchers.CLONE_NEWNET)
        for offline in sorted({False, launcher.offline}):
            launcher.offline = offline
            zygote = Zygote(launcher)
            box = Sandbox(find_lab(folder), {"net.py": NETWORK.encode()}, zygote)
            try:
                seen = box.call("reach", [server.getsockname()[1], address])
            finally:
                box.close()
                zygote.close()
            assert seen == ["PermissionError", "ConnectionRefusedError" if offline else "connected", "x"]


JUDGE = """
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import yaml
from grader.judge.launchers import ProcessLauncher
from grader.judge.sandbox import Sandbox
from grader.judge.zygote import Zygote
from grader.readers.manifest import find_lab
lab = Path(tempfile.mkdtemp())
(lab / "handout").mkdir()
(lab / "handout" / "probe.py").write_text("def probe(*args):\\n    raise NotImplementedError\\n")
(lab / "lab.yaml").write_text(yaml.safe_dump({"title": "Probe", "handout": "handout",
                                              "student_files": {"probe.py": ["probe"]}}))
zygote, code = Zygote(ProcessLauncher()), {"probe.py": sys.stdin.read().encode()}
box = Sandbox(find_lab(lab), code, zygote)
try:
    if len(sys.argv) == 2:
        print(json.dumps(box.call("probe")))
    else:           # a hidden call beside a visible one, then the next submission a batch worker grades
        box.serve("hidden check", "hidden")     # where a hidden call starts at once
        hidden = box.submit("probe", ["hidden", sys.argv[2]], hidden=True)
        box.serve("visible check", "visible")
        seen = [box.call("probe", ["visible", sys.argv[2]]), hidden.result(30)]
        box.close()
        zygote.reset()
        box = Sandbox(find_lab(lab), code, zygote)
        print(json.dumps(seen + [box.call("probe", ["visible", sys.argv[2]])]))
finally:
    box.close()
    zygote.close()
"""
KEPT = '''
import ctypes
import os

def probe():
    """System V IPC and message queues outlive the child, in memory no rlimit counts; its OOM
    score says whom the kernel kills first when memory runs out. Whatever is made is removed."""
    libc = ctypes.CDLL(None, use_errno=True)
    made = {}
    for name, make, remove in (("shmget", lambda: libc.shmget(0, 4096, 0o1600), lambda id: libc.shmctl(id, 0, None)),
                               ("semget", lambda: libc.semget(0, 1, 0o1600), lambda id: libc.semctl(id, 0, 0)),
                               ("msgget", lambda: libc.msgget(0, 0o1600), lambda id: libc.msgctl(id, 0, None)),
                               ("mq_open", lambda: libc.mq_open(b"/grader-probe", 0o102, 0o600, None),
                                lambda id: libc.mq_unlink(b"/grader-probe"))):
        found = make()
        made[name] = os.strerror(ctypes.get_errno()) if found < 0 else "made"
        if found >= 0:
            remove(found)
    try:
        open("/proc/self/oom_score_adj", "w").write("0")
        lowered = "lowered"
    except OSError as error:
        lowered = type(error).__name__
    return made, open("/proc/self/oom_score_adj").read().strip(), lowered
'''


def test_a_process_child_keeps_nothing_past_its_end_and_goes_first_when_memory_runs_out():
    """In the container (no IPC namespace): no System V IPC or message queue, which would hold
    memory past the child's end, where a judge out of memory is the one the kernel kills; and
    the kernel's OOM killer takes the sandbox first."""
    run = in_container([sys.executable, "-I", "-c", JUDGE, str(ROOT)], binds=[(ROOT, ROOT)], input=KEPT, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    made, score, lowered = json.loads(run.stdout.splitlines()[-1])
    assert made == dict.fromkeys(["shmget", "semget", "msgget", "mq_open"], os.strerror(1))    # EPERM
    assert score == "1000" and lowered == "PermissionError"


@pytest.mark.slow
def test_what_a_hidden_call_leaves_reaches_no_later_call():
    """In the container the process children share /tmp (no mounts of their own): what a hidden call
    (the course's seed) wrote there is gone before a visible call runs, and before the next
    submission a batch worker grades, as are its sockets and its process."""
    name = f"grader-secret-{os.getpid()}"
    run = in_container([sys.executable, "-I", "-c", JUDGE, str(ROOT), name], binds=[(ROOT, ROOT)], input=SHARED,
                       timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout.splitlines()[-1]) == [[], "nobody asked", []]


def test_setup_sh_installs_pinned_packages_without_waiting_on_an_index():
    requirements = gradescope.pinned_requirements().splitlines()
    pins = dict(line.split("==") for line in requirements if not line.startswith("#"))
    assert {"torch", "numpy", "pytest", "pydantic", "rich", "pyyaml"} <= set(pins)
    assert {"typing-extensions", "pydantic-core", "pluggy"} <= set(pins)          # and what they need
    assert "+" not in pins["torch"] and not [name for name in pins if name.startswith(gradescope.CUDA_ONLY)]
    setup = gradescope.SETUP % {"cpu": gradescope.CPU_TORCH, "pip": gradescope.PIP, "torch": pins["torch"],
                                "python": "3.11", "lab": "lab2", "sandbox": "auto"}
    installs = [line for line in setup.splitlines() if "pip install" in line]
    assert len(installs) == 2 and all("--retries 1" in line and "--timeout 20" in line for line in installs)
    assert f"--index-url {gradescope.CPU_TORCH}" in installs[0] and "--no-deps" in installs[0]
    assert "--extra-index-url" not in setup and "-index-url" not in installs[1]    # PyPI alone for the rest
    assert subprocess.run(["bash", "-n"], input=setup, text=True).returncode == 0


# -- slow: the bundle, as Gradescope runs it ---------------------------------------------------------------
@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """An /autograder-like tree holding the exported bundle, setup.sh run in the container."""
    tree = tmp_path_factory.mktemp("gradescope") / "autograder"
    bundle = tree.parent / "lab2.zip"
    run = subprocess.run([sys.executable, "grade.py", "export", "lab2", "--gradescope", str(bundle)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(tree / "source")
    shutil.copy(tree / "source" / "run_autograder", tree)           # where Gradescope puts it
    (tree / gradescope.METADATA).write_text('{"users": [{"email": "metadata-marker@example.com"}]}')
    run = in_container(["bash", "/tmp/autograder/source/setup.sh"], ENV, [(tree, "/tmp/autograder")], timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "setup.sh: grading in the sandbox process" in run.stdout
    assert (tree / "source" / gradescope.VERDICT).read_text() == "process\n"
    return tree


ENV = {"AUTOGRADER": "/tmp/autograder", "GRADER_PYTHON": sys.executable}


def run_autograder(tree, files):
    """Grade `files` ({name: bytes}) as Gradescope does: run_autograder in the container."""
    shutil.rmtree(tree / "submission", ignore_errors=True)
    (tree / "results" / "results.json").unlink(missing_ok=True)
    (tree / "submission").mkdir(exist_ok=True)
    for name, data in files.items():
        (tree / "submission" / name).write_bytes(data)
    run = in_container(["bash", "/tmp/autograder/run_autograder"], ENV, [(tree, "/tmp/autograder")], timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("grading in the sandbox process: the submission's user: own")
    written = json.loads((tree / "results" / "results.json").read_text())
    jsonschema.validate(written, SCHEMA)
    results = GradescopeResults.model_validate(written)
    assert results.extra_data["sandbox"] == "process" and results.extra_data["network"].startswith("none")
    return results, run.stdout


def files_of(folder):
    return {path.name: path.read_bytes() for path in Path(folder).glob("*.py")}


@pytest.mark.slow
def test_the_reference_gets_full_marks_and_its_total_shown(autograder):
    results, stdout = run_autograder(autograder, files_of(ROOT / "reference" / "lab2"))
    assert results.score == sum(t.max_score for t in results.tests) > 0
    assert {t.status for t in results.tests} == {"passed"}
    assert {t.visibility for t in results.tests} == {"visible"} and results.tests[-1].name.endswith("hidden checks")
    assert f"/{results.score:g} points" in results.output.splitlines()[0]         # the hidden ones: one line
    assert results.visibility == "visible" and results.stdout_visibility == "hidden"
    assert f"score {results.score:g}" in stdout                                     # the instructors' log has it


@pytest.mark.slow
def test_a_wrong_submission_scores_below(autograder):
    results, _ = run_autograder(autograder, files_of(ROOT / "tests" / "submissions" / "mistakes_a"))
    assert 0 < results.score < sum(t.max_score for t in results.tests)


@pytest.mark.slow
def test_a_hostile_submission_reaches_none_of_the_judges_files(autograder):
    reference = (autograder / "source" / "reference" / "lab2" / "positions.py").read_text()
    results, stdout = run_autograder(autograder, files_of(ROOT / "tests" / "submissions" / "autograder_snoop"))
    said = "\n".join(t.output for t in results.tests)
    assert "SNOOP-NO" in said and "SNOOP-GOT" not in said                  # it ran, and got nothing
    assert "/tmp/autograder/source/reference/lab2/positions.py (PermissionError)" in said   # it found the tree
    assert "connect 127.0.0.1:47321 (PermissionError)" in said
    assert "write /tmp/autograder/results/results.json (PermissionError)" in said
    assert "metadata-marker" not in said + stdout and reference not in said
    assert results.score == 0
    assert json.loads((autograder / "results" / "results.json").read_text())["score"] == 0


@pytest.mark.slow
def test_the_classic_hostile_submission_finds_nothing_and_leaves_nothing(autograder):
    """tests/submissions/hostile walks the whole file system for the reference and the hidden
    checks, and leaves a daemon in a session of its own."""
    marker = f"grader-daemon-marker-{os.getpid()}"          # ours, not another test's on this host
    hostile = (ROOT / "tests" / "submissions" / "hostile" / "positions.py").read_text()
    results, _ = run_autograder(autograder, {"positions.py": hostile.replace("grader-daemon-marker", marker).encode()})
    said = "\n".join(t.output for t in results.tests)
    assert results.score == 0 and "def test_" not in said and "mark.grade" not in said
    assert processes_marked(marker.encode()) == []


@pytest.mark.slow
def test_a_packed_zip_scores_on_gradescope_as_in_a_batch(autograder, tmp_path):
    """grade.py pack, then the zip uploaded (Gradescope keeps a zip's files, or the zip itself where
    it is sent as a file), and the same zip in a class folder: one score."""
    import io

    from rich.console import Console

    from grader.instructor import batch
    from grader.learner.cli import main

    mine = tmp_path / "mine"
    shutil.copytree(ROOT / "tests" / "submissions" / "mistakes_a", mine)
    (mine / "notes.txt").write_text("not graded")
    packed = tmp_path / "lab2-submission.zip"
    assert main(["pack", "lab2", "--submission", str(mine), "--out", str(packed)]) == 0
    (tmp_path / "class" / "ada").mkdir(parents=True)
    shutil.copy(packed, tmp_path / "class" / "ada" / "upload.zip")
    batch.grade_class(find_lab("lab2"), tmp_path / "class", tmp_path / "out", Console(file=io.StringIO()),
                      batch.ClassRequest(workers=1))
    [row] = json.loads((tmp_path / "out" / "rows.json").read_text())
    with zipfile.ZipFile(packed) as archive:
        unpacked = {name: archive.read(name) for name in archive.namelist()}
    for upload in (unpacked, {packed.name: packed.read_bytes()}):
        results, _ = run_autograder(autograder, upload)
        assert results.score == row["score"] > 0, upload.keys()
