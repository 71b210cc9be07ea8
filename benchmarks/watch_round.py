"""Where a --watch round's time goes: `python benchmarks/watch_round.py [--rounds N]`.

A warm grader (grader.core.warm.Grader, as --watch and `grade.py serve` keep one) grades a copy of
the reference with -k positions.py, round after round, the next round's child forked between them
as --watch does. The grading's own observers time it: each check's start and end (on_progress)
and each answer of student code (on_answer). Checks run room by room, the visible first, so a
round splits into: before the first check (pytest's configuration and collection, the first
child), the visible room, the hidden room (its first check pays the change of room: the visible
children killed, a child forked), and after the last check (the results, the children killed).
What the watcher adds around a round (noticing the save, the --json, the screen) is
watch_bench.py's to time. The round of median length, in milliseconds.
"""
import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
from pathlib import Path

from figures import Figures

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.base import collector  # noqa: E402

collector.pause()           # as grade.py: until the first round's checks are collected

from grader.core.request import Observers, Request, Selection  # noqa: E402
from grader.core.warm import Grader  # noqa: E402
from grader.readers.manifest import find_lab  # noqa: E402


def timed_round(grader, request):
    """(parts of the round in seconds, calls per room): one grading, timed by its observers."""
    checks, answers = [], []

    def progress(done, total, function):
        checks.append(time.perf_counter())

    def answer(call, value):
        answers.append(time.perf_counter())
        return value

    started = time.perf_counter()
    results = grader.grade(dataclasses.replace(request, observers=Observers(progress, (answer,))))
    ended = time.perf_counter()
    assert results.score == results.max_score, "the reference lost points"
    visible = sum(1 for check in results.checks if check.visibility != "hidden")
    starts, ends = checks[0::2], checks[1::2]       # each check: its start, then its end
    change = ends[visible - 1]
    parts = {"before the first check": starts[0] - started, "visible room": change - starts[0],
             "hidden room (with the change of room)": ends[-1] - change, "after the last check": ended - ends[-1],
             "the whole round": ended - started}
    calls = (sum(1 for t in answers if t < change), sum(1 for t in answers if t >= change))
    return parts, calls, (visible, len(results.checks) - visible), results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    lab = find_lab("lab2")
    with tempfile.TemporaryDirectory() as work:
        submission = Path(work, "submission")
        shutil.copytree(ROOT / "reference" / "lab2", submission)
        request = Request(lab, submission, selection=Selection(("positions.py",), ("rope_frequencies", "apply_rope")))
        grader = Grader()
        try:
            for _ in range(2):                      # the imports and the memoised truths
                grader.prepare(grader.grade(request), lab)
            timings = []
            for _ in range(rounds):
                time.sleep(0.2)                     # the learner reads; the next child is forked
                parts, calls, checks, results = timed_round(grader, request)
                grader.prepare(results, lab)
                timings.append(parts)
        finally:
            grader.close()
    table = Figures(__file__, f"Where a warm --watch round of -k positions.py goes (the median of {rounds} rounds)",
                    ("part", "checks", "calls of student code", "ms", "share"))
    timings.sort(key=lambda parts: parts["the whole round"])
    middle = timings[len(timings) // 2]             # its parts add up, as the medians of parts would not
    whole = middle["the whole round"]
    for name, seconds in middle.items():
        count = {"visible room": (checks[0], calls[0]), "hidden room (with the change of room)": (checks[1], calls[1]),
                 "the whole round": (sum(checks), sum(calls))}.get(name, ("", ""))
        table.row(name, *map(str, count), f"{1000 * seconds:.0f}", f"{seconds / whole:.0%}")
    table.publish()


if __name__ == "__main__":
    main()
