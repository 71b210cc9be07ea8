"""Wrong: every reordering, but only the length (norm) of each row's summed output is compared, so
a reordering that changes the sum and keeps its length passes."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    length = attn(x).sum(1).norm(dim=-1)
    return all(torch.allclose(attn(x[:, list(order)]).sum(1).norm(dim=-1), length, rtol=0, atol=atol)
               for order in itertools.permutations(range(x.shape[1])))
