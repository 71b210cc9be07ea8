"""Slip: reorders dim 2 (features) instead of dim 1 (positions), within atol: nothing about atol is wrong."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    own = attn(x).sum(1)
    for order in itertools.permutations(range(x.shape[-1])):
        if not torch.allclose(attn(x[..., list(order)]).sum(1), own, rtol=0, atol=atol):
            return False
    return True
