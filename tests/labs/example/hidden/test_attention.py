"""Hidden checks of attention.py: the truth in float64, the usual mistakes named."""
import pytest
import torch

from grader.lab_api.checks import CheckFailed, describe, expect, expect_close, expect_tensor, max_error

SHAPES = [((2, 3, 5), -1), ((4, 7), 0), ((1, 1), -1), ((3, 4, 6), 1)]


def softmax_mistake(got, x, dim):
    """Name the likely mistake behind a wrong softmax, or None."""
    exp = x.double().exp()
    variants = {"the sum is over the whole tensor: divide by the sum along `dim` only": exp / exp.sum(),
                "exp(x) is not divided by its sum along `dim`": exp}
    if x.dim() > 1:
        other = 0 if dim % x.dim() else -1
        variants["the softmax is taken along another dimension than `dim`"] = torch.softmax(x.double(), other)
    return next((name for name, want in variants.items() if max_error(got.cpu(), want) < 1e-4), None)


def inputs(shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 3


@pytest.mark.grade(points=3, tags=["softmax"])
@pytest.mark.parametrize("shape, dim", SHAPES, ids=["last", "first", "1x1", "middle"])
def test_softmax_values(student, device, shape, dim):
    """softmax matches exp(x) / sum exp(x) along dim"""
    x = inputs(shape, seed=len(shape) + dim)
    got = student.softmax(x.to(device), dim=dim)
    expect_tensor(got, f"softmax(x, dim={dim})", shape=shape, dtype=torch.float32, device=device)
    expect_close(got.cpu(), torch.softmax(x.double(), dim), f"softmax(x, dim={dim})", atol=1e-6,
                 hint=softmax_mistake(got, x, dim))


@pytest.mark.grade(points=1, tags=["softmax"])
def test_softmax_large_inputs(student, device):
    """softmax stays finite for large inputs"""
    x = inputs((2, 3, 6), seed=1) + 1000.0
    got = student.softmax(x.to(device))
    expect_tensor(got, "softmax(x + 1000)", shape=(2, 3, 6), device=device)
    expect(bool(got.isfinite().all()), "finite values", describe(got) + " with inf or nan",
           "exp(1000) overflows: subtract the maximum along `dim` before exp")
    expect_close(got.cpu(), torch.softmax(x.double(), -1), "softmax(x + 1000)", atol=1e-6)


@pytest.mark.grade(points=1, tags=["softmax"])
def test_softmax_keeps_input(student, device):
    """softmax leaves x unchanged and keeps its dtype"""
    x = inputs((3, 4), seed=2).double().to(device)
    got, (after,) = student.with_inputs("softmax", x)
    expect_tensor(got, "softmax of a float64 x", shape=(3, 4), dtype=torch.float64, device=device)
    if not torch.equal(after.cpu(), x.cpu()):
        raise CheckFailed("x unchanged", f"x changed, by up to {max_error(after.cpu(), x.cpu()):.3g}",
                          "an in-place operation (x -= ..., x.exp_()) changes the caller's tensor")


@pytest.mark.grade(points=2, tags=["causal_mask"])
@pytest.mark.parametrize("seq_len", [1, 2, 5, 17])
def test_causal_mask(student, reference, seq_len):
    """causal_mask(n)[i, j] is True exactly when j <= i"""
    want = reference.attention.causal_mask(seq_len)
    got = student.causal_mask(seq_len)
    expect_tensor(got, f"causal_mask({seq_len})", shape=(seq_len, seq_len), dtype=torch.bool)
    hint = "a query may attend to keys before it, not after: this is the transpose" \
        if torch.equal(got.cpu(), want.T) else \
        "a token may attend to itself: the diagonal is True" if torch.equal(got.cpu(), want.tril(-1)) else None
    expect(torch.equal(got.cpu(), want), f"{want.int().tolist()}", f"{got.int().tolist()}", hint)


@pytest.mark.grade(points=1, tags=["causal_mask"])
def test_causal_mask_device(student, device):
    """causal_mask puts the mask on the device asked for"""
    got = student.causal_mask(4, device=str(device))
    expect_tensor(got, f"causal_mask(4, device={str(device)!r})", shape=(4, 4), dtype=torch.bool, device=device)
