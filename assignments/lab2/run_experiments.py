"""Run your lab 2 experiments: progress, a results table, a terminal chart and plots.

    python run_experiments.py [--seed 0] [--device cpu] [--out out]

The two experiments run at once, each in a process of its own with one torch thread (these
models are too small to gain from more), with a progress bar per training run. Ctrl-C stops
them; what finished is kept: its table is shown and its plots are written.
"""
import argparse
import multiprocessing
import signal
import sys
import traceback
from pathlib import Path

import torch
from experiments import extrapolation_runs, measure_loss_gap
from results import Run
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from tasks import TRAIN_LEN, VOCAB_SIZE

console = Console(highlight=False)
EXPERIMENTS = {"measure_loss_gap": measure_loss_gap, "extrapolation_runs": extrapolation_runs}
steps = None                    # in a worker: where on_step reports go


def start_worker(queue):
    global steps
    signal.signal(signal.SIGINT, signal.SIG_IGN)        # Ctrl-C is for the main process to handle
    torch.set_num_threads(1)
    steps = queue


def run_one(name, seed, device):
    """In a worker: one experiment -> ("ok", its result), or ("not done", why in words)."""
    def on_step(run, step, total, loss):
        steps.put((name, run, step, total, loss))

    try:
        return "ok", EXPERIMENTS[name](seed=seed, device=device, on_step=on_step)
    except NotImplementedError as error:
        where = traceback.extract_tb(error.__traceback__)[-1]        # the stub that raised
        return "not done", f"[yellow]{name}: {where.name} in {Path(where.filename).name} is not implemented yet[/]"
    except Exception:
        return "not done", f"[red]{name} failed:[/]\n{traceback.format_exc()}"


def run_all(seed, device, shown, results):
    """Both experiments in parallel processes, a progress bar per training run, each result
    shown (by `shown`) and put in `results` as soon as it is in."""
    fork = sys.platform == "linux" and not device.startswith("cuda")     # CUDA does not survive a fork
    context = multiprocessing.get_context("fork" if fork else "spawn")
    queue, bars = context.Queue(), {}
    columns = (TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("loss {task.fields[loss]:.3f}"), TimeElapsedColumn())
    with context.Pool(len(EXPERIMENTS), start_worker, (queue,)) as pool, Progress(*columns, console=console) as bar:
        pending = {name: pool.apply_async(run_one, (name, seed, device)) for name in EXPERIMENTS}
        pyplot()                                    # imported while they train, not after
        try:
            while pending:
                for name in [name for name, result in pending.items() if result.ready()]:
                    status, value = pending.pop(name).get()
                    if status == "ok":
                        results[name] = value
                        shown[name](value)
                    else:
                        console.print(value)
                while not queue.empty():
                    name, run, step, total, loss = queue.get()
                    if (name, run) not in bars:
                        bars[name, run] = bar.add_task(f"{run} ({name})", total=total, loss=loss)
                    bar.update(bars[name, run], completed=step, loss=loss)
                if pending:
                    next(iter(pending.values())).wait(0.05)
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C must not cut the plots
            pool.terminate()
            raise


def label(run):
    return f"{run.config['pos']} · {run.task}"


def show_loss_gap(result):
    table = Table(title="Loss gap", caption=f"evaluated at the training length, {TRAIN_LEN}")
    for column in ("model", "eval loss", "accuracy"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for run in (result.learned, result.no_pos, result.no_pos_majority):
        table.add_row(label(run), f"{run.eval_losses[0]:.3f}", f"{run.eval_accuracies[0]:.1%}")
    console.print(table)
    console.print(f"gap (none - learned, lookback): [bold]{result.gap:+.3f}[/] nats; "
                  f"chance accuracy is {1 / VOCAB_SIZE:.1%}")


def show_extrapolation(result):
    runs = (result.learned, result.rope)
    lengths = runs[0].eval_lengths
    table = Table(title="Extrapolation: accuracy by evaluation length",
                  caption=f"trained at {TRAIN_LEN}; longer: positions >= {TRAIN_LEN} only")
    table.add_column("model")
    for length in lengths:
        table.add_column(f"acc @{length}", justify="right")
    for run in runs:
        table.add_row(label(run), *(f"{acc:.1%}" for acc in run.eval_accuracies))
    console.print(table)
    width = 40                                                   # characters for 100% accuracy
    for i, length in enumerate(lengths):
        for run in runs:
            acc = run.eval_accuracies[i]
            bar = "█" * round(acc * width)
            console.print(f"@{length:<4} {run.config['pos']:8} {bar:{width}} {acc:.0%}")


def pyplot():
    """matplotlib.pyplot, drawing to files, or None when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot(loss_gap, extrapolation, out):
    """Write accuracy-vs-length and training-loss plots into out; their paths."""
    plt = pyplot()
    if plt is None:
        console.print("matplotlib is not installed: plots skipped (pip install matplotlib)")
        return []
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    if extrapolation is not None:
        fig, ax = plt.subplots(figsize=(6, 4))
        for run in (extrapolation.learned, extrapolation.rope):
            ax.plot(run.eval_lengths, run.eval_accuracies, marker="o", label=run.config["pos"])
        ax.axhline(1 / VOCAB_SIZE, color="gray", linestyle=":", label="chance")
        ax.axvline(TRAIN_LEN, color="gray", linestyle="--", label="trained length")
        ax.set(xlabel="evaluation length", ylabel="accuracy", ylim=(0, 1.05),
               xticks=extrapolation.rope.eval_lengths,
               title=f"lookback: trained at length {TRAIN_LEN}, scored past it")
        ax.legend()
        paths.append(out / "extrapolation.png")
        fig.savefig(paths[-1], dpi=120, bbox_inches="tight")
    runs = {label(r): r for result in (loss_gap, extrapolation) if result is not None
            for r in vars(result).values() if isinstance(r, Run)}    # learned twice: one curve
    if runs:
        fig, ax = plt.subplots(figsize=(6, 4))
        for run in runs.values():
            ax.plot(range(1, len(run.train_losses) + 1), run.train_losses, label=label(run))
        ax.set(xlabel="step", ylabel="training loss", yscale="log", title="training loss")
        ax.legend()
        paths.append(out / "training_loss.png")
        fig.savefig(paths[-1], dpi=120, bbox_inches="tight")
    plt.close("all")
    return paths


def main():
    parser = argparse.ArgumentParser(description="Run the lab 2 experiments and plot them.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help='"cpu", "cuda", or "auto" (cuda if there is one)')
    parser.add_argument("--out", type=Path, default=Path("out"), help="folder for the plots")
    args = parser.parse_args()
    torch.set_num_threads(1)                    # for these tiny models one thread is fastest
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit(f"--device {args.device}: this machine's torch sees no CUDA device")
    results = {}
    try:
        run_all(args.seed, args.device, {"measure_loss_gap": show_loss_gap, "extrapolation_runs": show_extrapolation},
                results)
    except KeyboardInterrupt:
        paths = plot(results.get("measure_loss_gap"), results.get("extrapolation_runs"), args.out)
        kept = f"kept what finished: {', '.join(results)}" if results else "nothing had finished"
        console.print(f"[yellow]stopped (Ctrl-C):[/] {kept}" + (f"; plots in {args.out}/" if paths else ""))
        sys.exit(130)
    paths = plot(results.get("measure_loss_gap"), results.get("extrapolation_runs"), args.out)
    if paths:
        console.print(f"plots written to {args.out}/: " + ", ".join(p.name for p in paths))


if __name__ == "__main__":
    main()
