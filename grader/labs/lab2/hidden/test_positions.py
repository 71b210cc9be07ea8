"""Hidden checks of positions.py: rope_frequencies and apply_rope against exact maths.

Tolerances come from float32 arithmetic, not from the reference's own rounding: the truth is
computed in float64, and an element may be off by what float32 steps can explain. For an angle
a = p * base**(-2i/d): rounding the exponent, the power and the product each cost a few float32
epsilons (eps = 2**-23) relative to a, the exponent's error amplified by ln(base); so
|error| <= eps * (|a| * (ln(base) + 8) + 4). Any of float32 or float64 angles, complex numbers,
einsum or rotation matrices fits within that; the mistakes named in hints miss it by far.
"""
import math

import pytest
import torch

from grader.checks import (
    CheckFailed,
    describe,
    expect,
    expect_close,
    expect_tensor,
    max_error,
)
from grader.judge.sandbox import CallFailed

EPS = 2.0 ** -23
DEVICE_SLACK = {"cpu": 1.0, "cuda": 4.0}


# -- the truth, and the usual mistakes, in float64 ---------------------------------------------
def exact_angles(head_dim, seq_len, base, start=0, exponent_step=2):
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    inv = base ** (-exponent_step * i / head_dim)
    pos = torch.arange(start, start + seq_len, dtype=torch.float64)
    return torch.outer(pos, inv)                                     # (seq_len, head_dim/2)


def angle_tolerance(angles, base, device):
    return EPS * (angles.abs() * (math.log(base) + 8) + 4) * DEVICE_SLACK[device.type]


FREQUENCY_MISTAKES = {
    "cos and sin are swapped": lambda a: (a.sin(), a.cos()),
    "the angle has the wrong sign: sin should be positive for small positive angles":
        lambda a: (a.cos(), -a.sin()),
}


def diagnose_frequencies(cos, sin, head_dim, seq_len, base):
    """Name the likely mistake behind wrong (cos, sin), or None."""
    exact = exact_angles(head_dim, seq_len, base)
    variants = {name: make(exact) for name, make in FREQUENCY_MISTAKES.items()}
    variants["positions start at 1; the first position is p = 0 (angle 0)"] = \
        (lambda a: (a.cos(), a.sin()))(exact_angles(head_dim, seq_len, base, start=1))
    variants["the exponent uses i / head_dim; pair i needs base ** (-2i / head_dim)"] = \
        (lambda a: (a.cos(), a.sin()))(exact_angles(head_dim, seq_len, base, exponent_step=1))
    variants["the frequencies grow with i; pair i turns at base ** (-2i / head_dim), slower for larger i"] = \
        (lambda a: (a.cos(), a.sin()))(exact_angles(head_dim, seq_len, 1 / base))
    if base != 10000.0:
        variants["the base argument is ignored (10000 used instead)"] = \
            (lambda a: (a.cos(), a.sin()))(exact_angles(head_dim, seq_len, 10000.0))
    for name, (want_cos, want_sin) in variants.items():
        if max(max_error(cos.cpu(), want_cos), max_error(sin.cpu(), want_sin)) < 1e-3:
            return name
    return None


