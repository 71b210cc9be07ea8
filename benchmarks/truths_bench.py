"""What the invariance truths cost the judge: `python benchmarks/truths_bench.py [--rounds N]`.

Grades the reference's is_permutation_invariant checks (as `grade.py lab2 -k is_permutation_invariant`
does) N times in one process with one warm zygote, as a batch worker or --watch does: once with
the truths kept between gradings (layers.CHANGES, the checks' own cache), once with them forgotten
before each grading. Per grading: wall time, the judge's own CPU time (this process, not the
sandboxed children) and the part of it spent computing truths (every reordering, in float64).
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rounds(lab, zygote, layers, count, keep):
    """[(wall s, judge CPU s, truths CPU s)] of `count` gradings."""
    from grader.core.request import Device, Request, Selection
    from grader.core.runner import grade

    compute, spent, found = layers._change, [0.0], []

    def timed(*args):
        started = time.process_time()
        try:
            return compute(*args)
        finally:
            spent[0] += time.process_time() - started

    layers._change = timed
    try:
        for _ in range(count):
            if not keep:
                layers.CHANGES.clear()
            spent[0] = 0.0
            zygote.reset()
            wall, cpu = time.monotonic(), time.process_time()
            results = grade(Request(lab, ROOT / "reference" / "lab2", Device.CPU,
                                    Selection(("is_permutation_invariant",))), zygote)
            if not results.all_passed:
                raise SystemExit("the reference must pass: " + "; ".join(c.message[:200] for c in results.checks
                                                                          if c.status != "passed"))
            found.append((time.monotonic() - wall, time.process_time() - cpu, spent[0]))
    finally:
        layers._change = compute
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import torch

    from grader.judge.launchers import launcher_for
    from grader.judge.zygote import Zygote
    from grader.lab_api.checks import load_beside
    from grader.readers.manifest import find_lab

    torch.set_num_threads(1)
    lab = find_lab("lab2")
    layers = load_beside(lab.folder / "public" / "test_invariance_basics.py", "layers")
    zygote = Zygote(launcher_for("auto"))
    try:
        forgotten = rounds(lab, zygote, layers, args.rounds, keep=False)
        layers.CHANGES.clear()
        kept = rounds(lab, zygote, layers, args.rounds, keep=True)
    finally:
        zygote.close()
    table = Table(title=f"Reference, is_permutation_invariant checks, {args.rounds} gradings in one process "
                        "(median of the later ones; the first in brackets)", title_justify="left")
    for column in ("truths", "wall s", "judge CPU s", "of it, truths s"):
        table.add_column(column, justify="left" if column == "truths" else "right")
    for name, found in (("computed each grading", forgotten), ("kept in the process", kept)):
        later = found[1:] or found
        table.add_row(name, *(f"{statistics.median(f[i] for f in later):.3f} ({found[0][i]:.3f})" for i in range(3)))
    Console().print(table)


if __name__ == "__main__":
    main()
