"""Lab 2's experiment checks: the reference's claims hold, every time, and only numbers that
reproduce from returned weights count. Also the learner's --experiments run."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
SUBMISSIONS = Path(__file__).parent / "submissions"
EXPERIMENTS = ["measure_loss_gap", "extrapolation_runs"]


def assemble(tmp_path, **overrides):
    """A submission: the reference's files, with some replaced by tests/submissions/<name>/<file>."""
    folder = tmp_path / "submission"
    shutil.copytree(ROOT / "reference/lab2", folder, ignore=shutil.ignore_patterns("__pycache__"))
    for file, name in overrides.items():
        shutil.copy(SUBMISSIONS / name / f"{file}.py", folder / f"{file}.py")
    return folder


def by_function(results):
    return results.by_function(EXPERIMENTS + ["apply_rope"])


def test_reference_full_marks_and_same_figures_twice(grade_lab2):
    first = grade_lab2(ROOT / "reference/lab2")
    assert first.all_passed and first.score == first.max_score
    assert all(item.done for item in first.done_when)
    second = grade_lab2(ROOT / "reference/lab2")
    strip = lambda results: json.loads(results.model_dump_json(exclude={"execution_time"}))
    assert strip(first) == strip(second)


def test_stubs_say_not_implemented_once(grade_lab2):
    results = grade_lab2(None, EXPERIMENTS)
    assert results.score == 0
    assert {c.status for c in results.checks} == {"not_implemented"}
    assert {c.message for c in results.checks if c.function == "measure_loss_gap"} == {"not implemented yet"}


def test_made_up_numbers_with_untrained_weights_score_zero(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, experiments="fabricated"), EXPERIMENTS)
    assert results.score == 0
    assert any("do not reproduce" in c.message for c in results.checks)


def test_honest_undertrained_runs_keep_reproduction_points_only(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, experiments="undertrained"), EXPERIMENTS)
    passed = {c.test.split("::")[-1] for c in results.checks if c.status == "passed"}
    assert passed == {"test_gap_reproduces", "test_extrapolation_reproduces"}


def test_wrong_rope_loses_extrapolation_not_the_gap(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, positions="mistakes_a"), EXPERIMENTS)
    scores = by_function(results)
    assert scores["measure_loss_gap"][0] == scores["measure_loss_gap"][1]
    assert scores["extrapolation_runs"][0] < scores["extrapolation_runs"][1]
    assert any("positions.py must pass its checks" in c.message for c in results.checks)


def test_a_failing_dependency_skips_instead_of_charging_the_check(grade_lab2, tmp_path):
    results = grade_lab2(assemble(tmp_path, positions="mistakes_a"))
    extrapolation = [c for c in results.checks if c.function == "extrapolation_runs"]
    assert extrapolation and {c.status for c in extrapolation} == {"skipped"}
    assert {c.message for c in extrapolation} == {"needs apply_rope, which does not pass its own checks yet"}


def test_experiments_command_shows_table_chart_and_writes_plots(tmp_path):
    run = subprocess.run([sys.executable, "grade.py", "lab2", "--experiments", "--submission", "reference/lab2",
                          "--out", str(tmp_path / "plots")], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "120"}, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Loss gap" in run.stdout and "█" in run.stdout
    assert {p.name for p in (tmp_path / "plots").glob("*.png")} == {"extrapolation.png", "training_loss.png"}
