"""measure_loss_gap makes an honest slip: it evaluates on the training seed (seed) instead of
fresh data (seed + 1). extrapolation_runs changes the recipe: twice the documented steps."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import STEPS, TRAIN_LEN, evaluate, train


def run(pos, task, lengths, seed, device, eval_seed, steps=STEPS, on_step=None):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = train(model, task, steps=steps, seed=seed, on_step=on_step)
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=eval_seed) for n in lengths]
    return Run(task, asdict(model.cfg), {k: v.cpu() for k, v in model.state_dict().items()},
               losses, lengths, [s[0] for s in scores], [s[1] for s in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned, no_pos, majority = (run(p, t, [TRAIN_LEN], seed, device, eval_seed=seed, on_step=on_step) for p, t in
                                 (("learned", "lookback"), ("none", "lookback"), ("none", "majority")))
    return LossGap(learned, no_pos, majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(*(run(p, "lookback", lengths, seed, device, seed + 1, steps=2 * STEPS, on_step=on_step)
                           for p in ("learned", "rope")))