def check_frequencies(student, head_dim, seq_len, exact_base, on, **kwargs):
    """Call rope_frequencies(head_dim, seq_len, **kwargs); the result must be right and `on` that device."""
    result = student.rope_frequencies(head_dim, seq_len, **kwargs)
    expect(isinstance(result, (tuple, list)) and len(result) == 2,
           "a pair (cos, sin)", describe(result))
    cos, sin = result
    shape = (seq_len, head_dim // 2)
    for name, value in (("cos", cos), ("sin", sin)):
        if isinstance(value, torch.Tensor) and tuple(value.shape) == (seq_len, head_dim):
            raise CheckFailed(f"{name} of shape {shape}", describe(value),
                              "one value per pair of dimensions, not per dimension: the "
                              "lesson's interleaved convention needs no cat((freqs, freqs))")
        if isinstance(value, torch.Tensor) and shape[0] != shape[1] and tuple(value.shape) == shape[::-1]:
            raise CheckFailed(f"{name} of shape {shape}", describe(value),
                              "rows are positions, columns pairs: torch.outer(pos, inv), not (inv, pos)")
        expect_tensor(value, name, shape, torch.float32, on)
    exact = exact_angles(head_dim, seq_len, exact_base)
    tolerance = angle_tolerance(exact, exact_base, torch.device(on))
    hint = None
    if max(max_error(cos.cpu(), exact.cos()), max_error(sin.cpu(), exact.sin())) > 1e-3:
        hint = diagnose_frequencies(cos, sin, head_dim, seq_len, exact_base)
    expect_close(cos.cpu(), exact.cos(), "cos", tolerance, hint)
    expect_close(sin.cpu(), exact.sin(), "sin", tolerance, hint)


# -- rope_frequencies ---------------------------------------------------------------------------
@pytest.mark.grade(points=2, tags=["rope_frequencies"])
def test_frequencies_values(student, device):
    """cos and sin hold the lesson's angles (head_dim 64, 50 positions)"""
    check_frequencies(student, 64, 50, 10000.0, device, device=device)


@pytest.mark.grade(points=2, tags=["rope_frequencies"])
@pytest.mark.parametrize("head_dim, seq_len", [(2, 1), (6, 7), (128, 3)],
                         ids=["head_dim 2, seq 1", "head_dim 6, seq 7", "head_dim 128, seq 3"])
def test_frequencies_shapes(student, device, head_dim, seq_len):
    """small and odd sizes: head_dim 2, 6, 128; one position; head_dim // 2 odd"""
    check_frequencies(student, head_dim, seq_len, 10000.0, device, device=device)


@pytest.mark.grade(points=2, tags=["rope_frequencies"])
@pytest.mark.parametrize("base", [500.0, 1e6], ids=["base 500", "base 1e6"])
def test_frequencies_base(student, device, base):
    """the base argument sets the frequencies"""
    check_frequencies(student, 32, 40, base, device, base=base, device=device)


@pytest.mark.grade(points=2, tags=["rope_frequencies"])
def test_frequencies_long(student, device):
    """4096 positions: angles in the thousands stay accurate"""
    check_frequencies(student, 128, 4096, 10000.0, device, device=device)


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_device(student, device):
    """the device argument is honoured, as a string or a torch.device"""
    check_frequencies(student, 16, 8, 10000.0, device, device=str(device))
    check_frequencies(student, 16, 8, 10000.0, device, device=torch.device(device))


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_device_without_gpu(student):
    """device honoured without a GPU: asked for CUDA where there is none, torch itself refuses"""
    check_frequencies(student, 16, 8, 10000.0, torch.device("cpu"), device="cpu")
    for device in ("cuda", torch.device("cuda")):
        try:
            result = student.rope_frequencies(16, 8, device=device)
        except CallFailed as failure:
            if failure.kind == "timeout":
                raise
            if not torch.cuda.is_available() and any(word in failure.message.lower() for word in ("cuda", "nvidia")):
                continue                    # it tried to put the tensors there: right
            raise CheckFailed("(cos, sin) on CUDA, or torch's own refusal where there is no CUDA",
                              f"{failure.function} raised {failure.message}") from None
        expect(isinstance(result, (tuple, list)) and len(result) == 2, "a pair (cos, sin)", describe(result))
        for name, value in zip(("cos", "sin"), result):
            expect(isinstance(value, torch.Tensor) and value.device.type == "cuda",
                   f"{name} on the device asked for (cuda)", describe(value),
                   "pass device=device to torch.arange (or create the tensors there): "
                   "a GPU run would leave them on the CPU")


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_default_base(student, device):
    """with no base given, the default is 10000; with no device, the CPU"""
    check_frequencies(student, 16, 8, 10000.0, torch.device("cpu"))


# -- apply_rope ---------------------------------------------------------------------------------
def rotate(x, cos, sin, split="interleaved", sign=1.0):
    """Rotate pairs of x in float64: the truth (interleaved, sign 1) and the usual mistakes."""
    x, cos, sin = x.double(), cos.double(), sin.double() * sign
    if split == "half":
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    first, second = a * cos - b * sin, a * sin + b * cos
    if split == "concatenated":
        return torch.cat((first, second), dim=-1)
    return torch.stack((first, second), dim=-1).flatten(-2)


def rope_tolerance(x, device):
    """A few float32 steps of each pair's magnitude, elementwise."""
    a, b = x.double()[..., 0::2].abs(), x.double()[..., 1::2].abs()
    size = (a + b).repeat_interleave(2, dim=-1)
    return EPS * (4 * size + 1e-3) * DEVICE_SLACK[device.type]


def diagnose_rope(out, x, cos, sin):
    variants = {
        "this looks like the half-split rotate_half convention (pairs i and i + head_dim/2); "
        "the lesson pairs adjacent dimensions (2i, 2i+1)": rotate(x, cos, sin, "half"),
        "the angle has the wrong sign: pairs turn clockwise (check the signs of the sin terms)":
            rotate(x, cos, sin, sign=-1.0),
        "cos and sin are swapped": rotate(x, sin, cos),
        "the rotated pairs are concatenated [firsts..., seconds...]; interleave them back: "
        "torch.stack((out1, out2), dim=-1).flatten(-2)": rotate(x, cos, sin, "concatenated"),
    }
    for name, wrong in variants.items():
        if max_error(out.cpu(), wrong) < 1e-3:
            return name
    if max_error(out.cpu(), x.double()) < 1e-6:
        return "x came back unrotated"
    return None


def reference_rope_inputs(reference, shape, seed, device, base=10000.0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator)
    cos, sin = reference.positions.rope_frequencies(shape[-1], shape[-2], base=base)
    return x.to(device), cos.to(device), sin.to(device)


def check_rope(student, reference, shape, device, seed=0, base=10000.0):
    x, cos, sin = reference_rope_inputs(reference, shape, seed, device, base)
    out = student.apply_rope(x, cos, sin)
    expect_tensor(out, "apply_rope(x, cos, sin)", shape, torch.float32, device)
    truth = rotate(x.cpu(), cos.cpu(), sin.cpu())
    hint = diagnose_rope(out, x.cpu(), cos.cpu(), sin.cpu()) if max_error(out.cpu(), truth) > 1e-3 else None
    expect_close(out.cpu(), truth, "apply_rope(x, cos, sin)", rope_tolerance(x.cpu(), device), hint)


@pytest.mark.grade(points=3, tags=["apply_rope"])
def test_rope_values(student, reference, device):
    """each adjacent pair turns by its angle (batch 2, 4 heads, 12 positions, head_dim 16)"""
    check_rope(student, reference, (2, 4, 12, 16), device)


@pytest.mark.grade(points=2, tags=["apply_rope"])
@pytest.mark.parametrize("shape", [(1, 1, 5, 8), (1, 3, 1, 4), (3, 1, 7, 2)],
                         ids=lambda shape: "x" .join(map(str, shape)))
def test_rope_singletons(student, reference, device, shape):
    """batch, heads or positions of size 1, and head_dim 2"""
    check_rope(student, reference, shape, device, seed=1)


@pytest.mark.grade(points=2, tags=["apply_rope"])
def test_rope_long(student, reference, device):
    """2048 positions, head_dim 64"""
    check_rope(student, reference, (1, 2, 2048, 64), device, seed=2)


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_other_base(student, reference, device):
    """works with any cos/sin it is given (frequencies from base 500)"""
    check_rope(student, reference, (2, 2, 9, 12), device, seed=3, base=500.0)


@pytest.mark.grade(points=2, tags=["apply_rope"])
def test_rope_leaves_input(student, reference, device):
    """x, cos and sin are left unchanged (and the result is right)"""
    x, cos, sin = reference_rope_inputs(reference, (2, 2, 6, 8), 4, device)
    out, (x_after, cos_after, sin_after) = student.with_inputs("apply_rope", x, cos, sin)
    for name, before, after in (("x", x, x_after), ("cos", cos, cos_after), ("sin", sin, sin_after)):
        expect(isinstance(after, torch.Tensor) and torch.equal(before.cpu(), after.cpu()),
               f"{name} unchanged by apply_rope", f"{name} was modified",
               "write results into new tensors; slices like x[..., 0::2] are views of x")
    expect_tensor(out, "apply_rope(x, cos, sin)", x.shape, torch.float32, device)
    expect_close(out.cpu(), rotate(x.cpu(), cos.cpu(), sin.cpu()), "apply_rope(x, cos, sin)",
                 rope_tolerance(x.cpu(), device))
