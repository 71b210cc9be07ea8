"""Correct: every reordering, one call each, compared by max difference."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    summed = attn(x).sum(dim=1)
    for order in itertools.permutations(range(x.shape[1])):
        if (attn(x[:, torch.tensor(order)]).sum(dim=1) - summed).abs().max() > atol:
            return False
    return True
