"""A check from a notebook cell, timed: `python benchmarks/notebook_bench.py [--checks N]`.

What a learner waits for in Jupyter: the first `notebook.check("lab2", "apply_rope")` of a kernel
(the warm zygote starts, torch is imported) and each one after it (the zygote kept warm between
checks, every check a fresh child), with the reference's positions.py as the kernel's cells. Also
the reader alone: the reference as a notebook with 200 cells of top-level training and plots, read
into the lab's files. Printed, with the load average beside: on a shared machine the figures are
only as quiet as it is.
"""
import argparse
import contextlib
import io
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import notebook  # noqa: E402
from grader.core import notebook_reader  # noqa: E402
from grader.manifest import find_lab  # noqa: E402

TRAINING = "for step in range(1000):\n    loss = train(model)\n    print(step, loss)\nplt.plot(losses)\n"


def timed(call):
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        result = call()
    return time.perf_counter() - started, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checks", type=int, default=10, help="checks after the first (default 10)")
    args = parser.parse_args()
    positions = (ROOT / "reference" / "lab2" / "positions.py").read_text()
    history = ["import torch", positions]
    first, results = timed(lambda: notebook.check("lab2", "apply_rope", history=history))
    assert results is not None and results.score == sum(t.max_score for t in results.tests) > 0
    later = [timed(lambda: notebook.check("lab2", "apply_rope", history=history))[0] for _ in range(args.checks)]
    lab = find_lab("lab2")
    cells = [(f"cell {n}", TRAINING) for n in range(200)] + [("cell 200", positions)]
    reads = [timed(lambda: notebook_reader.extract_cells(lab, cells))[0] for _ in range(20)]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"first check of a kernel: {first:.2f} s")
    print(f"each check after it: median {statistics.median(later):.2f} s, slowest {max(later):.2f} s "
          f"({args.checks} checks)")
    print(f"reading 201 cells into the lab's files: median {statistics.median(reads) * 1000:.1f} ms")
    notebook._warm.pop("zygote").close()


if __name__ == "__main__":
    main()
