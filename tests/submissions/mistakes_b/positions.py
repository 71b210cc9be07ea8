"""Wrong: positions start at 1; the angle's sign flipped; x modified in place."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    ang = torch.outer(torch.arange(1, seq_len + 1, device=device).float(), inv)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    x1, x2 = x[..., 0::2].clone(), x[..., 1::2].clone()
    x[..., 0::2] = x1 * cos + x2 * sin
    x[..., 1::2] = -x1 * sin + x2 * cos
    return x
