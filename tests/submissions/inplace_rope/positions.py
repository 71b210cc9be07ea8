"""One slip: apply_rope writes the turned pairs back into x (through its slices) and returns a copy.
Right values on every tidy input, x changed for the caller; in the lab's model autograd refuses the
write into q, a view of the projection, so every check of apply_rope fails, each with the hint that
names the write into x."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    return torch.outer(torch.arange(seq_len, device=device).float(), inv).cos(), \
        torch.outer(torch.arange(seq_len, device=device).float(), inv).sin()


def apply_rope(x, cos, sin):
    a, b = x[..., 0::2].float().clone(), x[..., 1::2].float().clone()
    x[..., 0::2] = (a * cos - b * sin).to(x.dtype)
    x[..., 1::2] = (a * sin + b * cos).to(x.dtype)
    return x.clone()
