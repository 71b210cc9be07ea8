"""Spread of the lab 2 reference experiments over seeds, to set grading thresholds.

    python benchmarks/seed_spread.py [--seeds 20] [--procs 2]

Runs reference measure_loss_gap and extrapolation_runs for seeds 0..N-1 (one torch thread per
process) and prints min / median / max of every reported number, and of how far each reported
number (measured on the documented data, seed + 1) moves on the grader's fresh data (FRESH).
"""
import argparse
import statistics
import sys
import time
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# reference first: its experiments.py and positions.py; the handout gives model, tasks, results
sys.path[:0] = [str(ROOT / "reference" / "lab2"), str(ROOT / "assignments" / "lab2")]
FRESH = 90_001          # the grader's own evaluation data (grader/labs/lab2/public/provenance.py)


def measure(job):
    """The numbers of one (function, seed) run, and its seconds."""
    import experiments
    import torch
    from model import build_model
    from tasks import TRAIN_LEN, evaluate

    torch.set_num_threads(1)
    function, seed = job
    start = time.perf_counter()
    result = getattr(experiments, function)(seed=seed)
    numbers = {f"{function} seconds": time.perf_counter() - start}
    moved = {"loss": 0.0, "acc": 0.0}
    for run in (getattr(result, name) for name in ("learned", "no_pos", "no_pos_majority", "rope")
                if hasattr(result, name)):
        model = build_model(run.config, run.state_dict)
        for length, loss, accuracy in zip(run.eval_lengths, run.eval_losses, run.eval_accuracies):
            fresh = evaluate(model, run.task, length, start=0 if length == TRAIN_LEN else TRAIN_LEN, seed=FRESH)
            moved = {"loss": max(moved["loss"], abs(loss - fresh[0])),
                     "acc": max(moved["acc"], abs(accuracy - fresh[1]))}
    numbers.update({f"|documented - fresh| {what}": value for what, value in moved.items()})
    if function == "measure_loss_gap":
        numbers["loss gap (none - learned)"] = result.gap
        for name in ("learned", "no_pos", "no_pos_majority"):
            run = getattr(result, name)
            numbers[f"{name} {run.task} loss"] = run.eval_losses[0]
            numbers[f"{name} {run.task} acc"] = run.eval_accuracies[0]
    else:
        for name in ("learned", "rope"):
            run = getattr(result, name)
            for length, acc in zip(run.eval_lengths, run.eval_accuracies):
                numbers[f"{name} acc @{length}"] = acc
        for i, length in enumerate(result.rope.eval_lengths[1:], 1):
            numbers[f"rope - learned acc @{length}"] = (result.rope.eval_accuracies[i]
                                                        - result.learned.eval_accuracies[i])
    return numbers


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args()
    jobs = [(f, s) for s in range(args.seeds) for f in ("measure_loss_gap", "extrapolation_runs")]
    with get_context("spawn").Pool(args.procs) as pool:
        results = pool.map(measure, jobs, chunksize=1)
    spread = {}
    for numbers in results:
        for key, value in numbers.items():
            spread.setdefault(key, []).append(value)
    print(f"{args.seeds} seeds{'':34s}{'min':>8s}{'median':>8s}{'max':>8s}")
    for key, values in spread.items():
        print(f"  {key:40s}{min(values):8.3f}{statistics.median(values):8.3f}{max(values):8.3f}")


if __name__ == "__main__":
    main()
