"""Wrong in one run of each experiment, a run that cannot be built as documented: measure_loss_gap's
learned model built with Config(pos="learned", max_len=TRAIN_LEN) (it is evaluated at TRAIN_LEN only),
extrapolation_runs' RoPE run returned with an extra entry in its state_dict (the step count). The
other runs are right."""
from dataclasses import asdict

import torch
from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import STEPS, TRAIN_LEN, evaluate, train


def _run(config, task, lengths, seed, device, on_step, extra=None):
    model = build_model(config, seed=seed, device=device)
    losses = train(model, task, seed=seed, on_step=on_step)
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=seed + 1) for n in lengths]
    return Run(task=task, config=asdict(model.cfg),
               state_dict={**{k: v.cpu() for k, v in model.state_dict().items()}, **(extra or {})},
               train_losses=losses, eval_lengths=lengths, eval_losses=[loss for loss, _ in scores],
               eval_accuracies=[accuracy for _, accuracy in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned = _run(Config(pos="learned", max_len=TRAIN_LEN), "lookback", [TRAIN_LEN], seed, device, on_step)
    no_pos = _run(Config(pos="none"), "lookback", [TRAIN_LEN], seed, device, on_step)
    majority = _run(Config(pos="none"), "majority", [TRAIN_LEN], seed, device, on_step)
    return LossGap(learned, no_pos, majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(_run(Config(pos="learned"), "lookback", lengths, seed, device, on_step),
                         _run(Config(pos="rope"), "lookback", lengths, seed, device, on_step,
                              {"steps": torch.tensor(STEPS)}))
