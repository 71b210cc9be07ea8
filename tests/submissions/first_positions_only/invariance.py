"""Wrong: every reordering of the first three positions only, the others left in place."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    seq = x.shape[1]
    head = min(seq, 3)
    summed = attn(x).sum(1)
    for order in itertools.permutations(range(head)):
        if not torch.allclose(attn(x[:, [*order, *range(head, seq)]]).sum(1), summed, rtol=0, atol=atol):
            return False
    return True
