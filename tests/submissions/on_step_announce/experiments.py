"""Wrong: on_step handed to train, and also called by the experiment as on_step(name), one argument."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import TRAIN_LEN, evaluate, train


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned, no_pos, no_pos_majority = (
        _run(pos, task, [TRAIN_LEN], seed, device, on_step)
        for pos, task in (("learned", "lookback"), ("none", "lookback"), ("none", "majority")))
    return LossGap(learned, no_pos, no_pos_majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(*(_run(pos, "lookback", lengths, seed, device, on_step) for pos in ("learned", "rope")))


def _run(pos, task, lengths, seed, device, on_step):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    if on_step:
        on_step(f"{pos} · {task}")
    losses = train(model, task, seed=seed, on_step=on_step)
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=seed + 1) for n in lengths]
    return Run(task=task, config=asdict(model.cfg), state_dict={k: t.cpu() for k, t in model.state_dict().items()},
               train_losses=losses, eval_lengths=lengths, eval_losses=[loss for loss, _ in scores],
               eval_accuracies=[accuracy for _, accuracy in scores])
