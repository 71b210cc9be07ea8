"""How soon each front door says something: `python benchmarks/first_line.py [--runs N]`.

Each command runs in a pseudo-terminal, as a learner runs it; the time is from its start to the
first visible character it writes (the first line of a report, a progress bar, a status line or an
error), median of N, beside `python -c "import torch"`. --watch and --experiments are stopped with
Ctrl-C once they have spoken.
"""
import argparse
import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from figures import Figures

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
VISIBLE = b"abcdefghijklmnopqrstuvwxyz0123456789"


def first_output(command, stop=False):
    """Seconds until `command` writes something visible to its terminal (None: it never did); with
    `stop`, Ctrl-C once it has. Returns (seconds, exit status)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(ROOT)
        os.execv(command[0], command)
    started, result = time.perf_counter(), None
    while True:
        ready, _, _ = select.select([fd], [], [], 300)
        if not ready:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        if result is None and any(c in VISIBLE for c in data.lower()):
            result = time.perf_counter() - started
            if stop:
                os.kill(pid, signal.SIGINT)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return result, os.waitstatus_to_exitcode(status)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    reference = str(ROOT / "reference" / "lab2")
    grade = [PYTHON, str(ROOT / "grade.py"), "lab2"]
    doors = [("grade.py lab2 (a grading)", grade + ["--submission", reference, "-k", "positions.py"], False),
             ("grade.py lab2 --experiments", grade + ["--experiments", "--submission", reference, "--out",
                                                      "/tmp/first-line-plots"], True),
             ("grade.py lab2 --watch", grade + ["--watch", "--submission", reference], True),
             ("grade.py lab2 -k with a typo (refused)", grade + ["-k", "aply_rope"], False),
             ("grade.py quiz lab2 --help", [PYTHON, str(ROOT / "grade.py"), "quiz", "--help"], False)]
    table = Figures(__file__, f"How soon each front door says something (median of {args.runs}, in a terminal)",
                    ("front door", "first output (s)", "import torch (s)", "target"))
    for what, command, stop in doors:
        firsts, bases = [], []
        for _ in range(args.runs):
            started = time.perf_counter()
            subprocess.run([PYTHON, "-c", "import torch"], check=True)
            bases.append(time.perf_counter() - started)
            firsts.append(first_output(command, stop)[0] or float("nan"))
        table.row(what, f"{statistics.median(firsts):.2f}", f"{statistics.median(bases):.2f}", "< 0.5")
    table.publish()


if __name__ == "__main__":
    main()
