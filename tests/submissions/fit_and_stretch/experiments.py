"""Dishonest: measure_loss_gap fits the no-position model to the evaluation batch the docstring
names (seed + 1) after training, keeping train()'s losses; extrapolation_runs trains RoPE at
4 x TRAIN_LEN and reports it as trained at TRAIN_LEN."""
from dataclasses import asdict

import torch
import torch.nn.functional as F
from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import IGNORE, LR, TRAIN_LEN, evaluate, make_batch, train


def run(pos, task, lengths, seed, device, seq_len=TRAIN_LEN, fit=0):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = train(model, task, seq_len=seq_len, seed=seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    tokens, targets = make_batch(task, 128, TRAIN_LEN, torch.Generator().manual_seed(seed + 1), device)
    for _ in range(fit):
        loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=seed + 1) for n in lengths]
    return Run(task, asdict(model.cfg), {k: v.cpu() for k, v in model.state_dict().items()},
               losses, lengths, [s[0] for s in scores], [s[1] for s in scores])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    learned = run("learned", "lookback", [TRAIN_LEN], seed, device)
    no_pos = run("none", "lookback", [TRAIN_LEN], seed, device, fit=12)
    majority = run("none", "majority", [TRAIN_LEN], seed, device)
    return LossGap(learned, no_pos, majority, no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(run("learned", "lookback", lengths, seed, device),
                         run("rope", "lookback", lengths, seed, device, seq_len=4 * TRAIN_LEN))
