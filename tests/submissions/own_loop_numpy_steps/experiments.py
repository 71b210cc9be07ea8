"""Honest, in another style: extrapolation_runs trains its two models in lockstep in an own loop
(make_batch and tasks.adam_step, as train() does, each model with its own generator), counting
steps with np.arange: on_step gets numpy integers, which a progress callback counts as ints."""
from dataclasses import asdict

import numpy as np
import torch
import torch.nn.functional as F
from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import BATCH_SIZE, IGNORE, LR, STEPS, TRAIN_LEN, adam_step, evaluate, make_batch, train


class Trainer:
    def __init__(self, pos, task, seed, device):
        self.model = build_model(Config(pos=pos), seed=seed, device=device)
        self.task, self.device = task, device
        self.gen = torch.Generator().manual_seed(seed)
        self.params = list(self.model.parameters())
        self.moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in self.params]
        self.losses = []

    def step(self, i, on_step):
        tokens, targets = make_batch(self.task, BATCH_SIZE, TRAIN_LEN, self.gen, self.device)
        loss = F.cross_entropy(self.model(tokens).flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        self.model.zero_grad(set_to_none=True)
        loss.backward()
        adam_step(self.params, self.moments, i, LR)
        self.losses.append(loss.item())
        if on_step is not None:
            on_step(f"{self.model.cfg.pos} · {self.task}", i, STEPS, self.losses[-1])

    def run(self, lengths, seed):
        scores = [evaluate(self.model, self.task, n, start=TRAIN_LEN if n > TRAIN_LEN else 0, seed=seed + 1)
                  for n in lengths]
        return Run(self.task, asdict(self.model.cfg), {k: v.cpu() for k, v in self.model.state_dict().items()},
                   self.losses, lengths, [s[0] for s in scores], [s[1] for s in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    runs = []
    for pos, task in (("learned", "lookback"), ("none", "lookback"), ("none", "majority")):
        model = build_model(Config(pos=pos), seed=seed, device=device)
        losses = train(model, task, seed=seed, on_step=on_step)
        loss, acc = evaluate(model, task, TRAIN_LEN, seed=seed + 1)
        runs.append(Run(task, asdict(model.cfg), {k: v.cpu() for k, v in model.state_dict().items()},
                        losses, [TRAIN_LEN], [loss], [acc]))
    return LossGap(*runs, runs[1].eval_losses[0] - runs[0].eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    trainers = [Trainer(pos, "lookback", seed, device) for pos in ("learned", "rope")]
    for i in np.arange(1, STEPS + 1):
        for t in trainers:
            t.step(i, on_step)
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(*(t.run(lengths, seed) for t in trainers))
