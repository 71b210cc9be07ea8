"""measure_loss_gap is dishonest: train_losses tidied (sorted, largest first) before returning.
extrapolation_runs makes an honest slip: start=0 at every length, so positions the models were
trained on are scored at 48 and 96 too."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import TRAIN_LEN, evaluate, train


def run(pos, task, lengths, seed, device, tidy=False, start_past=TRAIN_LEN, on_step=None):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = train(model, task, seed=seed, on_step=on_step)
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else start_past, seed=seed + 1) for n in lengths]
    return Run(task, asdict(model.cfg), {k: v.cpu() for k, v in model.state_dict().items()},
               sorted(losses, reverse=True) if tidy else losses, lengths,
               [s[0] for s in scores], [s[1] for s in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned = run("learned", "lookback", [TRAIN_LEN], seed, device, tidy=True, on_step=on_step)
    no_pos = run("none", "lookback", [TRAIN_LEN], seed, device, tidy=True, on_step=on_step)
    majority = run("none", "majority", [TRAIN_LEN], seed, device, tidy=True, on_step=on_step)
    return LossGap(learned, no_pos, majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(run("learned", "lookback", lengths, seed, device, start_past=0, on_step=on_step),
                         run("rope", "lookback", lengths, seed, device, start_past=0, on_step=on_step))
