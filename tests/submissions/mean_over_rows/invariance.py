"""One slip: every order, but the change of each number of the sum averaged over the batch's rows before it is
held to atol: a change of 3 atol in two rows of 8 passes."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    b, t, d = x.shape
    orders = torch.tensor(list(itertools.permutations(range(t))), device=x.device)
    summed = attn(x[:, orders].transpose(0, 1).reshape(-1, t, d)).sum(1).view(len(orders), b, -1)
    return bool(((summed - summed[:1]).abs().mean(1) <= atol).all())
