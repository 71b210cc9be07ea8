"""Layer norm and RMS norm, by hand: torch's own, under any name, are not allowed here."""
import torch


def layer_norm(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """x normalised over its last dimension: (x - mean) / sqrt(var + eps), var the biased variance."""
    raise NotImplementedError


def rms_norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x over the root mean square of its last dimension: x / sqrt(mean(x ** 2) + eps)."""
    raise NotImplementedError
