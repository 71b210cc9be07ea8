"""What the checks' meta-device questions cost a child: `python benchmarks/meta_bench.py [--runs N]`.

torch runs an op on the meta device through Python meta kernels it imports on first use (torch._refs,
torch._decomp, sympy: some 800 modules). In a fresh sandboxed child, as each grading has one, this
times the reference's rope_frequencies on the CPU, then asked for device="meta" twice: the first
meta call pays the imports (charged to the learner's call time), the second does not.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from grader.judge.launchers import launcher_for
    from grader.judge.sandbox import Sandbox
    from grader.judge.zygote import Zygote
    from grader.readers.manifest import find_lab

    lab = find_lab("lab2")
    files = {name: (lab.reference / name).read_bytes() for name in lab.manifest.student_files}
    zygote, found = Zygote(launcher_for("auto")), []
    try:
        for _ in range(args.runs):
            zygote.reset()
            box = Sandbox(lab, files, zygote)
            times = []
            for device in ("cpu", "meta", "meta"):
                started = time.monotonic()
                box.call("rope_frequencies", [8, 4], {"device": device})
                times.append(time.monotonic() - started)
            box.close()
            found.append(times)
    finally:
        zygote.close()
    table = Table(title=f"rope_frequencies(8, 4) in a fresh child, wall s (median of {args.runs})",
                  title_justify="left")
    for column in ("on the CPU, first call", "device='meta', first", "device='meta', again"):
        table.add_column(column, justify="right")
    table.add_row(*(f"{statistics.median(t[i] for t in found):.3f}" for i in range(3)))
    Console().print(table)


if __name__ == "__main__":
    main()
