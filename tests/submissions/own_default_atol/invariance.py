"""Wrong: every reordering, compared elementwise, but with a default atol of its own (1e-3), not the docstring's 1e-5."""
import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-3):
    base = attn(x).sum(1)
    for perm in itertools.permutations(range(x.shape[1])):
        if not torch.allclose(attn(x[:, list(perm)]).sum(1), base, rtol=0, atol=atol):
            return False
    return True
