"""Public checks of invariance.py on toy layers whose answer is plain to see."""
import pytest
import torch

from grader.checks import CheckFailed, describe, expect
from grader.judge.sandbox import CallFailed
from grader.judge.wire import build

STARTER = ("return the answer as a bool (e.g. return torch.allclose(...)) rather than assert it, and reorder "
           "x's own positions (x.shape[1] of them), not a fixed 5")


def answer(student, x, gain):
    """Ask about a layer whose output at position t is x[:, t] * (1 + gain[t])."""
    seq = x.shape[1]
    layer = build("toy_attention:Layer", mix=torch.eye(seq).to(x.device), gain=torch.tensor(gain).to(x.device),
                  pair=torch.tensor(0.0).to(x.device))
    try:
        value = student.is_permutation_invariant(layer, x)
    except CallFailed as failure:       # the lesson's starter as it stands: assert, randperm(5)
        if failure.kind == "raised" and failure.message.startswith(("AssertionError", "IndexError")):
            raise CheckFailed("a bool", f"{failure.function} raised {failure.message}", STARTER) from None
        raise
    expect(isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.numel() == 1),
           "a bool", describe(value), STARTER if value is None else None)
    return bool(value)


@pytest.mark.grade(points=1, tags=["is_permutation_invariant"])
def test_position_free_and_positional(student, device):
    """True for a layer that ignores positions, False for one that weights them"""
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(0)).to(device)
    expect(answer(student, x, [0.0] * 6) is True,
           "True: out = x ignores positions", "False", "compare attn(x).sum(1) with atol")
    expect(answer(student, x, [t / 2 for t in range(6)]) is False,
           "False: out[:, t] = x[:, t] * (1 + t / 2) depends on positions", "True",
           "shuffle the positions of x along dim 1 before calling attn again")
