"""What the lab 2 experiments return: every model trained, with its weights and its numbers.

A grader rebuilds each model with model.build_model(run.config, run.state_dict) and re-measures
it with tasks.evaluate on fresh data, so report what you measured, exactly as measured.
"""
from dataclasses import dataclass


@dataclass
class Run:
    """One trained model and how it did."""
    task: str                 # what it was trained and evaluated on: "lookback" or "majority"
    config: dict              # dataclasses.asdict(model.cfg)
    state_dict: dict          # {name: tensor on the CPU} of the trained model
    train_losses: list        # training loss of every step, as returned by tasks.train
    eval_lengths: list        # sequence lengths it was evaluated at, e.g. [24, 48, 96]
    eval_losses: list         # tasks.evaluate's loss at each of eval_lengths
    eval_accuracies: list     # tasks.evaluate's accuracy at each of eval_lengths


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
