"""Wrong: rope_frequencies passes device=device to torch.arange, but keeps its answers in a cache
keyed by (head_dim, seq_len, base) alone: asked again for another device, it answers where it
first computed them. apply_rope is right."""
import torch

CACHE = {}


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    key = (head_dim, seq_len, base)
    if key not in CACHE:
        inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
        pos = torch.arange(seq_len, device=device).float()
        ang = torch.outer(pos, inv)
        CACHE[key] = torch.cos(ang), torch.sin(ang)
    return CACHE[key]


def apply_rope(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out1 = x1 * cos - x2 * sin
    out2 = x1 * sin + x2 * cos
    return torch.stack((out1, out2), dim=-1).flatten(-2).to(x.dtype)
