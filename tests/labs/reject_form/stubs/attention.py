"""Example lab: the two pieces of causal attention that are not matrix products.

Fill in both functions, then grade them: python grade.py example
"""
import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax of `x` along `dim`, written by hand: torch.softmax, F.softmax and x.softmax are
    not allowed in this lab.

    Returns a tensor of x's shape, dtype and device whose values along `dim` are
    exp(x_i) / sum_j exp(x_j): positive, summing to 1. It stays finite for large inputs
    (subtract the maximum along `dim` first) and leaves `x` unchanged.
    """
    raise NotImplementedError


def causal_mask(seq_len: int, device: str | torch.device = "cpu") -> torch.Tensor:
    """The causal mask of `seq_len` tokens: a bool tensor of shape (seq_len, seq_len) on `device`
    where mask[i, j] is True when query i may attend to key j, that is when j <= i.
    """
    raise NotImplementedError
