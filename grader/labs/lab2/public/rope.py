"""The truth about RoPE and the usual mistakes, for the public and the hidden checks of positions.py
alike (a helper, not checks: pytest collects only test_*.py).

Tolerances come from float32 arithmetic, not from anyone's rounding: the truth is computed in
float64, and an element may be off by what float32 steps can explain. For an angle
a = p * base**(-2i/d): rounding the exponent, the power and the product each cost a few float32
epsilons (eps = 2**-23) relative to a, the exponent's error amplified by ln(base); so
|error| <= eps * (|a| * (ln(base) + 8) + 4). Any of float32 or float64 angles, complex numbers,
einsum or rotation matrices fits within that; the mistakes named in hints miss it by far.
apply_rope is always given the right cos and sin, so that a mistake costs in one function only.
"""
import math

import torch

from grader.checks import (
    CheckFailed,
    describe,
    diagnose,
    expect,
    expect_close,
    expect_tensor,
    expect_unchanged,
    max_error,
)
from grader.judge.sandbox import CallFailed

EPS = 2.0 ** -23
DEVICE_SLACK = {"cpu": 1.0, "cuda": 4.0}


# -- rope_frequencies ---------------------------------------------------------------------------
def exact_angles(head_dim, seq_len, base, start=0, exponent_step=2):
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    inv = base ** (-exponent_step * i / head_dim)
    pos = torch.arange(start, start + seq_len, dtype=torch.float64)
    return torch.outer(pos, inv)                                     # (seq_len, head_dim/2)


def angle_tolerance(angles, base, device):
    return EPS * (angles.abs() * (math.log(base) + 8) + 4) * DEVICE_SLACK[device.type]


def frequency_mistakes(head_dim, seq_len, base):
    """{the mistake in words: the (cos, sin) it gives}, in float64."""
    exact = exact_angles(head_dim, seq_len, base)
    turned = lambda angles: (angles.cos(), angles.sin())                # noqa: E731
    mistakes = {
        "cos and sin are swapped": (exact.sin(), exact.cos()),
        "the angle has the wrong sign: sin should be positive for small positive angles":
            (exact.cos(), -exact.sin()),
        "positions start at 1; the first position is p = 0 (angle 0)":
            turned(exact_angles(head_dim, seq_len, base, start=1)),
        "the exponent uses i / head_dim; pair i needs base ** (-2i / head_dim)":
            turned(exact_angles(head_dim, seq_len, base, exponent_step=1)),
        "the frequencies grow with i; pair i turns at base ** (-2i / head_dim), slower for larger i":
            turned(exact_angles(head_dim, seq_len, 1 / base)),
        "every angle is 0: each position must turn by p * base ** (-2i / head_dim)":
            turned(torch.zeros_like(exact)),
    }
    if base != 10000.0:
        mistakes["the base argument is ignored (10000 used instead)"] = turned(exact_angles(head_dim, seq_len, 10000.0))
    return {name: torch.cat(pair, dim=-1) for name, pair in mistakes.items()}


def check_frequencies(student, head_dim, seq_len, exact_base, on, **kwargs):
    """Call rope_frequencies(head_dim, seq_len, **kwargs); the result must be right and `on` that device."""
    result = student.rope_frequencies(head_dim, seq_len, **kwargs)
    expect(isinstance(result, (tuple, list)) and len(result) == 2, "a pair (cos, sin)", describe(result))
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
    both = torch.cat((cos.cpu(), sin.cpu()), dim=-1)
    hint = None
    if max_error(both, torch.cat((exact.cos(), exact.sin()), dim=-1)) > 1e-3:
        hint = diagnose(both, frequency_mistakes(head_dim, seq_len, exact_base))
    expect_close(cos.cpu(), exact.cos(), "cos", tolerance, hint)
    expect_close(sin.cpu(), exact.sin(), "sin", tolerance, hint)


def check_device_honoured(student, head_dim, seq_len):
    """Asked for CUDA, (cos, sin) are there; where there is no CUDA, torch itself refuses."""
    for device in ("cuda", torch.device("cuda")):
        try:
            result = student.rope_frequencies(head_dim, seq_len, device=device)
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


def rope_mistakes(x, cos, sin):
    """{the mistake in words: what it makes of x}, in float64."""
    return {
        "this looks like the half-split rotate_half convention (pairs i and i + head_dim/2); "
        "the lesson pairs adjacent dimensions (2i, 2i+1)": rotate(x, cos, sin, "half"),
        "the angle has the wrong sign: pairs turn clockwise (check the signs of the sin terms)":
            rotate(x, cos, sin, sign=-1.0),
        "cos and sin are swapped": rotate(x, sin, cos),
        "the rotated pairs are concatenated [firsts..., seconds...] instead of interleaved; put each "
        "pair back in place: torch.stack((out1, out2), dim=-1).flatten(-2)": rotate(x, cos, sin, "concatenated"),
        "x came back unrotated": x.double(),
    }


def rope_inputs(shape, seed, device, base=10000.0):
    """Random x, and the right float32 cos and sin for it (computed here, in float64)."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    angles = exact_angles(shape[-1], shape[-2], base)
    return x.to(device), angles.cos().float().to(device), angles.sin().float().to(device)


def expect_rotated(out, x, cos, sin, device):
    """apply_rope's answer `out` for (x, cos, sin) is right, or the mistake is named."""
    expect_tensor(out, "apply_rope(x, cos, sin)", x.shape, x.dtype, device)
    x, cos, sin = x.cpu(), cos.cpu(), sin.cpu()
    truth = rotate(x, cos, sin)
    hint = diagnose(out.cpu(), rope_mistakes(x, cos, sin)) if max_error(out.cpu(), truth) > 1e-3 else None
    expect_close(out.cpu(), truth, "apply_rope(x, cos, sin)", rope_tolerance(x, device), hint)


def check_rope(student, x, cos, sin, device):
    expect_rotated(student.apply_rope(x, cos, sin), x, cos, sin, device)


def check_rope_leaves_inputs(student, x, cos, sin, device):
    """x, cos and sin are unchanged after the call, and the answer is right."""
    out, after = student.with_inputs("apply_rope", x, cos, sin)
    for name, before, now in zip(("x", "cos", "sin"), (x, cos, sin), after):
        expect_unchanged(before, now, name, "apply_rope",
                         "write results into new tensors; slices like x[..., 0::2] are views of x")
    expect_rotated(out, x, cos, sin, device)
