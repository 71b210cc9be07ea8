"""Wrong: every reordering, but the change of the sum is held to atol by its norm (torch.dist), not
number by number: changes that are each within atol add up past it."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    summed = attn(x).sum(1)
    return all(torch.dist(attn(x[:, list(order)]).sum(1), summed) <= atol
               for order in itertools.permutations(range(x.shape[1])))
