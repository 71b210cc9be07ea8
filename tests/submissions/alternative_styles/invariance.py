"""Correct: every adjacent transposition plus a rotation, compared by max difference."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    summed = attn(x).sum(dim=1)
    n = x.shape[1]
    orders = [torch.roll(torch.arange(n), 1)]
    for i in range(n - 1):
        order = list(range(n))
        order[i], order[i + 1] = order[i + 1], order[i]
        orders.append(torch.tensor(order))
    return bool(all((attn(x[:, o]).sum(dim=1) - summed).abs().max() <= atol for o in orders))
