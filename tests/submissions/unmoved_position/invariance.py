"""Wrong: position 0 is never moved (the permutations of range(1, seq), an off-by-one)."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    summed = attn(x).sum(1)
    for rest in itertools.permutations(range(1, x.shape[1])):
        if not torch.allclose(attn(x[:, [0, *rest]]).sum(1), summed, rtol=0, atol=atol):
            return False
    return True
