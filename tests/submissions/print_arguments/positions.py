"""Correct, and prints its arguments at every call, as a learner debugging would: what a hidden
check asks (its sizes, its bases) must show under no visible check."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    print(f"ARGS rope_frequencies head_dim={head_dim} seq_len={seq_len} base={base} device={device}")
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    angles = torch.outer(torch.arange(seq_len, device=device).float(), inv)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin):
    print(f"ARGS apply_rope x={tuple(x.shape)} cos={tuple(cos.shape)}")
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
