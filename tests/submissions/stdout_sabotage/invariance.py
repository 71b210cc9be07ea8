"""Correct, but breaks sys.stdout and sys.stderr for everyone after it."""
import sys

import torch

sys.stdout, sys.stderr = None, 42


def is_permutation_invariant(attn, x, atol=1e-5):
    n = x.shape[1]
    summed = attn(x).sum(1)
    orders = [torch.arange(n).roll(1), torch.arange(n).flip(0)]
    if n > 1:
        swap = torch.arange(n)
        swap[[0, 1]] = swap[[1, 0]]
        orders.append(swap)
    return all(torch.allclose(summed, attn(x[:, o]).sum(1), rtol=0, atol=atol) for o in orders)
