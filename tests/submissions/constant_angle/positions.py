"""Does nothing useful: angle 0 at position 0, then angle 1 at every position and pair: no turn that grows
with the position, so no device check lets its values through. No apply_rope."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    ang = torch.ones(seq_len, head_dim // 2, device=device)
    ang[0] = 0
    return ang.cos(), ang.sin()
