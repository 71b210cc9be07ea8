"""One slip: every order, compared with rtol=atol, atol=0 (a relative tolerance where the docstring asks an
absolute one): right wherever the sums are near 1, wrong on large sums."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    batch, seq, d = x.shape
    orders = torch.tensor(list(itertools.permutations(range(seq))), device=x.device)   # (seq!, seq)
    every = x[:, orders].transpose(0, 1).reshape(-1, seq, d)    # every order, stacked along the batch
    summed = attn(every).sum(1).view(len(orders), batch, -1)   # orders[0] is x's own order
    return torch.allclose(summed, summed[:1].expand_as(summed), rtol=atol, atol=0)
