"""measure_loss_gap changes the recipe: no_pos_majority is trained on "lookback" (but evaluated
and labelled "majority"). extrapolation_runs makes an honest slip: the numbers of the longest
length first."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import TRAIN_LEN, evaluate, train


def run(pos, task, lengths, seed, device, train_task=None, reverse=False, on_step=None):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = train(model, train_task or task, seed=seed, on_step=on_step)
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=seed + 1) for n in lengths]
    scores = scores[::-1] if reverse else scores
    return Run(task, asdict(model.cfg), {k: v.cpu() for k, v in model.state_dict().items()},
               losses, lengths, [s[0] for s in scores], [s[1] for s in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned = run("learned", "lookback", [TRAIN_LEN], seed, device, on_step=on_step)
    no_pos = run("none", "lookback", [TRAIN_LEN], seed, device, on_step=on_step)
    majority = run("none", "majority", [TRAIN_LEN], seed, device, train_task="lookback", on_step=on_step)
    return LossGap(learned, no_pos, majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(*(run(p, "lookback", lengths, seed, device, reverse=True, on_step=on_step) for p in ("learned", "rope")))
