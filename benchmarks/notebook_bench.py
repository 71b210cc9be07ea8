"""A check from a notebook cell, timed: `python benchmarks/notebook_bench.py [--checks N]`.

What a learner waits for in Jupyter: the first `notebook.check("lab2", "apply_rope")` of a kernel
(the warm zygote starts, torch is imported) and each one after it (the zygote kept warm between
checks, every check a fresh child), with the reference's positions.py as the kernel's cells. Also
a second check() of the whole lab with positions.py and invariance.py as the cells (the notebook's
quick grading: its public checks), and the reader alone: the reference as a notebook with 200 cells
of top-level training and plots, read into the lab's files. Beside `import torch`, written into
docs/figures.md with the load average: on a shared machine the figures are only as quiet as it is.
"""
import argparse
import contextlib
import io
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import notebook  # noqa: E402
from grader.readers import notebook as notebook_reader  # noqa: E402
from grader.readers.manifest import find_lab  # noqa: E402

from figures import Figures  # noqa: E402

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
    table = Figures(__file__, f"A check from a notebook cell (medians of {args.checks})",
                    ("what", "seconds", "import torch", "ratio", "target"))
    torch_s = statistics.median(timed_run([sys.executable, "-c", "import torch"]) for _ in range(5))
    reference = ROOT / "reference" / "lab2"
    positions = (reference / "positions.py").read_text()
    history = ["import torch", positions]
    first, results = timed(lambda: notebook.check("lab2", "apply_rope", history=history))
    assert results is not None and results.score == sum(t.max_score for t in results.tests) > 0
    later = [timed(lambda: notebook.check("lab2", "apply_rope", history=history))[0] for _ in range(args.checks)]
    quick = ["import torch", positions, (reference / "invariance.py").read_text()]
    whole = [timed(lambda: notebook.check("lab2", history=quick))[0] for _ in range(args.checks)]
    lab = find_lab("lab2")
    cells = [(f"cell {n}", TRAINING) for n in range(200)] + [("cell 200", positions)]
    reads = [timed(lambda: notebook_reader.extract_cells(lab, cells))[0] for _ in range(20)]
    for what, seconds, target in (("the first check of a kernel (apply_rope)", first, ""),
                                  ("each check after it (apply_rope)", statistics.median(later), "<= 0.5x"),
                                  ("a second check() of the lab, positions + invariance in the cells "
                                   "(its public checks)", statistics.median(whole), "<= 0.5x")):
        table.row(what, f"{seconds:.2f}", f"{torch_s:.2f}", f"{seconds / torch_s:.2f}x", target)
    table.row("reading 201 cells into the lab's files", f"{statistics.median(reads):.4f}", "", "", "")
    notebook._warm.pop("grader").close()
    table.publish()


def timed_run(command):
    started = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
