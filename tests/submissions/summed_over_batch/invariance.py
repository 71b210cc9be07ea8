"""Wrong: every reordering, but each sum is taken over the batch as well as the positions (.sum((0, 1))): the changes of two rows can cancel."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    base = attn(x).sum((0, 1))
    for perm in itertools.permutations(range(x.shape[1])):
        if not torch.allclose(attn(x[:, list(perm)]).sum((0, 1)), base, rtol=0, atol=atol):
            return False
    return True
