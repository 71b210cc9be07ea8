"""Correct, other styles: the device argument normalised with torch.device(device), answers cached
per (head_dim, seq_len, base, device); apply_rope with addcmul and a reshape back to x's shape."""
import functools

import torch


@functools.lru_cache(maxsize=None)
def _table(head_dim, seq_len, base, device):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv)
    return angles.cos(), angles.sin()


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    return _table(head_dim, seq_len, float(base), torch.device(device))


def apply_rope(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    first = torch.addcmul(a * cos, b, sin, value=-1.0)
    second = torch.addcmul(b * cos, a, sin)
    return torch.stack([first, second], -1).reshape(*x.shape).to(x.dtype)
