"""Rotary position embeddings (RoPE): your implementation for lab 2.

Each pair of dimensions of a query or key vector is a point in a plane; RoPE turns it by an
angle proportional to the token's position, so that q·k depends only on how far apart they are.
"""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    """Cosines and sines of the rotation angles, one per position and pair of dimensions.

    Args:
        head_dim: size of one attention head; even.
        seq_len: number of positions, 0 .. seq_len - 1.
        base: sets the slowest frequency (default 10000.0, as in the lesson).
        device: where the returned tensors live ("cpu", "cuda", or a torch.device).

    Returns:
        (cos, sin): two float32 tensors of shape (seq_len, head_dim // 2) on `device`.
        Pair i (dimensions 2i and 2i+1) turns at angular frequency base ** (-2i / head_dim);
        at position p (counting from 0) its angle is p * base ** (-2i / head_dim), so
        cos[p, i] = cos(that angle) and sin[p, i] = sin(that angle).
    """
    raise NotImplementedError


def apply_rope(x, cos, sin):
    """Rotate every adjacent pair of dimensions of x by its position's angle.

    Args:
        x: (batch, heads, seq, head_dim) queries or keys; head_dim even.
        cos, sin: (seq, head_dim // 2), as returned by rope_frequencies(head_dim, seq).

    Returns:
        A new tensor, same shape and dtype as x. For every position p and pair i, the pair
        (x[..., p, 2i], x[..., p, 2i+1]) = (a, b) becomes
            (a * cos[p, i] - b * sin[p, i],  a * sin[p, i] + b * cos[p, i])
        i.e. pairs are adjacent dimensions (0, 1), (2, 3), ... (the lesson's interleaved
        convention), each turned counter-clockwise. x, cos and sin are left unchanged.
        It works as the lab's model calls it: x may be a permuted view (not contiguous) of
        several heads, and gradients flow back through the result to x.
    """
    raise NotImplementedError
