"""Batch grading against a shell loop of single runs, side by side: `python benchmarks/batch_bench.py`.

The 12-mixed set: copies of tests/submissions/* and the reference, each a folder. The shell loop
runs `grade.py lab2 --submission DIR --json ...` once per folder; the batch grades the same folder
with the default workers (the machine's cores). Then 100 submissions: the same mix under other
names, every fifth zipped, batch only, against the 5-minute target; then the same batch again,
where nothing changed.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from rich.console import Console

from figures import Figures

ROOT = Path(__file__).resolve().parent.parent
# The mix the figures have been measured on since the first batch benchmark (tests/submissions/
# has grown since; the newer ones test single features, not a class's spread of work).
MIX = [ROOT / "tests" / "submissions" / name for name in (
    "alternative_styles", "cheat_allclose", "crash_exit", "crash_segfault", "endless_rope", "fabricated",
    "flood_and_traps", "hostile", "mistakes_a", "mistakes_b", "stdout_sabotage", "undertrained")] + \
    [ROOT / "reference" / "lab2"]


def make_set(folder, count, zip_every=0):
    """`count` submissions cycling through MIX, named s000_<source>; every zip_every-th zipped."""
    folder.mkdir(parents=True)
    for i in range(count):
        source = MIX[i % len(MIX)]
        name = f"s{i:03d}_{source.name}"
        if zip_every and i % zip_every == zip_every - 1:
            with zipfile.ZipFile(folder / f"{name}.zip", "w", zipfile.ZIP_DEFLATED) as archive:
                for file in sorted(source.glob("*.py")):
                    archive.write(file, f"{name}/{file.name}")
        else:
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def timed(command, **kwargs):
    started = time.monotonic()
    subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
    return time.monotonic() - started


def shell_loop(folder, out):
    out.mkdir()
    loop = f'for d in "{folder}"/*; do "{sys.executable}" grade.py lab2 --submission "$d" ' \
           f'--json "{out}/$(basename "$d").json"; done'
    seconds = timed(["bash", "-c", loop])
    return seconds, {p.stem: json.loads(p.read_text())["score"] for p in out.glob("*.json")}


def batch(folder, out):
    seconds = timed([sys.executable, "grade.py", "batch", "lab2", str(folder), "--out", str(out)])
    with open(out / "grades.csv", newline="") as file:
        scores = {row["student"]: float(row["score"]) for row in csv.DictReader(file) if row["score"]}
    return seconds, scores


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--twelve", action="store_true", help="only the 12-mixed set against the loop")
    only_twelve = parser.parse_args().twelve
    console = Console()
    cores = os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="batch-bench-") as work:
        work = Path(work)
        twelve = make_set(work / "twelve", 12)
        console.print(f"[bold]12 mixed submissions[/] ({', '.join(p.name for p in MIX)}), {cores} cores")
        loop_s, loop_scores = shell_loop(twelve, work / "loop")
        batch_s, batch_scores = batch(twelve, work / "batch12")
        differ = sorted(s for s in loop_scores if loop_scores[s] != batch_scores.get(s))
        if not only_twelve:
            hundred = make_set(work / "hundred", 100, zip_every=5)
            console.print("[bold]100 submissions[/] (the same mix, 20 of them zipped)")
            big_s, big_scores = batch(hundred, work / "batch100")
            again_s, _ = batch(hundred, work / "batch100")

    table = Figures(__file__, f"Batch grading vs a shell loop of single runs (lab2, {cores} cores)",
                    ("set", "method", "graded", "seconds", "s / submission", "vs loop", "target"))
    table.row("12 mixed", "shell loop of grade.py", str(len(loop_scores)), f"{loop_s:.1f}",
                  f"{loop_s / 12:.2f}", "1.0x", "")
    speedup = loop_s / batch_s
    table.row("12 mixed", f"grade.py batch ({cores} workers)", str(len(batch_scores)), f"{batch_s:.1f}",
                  f"{batch_s / 12:.2f}", f"{speedup:.1f}x", f"≥ 3x: {'met' if speedup >= 3 else 'MISSED'}")
    if only_twelve:
        table.row("100 mixed", "not run (--twelve)", "", "", "", "", "")
    else:
        _hundred_rows(table, loop_s, big_s, big_scores, again_s)
    table.note(f"Scores equal to single runs: {12 - len(differ)}/12"
               + (f" (differ: {', '.join(differ)})." if differ else "."))
    table.publish(console)


def _hundred_rows(table, loop_s, big_s, big_scores, again_s):
    cores = os.cpu_count()
    table.row("100 mixed", "shell loop (estimate: 100 × its 12-set rate)", "", f"{loop_s / 12 * 100:.0f}",
                  f"{loop_s / 12:.2f}", "1.0x", "")
    table.row("100 mixed", f"grade.py batch ({cores} workers)", str(len(big_scores)), f"{big_s:.1f}",
                  f"{big_s / 100:.2f}", f"{loop_s / 12 * 100 / big_s:.1f}x",
                  f"< 300 s: {'met' if big_s < 300 else 'MISSED'}")
    table.row("100 mixed", "batch again, nothing changed", "0", f"{again_s:.1f}", "", "", "")


if __name__ == "__main__":
    main()
