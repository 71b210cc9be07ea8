"""Correct, another style: apply_rope compiled with torch.jit.script (its ops run in C++, where the
played meta device never sees them: the real one answers)."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    ang = torch.outer(torch.arange(seq_len, device=device).float(), inv)
    return torch.cos(ang), torch.sin(ang)


@torch.jit.script
def apply_rope(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2).to(x.dtype)
