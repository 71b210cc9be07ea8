"""The learner's own copy in its first hour: the handout `grade.py release` builds, in a temp folder,
graded by its own grade.py with this project's Python (nothing installed). Errors point into the
learner's files, what their code printed shows under the check, the README leads with the loop,
--watch lives through a folder recreated, a save by rename and a branch switch, one-shot grading
shows progress, first-run mistakes are sentences, Ctrl-C stops --experiments keeping what finished,
and a -k run says what it cannot tell."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from grader.learner.preflight import problem

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "lab2"


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    out = tmp_path_factory.mktemp("handout") / "course"
    run = subprocess.run([sys.executable, str(ROOT / "grade.py"), "release", "lab2", "--out", str(out),
                          "--quiz", "practice"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


# This project's venv has the course installed in editable mode, whose import hook would find what the
# handout lacks (grader.instructor) in this repository: the learner's Python has no such hook.
AS_LEARNER = ("import os, runpy, sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
              "getattr(f, '__module__', '')]; sys.argv = sys.argv[1:]; sys.path[0] = "
              "os.path.dirname(os.path.abspath(sys.argv[0])); runpy.run_path(sys.argv[0], run_name='__main__')")


def grade(handout, *args, cwd=None, python=sys.executable, flags=()):
    """The handout's grade.py run as a learner runs it, with this project's Python."""
    return subprocess.run([python, *flags, "-c", AS_LEARNER, str(handout / "grade.py"), *map(str, args)],
                          cwd=cwd or handout, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})


def spawn(handout, *args):
    """The handout's grade.py in a pseudo-terminal, as a learner runs it."""
    return pexpect.spawn(sys.executable, ["-c", AS_LEARNER, str(handout / "grade.py"), *map(str, args)],
                         cwd=handout, dimensions=(60, 200), encoding="utf-8", timeout=240,
                         env={**os.environ, "COLUMNS": "200"})


def chatty(tmp_path):
    """A folder whose rope_frequencies is right and prints 30 lines, and whose apply_rope fails
    inside a file given with the lab (model.py)."""
    work = tmp_path / "chatty"
    work.mkdir()
    source = (REFERENCE / "positions.py").read_text().replace("def rope_frequencies(", "def _frequencies(")
    (work / "positions.py").write_text(source + '''

def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    for i in range(30):
        print(f"line {i} of my debugging")
    return _frequencies(head_dim, seq_len, base, device)


def apply_rope(x, cos, sin):
    import model
    return model.build_model(None)
''')
    return work


def test_errors_and_prints_point_into_the_learners_files(handout, tmp_path):
    """A traceback cut to the learner's frames, the given file named as such; what the code printed
    under the check that ran it, passed or not, trimmed with a count; plain progress lines; -k's
    lesson line."""
    out = tmp_path / "results.json"
    run = grade(handout, "lab2", "--submission", chatty(tmp_path), "-k", "positions.py", "--json", out)
    assert run.returncode == 1, run.stdout + run.stderr
    tests = json.loads(out.read_text())["tests"]
    raised = [t["output"] for t in tests if t["tags"][0] == "apply_rope" and "raised" in t["output"]]
    assert raised and "at positions.py line" in raised[0], tests
    assert re.search(r"at model\.py line \d+, in \w+ \(given with the lab\)", raised[0]), raised[0]
    assert "hint it surfaced in model.py, given with the lab" in raised[0]
    frames = [line.split()[1] for line in raised[0].splitlines() if line.startswith("  at ")]
    assert set(frames) == {"positions.py", "model.py"}, raised[0]          # no frame of torch's
    printed = [t for t in tests if t["tags"][0] == "rope_frequencies" and t["status"] == "passed"
               and "line 0 of my debugging" in t["output"]]
    assert printed and "more lines: -s shows them" in printed[0]["output"]
    assert "line 29 of my debugging" not in printed[0]["output"]
    assert "checking rope_frequencies (0/" in run.stderr and "checking apply_rope" in run.stderr
    assert "checking" not in out.read_text()
    assert "only checks of apply_rope, rope_frequencies were run; the lesson status needs the whole lab" \
        in " ".join(run.stdout.split())


def test_a_terminal_gets_a_progress_bar_and_s_shows_all(handout, tmp_path):
    process = spawn(handout, "lab2", "--submission", chatty(tmp_path), "-k", "rope_frequencies", "-s")
    try:
        process.expect(r"checking\S* \S*rope_frequencies.*\d+/\d+")
        process.expect(pexpect.EOF)
    finally:
        process.close(force=True)
    screen = process.before
    assert "line 29 of my debugging" in screen and "-s shows them" not in screen


