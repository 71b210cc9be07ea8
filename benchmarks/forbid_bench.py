"""What `forbid:` costs a grading: `python benchmarks/forbid_bench.py [--trees DIR...] [--runs N]`.

In this tree (fresh processes, torch imported first, one thread): the judge's reading of its
rules (grader/core/forbid_rules.py, once per process) and of a submission, the child's trap install
(grader/judge/trap.py, once per child) and one watched call against the same call unwatched.
Then whole gradings, the median wall time of N runs of `grade.py` from each DIR (default: this
tree; another checkout gives the figures before a change), taking turns: lab 2's positions.py,
which has no rule, and the example lab, whose softmax has one.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
NAMES = ["torch.softmax", "torch.nn.functional.scaled_dot_product_attention"]
PARTS = f'''
import statistics, sys, time
from pathlib import Path
import torch
torch.set_num_threads(1)
sys.path.insert(0, {str(ROOT)!r})
from grader.core import forbid
from grader.core import forbid_rules
from grader.judge import trap
work = Path(sys.argv[1])
(work / "given.py").write_text("import torch\\n\\ndef normalise(x):\\n    return torch.softmax(x, -1)\\n")
source = (Path({str(ROOT)!r}) / "tests/labs/forbid/reference/norm.py").read_text()
x = torch.randn(4, 16)


def ms(run, times=1):
    started = time.perf_counter()
    for _ in range(times):
        run()
    return (time.perf_counter() - started) / times * 1000


def by_hand(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


if sys.argv[2] == "judge":
    rules = ms(lambda: forbid_rules.rules(tuple({NAMES!r})))
    print(rules, ms(lambda: forbid.scan(source, {{"softmax": {NAMES[:1]!r}, "attend": {NAMES[1:]!r}}}), 20))
else:
    made = []
    install = ms(lambda: made.append(trap.build({{"softmax": {NAMES[:1]!r}}}, work, ["norm.py"])))
    watched = statistics.median(ms(lambda: made[0].call("softmax", by_hand, (x,), {{}}), 200) for _ in range(5))
    plain = statistics.median(ms(lambda: by_hand(x), 200) for _ in range(5))
    print(install, watched * 1000, plain * 1000)
'''


def parts():
    """(rules ms, scan ms, install ms, watched call us, plain call us): the judge's and the child's
    parts each in a fresh process, as they come."""
    found = []
    for side in ("judge", "child"):
        with tempfile.TemporaryDirectory() as work:
            out = subprocess.run([sys.executable, "-c", PARTS, work, side], capture_output=True, text=True, check=True)
        found += [float(v) for v in out.stdout.split()]
    return found


def graded(trees, runs):
    """{(tree, what): median seconds} of whole gradings, the trees' runs taking turns (the load on a
    shared machine changes by the minute)."""
    seconds = {}
    with tempfile.TemporaryDirectory() as home:
        for _ in range(runs):
            for tree in trees:
                for what, args in {"lab2 -k positions.py (no rule)": ["lab2", "--submission",
                                   str(tree / "reference" / "lab2"), "-k", "positions.py"],
                                   "example lab (a rule)": [str(tree / "tests/labs/example"), "--submission",
                                                            str(tree / "tests/labs/example/reference")]}.items():
                    started = time.perf_counter()
                    subprocess.run([sys.executable, str(tree / "grade.py"), *args], cwd=home, capture_output=True)
                    seconds.setdefault((tree, what), []).append(time.perf_counter() - started)
    return {key: statistics.median(values) for key, values in seconds.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, nargs="+", default=[ROOT], help="checkouts whose grade.py is timed")
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    console = Console()
    table = Table(title="forbid: in this tree (one fresh process each)")
    table.add_column("part")
    table.add_column("cost", justify="right")
    rules, scan, install, watched, plain = parts()
    for name, value in [("judge: the rules of 2 names, once per process", f"{rules:.1f} ms"),
                        ("judge: scanning a reference file", f"{scan:.2f} ms"),
                        ("child: trap install, once per child", f"{install:.1f} ms"),
                        ("child: a by-hand softmax call, watched", f"{watched:.0f} us"),
                        ("child: the same call, unwatched", f"{plain:.0f} us")]:
        table.add_row(name, value)
    console.print(table)
    table = Table(title=f"whole gradings (median of {options.runs}, taking turns)")
    for column in ("grading", "tree", "wall"):
        table.add_column(column)
    for (tree, what), seconds in sorted(graded(options.trees, options.runs).items(), key=lambda kv: kv[0][1]):
        table.add_row(what, str(tree), f"{seconds:.2f} s")
    console.print(table)

if __name__ == "__main__":
    main()
