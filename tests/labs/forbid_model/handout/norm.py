"""Softmax by hand: torch's own softmax, under any name, is not allowed here."""
import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax of `x` along its last dimension: exp(x_i) / sum_j exp(x_j)."""
    raise NotImplementedError
