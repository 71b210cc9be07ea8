"""Does nothing useful: each pair swapped, (a, b) -> (b, a), whatever the angles; no rope_frequencies.
Pair lengths are kept, yet it is no turn: no check of another clause lets its values through."""
import torch


def apply_rope(x, cos, sin):
    return torch.stack((x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2).clone()
