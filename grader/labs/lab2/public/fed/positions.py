"""positions.py as the grader runs your experiments: a correct RoPE, so that they are graded on
their own (your positions.py is graded by its own checks). The judge's copy of model.py imports it
too (conftest.py). It is the public checks' truth (rope.py: the angles in float64) and
toy_attention.turn_pairs, which the handout already has."""
import torch
from toy_attention import turn_pairs as apply_rope  # noqa: F401


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    pair = torch.arange(head_dim // 2, dtype=torch.float64)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), base ** (-2 * pair / head_dim))
    return angles.cos().float().to(device), angles.sin().float().to(device)
