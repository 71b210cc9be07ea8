"""What the forbid trap costs a watched call: `python benchmarks/forbid_cost.py`.

A by-hand softmax of a (4, 16) tensor (the forbid lab's rule: torch.softmax), called bare and
through the trap made here as a child makes it (both modes pushed, the function mode's check at
each torch call, the end-of-call check), and the scan of the process table a child makes before
a watched call once its code may have started a process (here, of this machine's /proc: a child
in bubblewrap sees only its sandbox's). A lab with no rule builds no trap and pays none of it.
"""
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from grader.judge import trap

CALLS = 200


def softmax(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def per_call(function, rounds=5):
    """Median over `rounds` of the microseconds one call of function() takes."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(CALLS):
            function()
        times.append((time.perf_counter() - start) / CALLS * 1e6)
    return statistics.median(times)


def main():
    torch.set_num_threads(1)
    x = torch.randn(4, 16)
    with tempfile.TemporaryDirectory() as folder:
        made = trap.build({"softmax": ["torch.softmax"]}, Path(folder), ["norm.py"])
    bare = per_call(lambda: softmax(x))
    watched = per_call(lambda: made.call("softmax", softmax, (x,), {}))
    print(f"by-hand softmax, bare: {bare:.1f} us; watched: {watched:.1f} us (+{watched - bare:.1f} us a call)")
    if os.fork() == 0:               # a session of its own, as a child leads one
        os.setsid()
        print(f"the process table's scan before a watched call: {per_call(trap._company, 1) / 1000:.1f} ms "
              f"({len(os.listdir('/proc'))} entries in /proc)", flush=True)
        os._exit(0)
    os.wait()


if __name__ == "__main__":
    main()
