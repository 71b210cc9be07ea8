"""Correct, another way: Heap's algorithm makes every order, x reordered by torch.gather, isclose().all()."""
import torch


def heap(n):
    a = list(range(n))
    yield tuple(a)
    c = [0] * n
    i = 0
    while i < n:
        if c[i] < i:
            j = 0 if i % 2 == 0 else c[i]
            a[j], a[i] = a[i], a[j]
            yield tuple(a)
            c[i] += 1
            i = 0
        else:
            c[i] = 0
            i += 1


def is_permutation_invariant(attn, x, atol=1e-5):
    ref = attn(x).sum(1)
    b, t, d = x.shape
    for p in heap(t):
        idx = torch.tensor(p, device=x.device).view(1, t, 1).expand(b, t, d)
        got = attn(torch.gather(x, 1, idx)).sum(1)
        if not bool(torch.isclose(got, ref, rtol=0, atol=atol).all()):
            return False
    return True
