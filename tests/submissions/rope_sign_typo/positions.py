"""One slip no hint names: a sign typo in the first output (x1 * cos + x2 * sin), in x's dtype, where x is,
as a new tensor: position 0 comes back as it was, the others move."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    pos = torch.arange(seq_len, device=device).float()
    ang = torch.outer(pos, inv)                 # (seq_len, head_dim/2)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    # x: (batch, heads, seq, head_dim) -- rotate each adjacent pair of dims
    x1, x2 = x[..., 0::2], x[..., 1::2]
    cos, sin = cos[None, None], sin[None, None]
    out1 = x1 * cos + x2 * sin
    out2 = x1 * sin + x2 * cos
    return torch.stack((out1, out2), dim=-1).flatten(-2).to(x.dtype)   # float32 cos, sin promote a half x
