"""Wrong: rope_frequencies reads the angle p * base ** (-2i / head_dim) as a number of turns
(cycles) and multiplies it by 2 pi; apply_rope is right."""
import math

import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    pos = torch.arange(seq_len, device=device).float()
    ang = 2 * math.pi * torch.outer(pos, inv)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out1 = x1 * cos - x2 * sin
    out2 = x1 * sin + x2 * cos
    return torch.stack((out1, out2), dim=-1).flatten(-2).to(x.dtype)
