"""The wire's cost per call, against the torch.save frames it replaced: `python benchmarks/wire_bench.py`.

One answer as rope_frequencies sends it (cos and sin, 50 x 32), written and read back as the
judge reads it (loads, then sanitize), medians over many rounds; beside it the same answer as a
torch.save frame read with torch.load(weights_only=True), as the wire did before.
"""
import io
import statistics
import sys
import time
from pathlib import Path

import torch

from figures import Figures

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.judge import wire  # noqa: E402

ROUNDS = 500


def per_call_ms(action):
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def torch_frame(value):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def main():
    torch.set_num_threads(1)
    answer = {"id": 3, "ok": True, "value": wire.encode((torch.randn(50, 32), torch.randn(50, 32)))}
    ours, theirs = wire.dumps(answer), torch_frame(answer)
    table = Figures(__file__, f"The wire: one call's answer, medians of {ROUNDS} (ms)", ("frames", "write", "read"))
    table.row("JSON + raw bytes (the wire)", f"{per_call_ms(lambda: wire.dumps(answer)):.3f}",
                  f"{per_call_ms(lambda: wire.sanitize(wire.loads(ours))):.3f}")
    table.row("torch.save, read with weights_only (the alternative)", f"{per_call_ms(lambda: torch_frame(answer)):.3f}",
                  f"{per_call_ms(lambda: wire.sanitize(torch.load(io.BytesIO(theirs), weights_only=True))):.3f}")
    table.publish()


if __name__ == "__main__":
    main()