def test_first_run_mistakes_are_sentences(handout, tmp_path):
    """A stub renamed, another with a syntax error, from a relative interpreter path; no packages;
    an old Python; an instructor's command in the learner's copy."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(REFERENCE / "positions.py", work / "positions_old.py")
    (work / "invariance.py").write_text("import torch\n\ndef is_permutation_invariant(attn, x, atol=1e-5)\n"
                                        "    return True\n")
    cwd = handout / "assignments" / "lab2"
    run = grade(handout, "lab2", "--submission", work, "-k", "rope_frequencies", cwd=cwd,
                python=os.path.relpath(sys.executable, cwd))
    text = " ".join(run.stdout.split())
    assert run.returncode == 1 and "sandbox could not start" not in text, run.stdout + run.stderr
    assert "positions.py is not in" in text and "positions_old.py defines rope_frequencies: renamed?" in text
    assert f"cp {handout / 'grader/labs/lab2/stubs/positions.py'}" in text and str(work / "positions.py") in text
    lines = run.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "invariance.py line 3: expected ':'" in line)
    code = "def is_permutation_invariant(attn, x, atol=1e-5)"
    assert lines[at + 2].index("^") == lines[at + 1].index(code) + len(code)       # the caret after the ")"

    bare = grade(handout, "lab2", flags=["-S"])         # no site-packages: as a fresh python3
    assert bare.returncode == 2 and "Traceback" not in bare.stderr
    assert "lacks pydantic, rich, pyyaml, pytest, torch" in bare.stderr and "requirements-cpu.txt" in bare.stderr
    assert "needs Python 3.10 or newer; this is Python 3.8" in problem(["lab2"], version=(3, 8, 10))
    staff = grade(handout, "batch", "lab2", work, "--out", tmp_path / "out")
    assert staff.returncode == 2 and "batch is for instructors" in staff.stdout


def test_the_copy_holds_what_a_learner_runs_and_a_readme_that_leads_with_the_loop(handout):
    assert not (handout / "grader" / "instructor").exists()
    readme = (handout / "README.md").read_text()
    loop, commands = readme.index("## The loop"), readme.index("## Every command")
    assert readme.index("## Set up") < loop < commands
    assert "grade.py lab2 --watch" in readme[loop:commands]
    for option in ("--watch", "-k rope_frequencies", "-s", "--json", "--submission", "--device cuda", "--experiments",
                   "quiz lab2"):
        assert f"grade.py {option}" in readme[commands:] or f"lab2 {option}" in readme[commands:], option
    cpu = (handout / "requirements-cpu.txt").read_text()
    lines = [line for line in cpu.splitlines() if line and not line.startswith("#")]
    assert lines == ["--index-url https://download.pytorch.org/whl/cpu", lines[1]] and lines[1].startswith("torch")
    assert "requirements-cpu.txt" in readme and "pip install -r requirements.txt" in readme


@pytest.mark.slow
def test_watch_survives_rename_branch_switch_and_a_folder_recreated(handout, tmp_path):
    work, out = tmp_path / "work", tmp_path / "results.json"
    shutil.copytree(handout / "assignments" / "lab2", work)
    git = ["git", "-c", "user.name=l", "-c", "user.email=l@x", "-C", str(work)]
    subprocess.run([*git, "init", "-q", "-b", "start"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "stubs"], check=True)
    subprocess.run([*git, "checkout", "-qb", "solved"], check=True)
    shutil.copy(REFERENCE / "positions.py", work / "positions.py")
    subprocess.run([*git, "commit", "-qam", "solved"], check=True)
    subprocess.run([*git, "checkout", "-q", "start"], check=True)
    process = spawn(handout, "lab2", "--watch", "--submission", work, "-k", "rope_frequencies", "--json", out)

    def graded(full):
        """Wait (reading the screen meanwhile) for a round that gives full marks, none, or (None)
        says the folder does not exist."""
        deadline, screen = time.monotonic() + 120, ""
        while time.monotonic() < deadline:
            try:
                process.expect("watching", timeout=0.5)
                screen += process.before
                results = json.loads(out.read_text())
            except (pexpect.TIMEOUT, OSError):
                continue
            marks = results["score"] == sum(t["max_score"] for t in results["tests"]) > 0
            if ("does not exist" in " ".join(screen.replace("│", " ").split())) if full is None else marks == full:
                return
        raise AssertionError(f"no round with full={full}: {screen[-3000:]}")

    try:
        graded(full=False)
        subprocess.run([*git, "checkout", "-q", "solved"], check=True)
        graded(full=True)
        stub = (work / "positions.py").with_suffix(".swp")
        stub.write_text((handout / "grader/labs/lab2/stubs/positions.py").read_text())
        os.replace(stub, work / "positions.py")         # an editor's atomic save
        graded(full=False)
        shutil.rmtree(work)
        graded(full=None)                               # a round says so
        shutil.copytree(REFERENCE, work)
        graded(full=True)
        process.sendintr()
        process.expect(pexpect.EOF, timeout=60)
    finally:
        process.close(force=True)
    assert process.exitstatus == 0


FAKE_EXPERIMENTS = '''
import time

from results import LossGap, Run
from tasks import TRAIN_LEN


def run(pos, task):
    return Run(task=task, config={"pos": pos}, state_dict={}, train_losses=[2.0, 1.0], eval_lengths=[TRAIN_LEN],
               eval_losses=[1.0], eval_accuracies=[0.5])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    on_step("learned · lookback", 1, 1, 1.0)
    return LossGap(run("learned", "lookback"), run("none", "lookback"), run("none", "majority"), 0.5)


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    for step in range(1, 10**6):
        on_step("rope · lookback", step, 10**6, 1.0)
        time.sleep(0.05)
'''


def test_ctrl_c_stops_the_experiments_keeping_what_finished(handout, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "experiments.py").write_text(FAKE_EXPERIMENTS)
    process = spawn(handout, "lab2", "--experiments", "--submission", work, "--out", tmp_path / "plots")
    try:
        process.expect("Loss gap")
        process.expect("rope · lookback")
        time.sleep(0.5)
        process.sendintr()
        process.expect(pexpect.EOF, timeout=60)
    finally:
        process.close(force=True)
    assert process.exitstatus == 130
    said = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", process.before)
    assert "Traceback" not in said and "KeyboardInterrupt" not in said
    assert sum("stopped" in line for line in said.splitlines()) == 1
    assert "stopped (Ctrl-C): kept what finished: measure_loss_gap" in said
    assert (tmp_path / "plots" / "training_loss.png").is_file()


@pytest.mark.slow
def test_the_experiments_boxes_are_checked_by_the_copys_own_grade_py(handout, tmp_path):
    """The experiments' claims are re-measured in the learner's copy: the reference's runs tick both
    boxes, through the handout's own grade.py (the judge trains the recipe for seeds 0 and 7 there)."""
    work = tmp_path / "work"
    shutil.copytree(REFERENCE, work, ignore=shutil.ignore_patterns("__pycache__"))
    run = grade(handout, "lab2", "-k", "experiments.py", "--submission", work, "--json", tmp_path / "r.json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "☑ Measured loss gap with and without positions" in run.stdout
    assert "☑ RoPE extrapolated further than learned positions" in run.stdout
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["score"] == 20 and "Traceback" not in run.stdout + run.stderr


@pytest.mark.slow
def test_experiments_that_ignore_the_seed_lose_their_points_in_the_copy(handout, tmp_path):
    """The copy's checks run the experiments at seeds 0 and 7: the defaults whatever seed is asked are
    right at 0 only, so they lose every point there, with a hint that names the seeds, and no box is
    ticked (the recipe's runs are kept in the copy's .grade/ by the test above)."""
    work = tmp_path / "work"
    shutil.copytree(REFERENCE, work, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "tests/submissions/seed_ignored/experiments.py", work / "experiments.py")
    run = grade(handout, "lab2", "-k", "experiments.py", "--submission", work, "--json", tmp_path / "r.json")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "☐ Measured loss gap with and without positions" in run.stdout
    assert "☐ RoPE extrapolated further than learned positions" in run.stdout
    tests = json.loads((tmp_path / "r.json").read_text())["tests"]
    assert sum(t["score"] for t in tests) == 0 and len(tests) == 8      # 4 a function, on_step's among them
    for test in tests:
        assert "at seed 7:" in test["output"], test["output"]
        assert "the seed is ignored: built and trained as for seed 0" in test["output"]
        assert "the lab builds and trains with seed=seed (7)" in test["output"]
