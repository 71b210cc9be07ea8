"""Wrong: a swap of the first two, a rotation by one and the reversal, each tried once at x.
Together they generate every order, but at x itself repeated tokens can fool them."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    n = x.shape[1]
    index = torch.arange(n)
    orders = [index.roll(1), index.flip(0)]
    if n > 1:
        swap = index.clone()
        swap[[0, 1]] = swap[[1, 0]]
        orders.append(swap)
    summed = attn(x).sum(1)
    return all(torch.allclose(summed, attn(x[:, o]).sum(1), rtol=0, atol=atol) for o in orders)
