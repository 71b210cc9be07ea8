"""Softmax by hand."""
import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax of `x` along its last dimension: exp(x_i) / sum_j exp(x_j)."""
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)
