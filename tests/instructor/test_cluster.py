"""Batch grading on Ray (grader/cluster.py): the same gradebook as the local pool, every row when a
worker actor dies mid-batch, resumable; without Ray, --ray is one line saying how to install it.

Each --ray run starts a local Ray instance (127.0.0.1 only) and stops it; its files go to a
TMPDIR of the test's, checked empty of processes afterwards.
"""
import csv
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from grader.core.results import GradescopeResults
from grader.instructor.records import BatchSummary, StudentRecord
from grader.judge.launchers import bubblewrap_works, launcher_for
from grader.learner import cli

ROOT = Path(__file__).resolve().parents[2]
MIX = [ROOT / "tests" / "submissions" / name for name in (      # a class: named, so a new submission changes nothing
    "alternative_styles", "cheat_allclose", "crash_exit", "crash_segfault", "device_ignored", "endless_rope",
    "fabricated", "fit_and_stretch", "fixed_reorderings", "flood_and_traps", "hostile", "late_writer")]
needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None or not bubblewrap_works(),
                               reason="Ray is an optional extra (pip install -e '.[cluster]') and grades in "
                               "bubblewrap only")


def test_without_ray_one_line_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)           # import ray fails, as where it is missing
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    code = cli.main(["batch", "lab2", str(tmp_path), "--out", str(tmp_path / "out"), "--ray"])
    assert code == 2
    assert capsys.readouterr().out == "error: --ray needs Ray, an optional extra: pip install -e '.[cluster]'\n"
    assert not (tmp_path / "out").exists()


def test_on_ray_a_plain_child_is_refused(tmp_path, capsys):
    """A plain child has the network, and Ray's services on the node accept anyone."""
    code = cli.main(["batch", "lab2", str(tmp_path), "--out", str(tmp_path / "out"), "--ray", "--sandbox", "process"])
    assert code == 2 and "bubblewrap only" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def make_class(folder):
    """The mixed submissions of tests/submissions/ (12), every fifth zipped."""
    folder.mkdir()
    for i, source in enumerate(MIX):
        name = f"s{i:02d}_{source.name}"
        if i % 5 == 4:
            with zipfile.ZipFile(folder / f"{name}.zip", "w", zipfile.ZIP_DEFLATED) as archive:
                for file in sorted(source.glob("*.py")):
                    archive.write(file, f"{name}/{file.name}")
        else:
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.fixture
def ray_tmp():
    """A short TMPDIR for a Ray run (its socket paths must stay short); nothing may run there after."""
    folder = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    yield folder
    left = [pid for pid in _pids() if f"TMPDIR={folder}".encode() in _environ(pid)]
    shutil.rmtree(folder, ignore_errors=True)
    assert not left, f"processes of the Ray run still running: {left}"


def batch(subs, out, *args, tmp=None, **popen):
    command = [sys.executable, str(ROOT / "grade.py"), "batch", "lab2", str(subs), "--out", str(out),
               "--workers", "2", *args]
    env = {**os.environ, "COLUMNS": "200", **({"TMPDIR": str(tmp)} if tmp else {})}
    if popen:
        return subprocess.Popen(command, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, **popen)
    return subprocess.run(command, cwd=ROOT, env=env, text=True, capture_output=True, timeout=900)


def gradebooks(*outs):
    """Each folder's grades.csv but for timing: the seconds column, and the scores and incidents of
    a submission where a call ran out of time in any (the hostile one's file-system scan can, on
    a loaded machine)."""
    tables = []
    for out in outs:
        with open(out / "grades.csv", newline="") as file:
            tables.append({row["student"]: row for row in csv.DictReader(file)})
    timed = {student for out, table in zip(outs, tables) for student in table if timed_out(out, student)}
    kept = ("student", "status", "detail", "max_score")
    return [{student: {k: v for k, v in row.items() if k in kept or k != "seconds" and student not in timed}
             for student, row in table.items()} for table in tables]


def timed_out(out, student):
    record = StudentRecord.model_validate_json((out / "students" / student / "graded.json").read_text())
    return any(check.failure == "timeout" for check in (record.results.checks if record.results else ()))


