"""Cold and warm gradings agree: `python benchmarks/warm_scores.py [-k NAME]`.

Every submission of tests/submissions/ and the reference is graded twice with `grade.py lab2
--submission DIR --json`: cold (no warm grader anywhere: a runtime folder of its own) and warm
(`grade.py serve lab2` running for this checkout, which the grading says it used, after every
submission before it). Each check's score, status and feedback (its output in results.json) must
be the same; the times are each grading's, side by side. The section of docs/figures.md says how
many agreed and lists any that did not.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import Figures

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def graded(submission, out, env):
    """(seconds, {check: (score, status, feedback)} or the error, whether the warm grader said it answered)."""
    started = time.perf_counter()
    run = subprocess.run([PYTHON, "grade.py", "lab2", "--submission", str(submission), "--json", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.perf_counter() - started
    if not out.exists():
        return took, f"exit {run.returncode}: {run.stdout.strip().splitlines()[-1:] or run.stderr[-200:]}", False
    scores = {test["name"]: (test["score"], test.get("status"), test.get("output"))
              for test in json.loads(out.read_text())["tests"]}
    return took, scores, "warm grader for lab2" in run.stdout.replace("\n", " ")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-k", dest="only", default="", help="only the submissions whose name holds this")
    args = parser.parse_args()
    submissions = [p for p in sorted((ROOT / "tests" / "submissions").iterdir()) if p.is_dir()]
    submissions = [p for p in submissions + [ROOT / "reference" / "lab2"] if args.only in p.name]
    differ, unserved, times = [], [], {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as cold_runtime, tempfile.TemporaryDirectory() as warm_runtime, \
            tempfile.TemporaryDirectory() as work:
        cold_env = {**os.environ, "XDG_RUNTIME_DIR": cold_runtime}
        warm_env = {**os.environ, "XDG_RUNTIME_DIR": warm_runtime}
        subprocess.run([PYTHON, "grade.py", "serve", "lab2", "--idle", "3600"], cwd=ROOT, env=warm_env, check=True,
                       capture_output=True)
        try:
            for submission in submissions:
                cold_s, cold, _ = graded(submission, Path(work, f"{submission.name}-cold.json"), cold_env)
                warm_s, warm, served = graded(submission, Path(work, f"{submission.name}-warm.json"), warm_env)
                times["cold"].append(cold_s)
                times["warm"].append(warm_s)
                if cold != warm:
                    differ.append(submission.name)
                if not served:
                    unserved.append(submission.name)
                print(f"{submission.name}: cold {cold_s:.2f} s, warm {warm_s:.2f} s, "
                      f"{'same' if cold == warm else 'DIFFERENT'}{'' if served else ' (warm grader not used)'}")
        finally:
            subprocess.run([PYTHON, "grade.py", "serve", "--stop"], cwd=ROOT, env=warm_env, capture_output=True)
    table = Figures(__file__, "Cold and warm gradings of every held-out submission",
                    ("submissions", "same scores and feedback", "cold median s", "warm median s", "target"))
    table.row(str(len(submissions)), f"{len(submissions) - len(differ)}/{len(submissions)}",
              f"{statistics.median(times['cold']):.2f}", f"{statistics.median(times['warm']):.2f}", "all the same")
    if differ:
        table.note("Different: " + ", ".join(differ))
    if unserved:
        table.note("Not answered by the warm grader: " + ", ".join(unserved))
    table.publish()
    return 1 if differ or unserved else 0


if __name__ == "__main__":
    sys.exit(main())
