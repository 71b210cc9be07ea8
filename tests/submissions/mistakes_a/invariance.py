"""Wrong: one random shuffle (the lesson's starter code): fails on short sequences."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    perm = torch.randperm(x.shape[1])
    return torch.allclose(attn(x).sum(1), attn(x[:, perm]).sum(1), atol=atol)
