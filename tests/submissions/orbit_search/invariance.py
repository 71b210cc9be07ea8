"""Correct, another way: a swap and a rotation applied over and over, from every order reached,
until no new arrangement of x appears (the whole orbit of x, repeated tokens counted once)."""
import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    n = x.shape[1]
    swap = list(range(n))
    swap[:2] = swap[:2][::-1]
    rotate = [n - 1] + list(range(n - 1))
    summed = attn(x).sum(1)
    seen, todo = [x], [x]
    while todo:
        current = todo.pop()
        if not torch.allclose(attn(current).sum(1), summed, rtol=0, atol=atol):
            return False
        for order in (swap, rotate):
            nxt = current[:, order]
            if not any(torch.equal(nxt, s) for s in seen):
                seen.append(nxt)
                todo.append(nxt)
    return True
