"""The same grade on a busy machine: `python benchmarks/busy_bench.py [--busy N]`.

Starts N busy processes (default 20 per core), each in a session of its own as other users'
work is, then grades the reference twice in a row, then a two-worker batch of the reference
beside a submission that starts 100 busy processes at every call
(tests/submissions/hundred_spinners), and prints scores and times. The reference must keep full
marks every time, and the batch must end within 1.5x the lab's time budget.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import Figures

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference" / "lab2"
SPINNERS = ROOT / "tests" / "submissions" / "hundred_spinners"


def timed(*args):
    started = time.monotonic()
    run = subprocess.run([sys.executable, str(ROOT / "grade.py"), *map(str, args)], cwd=ROOT,
                         capture_output=True, text=True)
    return run, time.monotonic() - started


def single(work, table, name):
    out = work / f"{name}.json"
    run, seconds = timed("lab2", "--submission", REFERENCE, "--json", out)
    score = json.loads(out.read_text())["score"] if out.exists() else f"exit {run.returncode}"
    table.row(name, str(score), f"{seconds:.0f} s")
    print(f"{name}: {score} in {seconds:.0f} s", flush=True)      # as it comes: the busy run is long


def batch(work, table):
    subs = work / "class"
    shutil.copytree(REFERENCE, subs / "reference")
    shutil.copytree(SPINNERS, subs / "spinners")
    run, seconds = timed("batch", "lab2", subs, "--out", work / "out", "--workers", "2")
    scores = {s: json.loads((work / "out" / "students" / s / "results.json").read_text())["score"]
              for s in ("reference", "spinners") if (work / "out" / "students" / s / "results.json").exists()}
    table.row("batch: reference beside 100 spinners", f"{scores} (exit {run.returncode})", f"{seconds:.0f} s")
    print(f"batch: {scores} (exit {run.returncode}) in {seconds:.0f} s", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=20 * (os.cpu_count() or 1))
    busy = parser.parse_args().busy
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))     # a time limit still stops the busy processes
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(busy)]
    table = Figures(__file__, f"lab2 on a machine made busy: {busy} busy processes ({os.cpu_count()} cores)",
                    ("what", "score", "wall time"))
    try:
        with tempfile.TemporaryDirectory() as folder:
            single(Path(folder), table, "reference, first")
            single(Path(folder), table, "reference, again")
            batch(Path(folder), table)
    finally:
        for hog in hogs:
            hog.kill()
    table.publish()


if __name__ == "__main__":
    main()
