"""Reference solution: a permutation-invariance check that never depends on luck."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    seq = x.shape[1]
    if seq < 2:
        return True                         # one position: there is nothing to reorder
    index = torch.arange(seq, device=x.device)
    swap = index.clone()
    swap[[0, 1]] = swap[[1, 0]]             # swap the first two positions
    rotate = index.roll(1)                  # rotate by one step
    # swap and rotate generate every reordering; reversal catches many layers at once
    reorderings = [swap, rotate, index.flip(0)]
    summed = attn(x).sum(1)
    return all(torch.allclose(summed, attn(x[:, perm]).sum(1), rtol=0, atol=atol)
               for perm in reorderings)
