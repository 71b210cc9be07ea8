"""Own Adam loop that reports progress as on_step(name, step, steps, loss) with step counting from 0."""
from dataclasses import asdict

import torch
import torch.nn.functional as F
from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import BATCH_SIZE, IGNORE, LR, STEPS, TRAIN_LEN, evaluate, make_batch


def fit(model, task, seed, on_step):
    batches = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    losses = []
    for step in range(STEPS):
        tokens, targets = make_batch(task, BATCH_SIZE, TRAIN_LEN, batches, next(model.parameters()).device)
        loss = F.cross_entropy(model(tokens).reshape(-1, model.cfg.vocab_size), targets.reshape(-1),
                               ignore_index=IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if on_step:
            on_step(f"{model.cfg.pos} · {task}", step, STEPS, losses[-1])
    return losses


def experiment(pos, task, lengths, seed, device, on_step):
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = fit(model, task, seed, on_step)
    losses_at, accuracies = [], []
    for n in lengths:
        loss, accuracy = evaluate(model, task, n, start=TRAIN_LEN if n > TRAIN_LEN else 0, seed=seed + 1)
        losses_at.append(loss)
        accuracies.append(accuracy)
    return Run(task=task, config=asdict(model.cfg), state_dict={k: v.cpu() for k, v in model.state_dict().items()},
               train_losses=losses, eval_lengths=list(lengths), eval_losses=losses_at, eval_accuracies=accuracies)


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    majority = experiment("none", "majority", [TRAIN_LEN], seed, device, on_step)
    no_pos = experiment("none", "lookback", [TRAIN_LEN], seed, device, on_step)
    learned = experiment("learned", "lookback", [TRAIN_LEN], seed, device, on_step)
    return LossGap(learned=learned, no_pos=no_pos, no_pos_majority=majority,
                   gap=no_pos.eval_losses[0] - learned.eval_losses[0])


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    rope = experiment("rope", "lookback", [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN], seed, device, on_step)
    learned = experiment("learned", "lookback", [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN], seed, device, on_step)
    return Extrapolation(learned=learned, rope=rope)
