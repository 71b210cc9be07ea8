"""Wrong: every order, but each order's outputs compared sorted along positions (as a set), not summed: once named a norm slip."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    base = attn(x).sort(dim=1).values
    for perm in itertools.permutations(range(x.shape[1])):
        if not torch.allclose(attn(x[:, list(perm)]).sort(dim=1).values, base, rtol=0, atol=atol):
            return False
    return True
