"""Correct, in other styles: float64 angles, complex numbers."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    i = torch.arange(head_dim // 2, dtype=torch.float64, device=device)
    angles = torch.einsum("p,i->pi", torch.arange(seq_len, dtype=torch.float64, device=device),
                          base ** (-2 * i / head_dim))
    return angles.cos().float(), angles.sin().float()


def apply_rope(x, cos, sin):
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    turned = pairs * torch.complex(cos, sin)
    return torch.view_as_real(turned).flatten(-2).to(x.dtype)
