"""Public checks of attention.py: shipped to learners, so they use no reference."""
import math

import pytest
import torch

from grader.lab_api.checks import expect, expect_close, expect_tensor


@pytest.mark.grade(points=1, tags=["softmax"])
def test_softmax_small(student, device):
    """softmax of [0, ln 3] is [1/4, 3/4]"""
    x = torch.tensor([[0.0, math.log(3.0)]], device=device)
    got = student.softmax(x)
    expect_tensor(got, "softmax(x)", shape=(1, 2), dtype=torch.float32, device=device)
    expect_close(got, torch.tensor([[0.25, 0.75]]), "softmax(x)", atol=1e-6)


@pytest.mark.grade(points=1, tags=["causal_mask"])
def test_causal_mask_three(student):
    """causal_mask(3) lets each token see itself and the tokens before it"""
    want = torch.tensor([[True, False, False], [True, True, False], [True, True, True]])
    got = student.causal_mask(3)
    expect_tensor(got, "causal_mask(3)", shape=(3, 3), dtype=torch.bool)
    expect(torch.equal(got.cpu(), want), want.int().tolist(), got.int().tolist())
