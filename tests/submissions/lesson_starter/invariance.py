"""Wrong: the lesson's starter code pasted in as it stands (an assert, randperm(5))."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    perm = torch.randperm(5)
    assert torch.allclose(attn(x).sum(1), attn(x[:, perm]).sum(1), atol=1e-5)
