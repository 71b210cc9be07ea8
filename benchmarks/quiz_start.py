"""The lesson test's two starts (target < 0.6 s each): launching `python grade.py quiz lab2` to its
first question on screen, and a whole `--answers` run (read, judge by meaning, review, exit).

The first runs in a pseudo-terminal as a learner would and ends as soon as a question shows
(before any answer, so nothing is saved). The second grades an answers file whose text answer
is an expression and whose other answers use the typed formats ("38.6M", "a, b and e", "ALiBi"),
and checks in the same process's fashion that neither torch nor sympy was imported.
Prints the median of several runs of each, the --answers run's CPU time too (what a busy machine
changes least), and the load average. Usage: python benchmarks/quiz_start.py [RUNS]
"""
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pexpect

from figures import Figures

COURSE = Path(__file__).resolve().parent.parent
ANSWERS = "table-size: 38.6M\norder: a, b and e\nmethods: ALiBi\nrope-score: the key's position minus the query's\n" \
          "tied: c\n"
NO_TORCH = ("import sys, grader.learner.cli; code = grader.learner.cli.main(sys.argv[1:]); "
            "assert not {'torch', 'sympy'} & set(sys.modules), 'imported torch or sympy'; sys.exit(code)")


def time_to_first_question():
    start = time.perf_counter()
    child = pexpect.spawn(sys.executable, [str(COURSE / "grade.py"), "quiz", "lab2"], cwd=str(COURSE),
                          encoding="utf-8", dimensions=(40, 100), timeout=30)
    child.expect(r"Question \d+ of \d+")
    elapsed = time.perf_counter() - start
    child.terminate(force=True)                     # no answer given yet: nothing to keep
    return elapsed


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_answers_run(answers):
    """(wall seconds, CPU seconds) of one --answers run: its CPU time is what a busy machine changes least."""
    start, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run([sys.executable, str(COURSE / "grade.py"), "quiz", "lab2", "--answers", answers],
                          cwd=COURSE, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - start, children_cpu() - cpu
    if done.returncode != 0 or "5 of 5 right" not in " ".join(done.stdout.split()):
        sys.exit(f"the --answers run did not score 5 of 5:\n{done.stdout}{done.stderr}")
    return elapsed, cpu


def median_cells(times):
    return [f"{value:.3f}" for value in (statistics.median(times), min(times), max(times))]


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    with tempfile.TemporaryDirectory() as folder:
        answers = Path(folder) / "answers.yaml"
        answers.write_text(ANSWERS)
        checked = subprocess.run([sys.executable, "-c", NO_TORCH, "quiz", "lab2", "--answers", str(answers)],
                                 cwd=COURSE, capture_output=True, text=True)
        if checked.returncode != 0:
            sys.exit(f"the --answers run imported torch or sympy, or failed:\n{checked.stderr[-2000:]}")
        time_to_first_question()                    # warm the file cache and .pyc files
        time_answers_run(str(answers))
        starts = [time_to_first_question() for _ in range(runs)]
        graded = [time_answers_run(str(answers)) for _ in range(runs)]
    table = Figures(__file__, f"The lesson test, launch to first question and a whole --answers run (median of {runs})",
                    ("what", "median s", "min s", "max s", "target"))
    table.row("launch to the first question", *median_cells(starts), "< 0.6 s")
    table.row("a --answers run, launch to exit (no torch, no sympy imported)", *median_cells([w for w, _ in graded]),
              "< 0.6 s")
    table.row("a --answers run, its CPU time (user + system)", *median_cells([c for _, c in graded]), "")
    table.publish()


if __name__ == "__main__":
    main()
