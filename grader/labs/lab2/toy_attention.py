"""Toy layers mapping (batch, seq, d) to (batch, seq, d), for checking is_permutation_invariant.

Copied into the child's workspace so the checks can hand them to student code; the judge uses
its own copy to know the truth. Each ignores a known set of reorderings and no others.
"""
import torch


class PositionWeighted(torch.nn.Module):
    """out[:, t] = x[:, t] * (1 + scale * w[t]); the summed output ignores reorderings that keep w.

    pattern: "linear" (w[t] = t: no reordering ignored), "symmetric" (w[t] = w[seq-1-t]: reversal
    ignored), "first_two_tied" (w[0] = w[1]: swapping them ignored) or "flat" (all ignored).
    """

    def __init__(self, pattern, scale=0.5):
        super().__init__()
        self.pattern, self.scale = pattern, scale

    def forward(self, x):
        seq = x.shape[1]
        t = torch.arange(seq, dtype=x.dtype, device=x.device)
        w = {"linear": t, "symmetric": (t - (seq - 1) / 2) ** 2,
             "first_two_tied": (t - 1).clamp(min=0), "flat": torch.zeros_like(t)}[self.pattern]
        return x * (1 + self.scale * w)[None, :, None]


class NeighbourMix(torch.nn.Module):
    """out[:, t] = x[:, t] * (1 + scale * <x[:, t], x[:, t+1 mod seq]>): only rotations are ignored."""

    def __init__(self, scale=0.5):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        nxt = x.roll(-1, dims=1)
        return x * (1 + self.scale * (x * nxt).sum(-1, keepdim=True))


class Reverse(torch.nn.Module):
    """out = x reversed along positions: the sum ignores every reordering, the output does not."""

    def forward(self, x):
        return x.flip(1)


def layer(name, **kwargs):
    """Build a toy layer by class name, e.g. layer("PositionWeighted", pattern="symmetric")."""
    return {"PositionWeighted": PositionWeighted, "NeighbourMix": NeighbourMix,
            "Reverse": Reverse}[name](**kwargs)
