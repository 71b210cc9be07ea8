"""The front doors with a warm grader running (grade.py serve lab2): grade.py lab2 and --watch are
answered by it, score what a cold grading scores, and leave it running for the next; --stop ends
it and leaves no process behind."""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pexpect
import pytest
from test_watch import alive, descendants

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "lab2"


@pytest.fixture
def runtime():
    """An XDG_RUNTIME_DIR of this test's own: its server is no one else's."""
    with tempfile.TemporaryDirectory(prefix="grade-runtime-") as folder:
        yield {**os.environ, "XDG_RUNTIME_DIR": folder, "COLUMNS": "200"}


def grade_py(env, *args):
    return subprocess.run([sys.executable, "grade.py", *map(str, args)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def server_pid(said):
    return int(said.split("started (pid ")[1].split(")")[0])


@pytest.mark.slow
def test_grade_and_watch_go_to_a_running_warm_grader(runtime, tmp_path):
    cold = grade_py(runtime, "lab2", "--submission", REFERENCE, "-k", "positions.py", "--json", tmp_path / "cold.json")
    started = grade_py(runtime, "serve", "lab2")
    assert started.returncode == 0, started.stdout + started.stderr
    pid = server_pid(started.stdout.replace("\n", " "))
    try:
        warm = grade_py(runtime, "lab2", "--submission", REFERENCE, "-k", "positions.py", "--json",
                        tmp_path / "warm.json")
        assert warm.returncode == cold.returncode == 0, warm.stdout + warm.stderr
        assert f"warm grader for lab2 (pid {pid})" in warm.stdout.replace("\n", " ")
        scores = [[(t["name"], t["score"]) for t in json.loads((tmp_path / f"{kind}.json").read_text())["tests"]]
                  for kind in ("cold", "warm")]
        assert scores[0] == scores[1]

        watch = pexpect.spawn(sys.executable, ["grade.py", "lab2", "--watch", "--submission", str(REFERENCE), "-k",
                                               "positions.py", "--json", str(tmp_path / "watch.json")],
                              cwd=ROOT, env=runtime, dimensions=(60, 220), encoding="utf-8", timeout=240)
        watch.expect("watching")
        assert json.loads((tmp_path / "watch.json").read_text())["score"] == \
            json.loads((tmp_path / "cold.json").read_text())["score"]
        assert descendants(watch.pid) == []             # no zygote of its own: the server graded
        watch.sendintr()
        watch.expect(pexpect.EOF)
        watch.close()
        assert watch.exitstatus == 0 and alive(pid)                          # the server stays for the next
    finally:
        stopped = grade_py(runtime, "serve", "--stop")
    assert "stopped 1 warm grader" in stopped.stdout
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid) and not descendants(pid)


def test_serve_refuses_what_it_cannot_do(runtime):
    assert "which lab" in grade_py(runtime, "serve").stdout
    assert "takes no lab" in grade_py(runtime, "serve", "lab2", "--stop").stdout
    assert "expected seconds above 0" in grade_py(runtime, "serve", "lab2", "--idle", "0").stdout
    assert "stopped 0 warm graders" in grade_py(runtime, "serve", "--stop").stdout


@pytest.mark.slow
def test_a_server_in_the_foreground_stops_on_ctrl_c_and_leaves_no_process(runtime, monkeypatch):
    from grader.core.request import SandboxKind
    from grader.learner.serve import WarmClient
    from grader.readers.manifest import find_lab

    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime["XDG_RUNTIME_DIR"])
    server = pexpect.spawn(sys.executable, ["grade.py", "serve", "lab2", "--foreground", "--sandbox", "process"],
                           cwd=ROOT, env=runtime, dimensions=(24, 200), encoding="utf-8", timeout=240)
    server.expect("Ctrl-C stops it")
    deadline = time.monotonic() + 240
    while WarmClient.for_checkout(find_lab("lab2"), SandboxKind.PROCESS) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert descendants(server.pid)                  # its zygote, warm
    server.sendintr()
    server.expect(pexpect.EOF)
    said = server.before
    server.close()
    assert server.exitstatus == 0 and not descendants(server.pid), (server.signalstatus, said)
    assert not list(Path(runtime["XDG_RUNTIME_DIR"], "grade").glob("*.sock"))
