"""Floods its output, returns objects that are not plain data."""
import os

import torch


class Trap(torch.Tensor):
    """A tensor subclass that claims to equal anything."""

    def __eq__(self, other):
        return True


class Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/grader-was-pwned",))


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    for _ in range(20_000):
        print("spam " * 20)
    return Boom(), Boom()


def apply_rope(x, cos, sin):
    return torch.zeros_like(x).as_subclass(Trap)
