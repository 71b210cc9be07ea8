"""Wrong rope_frequencies only (pair i turns at base ** (-i / head_dim)); apply_rope is right."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = base ** (-torch.arange(head_dim // 2, device=device).float() / head_dim)
    angles = torch.outer(torch.arange(seq_len, device=device).float(), inv)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
