"""Wrong: every order tried and summed over positions, but with atol scaled by the number of
positions (a tolerance "per position"): a change of the sum up to seq * atol passes."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    seq = x.shape[1]
    summed = attn(x).sum(1)
    return all(torch.allclose(attn(x[:, list(order)]).sum(1), summed, rtol=0, atol=atol * seq)
               for order in itertools.permutations(range(seq)))
