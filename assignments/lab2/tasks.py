"""Two toy tasks, and the loops that train and evaluate a model on them (lab 2).

"lookback": the target at position t is the token at t - LOOKBACK. It needs order, but only
            relative order: "3 places back" means the same thing anywhere in a sequence.
"majority": the target at position t is the most frequent token so far (ties: the smallest id).
            Reordering the prefix changes nothing, so a model without positions can learn it.

Data is sampled on the CPU from a seeded torch.Generator, then moved to the model's device:
the same seed gives the same batches everywhere.
"""
import torch
import torch.nn.functional as F

TASKS = ("lookback", "majority")
VOCAB_SIZE = 16
LOOKBACK = 3            # both tasks score positions t >= LOOKBACK only
IGNORE = -100           # the target of a position that is not scored
TRAIN_LEN = 24          # sequence length seen in training
STEPS, BATCH_SIZE, LR = 70, 8, 3e-3


def make_batch(task, batch_size, seq_len, generator, device="cpu"):
    """(tokens, targets), both (batch_size, seq_len) int64 on device; IGNORE where not scored."""
    tokens = torch.randint(VOCAB_SIZE, (batch_size, seq_len), generator=generator)
    if task == "lookback":
        targets = tokens.roll(LOOKBACK, dims=1)             # targets[:, t] = tokens[:, t - 3]
    elif task == "majority":                                # a favourite token fills ~30% of slots
        favourite = torch.randint(VOCAB_SIZE, (batch_size, 1), generator=generator)
        chosen = torch.rand(batch_size, seq_len, generator=generator) < 0.3
        tokens = torch.where(chosen, favourite, tokens)
        counts = F.one_hot(tokens, VOCAB_SIZE).cumsum(dim=1)   # (B, T, vocab): counts so far
        targets = counts.argmax(dim=-1)                     # the first maximum: the smallest id
    else:
        raise ValueError(f"unknown task {task!r}; tasks: {TASKS}")
    targets[:, :LOOKBACK] = IGNORE
    return tokens.to(device), targets.to(device)


def train(model, task, steps=STEPS, seq_len=TRAIN_LEN, batch_size=BATCH_SIZE, lr=LR, seed=0,
          on_step=None):
    """Train model in place with Adam on fresh batches of task; return the loss of every step.

    Batches come from torch.Generator().manual_seed(seed), so training is repeatable. After each
    step, on_step(name, step, steps, loss) is called if given, with name e.g. "rope · lookback"
    and step counting from 1: pass it through to report progress.
    """
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    params = list(model.parameters())
    moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
    losses = []
    for step in range(1, steps + 1):
        tokens, targets = make_batch(task, batch_size, seq_len, generator, device)
        logits = model(tokens)                              # (B, T, vocab)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        model.zero_grad(set_to_none=True)
        loss.backward()
        adam_step(params, moments, step, lr)
        losses.append(loss.item())
        if on_step is not None:
            on_step(f"{model.cfg.pos} · {task}", step, steps, losses[-1])
    return losses


@torch.no_grad()
def adam_step(params, moments, step, lr, betas=(0.9, 0.999), eps=1e-8):
    """torch.optim.Adam's update, written out: torch.optim's first use costs seconds of imports."""
    for p, (mean, square) in zip(params, moments):         # running averages of grad and grad^2
        mean.lerp_(p.grad, 1 - betas[0])
        square.lerp_(p.grad.square(), 1 - betas[1])
        denom = (square / (1 - betas[1] ** step)).sqrt_().add_(eps)
        p.addcdiv_(mean, denom, value=-lr / (1 - betas[0] ** step))


@torch.no_grad()
def evaluate(model, task, seq_len, start=0, batch_size=128, seed=1):
    """(mean loss, accuracy) of model on a fresh batch of task at seq_len, scoring positions
    t >= start only (and t >= LOOKBACK): start=TRAIN_LEN scores positions never trained on."""
    if max(start, LOOKBACK) >= seq_len:
        raise ValueError(f"nothing to score: positions {start}.. of a sequence of {seq_len}")
    device, generator = next(model.parameters()).device, torch.Generator().manual_seed(seed)
    tokens, targets = make_batch(task, batch_size, seq_len, generator, device)
    targets[:, :start] = IGNORE
    scored = targets != IGNORE                              # (B, T)
    logits = model(tokens)[scored]                          # (scored, vocab)
    loss = F.cross_entropy(logits, targets[scored])
    return loss.item(), (logits.argmax(dim=-1) == targets[scored]).float().mean().item()
