"""One slip: every order, compared with a fixed atol=1 rather than the argument: it lets through
what a narrowed search or a mean would, and only the atol hint names it."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    batch, seq, d = x.shape
    orders = torch.tensor(list(itertools.permutations(range(seq))), device=x.device)
    every = x[:, orders].transpose(0, 1).reshape(-1, seq, d)
    summed = attn(every).sum(1).view(len(orders), batch, -1)
    return torch.allclose(summed, summed[:1].expand_as(summed), rtol=0, atol=1.0)
