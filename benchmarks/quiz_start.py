"""Time from launching `python grade.py quiz lab2` to its first question on screen (target < 0.6 s).

Runs the quiz in a pseudo-terminal as a learner would, ends it as soon as a question shows
(before any answer, so nothing is saved), and prints the median of several runs.
Usage: python benchmarks/quiz_start.py [RUNS]
"""
import statistics
import sys
import time
from pathlib import Path

import pexpect

COURSE = Path(__file__).resolve().parent.parent


def time_to_first_question():
    start = time.perf_counter()
    child = pexpect.spawn(sys.executable, [str(COURSE / "grade.py"), "quiz", "lab2"], cwd=str(COURSE),
                          encoding="utf-8", dimensions=(40, 100), timeout=30)
    child.expect(r"Question \d+ of \d+")
    elapsed = time.perf_counter() - start
    child.terminate(force=True)                     # no answer given yet: nothing to keep
    return elapsed


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    time_to_first_question()                        # warm the file cache and .pyc files
    times = sorted(time_to_first_question() for _ in range(runs))
    print(f"quiz start, launch to first question: median {statistics.median(times):.3f} s "
          f"over {runs} runs (min {times[0]:.3f}, max {times[-1]:.3f}); target < 0.6 s")


if __name__ == "__main__":
    main()
