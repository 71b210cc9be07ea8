"""What a child's namespaces cost: `python benchmarks/fork_bench.py [--runs N]` (as root, for both
sandboxes).

1. The kernel alone: a process that has imported torch (as the zygote has) forks N children, each
   makes the namespaces a child of the grader makes, with and without a network namespace of its
   own, and exits; median milliseconds of the unshare call, and of the whole, fork to reaped
   (a network namespace is torn down later, by a kernel worker: not in either).
2. The grader: median milliseconds from a fork order to the child's first answer (its files
   taken, one call of a function that returns at once), for each sandbox that runs here.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch  # noqa: F401  (the zygote's memory: what a fork copies)
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.judge import linux  # noqa: E402
from grader.judge.launchers import bubblewrap_works, launcher_for  # noqa: E402
from grader.judge.sandbox import Sandbox  # noqa: E402
from grader.judge.zygote import Zygote  # noqa: E402
from grader.readers.manifest import find_lab  # noqa: E402

from figures import Figures  # noqa: E402

BASE = linux.CLONE_NEWNS | linux.CLONE_NEWIPC
KINDS = {"user, mounts, IPC (bubblewrap's child)": linux.CLONE_NEWUSER | BASE,
         "+ network": linux.CLONE_NEWUSER | BASE | linux.CLONE_NEWNET,
         "mounts, IPC (plain child as root)": BASE,
         "+ network ": BASE | linux.CLONE_NEWNET}


def kernel_ms(kinds, runs):
    """{kind: (median ms of the unshare call in the child, median ms from fork to reaped)} for
    children that unshare each kind's flags; the kinds take turns, so that all see the same load.
    None for a kind the kernel refuses here."""
    calls, whole = {kind: [] for kind in kinds}, {kind: [] for kind in kinds}
    for _ in range(runs):
        for kind, flags in kinds.items():
            read, write = os.pipe()
            started = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                before = time.perf_counter()
                refused = linux.libc.unshare(flags) != 0
                os.write(write, f"{time.perf_counter() - before}".encode())
                os._exit(refused)
            _, status = os.waitpid(pid, 0)
            whole[kind].append(time.perf_counter() - started)
            calls[kind].append(float(os.read(read, 100)) if not os.waitstatus_to_exitcode(status) else None)
            os.close(read)
            os.close(write)
    return {kind: None if None in calls[kind] else
            (1000 * statistics.median(calls[kind]), 1000 * statistics.median(whole[kind])) for kind in kinds}


def child_ms(mode, runs, folder):
    """Median ms from a fork order to the first answer of a new child, in sandbox `mode`."""
    lab = find_lab(folder)
    zygote = Zygote(launcher_for(mode))
    try:
        times = []
        for _ in range(runs + 1):           # the first waits for the zygote to start
            box = Sandbox(lab, {"quick.py": b"def quick():\n    return 1\n"}, zygote)
            started = time.perf_counter()
            box.call("quick")
            times.append(time.perf_counter() - started)
            box.close()
        return 1000 * statistics.median(times[1:])
    finally:
        zygote.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    table = Figures(__file__, f"What a child's namespaces cost (medians of {args.runs} children)",
                    ("what", "milliseconds"))
    for name, ms in kernel_ms(KINDS, args.runs).items():
        table.row(f"kernel: {name}", f"unshare {ms[0]:.2f}, fork to reaped {ms[1]:.1f}" if ms else "refused here")
    with tempfile.TemporaryDirectory() as folder:
        stub = "def quick():\n    raise NotImplementedError\n"
        for name, text in {"lab.yaml": yaml.safe_dump({"title": "Quick", "handout": "handout",
                                                       "student_files": {"quick.py": ["quick"]}}),
                           "handout/quick.py": stub, "stubs/quick.py": stub, "public/.keep": ""}.items():
            (Path(folder) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(folder) / name).write_text(text)
        for mode in (["required"] if bubblewrap_works() else []) + ["process"]:
            table.row(f"grader: fork order to first answer, {launcher_for(mode).name}",
                      f"{child_ms(mode, args.runs, folder):.1f}")
    table.publish()

if __name__ == "__main__":
    main()
