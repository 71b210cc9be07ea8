"""Wrong: the rotated pairs are concatenated [firsts, seconds] instead of put back in place."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = base ** (-torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    angles = torch.outer(torch.arange(seq_len, device=device).float(), inv)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
