"""Wrong: every swap of two positions, each tried once at x (they generate every order, but a
layer can keep its sum under each swap of this x and not under a 3-cycle)."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    summed = attn(x).sum(1)
    for i, j in itertools.combinations(range(x.shape[1]), 2):
        order = list(range(x.shape[1]))
        order[i], order[j] = j, i
        if not torch.allclose(attn(x[:, order]).sum(1), summed, rtol=0, atol=atol):
            return False
    return True
