"""Does nothing useful: x as it was at position 0 (angle 0), zeros elsewhere; no rope_frequencies. It is no
turn, so no check of another clause (dtype, device, a new tensor) lets its values through."""
import torch


def apply_rope(x, cos, sin):
    out = torch.zeros_like(x)
    out[..., :1, :] = x[..., :1, :]
    return out
