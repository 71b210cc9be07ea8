"""How far honest runs of the lab 2 recipe stray from the judge's, and how far dishonest ones go.

    python benchmarks/recipe_tolerance.py [--seeds 0 5 7] [--procs 2]

The judge trains every run of the experiments itself (reference code) and holds each returned
run to it (grader/labs/lab2/public/provenance.py: LOSS_TOLERANCE, WEIGHT_TOLERANCE). This
trains the recipe, honest rewrites of it (complex and einsum RoPE with float64 angles, an own
loop with torch.optim.Adam, two torch threads) and recipe changes (one more step, two steps on
the evaluation batch, length 2 x TRAIN_LEN, ...) and prints, per variant, the largest distance
from the judge's run over seeds and runs:
    losses:  max |train_losses[i] - judge's[i]|
    weights: max over tensors of |w - judge's w| / |judge's w| (Frobenius norms)
"""
import argparse
import sys
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "reference" / "lab2"), str(ROOT / "assignments" / "lab2")]
RUNS = [("learned", "lookback"), ("none", "lookback"), ("none", "majority"), ("rope", "lookback")]


def complex_rope(x, cos, sin):
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(pairs * torch.complex(cos, sin)).flatten(-2).to(x.dtype)


def einsum_rope(x, cos, sin):
    pairs = x.unflatten(-1, (-1, 2))
    turn = torch.stack((torch.stack((cos, sin), -1), torch.stack((-sin, cos), -1)), -2)   # (T, d/2, 2, 2)
    return torch.einsum("bhtpi,tpij->bhtpj", pairs, turn).flatten(-2)


def float64_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * base ** (-2 * i / head_dim)
    return angles.cos().float().to(device), angles.sin().float().to(device)


def adam_loop(model, task, seed, steps, seq_len, extra=0):
    """An own loop: torch.optim.Adam on train()'s batches, then `extra` steps on the eval batch."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=tasks.LR)
    losses = []
    for _ in range(steps):
        tokens, targets = tasks.make_batch(task, tasks.BATCH_SIZE, seq_len, generator)
        loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=tasks.IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    for _ in range(extra):                       # fitting the documented evaluation batch
        tokens, targets = tasks.make_batch(task, 128, tasks.TRAIN_LEN, torch.Generator().manual_seed(seed + 1))
        loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=tasks.IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses


def variant_run(name, pos, task, seed):
    """(train_losses, state_dict) of one run trained the way `name` says."""
    import positions

    rope = {"complex RoPE, float64 angles": (complex_rope, float64_frequencies),
            "einsum RoPE": (einsum_rope, positions.rope_frequencies)}.get(name)
    saved = model_module.apply_rope, model_module.rope_frequencies
    if rope:
        model_module.apply_rope, model_module.rope_frequencies = rope
    torch.set_num_threads(2 if name == "two torch threads" else 1)
    try:
        model = model_module.build_model(model_module.Config(pos=pos), seed=seed)
        if name == "own loop, torch.optim.Adam":
            losses = adam_loop(model, task, seed, tasks.STEPS, tasks.TRAIN_LEN)
        elif name == "+2 steps on the eval batch":
            losses = adam_loop(model, task, seed, tasks.STEPS, tasks.TRAIN_LEN, extra=2)
        elif name == "one more step, losses cut":
            losses = tasks.train(model, task, steps=tasks.STEPS + 1, seed=seed)[:tasks.STEPS]
        elif name == "trained at 2 x TRAIN_LEN":
            losses = tasks.train(model, task, seq_len=2 * tasks.TRAIN_LEN, seed=seed)
        elif name == "lr 3.3e-3":
            losses = tasks.train(model, task, lr=1.1 * tasks.LR, seed=seed)
        elif name == "batch 9":
            losses = tasks.train(model, task, batch_size=tasks.BATCH_SIZE + 1, seed=seed)
        else:
            losses = tasks.train(model, task, seed=seed)
    finally:
        model_module.apply_rope, model_module.rope_frequencies = saved
        torch.set_num_threads(1)
    return losses, {k: v.detach().clone() for k, v in model.state_dict().items()}


def distances(job):
    name, seed = job
    runs = [(pos, task) for pos, task in RUNS if "RoPE" not in name or pos == "rope"]
    order = runs[::-1] if name == "runs in another order" else runs
    theirs = {run: variant_run(name, *run, seed) for run in order}
    out = []
    for run in runs:
        judge_losses, judge_weights = variant_run("recipe", *run, seed)
        losses, weights = theirs[run]
        loss_gap = max(abs(a - b) for a, b in zip(losses, judge_losses))
        weight_gap = max(float((weights[k] - w).norm() / w.norm()) for k, w in judge_weights.items())
        out.append((name, seed, " · ".join(run), loss_gap, weight_gap))
    return out


def setup():
    global torch, F, tasks, model_module
    import model as model_module
    import tasks
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(1)


HONEST = ["runs in another order", "complex RoPE, float64 angles", "einsum RoPE", "own loop, torch.optim.Adam",
          "two torch threads"]
DISHONEST = ["one more step, losses cut", "+2 steps on the eval batch", "trained at 2 x TRAIN_LEN", "lr 3.3e-3",
             "batch 9"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 5, 7])
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args()
    jobs = [(name, seed) for name in HONEST + DISHONEST for seed in args.seeds]
    with get_context("spawn").Pool(args.procs, initializer=setup) as pool:
        rows = [row for rows in pool.map(distances, jobs, chunksize=1) for row in rows]
    print(f"{'variant':32s}{'max loss diff':>16s}{'max weight diff':>18s}   (seeds {args.seeds})")
    for name in HONEST + DISHONEST:
        mine = [r for r in rows if r[0] == name]
        if name == DISHONEST[0]:
            print("-- recipe changes: min over runs --")
        pick = max if name in HONEST else min
        print(f"{name:32s}{pick(r[3] for r in mine):16.2e}{pick(r[4] for r in mine):18.2e}")


if __name__ == "__main__":
    main()
