"""Wrong: every reordering, but each order's sum is held to the previous order's, not to x's own: changes within atol add up."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    last = attn(x).sum(1)
    for perm in itertools.permutations(range(x.shape[1])):
        now = attn(x[:, list(perm)]).sum(1)
        if not torch.allclose(now, last, rtol=0, atol=atol):
            return False
        last = now
    return True
