"""Correct, other styles: angles in float64 from Python numbers, each pair turned by a 2x2
rotation matrix (matmul needs one dtype: the matrices take x's)."""
import math

import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = [math.pow(base, -2 * i / head_dim) for i in range(head_dim // 2)]
    angles = torch.tensor([[p * f for f in inv] for p in range(seq_len)], dtype=torch.float64, device=device)
    return angles.cos().to(torch.float32), angles.sin().to(torch.float32)


def apply_rope(x, cos, sin):
    turn = torch.stack((torch.stack((cos, -sin), dim=-1), torch.stack((sin, cos), dim=-1)), dim=-2)
    pairs = x.unflatten(-1, (-1, 2)).unsqueeze(-1)                  # (..., seq, pairs, 2, 1)
    return (turn.to(x.dtype) @ pairs).squeeze(-1).flatten(-2)
