"""One slip: every order, but the spread of the sums across orders (max - min) held to atol, not each order's
change from x's own: orders each within atol of x's own can lie up to 2 atol apart."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    b, t, d = x.shape
    orders = torch.tensor(list(itertools.permutations(range(t))), device=x.device)
    summed = attn(x[:, orders].transpose(0, 1).reshape(-1, t, d)).sum(1).view(len(orders), b, -1)
    return bool(((summed.amax(0) - summed.amin(0)) <= atol).all())
