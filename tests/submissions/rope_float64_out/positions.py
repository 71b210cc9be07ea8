"""One slip: apply_rope computes in float64 and forgets to return x's dtype (float64 whatever x is)."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    pos = torch.arange(seq_len, device=device).float()
    ang = torch.outer(pos, inv)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    x1, x2 = x[..., 0::2].double(), x[..., 1::2].double()
    cos, sin = cos.double(), sin.double()
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
