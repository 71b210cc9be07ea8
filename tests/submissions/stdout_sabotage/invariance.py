"""Correct, but breaks sys.stdout and sys.stderr for everyone after it."""
import itertools
import sys

import torch

sys.stdout, sys.stderr = None, 42


def is_permutation_invariant(attn, x, atol=1e-5):
    summed = attn(x).sum(1)
    return all(torch.allclose(summed, attn(x[:, list(o)]).sum(1), rtol=0, atol=atol)
               for o in itertools.permutations(range(x.shape[1])))
