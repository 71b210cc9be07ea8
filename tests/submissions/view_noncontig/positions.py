"""Wrong apply_rope only: .view merges batch and heads, which a contiguous x allows and the lab's
model's q and k (permuted views of one projection) do not."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    ang = torch.outer(torch.arange(seq_len, device=device).float(), inv)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    b, h, t, d = x.shape
    pairs = x.view(b * h, t, d // 2, 2)
    first, second = pairs[..., 0], pairs[..., 1]
    turned = torch.stack((first * cos - second * sin, first * sin + second * cos), dim=-1)
    return turned.view(b, h, t, d).to(x.dtype)
