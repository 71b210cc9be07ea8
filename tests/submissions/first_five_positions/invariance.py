"""Wrong: the orders of the first min(seq, 5) positions only (the lesson's randperm(5) in mind): position 5 of 6 never moves."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    seq = x.shape[1]
    base = attn(x).sum(1)
    for p in itertools.permutations(range(min(seq, 5))):
        order = list(p) + list(range(len(p), seq))
        if not torch.allclose(attn(x[:, order]).sum(1), base, rtol=0, atol=atol):
            return False
    return True
