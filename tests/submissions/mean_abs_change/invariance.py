"""Wrong: every reordering, but the mean absolute change of the sum (over rows and features) held to atol, not each number."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    base = attn(x).sum(1)
    return all((attn(x[:, list(p)]).sum(1) - base).abs().mean().item() <= atol
               for p in itertools.permutations(range(x.shape[1])))
