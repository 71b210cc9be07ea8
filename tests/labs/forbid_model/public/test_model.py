"""The forbid-in-a-model lab's check: one call of the model."""
import math

import pytest
import torch

from grader.lab_api.checks import expect_close


@pytest.mark.grade(points=1, tags=["softmax"])
def test_softmax_in_the_model(student):
    """the model's softmax of [0, ln 3] is [1/4, 3/4]"""
    expect_close(student.in_model("softmax", torch.tensor([[0.0, math.log(3.0)]])), torch.tensor([[0.25, 0.75]]),
                 "softmax(x) in the model", atol=1e-6)
