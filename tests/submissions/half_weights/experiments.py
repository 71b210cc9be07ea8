"""Wrong in the report only: the recipe's runs, but measure_loss_gap returns every state_dict in
float16 to save space (its numbers measured on the float32 model); extrapolation_runs is right."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import TRAIN_LEN, evaluate, train


def _run(pos, task, lengths, seed, device, on_step, half=False):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = train(model, task, seed=seed, on_step=on_step)
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=seed + 1) for n in lengths]
    weights = {k: (v.half() if half else v).cpu() for k, v in model.state_dict().items()}
    return Run(task=task, config=asdict(model.cfg), state_dict=weights, train_losses=losses, eval_lengths=lengths,
               eval_losses=[loss for loss, _ in scores], eval_accuracies=[accuracy for _, accuracy in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned, no_pos, majority = (_run(pos, task, [TRAIN_LEN], seed, device, on_step, half=True)
                                 for pos, task in (("learned", "lookback"), ("none", "lookback"), ("none", "majority")))
    return LossGap(learned, no_pos, majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(*(_run(pos, "lookback", lengths, seed, device, on_step) for pos in ("learned", "rope")))
