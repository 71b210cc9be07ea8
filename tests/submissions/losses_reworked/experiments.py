"""Wrong: the recipe's runs and weights, but train_losses not as train() returned them:
measure_loss_gap's smoothed (a running mean of 5 steps), extrapolation_runs' with the evaluation
loss at TRAIN_LEN appended (71 entries)."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import TRAIN_LEN, evaluate, train


def smoothed(losses):
    return [sum(losses[max(0, i - 4):i + 1]) / len(losses[max(0, i - 4):i + 1]) for i in range(len(losses))]


def _run(pos, task, lengths, seed, device, on_step, rework):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = train(model, task, seed=seed, on_step=on_step)
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=seed + 1) for n in lengths]
    return Run(task=task, config=asdict(model.cfg), state_dict={k: v.cpu() for k, v in model.state_dict().items()},
               train_losses=rework(losses, scores[0][0]), eval_lengths=lengths,
               eval_losses=[loss for loss, _ in scores], eval_accuracies=[accuracy for _, accuracy in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned, no_pos, majority = (_run(pos, task, [TRAIN_LEN], seed, device, on_step, lambda losses, _: smoothed(losses))
                                 for pos, task in (("learned", "lookback"), ("none", "lookback"), ("none", "majority")))
    return LossGap(learned, no_pos, majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(*(_run(pos, "lookback", lengths, seed, device, on_step, lambda losses, last: losses + [last])
                           for pos in ("learned", "rope")))