@pytest.fixture(scope="module")
def pool_class(tmp_path_factory):
    """The 12 graded by the local pool: (submissions, out)."""
    folder = tmp_path_factory.mktemp("cluster")
    subs = make_class(folder / "subs")
    run = batch(subs, folder / "pool")
    assert run.returncode == 0, run.stdout + run.stderr
    return subs, folder / "pool"


@needs_ray
def test_ray_gradebook_equals_the_pool_and_resumes(pool_class, tmp_path, ray_tmp):
    every, pool = pool_class
    subs, out = tmp_path / "subs", tmp_path / "ray"
    shutil.copytree(every, subs)            # changed below
    run = batch(subs, out, "--ray", tmp=ray_tmp)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr and "class summary" in run.stdout
    ours, theirs = gradebooks(out, pool)
    assert ours == theirs
    for student in ours:         # what each submission got, as the pool reports it
        on_ray = GradescopeResults.model_validate_json((out / "students" / student / "results.json").read_text())
        in_pool = GradescopeResults.model_validate_json((pool / "students" / student / "results.json").read_text())
        assert on_ray.extra_data["sandbox"] == launcher_for("auto").name
        if not timed_out(out, student) and not timed_out(pool, student):
            assert [(t.name, t.status, t.score, t.output) for t in on_ray.tests] == \
                [(t.name, t.status, t.score, t.output) for t in in_pool.tests]
    summary = BatchSummary.model_validate_json((out / "summary.json").read_text())
    assert (summary.graded_now, summary.workers, summary.students) == (len(MIX), 2, len(MIX))

    sessions = set((ray_tmp / "ray").glob("session_2*"))
    started = time.monotonic()              # resume: nothing changed, nothing graded, no Ray started
    run = batch(subs, out, "--ray", tmp=ray_tmp)
    assert run.returncode == 0 and time.monotonic() - started < 30, run.stdout + run.stderr
    assert BatchSummary.model_validate_json((out / "summary.json").read_text()).graded_now == 0
    assert set((ray_tmp / "ray").glob("session_2*")) == sessions
    changed = next(s for s in ours if s.endswith("fixed_reorderings"))
    shutil.copy(ROOT / "reference" / "lab2" / "invariance.py", subs / changed / "invariance.py")
    run = batch(subs, out, "--ray", tmp=ray_tmp)
    assert run.returncode == 0, run.stdout + run.stderr
    assert BatchSummary.model_validate_json((out / "summary.json").read_text()).graded_now == 1
    after, before = gradebooks(out, pool)
    assert float(after[changed]["score"]) > float(before[changed]["score"])
    assert {s: r for s, r in after.items() if s != changed} == {s: r for s, r in before.items() if s != changed}


@needs_ray
def test_an_actor_killed_mid_batch_loses_no_row(pool_class, tmp_path, ray_tmp):
    every, pool = pool_class
    subs, out = tmp_path / "subs", tmp_path / "ray"
    subs.mkdir()
    for path in sorted(every.iterdir())[::2]:                 # half the class is enough here
        (shutil.copytree if path.is_dir() else shutil.copy)(path, subs / path.name)
    process = batch(subs, out, "--ray", tmp=ray_tmp, start_new_session=True)
    try:
        deadline, killed = time.monotonic() + 600, None
        while killed is None and process.poll() is None and time.monotonic() < deadline:
            busy = [pid for pid in _descendants(process.pid) if _cmdline(pid).startswith(b"ray::GradingActor.grade")]
            if busy and list(out.glob("students/*/graded.json")):       # one graded, another being graded
                killed = busy[0]
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.2)
        output = process.communicate(timeout=600)[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert killed, output
    assert process.returncode == 0, output
    ours, theirs = gradebooks(out, pool)
    assert len(ours) == len(list(subs.iterdir())) and ours == {student: theirs[student] for student in ours}


def _pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _read(pid, name):
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return b""


def _environ(pid):
    return _read(pid, "environ")


def _cmdline(pid):
    return _read(pid, "cmdline")


def _parent(pid):
    fields = _read(pid, "stat").rpartition(b")")[2].split()
    return int(fields[1]) if len(fields) > 1 else None


def _descendants(root):
    parents = {pid: _parent(pid) for pid in _pids()}
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found
