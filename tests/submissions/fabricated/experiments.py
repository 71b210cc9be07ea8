"""Cheat: untrained models, made-up numbers that look like the lesson's."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import STEPS, TRAIN_LEN


def fake_run(pos, task, lengths, accuracies):
    model = build_model(Config(pos=pos))
    return Run(task=task, config=asdict(model.cfg), state_dict=model.state_dict(),
               train_losses=[2.8 - 2.7 * i / STEPS for i in range(STEPS)], eval_lengths=lengths,
               eval_losses=[0.05 if a > 0.5 else 2.5 for a in accuracies], eval_accuracies=accuracies)


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    return LossGap(fake_run("learned", "lookback", [TRAIN_LEN], [1.0]),
                   fake_run("none", "lookback", [TRAIN_LEN], [0.2]),
                   fake_run("none", "majority", [TRAIN_LEN], [0.85]), gap=2.45)


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(fake_run("learned", "lookback", lengths, [1.0, 0.07, 0.07]),
                         fake_run("rope", "lookback", lengths, [1.0, 1.0, 1.0]))
