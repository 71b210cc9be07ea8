"""Wrong: every rotation of the positions, none of the other reorderings."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    summed = attn(x).sum(1)
    return all(torch.allclose(attn(x.roll(shift, dims=1)).sum(1), summed, rtol=0, atol=atol)
               for shift in range(x.shape[1]))
