"""Side-by-side timings of gradings: `python benchmarks/bench.py [--runs N] [-k ROW]`, written into docs/figures.md.

Each command runs N times in a fresh process on this machine, alternating with the baseline
`python -c "import torch"`; medians are compared, with the load average (1 min) seen over the row:
on a busy machine the ratios say less. "First on this machine" deletes what the judge keeps in
.grade/ (grader/lab_api/memo.py: its own runs of the lab's recipe) before each run; the other rows find it
there. "Warm" rows run with `grade.py serve lab2` started before and stopped after (the row's
gradings go to it). "The learner's copy" rows grade in a handout built by `grade.py release` (its
public checks only). `--course DIR` times another checkout of the course instead (an older commit unpacked with
`git archive`, say, for a before-and-after), its grade.py, reference and handout.
"""
import argparse
import contextlib
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
BASELINE = [PYTHON, "-c", "import torch"]
PYTHON_START = [PYTHON, "-I", "-c", "pass"]


def timed(command, cwd):
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=False, capture_output=True)
    return time.perf_counter() - started


def median_pair(command, runs, cwd, first=False):
    """Medians of (command, baseline), interleaved so that both see the same machine, and the
    load averages seen; with `first`, nothing kept in .grade/ by an earlier grading."""
    ours, base, loads = [], [], [os.getloadavg()[0]]
    for _ in range(runs):
        base.append(timed(BASELINE, cwd))
        for kept in (Path(cwd) / ".grade").glob("memo-*.pt") if first else ():
            kept.unlink()
        ours.append(timed(command, cwd))
        loads.append(os.getloadavg()[0])
    return statistics.median(ours), statistics.median(base), loads


def sandbox_cost(runs):
    """Median seconds bubblewrap adds to starting a process, its namespaces and mounts as the
    grader sets them up (once per grading; a batch worker's zygote starts once for all)."""
    from grader.judge.launchers import BubblewrapLauncher

    with tempfile.TemporaryDirectory() as scratch:
        argv = BubblewrapLauncher().argv(scratch, 0)
        wrapped = argv[:argv.index(PYTHON)] + PYTHON_START
        plain = statistics.median(timed(PYTHON_START, ROOT) for _ in range(runs))
        return statistics.median(timed(wrapped, ROOT) for _ in range(runs)) - plain


def rows(course, work, handout):
    """(what, command, folder it runs in, target ratio, first on this machine, warm: a grade.py serve
    running for the lab meanwhile)."""
    reference = course / "reference" / "lab2"
    two_files = work / "two_files"          # positions.py and invariance.py written, experiments.py the stub
    two_files.mkdir(exist_ok=True)
    for name in ("positions.py", "invariance.py"):
        (two_files / name).write_bytes((reference / name).read_bytes())
    grade = [PYTHON, "grade.py", "lab2", "--submission"]
    quick = grade + [str(two_files)]
    return [("cold: positions + invariance (-k)", grade + [str(reference), "-k", "positions", "-k", "invariance"],
             course, 1.3, False, False),
            ("cold quick: positions + invariance, experiments the stub", quick, course, 1.3, False, False),
            ("cold: the stubs", grade + [str(course / "grader/labs/lab2/stubs")], course, 1.1, False, False),
            ("cold: the whole lab, first on this machine", grade + [str(reference)], course, 4.5, True, False),
            ("cold: the whole lab, again", grade + [str(reference)], course, 2.3, False, False),
            ("warm quick: grade.py serve lab2 running", quick, course, 0.5, False, True),
            ("the learner's copy: the whole lab, first", grade + [str(reference)], handout, 4.5, True, False),
            ("the learner's copy: the whole lab, again", grade + [str(reference)], handout, 3.0, False, False)]


@contextlib.contextmanager
def served(cwd, warm):
    """A warm grader for lab2 in `cwd`'s checkout while the row runs (grade.py serve), when `warm`."""
    if not warm:
        yield True
        return
    if subprocess.run([PYTHON, "grade.py", "serve", "lab2"], cwd=cwd, capture_output=True).returncode:
        yield False             # a checkout without grade.py serve (--course, an older commit)
        return
    try:
        yield True
    finally:
        subprocess.run([PYTHON, "grade.py", "serve", "--stop"], cwd=cwd, check=False, capture_output=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-k", dest="only", default="", help="only the rows whose name holds this")
    parser.add_argument("--course", type=Path, default=ROOT, help="the checkout whose handout the copy's rows grade")
    args = parser.parse_args()
    table = Figures(__file__, f"Gradings side by side with `import torch` (medians of {args.runs})",
                    ("what", "seconds", "import torch", "ratio", "target", "load"))
    with tempfile.TemporaryDirectory(prefix="bench-") as work:
        handout = Path(work) / "handout"
        subprocess.run([PYTHON, str(args.course / "grade.py"), "release", "lab2", "--out", str(handout)],
                       check=True, capture_output=True)
        for what, command, cwd, target, first, warm in rows(args.course.resolve(), Path(work), handout):
            if args.only in what:
                with served(cwd, warm) as running:
                    if not running:
                        table.row(what, "no grade.py serve here", "", "", f"<= {target}x", "")
                        continue
                    ours, base, loads = median_pair(command, args.runs, cwd, first)
                table.row(what, f"{ours:.2f}", f"{base:.2f}", f"{ours / base:.2f}x", f"<= {target}x",
                              f"{min(loads):.1f}-{max(loads):.1f}")
    from grader.judge.launchers import bubblewrap_works

    if bubblewrap_works() and args.only in "what bubblewrap adds to a grading":
        table.row("what bubblewrap adds to a grading", f"{sandbox_cost(10 * args.runs):.3f}", "", "",
                      "< 0.2 s", "")
    table.publish()


if __name__ == "__main__":
    main()
