"""Wrong: every swap of two positions and every rotation (and the reversal), each tried at x: together they make
every order, but with repeated tokens none of them may change the sum while another order does."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    t = x.shape[1]
    orders = []
    for i in range(t):
        for j in range(i + 1, t):
            o = list(range(t))
            o[i], o[j] = o[j], o[i]
            orders.append(o)
    orders += [[(k + s) % t for k in range(t)] for s in range(1, t)]
    orders.append(list(range(t))[::-1])
    own = attn(x).sum(1)
    return all(torch.allclose(attn(x[:, o]).sum(1), own, rtol=0, atol=atol) for o in orders)
