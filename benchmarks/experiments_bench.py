"""`grade.py lab2 --experiments` beside the hidden grading of the experiments, on the reference.

Wall seconds of fresh `grade.py` processes, alternating, medians of ROUNDS: the learner's run
(both experiments, tables, chart, plots) against `grade.py lab2 -k experiments.py` (the judge
runs the submission's experiments in children and re-measures them; the recipe it trains itself
is read from .grade/ after the first grading on a machine, and trained anew when .grade/ lacks
it: both are timed). Written into docs/figures.md with the load average seen over the runs.

    python benchmarks/experiments_bench.py [ROUNDS]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import Figures

ROOT = Path(__file__).resolve().parent.parent


def timed(args, env=None):
    started = time.monotonic()
    run = subprocess.run([sys.executable, str(ROOT / "grade.py"), *args], cwd=ROOT, capture_output=True,
                         text=True, env=env)
    if run.returncode not in (0, 1):
        sys.exit(f"grade.py {' '.join(args)} failed:\n{run.stdout}{run.stderr}")
    return time.monotonic() - started


def main(rounds):
    times = {"--experiments": [], "hidden, recipe from .grade/": [], "hidden, recipe trained": []}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as work:
        hidden = ["lab2", "--submission", "reference/lab2", "-k", "experiments.py"]
        for _ in range(rounds):
            times["--experiments"].append(timed(["lab2", "--experiments", "--submission", "reference/lab2",
                                                 "--out", str(Path(work) / "plots")]))
            times["hidden, recipe from .grade/"].append(timed(hidden))
            for memo in (ROOT / ".grade").glob("memo-lab2-recipe-*.pt"):     # kept aside, put back
                shutil.move(memo, Path(work) / memo.name)
            times["hidden, recipe trained"].append(timed(hidden))
            for memo in Path(work).glob("memo-lab2-recipe-*.pt"):
                shutil.move(memo, ROOT / ".grade" / memo.name)
            loads.append(os.getloadavg()[0])
    table = Figures(__file__, f"The experiments, the learner's run beside the hidden grading (medians of {rounds})",
                    ("what", "median seconds", "each run"))
    for name, seconds in times.items():
        table.row(name, f"{statistics.median(seconds):.2f}", ", ".join(f"{s:.2f}" for s in seconds))
    table.note(f"Load average (1 min) over the runs: {min(loads):.1f} to {max(loads):.1f}.")
    table.publish()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
