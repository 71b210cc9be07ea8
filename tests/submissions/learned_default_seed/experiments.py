"""Wrong in the report only: the recipe's runs, but measure_loss_gap evaluates the learned model without seed= (evaluate's default seed=1); extrapolation_runs is right."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import TRAIN_LEN, evaluate, train


def trained(pos, task, seed, device, on_step):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    return model, train(model, task, seed=seed, on_step=on_step)


def as_run(model, task, losses, lengths, scores):
    return Run(task=task, config=asdict(model.cfg), state_dict={k: t.cpu() for k, t in model.state_dict().items()},
               train_losses=losses, eval_lengths=lengths, eval_losses=[loss for loss, _ in scores],
               eval_accuracies=[accuracy for _, accuracy in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned, learned_losses = trained("learned", "lookback", seed, device, on_step)
    no_pos, no_pos_losses = trained("none", "lookback", seed, device, on_step)
    majority, majority_losses = trained("none", "majority", seed, device, on_step)
    learned_run = as_run(learned, "lookback", learned_losses, [TRAIN_LEN], [evaluate(learned, "lookback", TRAIN_LEN)])
    no_pos_run = as_run(no_pos, "lookback", no_pos_losses, [TRAIN_LEN],
                        [evaluate(no_pos, "lookback", TRAIN_LEN, seed=seed + 1)])
    majority_run = as_run(majority, "majority", majority_losses, [TRAIN_LEN],
                          [evaluate(majority, "majority", TRAIN_LEN, seed=seed + 1)])
    return LossGap(learned_run, no_pos_run, majority_run, no_pos_run.eval_losses[0] - learned_run.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    runs = []
    for pos in ("learned", "rope"):
        model, losses = trained(pos, "lookback", seed, device, on_step)
        scores = [evaluate(model, "lookback", n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=seed + 1)
                  for n in lengths]
        runs.append(as_run(model, "lookback", losses, lengths, scores))
    return Extrapolation(*runs)
