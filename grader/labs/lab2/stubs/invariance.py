"""Attention without positions cannot tell orders apart: prove it (lab 2)."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    """Is attn's output, summed over positions, unchanged by every reordering of x's positions?

    This is the lesson's starter code made into a check that is right every time:

        perm = torch.randperm(5)
        torch.allclose(attn(x).sum(1), attn(x[:, perm]).sum(1), atol=1e-5)

    Args:
        attn: a callable mapping (batch, seq, d) to (batch, seq, d), e.g. a self-attention layer.
        x: a (batch, seq, d) tensor, 1 <= seq <= 6. Leave it unchanged.
        atol: absolute tolerance when comparing summed outputs elementwise.

    Returns:
        A Python bool. True when attn(x).sum(1) stays the same within atol however the positions
        of x (dim 1) are reordered; False when some reordering changes it by more than atol.
        Your answer must not depend on luck: a shuffle that leaves x in its order proves nothing
        (torch.randperm(2) does that half the time), and a layer can ignore some reorderings,
        e.g. reversal or rotation, but not others. Nor is a fixed few reorderings enough, even
        ones that together can produce every order: when x repeats a token, a swap or a
        rotation can leave x as it was while another order changes the sum. So try every
        reordering: sequences here are short (seq <= 6, at most 720 orders), and stacked along
        the batch dimension all orders take one call of attn.
    """
    raise NotImplementedError
