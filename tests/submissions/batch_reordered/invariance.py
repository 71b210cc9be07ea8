"""One slip: every reordering of the batch (dim 0), not of the positions: it answers by batch size alone, so no hint names atol, which it uses right."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    ref = attn(x).sum(1)
    for p in itertools.permutations(range(x.shape[0])):
        if not torch.allclose(attn(x[list(p)]).sum(1), ref, rtol=0, atol=atol):
            return False
    return True
