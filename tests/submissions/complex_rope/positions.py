"""Correct, LLaMA style: each angle as a unit complex number (torch.polar); cos and sin are the
real and imaginary parts of those, returned as views (stride 2, on every dimension: with one
position, a size-1 dimension of stride 2 too)."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    freqs = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device)[: head_dim // 2].float() / head_dim))
    t = torch.arange(seq_len, device=device).float()
    freqs_cis = torch.polar(torch.ones(seq_len, head_dim // 2, device=device), torch.outer(t, freqs))
    return freqs_cis.real, freqs_cis.imag


def apply_rope(x, cos, sin):
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs_cis = torch.complex(cos, sin)
    return torch.view_as_real(x_ * freqs_cis).flatten(-2).type_as(x)
