"""One slip: every order, but each order's sum held to the mean of all orders' sums, not to x's own."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    b, t, d = x.shape
    orders = torch.tensor(list(itertools.permutations(range(t))), device=x.device)
    summed = attn(x[:, orders].transpose(0, 1).reshape(-1, t, d)).sum(1).view(len(orders), b, -1)
    return bool(((summed - summed.mean(0, keepdim=True)).abs() <= atol).all())
