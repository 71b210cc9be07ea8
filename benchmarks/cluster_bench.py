"""The local pool against Ray on this machine, side by side: `python benchmarks/cluster_bench.py`.

The same mixed submissions as benchmarks/batch_bench.py (tests/submissions/* and the reference
under other names, every fifth zipped), graded by `grade.py batch` with the default workers (the
machine's cores), then by `grade.py batch --ray` (a local Ray instance with the same cores, its
start and stop included). Both gradebooks must be equal but for the seconds column. Needs the
extra: pip install -e '.[cluster]'. `--count N` grades N submissions instead of 100.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from batch_bench import ROOT, make_set
from figures import Figures

TARGET = 1.25           # Ray's wall time at most this times the pool's


def batch(folder, out, *args):
    started = time.monotonic()
    run = subprocess.run([sys.executable, "grade.py", "batch", "lab2", str(folder), "--out", str(out), *args],
                         cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if run.returncode != 0:
        sys.exit(f"grade.py batch {' '.join(args)} failed ({run.returncode}):\n"
                 f"{run.stdout[-2000:]}{run.stderr[-2000:]}")
    with open(out / "grades.csv", newline="") as file:
        rows = {row["student"]: {k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(file)}
    return seconds, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100, help="submissions to grade (default 100)")
    count = parser.parse_args().count
    console, cores = Console(), os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as work:
        work = Path(work)
        subs = make_set(work / "subs", count, zip_every=5)
        console.print(f"[bold]{count} mixed submissions[/], {cores} cores: the local pool, then Ray")
        pool_s, pool_rows = batch(subs, work / "pool")
        ray_s, ray_rows = batch(subs, work / "ray", "--ray")
    differ = sorted(s for s in pool_rows.keys() | ray_rows.keys() if pool_rows.get(s) != ray_rows.get(s))

    table = Figures(__file__, f"grade.py batch: local pool vs Ray (lab2, {count} mixed, {cores} cores)",
                    ("method", "graded", "seconds", "s / submission", "vs pool", "target"))
    table.row(f"local pool ({cores} workers)", str(len(pool_rows)), f"{pool_s:.1f}", f"{pool_s / count:.2f}",
                  "1.00x", "")
    ratio = ray_s / pool_s
    table.row(f"--ray, local instance ({cores} actors)", str(len(ray_rows)), f"{ray_s:.1f}",
                  f"{ray_s / count:.2f}", f"{ratio:.2f}x",
                  f"≤ {TARGET}x: {'met' if ratio <= TARGET else 'MISSED'}")
    table.note(f"Gradebooks equal but for seconds: {count - len(differ)}/{count}"
               + (f" (differ: {', '.join(differ)})." if differ else "."))
    table.publish(console)


if __name__ == "__main__":
    main()
