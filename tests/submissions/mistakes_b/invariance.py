"""Wrong: compares outputs position by position (equivariance), and ignores atol."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    perm = torch.arange(x.shape[1]).flip(0)
    if x.shape[1] > 1:
        perm = torch.roll(torch.arange(x.shape[1]), 1)
    return torch.allclose(attn(x)[:, perm], attn(x[:, perm]), atol=1e-5)
