"""One slip: every order stacked, as the reference does, but compared with .any() over all of
them, and x's own order (row 0) always matches itself: it answers True for every layer. Its answers
are a constant True's, so the hint says what they show, not that x was never reordered."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    batch, seq, d = x.shape
    orders = torch.tensor(list(itertools.permutations(range(seq))), device=x.device)
    every = x[:, orders].transpose(0, 1).reshape(-1, seq, d)
    summed = attn(every).sum(1).view(len(orders), batch, -1)
    return bool(((summed - summed[:1]).abs() <= atol).any())
