"""Wrong: every reordering, stacked along the batch, but compared exactly (==): float noise from
summing in another order makes a layer that ignores positions look positional."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    orders = list(itertools.permutations(range(x.shape[1])))
    summed = attn(x[:, orders].flatten(0, 1)).sum(1).unflatten(0, (x.shape[0], len(orders)))
    return bool((summed == summed[:, :1]).all())
