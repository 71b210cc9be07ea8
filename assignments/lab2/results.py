"""What the lab 2 experiments return: every model trained, with its weights and its numbers.

Fixed, the recipe of every run: its task, build_model(Config(pos=...), seed=seed) with no other
change, and train(model, task, seed=seed) with all its defaults (Adam, lr, batch size, steps,
TRAIN_LEN), nothing trained before or after; then evaluate(...) on the data the docstring names.
Free: the order of the runs, your own loop if it does exactly what train() does (the same
batches in the same order, torch.optim.Adam with the same settings, one loss per step), how
you write RoPE (complex numbers, einsum, float64 angles), and on_step.

How it is graded: the grader trains every run of the recipe itself, for the same seed, and
holds yours to it: train_losses must be that run's losses, in training order, and state_dict
its weights, up to floating-point rounding. It rebuilds each model with
model.build_model(run.config, run.state_dict) and measures it with tasks.evaluate, both on the
documented data (your numbers must be what evaluate returned there, unrounded) and on data of
its own, where the lab's claims are judged: a model fitted to the documented batch shows.
"""
from dataclasses import dataclass


@dataclass
class Run:
    """One trained model and how it did."""
    task: str                 # what it was trained and evaluated on: "lookback" or "majority"
    config: dict              # dataclasses.asdict(model.cfg)
    state_dict: dict          # {name: tensor on the CPU} of the trained model
    train_losses: list        # training loss of every step, in order, as returned by tasks.train
    eval_lengths: list        # sequence lengths it was evaluated at, e.g. [24, 48, 96]
    eval_losses: list         # tasks.evaluate's loss at each of eval_lengths, unrounded
    eval_accuracies: list     # tasks.evaluate's accuracy at each of eval_lengths, unrounded


@dataclass
class LossGap:
    """Learned positions vs none on "lookback", and what no positions can still do."""
    learned: Run              # pos="learned", task "lookback"
    no_pos: Run               # pos="none", task "lookback"
    no_pos_majority: Run      # pos="none", task "majority"
    gap: float                # no_pos.eval_losses[0] - learned.eval_losses[0]


@dataclass
class Extrapolation:
    """Learned positions vs RoPE, trained at one length and evaluated at longer ones."""
    learned: Run              # pos="learned", task "lookback"
    rope: Run                 # pos="rope", task "lookback"
