"""The norms lab's checks: one call each."""
import pytest
import torch

from grader.checks import expect_close

X = torch.tensor([[1.0, 2.0, 3.0, 6.0], [0.0, -1.0, 1.0, 4.0]])


@pytest.mark.grade(points=1, tags=["layer_norm"])
def test_layer_norm(student):
    """layer_norm(x) has mean 0 and variance 1 along the last dimension"""
    centred = X - X.mean(-1, keepdim=True)
    expect_close(student.layer_norm(X), centred / (centred.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt(),
                 "layer_norm(x)", atol=1e-5)


@pytest.mark.grade(points=1, tags=["rms_norm"])
def test_rms_norm(student):
    """rms_norm(x) divides x by its root mean square along the last dimension"""
    expect_close(student.rms_norm(X), X / (X.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt(), "rms_norm(x)", atol=1e-5)
