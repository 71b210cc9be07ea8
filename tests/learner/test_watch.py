"""grade.py LAB --watch as a learner meets it, through a pseudo-terminal: save, see the new
result; break it, see the hint; crash it, and the next round is whole; Ctrl-C exits 0 and
leaves no process behind."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"


def descendants(pid):
    """Every living process under `pid`, from /proc."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Watch:
    """grade.py lab2 --watch on a submission folder, with --json."""

    def __init__(self, submission, json_path, *args):
        self.json_path = json_path
        self.process = pexpect.spawn(
            sys.executable, ["grade.py", "lab2", "--watch", "--submission", str(submission),
                             "--json", str(json_path), *args],
            cwd=ROOT, dimensions=(60, 220), encoding="utf-8", timeout=240)

    def round_done(self):
        """Wait for the end of the round under way; its results.json. `screen`: its report."""
        self.process.expect("watching")
        self.screen = self.process.before
        return json.loads(self.json_path.read_text())

    def save(self, path, text):
        """Save a file, as an editor does; wait for the round it starts to end."""
        path.write_text(text)
        self.process.expect("grading")
        return self.round_done()


def full_marks(results):
    return results["score"] == sum(t["max_score"] for t in results["tests"]) > 0


@pytest.mark.slow
def test_save_break_crash_and_ctrl_c(tmp_path):
    submission, json_path = tmp_path / "work", tmp_path / "out" / "results.json"
    submission.mkdir()
    positions = submission / "positions.py"
    shutil.copy(ROOT / "assignments" / "lab2" / "positions.py", positions)
    watch = Watch(submission, json_path, "-k", "positions.py")
    try:
        first = watch.round_done()
        assert first["score"] == 0 and "not implemented yet" in watch.screen

        fixed = watch.save(positions, (ROOT / "reference" / "lab2" / "positions.py").read_text())
        assert full_marks(fixed)
        watch.process.expect_exact(f"last round {fixed['score']:g}/{fixed['score']:g}")

        broken = watch.save(positions, (SUBMISSIONS / "mistakes_a" / "positions.py").read_text())
        assert 0 < broken["score"] < fixed["score"]
        assert any("cos and sin are swapped" in t["output"] for t in broken["tests"])
        assert "cos and sin are swapped" in watch.screen

        crashed = watch.save(positions, (SUBMISSIONS / "crash_exit" / "positions.py").read_text())
        assert crashed["score"] == 0
        assert any("exited with status 3" in t["output"] for t in crashed["tests"])
        again = watch.save(positions, (ROOT / "reference" / "lab2" / "positions.py").read_text())
        assert full_marks(again), "a crash in one round broke the next"

        ours = descendants(watch.process.pid)
        assert ours, "no zygote under the watcher"
        watch.process.sendintr()
        watch.process.expect(pexpect.EOF, timeout=30)
        watch.process.close()
        assert watch.process.exitstatus == 0
        deadline = time.monotonic() + 5
        while any(map(alive, ours)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in ours if alive(pid)], "a process outlived --watch"
    finally:
        watch.process.close(force=True)


def test_saved_file_is_graded_and_shown_first(tmp_path):
    """Both files selected: a save of invariance.py puts its checks before positions.py's."""
    submission, json_path = tmp_path / "work", tmp_path / "results.json"
    shutil.copytree(ROOT / "reference" / "lab2", submission)
    watch = Watch(submission, json_path, "-k", "positions.py", "-k", "invariance.py")
    try:
        assert watch.round_done()["tests"][0]["tags"][0] == "rope_frequencies"
        invariance = submission / "invariance.py"
        results = watch.save(invariance, invariance.read_text() + "\n# saved\n")
        assert results["tests"][0]["tags"][0] == "is_permutation_invariant"
        assert full_marks(results)
        watch.process.sendintr()
        watch.process.expect(pexpect.EOF, timeout=30)
    finally:
        watch.process.close(force=True)
    assert watch.process.exitstatus == 0


@pytest.mark.parametrize("args, message", [
    (["-k", "nonsense"], "not a function or file"),
    (["--submission", "no/such/folder"], "does not exist"),
    (["--experiments"], "it takes --submission, --device and --out"),
])
def test_bad_usage_exits_2_before_watching(args, message):
    run = subprocess.run([sys.executable, "grade.py", "lab2", "--watch", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert run.returncode == 2, run.stdout + run.stderr
    assert message in run.stdout and "Traceback" not in run.stdout + run.stderr
