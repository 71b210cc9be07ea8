"""Correct, another style: apply_rope written for one (seq, head_dim) matrix and vmapped over heads and batch
(torch.func.vmap), whose batched tensors the played meta device cannot mark: the real meta device answers."""
import torch
from torch.func import vmap


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = torch.tensor([base ** (-2 * i / head_dim) for i in range(head_dim // 2)], device=device)
    ang = torch.arange(seq_len, device=device, dtype=torch.float32)[:, None] * inv
    return ang.cos(), ang.sin()


def _one(m, cos, sin):
    a, b = m[:, 0::2], m[:, 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


def apply_rope(x, cos, sin):
    f = vmap(vmap(_one, in_dims=(0, None, None)), in_dims=(0, None, None))
    return f(x.float(), cos, sin).to(x.dtype)
