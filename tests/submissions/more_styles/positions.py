"""Correct, other styles: exponents from torch.linspace, the base's power of a tensor, cos and sin
returned as a list of views of one stacked tensor; apply_rope as a custom autograd.Function whose
backward turns the gradient back by the opposite angles."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    exps = torch.linspace(0.0, 1.0, head_dim // 2 + 1, device=device)[:-1]          # 2i / head_dim
    inv = torch.tensor(base, device=device).pow(-exps)
    ang = torch.arange(seq_len, device=device, dtype=torch.float32)[:, None] * inv
    both = torch.stack((ang.cos(), ang.sin()), dim=-1)
    return list(both.unbind(-1))


def _turn(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)


class _Rope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return _turn(x, cos, sin)

    @staticmethod
    def backward(ctx, grad):
        cos, sin = ctx.saved_tensors
        return _turn(grad, cos, -sin), None, None


def apply_rope(x, cos, sin):
    return _Rope.apply(x, cos, sin)
