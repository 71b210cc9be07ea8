"""Wrong in the report only: the recipe's runs and weights, but measure_loss_gap evaluates on a batch
of 64 sequences (batch_size=64), not evaluate()'s default; extrapolation_runs is right."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import TRAIN_LEN, evaluate, train


def run(pos, task, lengths, seed, device, on_step, **evaluation):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = train(model, task, seed=seed, on_step=on_step)
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=seed + 1, **evaluation)
              for n in lengths]
    return Run(task, asdict(model.cfg), {k: v.cpu() for k, v in model.state_dict().items()}, losses, lengths,
               [loss for loss, _ in scores], [accuracy for _, accuracy in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned, no_pos, majority = (run(pos, task, [TRAIN_LEN], seed, device, on_step, batch_size=64)
                                 for pos, task in (("learned", "lookback"), ("none", "lookback"), ("none", "majority")))
    return LossGap(learned, no_pos, majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(*(run(pos, "lookback", lengths, seed, device, on_step) for pos in ("learned", "rope")))
