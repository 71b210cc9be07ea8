"""Public checks of invariance.py on toy layers whose answer is plain to see."""
import pytest
import torch

from grader.checks import describe, expect
from grader.wire import build


def answer(student, layer, x, **kwargs):
    value = student.is_permutation_invariant(build("toy_attention:layer", layer, **kwargs), x)
    expect(isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.numel() == 1),
           "a bool", describe(value))
    return bool(value)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_position_free_and_positional(student, device):
    """True for a layer that ignores positions, False for one that weights them"""
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(0)).to(device)
    expect(answer(student, "PositionWeighted", x, pattern="flat") is True,
           "True: out = x ignores positions", "False", "compare attn(x).sum(1) with atol")
    expect(answer(student, "PositionWeighted", x, pattern="linear") is False,
           "False: out[:, t] = x[:, t] * (1 + t / 2) depends on positions", "True",
           "shuffle the positions of x along dim 1 before calling attn again")
