"""Wrong: apply_rope returns x itself when no angle turns (every sin 0): not a new tensor, and on
the meta device, which has no values, the test raises. rope_frequencies is right."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    pos = torch.arange(seq_len, device=device).float()
    ang = torch.outer(pos, inv)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    if not sin.any():
        return x
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out1 = x1 * cos - x2 * sin
    out2 = x1 * sin + x2 * cos
    return torch.stack((out1, out2), dim=-1).flatten(-2).to(x.dtype)
