"""Correct, another style: apply_rope checks its inputs' values first (cos² + sin² = 1, cos = 1 at
position 0), as a careful learner might. It works on any device that holds values: on the meta
device it is given the values too (played on the CPU), as on CUDA."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    ang = torch.outer(torch.arange(seq_len, device=device).float(), inv)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    assert torch.allclose(cos.float() ** 2 + sin.float() ** 2, torch.ones_like(cos, dtype=torch.float32),
                          atol=1e-3), "cos and sin are not on the unit circle"
    assert bool((cos[:1] == 1).all()), "position 0 is not turned by 0"
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2).to(x.dtype)
