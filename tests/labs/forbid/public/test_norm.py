"""The forbid lab's checks: one call each."""
import math

import pytest
import torch

from grader.lab_api.checks import expect_close


@pytest.mark.grade(points=1, tags=["softmax"])
def test_softmax(student):
    """softmax of [0, ln 3] is [1/4, 3/4]"""
    expect_close(student.softmax(torch.tensor([[0.0, math.log(3.0)]])), torch.tensor([[0.25, 0.75]]),
                 "softmax(x)", atol=1e-6)


@pytest.mark.grade(points=1, tags=["attend"])
def test_attend(student):
    """attend(q, k, v) weighs v by softmax(q k^T / sqrt(d))"""
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    v = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    near = math.exp(1 / math.sqrt(2))
    weights = torch.tensor([[near, 1.0], [1.0, near]]) / (1 + near)
    expect_close(student.attend(q, q, v), weights @ v, "attend(q, k, v)", atol=1e-5)
