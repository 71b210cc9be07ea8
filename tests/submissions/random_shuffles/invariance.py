"""Wrong: four random shuffles of the positions (torch.randperm), not every reordering: a layer that
only a few orders change is called invariant when none of the four is one of them, by luck."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    summed = attn(x).sum(1)
    for _ in range(4):
        perm = torch.randperm(x.shape[1])
        if not torch.allclose(attn(x[:, perm]).sum(1), summed, rtol=0, atol=atol):
            return False
    return True
