"""One slip: cos and sin come back float64 (angles right, .float() forgotten). The docstring asks
float32; the values are right, so only the checks that ask the dtype (with the device) charge it."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), base ** -exponents)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    x1, x2 = x[..., 0::2].float(), x[..., 1::2].float()
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2).to(x.dtype)
