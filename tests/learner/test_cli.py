"""The command line as a user meets it: exit codes, the report, --json, bad input."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.core.results import GradescopeResults

ROOT = Path(__file__).resolve().parents[2]


def grade_py(*args, cwd=ROOT):
    return subprocess.run([sys.executable, str(ROOT / "grade.py"), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})


def test_a_folder_deleted_under_grade_py_is_said_in_a_sentence(tmp_path):
    """grade.py started in a folder that was deleted: one sentence and exit 2 (torch's import would
    end in "Intel oneMKL FATAL ERROR" and exit status 2 with no word of why)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    run = subprocess.run(["bash", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "$0" "$1" lab2 -k positions.py',
                          sys.executable, str(ROOT / "grade.py")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "has been deleted: cd to a folder that exists" in run.stderr, run.stderr
    assert "oneMKL" not in run.stdout + run.stderr and "Traceback" not in run.stderr


def test_reference_passes_with_exit_0_and_valid_json(tmp_path):
    out = tmp_path / "new folder" / "results.json"
    run = grade_py("lab2", "--submission", "reference/lab2", "-k", "positions.py", "--json", out)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    results = GradescopeResults.model_validate(json.loads(out.read_text()))
    assert results.score == sum(t.max_score for t in results.tests) > 0
    assert {tuple(t.tags) for t in results.tests} >= {("rope_frequencies",), ("apply_rope",)}
    assert results.extra_data["sandbox"] in ("bubblewrap", "process")
    assert "apply_rope" in run.stdout and "Total" in run.stdout


def test_stubs_exit_1_with_not_implemented(tmp_path):
    out = tmp_path / "results.json"
    run = grade_py("lab2", "-k", "invariance", "--json", out)
    assert run.returncode == 1
    assert "not implemented yet" in run.stdout and "Traceback" not in run.stdout + run.stderr
    results = GradescopeResults.model_validate(json.loads(out.read_text()))
    assert results.score == 0 and all(t.status == "failed" for t in results.tests)


@pytest.mark.parametrize("args, message", [
    (["lab99"], "no lab called 'lab99'"),
    (["lab2", "--submission", "no/such/folder"], "does not exist"),
    (["lab2", "-k", "nonsense"], "not a function or file"),
    (["lab2", "--device", "tpu"], "invalid choice"),
    (["lab2", "--device", "cuda"], "sees no CUDA device"),
    (["lab2", "--submission", "work.zip"], "unzip it first"),
    (["lab2", "--out", "plots"], "--out is where --experiments"),
    (["lab2", "--experiments", "-k", "apply_rope"], "it takes --submission, --device and --out"),
])
def test_bad_usage_exits_2(args, message):
    import torch

    if "cuda" in args and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    run = grade_py(*args)
    assert run.returncode == 2
    assert message in run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr


def test_broken_manifest_exits_2(tmp_path):
    lab = tmp_path / "badlab"
    lab.mkdir()
    (lab / "lab.yaml").write_text("title: [unclosed\n")
    run = grade_py(lab)
    assert run.returncode == 2 and "not valid YAML" in run.stdout
    (lab / "lab.yaml").write_text("title: x\nhandout: .\nstudent_files: {}\nsurprise: 1\n")
    run = grade_py(lab)
    assert run.returncode == 2
    assert "student_files" in run.stdout and "surprise" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr


@pytest.mark.parametrize("body, code, said", [
    ("print('ran', __name__, sys.argv[1:])", 0, "ran __main__ ['--out', 'x']"),
    ("sys.exit(130)", 130, ""),
    ("sys.exit('stopped: why')", 1, "stopped: why"),
    ("raise ValueError('broken')", 1, "ValueError: broken"),
])
def test_the_experiments_script_exits_as_python_would_have_it(tmp_path, body, code, said):
    """--experiments runs the lab's script under an exit that skips torch's teardown (grader/core/fast_exit.py):
    its status, its message and its traceback are what `python SCRIPT` gives."""
    from grader.core import fast_exit

    (tmp_path / "script.py").write_text(f"import sys\n{body}\n")
    run = subprocess.run([sys.executable, fast_exit.__file__, "script.py", "--out", "x"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == code and said in run.stdout + run.stderr, run.stdout + run.stderr


def test_the_fast_exit_lets_a_profiler_write_its_profile(tmp_path):
    """exit_now skips the interpreter's teardown (an atexit handler does not run), but under
    python -m cProfile it exits as usual, so that the profile is written."""
    (tmp_path / "script.py").write_text(
        f"import atexit, sys\nsys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from grader.core.fast_exit import exit_now\natexit.register(print, 'torn down')\nexit_now(3)\n")
    fast = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert fast.returncode == 3 and "torn down" not in fast.stdout
    profiled = subprocess.run([sys.executable, "-m", "cProfile", "-o", "profile.out", "script.py"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
    assert "torn down" in profiled.stdout and (tmp_path / "profile.out").stat().st_size


@pytest.mark.parametrize("sandbox", ["auto", "process"])
def test_a_k_that_matches_nothing_is_refused_at_once_with_the_closest_name(sandbox, monkeypatch, capsys):
    """Refused before anything starts: no zygote (nor torch's import) is begun for it
    (benchmarks/first_line.py times the refusal)."""
    from grader.judge import zygote
    from grader.learner import cli

    def started(*_):
        raise AssertionError("a zygote was started for a grading refused")

    monkeypatch.setattr(zygote.Zygote, "__init__", started)
    assert cli.main(["lab2", "-k", "aply_rope", "--sandbox", sandbox]) == 2
    said = capsys.readouterr()
    assert "did you mean apply_rope?" in said.out and "Traceback" not in said.out + said.err
    assert "starting the sandbox" not in said.out + said.err


def test_the_staff_commands_are_those_their_rooms_register():
    """cli.STAFF names each staff command's room, for a learner's copy that lacks it: the same names
    as the rooms register, no more and no fewer."""
    from grader.learner import cli

    registered = {name: room for room in set(cli.STAFF.values()) for name in cli.staff_commands(room)}
    assert registered == cli.STAFF and not set(registered) & set(cli.COMMANDS)
