"""Wrong experiments: every run follows the recipe, but each is evaluated three times, on the
training data and two fresh batches (seed, seed + 1, seed + 2), and the best (lowest loss) is
reported: the only slip."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import TRAIN_LEN, evaluate, train


def best(model, task, n, seed):
    start = 0 if n == TRAIN_LEN else TRAIN_LEN
    return min(evaluate(model, task, n, start=start, seed=data) for data in (seed, seed + 1, seed + 2))


def run(pos, task, lengths, seed, device, on_step):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = train(model, task, seed=seed, on_step=on_step)
    scores = [best(model, task, n, seed) for n in lengths]
    return Run(task, asdict(model.cfg), {k: v.cpu() for k, v in model.state_dict().items()},
               losses, lengths, [s[0] for s in scores], [s[1] for s in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned, no_pos, majority = (run(p, t, [TRAIN_LEN], seed, device, on_step) for p, t in
                                 (("learned", "lookback"), ("none", "lookback"), ("none", "majority")))
    return LossGap(learned, no_pos, majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(*(run(p, "lookback", lengths, seed, device, on_step) for p in ("learned", "rope")))
