"""Correct, other styles: einsum for the angles; the result written into torch.empty_like(x)
slice by slice, computed in float32 and stored in x's dtype."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    exponent = torch.arange(head_dim // 2, device=device, dtype=torch.float32) * 2 / head_dim
    return tuple(f(torch.einsum("p,i->pi", torch.arange(seq_len, device=device, dtype=torch.float32),
                                base ** -exponent)) for f in (torch.cos, torch.sin))


def apply_rope(x, cos, sin):
    out = torch.empty_like(x)
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out
