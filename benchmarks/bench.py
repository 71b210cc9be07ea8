"""Side-by-side timings behind the README's figures: `python benchmarks/bench.py [--runs N]`.

Each command runs N times in a fresh process on this machine, alternating with the baseline
`python -c "import torch"`; medians are compared. Nothing else should be running meanwhile.
"First on this machine" deletes what the judge keeps in .grade/ (grader/memo.py: its own run
of the lab's recipe) before each run; the other rows find it there.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BASELINE = [PYTHON, "-c", "import torch"]
GRADE = [PYTHON, "grade.py", "lab2", "--submission", "reference/lab2"]
PYTHON_START = [PYTHON, "-I", "-c", "pass"]


def timed(command):
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=False, capture_output=True)
    return time.perf_counter() - started


def median_pair(command, runs, first=False):
    """Medians of (command, baseline), interleaved so that both see the same machine; with
    `first`, nothing kept in .grade/ by an earlier grading."""
    ours, base = [], []
    for _ in range(runs):
        base.append(timed(BASELINE))
        for kept in (ROOT / ".grade").glob("memo-*.pt") if first else ():
            kept.unlink()
        ours.append(timed(command))
    return statistics.median(ours), statistics.median(base)


def sandbox_cost(runs):
    """Median seconds bubblewrap adds to starting a process, its namespaces and mounts as the
    grader sets them up (once per grading; a batch worker's zygote starts once for all)."""
    from grader.judge.launchers import BubblewrapLauncher

    with tempfile.TemporaryDirectory() as scratch:
        argv = BubblewrapLauncher().argv(scratch, 0)
        wrapped = argv[:argv.index(PYTHON)] + PYTHON_START
        plain = statistics.median(timed(PYTHON_START) for _ in range(runs))
        return statistics.median(timed(wrapped) for _ in range(runs)) - plain


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    console = Console()
    table = Table(title="Benchmarks (medians)")
    for column in ("what", "seconds", "import torch", "ratio", "target"):
        table.add_column(column)
    rows = [("grade positions + invariance", GRADE + ["-k", "positions", "-k", "invariance"], 1.5, False),
            ("grade the whole lab, first on this machine", GRADE, 4.5, True),
            ("grade the whole lab, again", GRADE, 3.0, False)]
    for what, command, target, first in rows:
        ours, base = median_pair(command, args.runs, first)
        table.add_row(what, f"{ours:.2f}", f"{base:.2f}", f"{ours / base:.2f}x", f"< {target}x")
    from grader.judge.launchers import bubblewrap_works

    if bubblewrap_works():
        table.add_row("what bubblewrap adds to a grading", f"{sandbox_cost(10 * args.runs):.3f}", "", "",
                      "< 0.2 s")
    console.print(table)


if __name__ == "__main__":
    main()
