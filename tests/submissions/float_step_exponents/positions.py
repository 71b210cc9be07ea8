"""One slip: the exponents from torch.arange(0, 1, 2 / head_dim), whose float step rounds: for some even head_dim
(98, 196, ...) it gives head_dim // 2 + 1 of them, and cos and sin one column too many. apply_rope is right."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = base ** -torch.arange(0, 1, 2 / head_dim, device=device)
    ang = torch.outer(torch.arange(seq_len, device=device).float(), inv.float())
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin):
    # x: (batch, heads, seq, head_dim) -- rotate each adjacent pair of dims
    x1, x2 = x[..., 0::2], x[..., 1::2]
    cos, sin = cos[None, None], sin[None, None]
    out1 = x1 * cos - x2 * sin
    out2 = x1 * sin + x2 * cos
    return torch.stack((out1, out2), dim=-1).flatten(-2).to(x.dtype)   # float32 cos, sin promote a half x
