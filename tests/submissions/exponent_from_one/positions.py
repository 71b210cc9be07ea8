"""Wrong: the exponents count pairs from 1, (2i + 2) / head_dim (apply_rope is right)."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = base ** (-torch.arange(1, head_dim // 2 + 1, device=device).float() * 2 / head_dim)
    angles = torch.outer(torch.arange(seq_len, device=device).float(), inv)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
