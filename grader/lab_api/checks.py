"""What checks use to fail well: expected, seen, and a hint (check50 style)."""
import hashlib
import importlib.util
import sys
from pathlib import Path

import torch


class CheckFailed(AssertionError):
    """A check that failed, with what was expected, what came back, and a likely cause."""

    def __init__(self, expected, seen, hint=None, mistake=None):
        self.expected, self.seen, self.hint, self.mistake = str(expected), str(seen), hint, mistake
        lines = [f"expected {self.expected}", f"     saw {self.seen}"]
        super().__init__("\n".join(lines + ([f"    hint {hint}"] if hint else [])))


def expect(condition, expected, seen, hint=None, mistake=None):
    if not condition:
        raise CheckFailed(expected, seen, hint, mistake)


def describe(value):
    """A short description of a returned value, safe for any type."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)} on {value.device.type}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"{type(value).__name__} {str(value)[:80]}"


def expect_tensor(value, what, shape=None, dtype=None, device=None):
    """Fail unless `value` is a tensor with this shape, dtype and device type."""
    wanted = "a tensor" + (f" of shape {tuple(shape)}" if shape is not None else "") \
        + (f", {dtype}" if dtype is not None else "") + (f", on {torch.device(device).type}" if device else "")
    ok = isinstance(value, torch.Tensor) \
        and (shape is None or tuple(value.shape) == tuple(shape)) \
        and (dtype is None or value.dtype == dtype) \
        and (device is None or value.device.type == torch.device(device).type)
    expect(ok, f"{what} to be {wanted}", describe(value))


def max_error(actual, expected):
    """Largest absolute difference, in float64, with NaN counted as infinite."""
    diff = (actual.double() - expected.double()).abs()
    return float(diff.nan_to_num(nan=float("inf")).max()) if diff.numel() else 0.0


def diagnose(actual, mistakes, slack=0.0, rtol=1e-3):
    """The one mistake of `mistakes` ({what the mistake is, in words: what it gives}) that `actual`
    matches, or None: the hint for a wrong answer. A mistake matches when every element is within
    rtol of the mistake's value, relative to that value, plus `slack` (a number or a tensor of
    bounds: the working precision's own error); NaN matches nothing. When several match (at small
    angles, say, mistakes give nearly the same values) the answers do not tell which was made, and
    none is named."""
    if not isinstance(actual, torch.Tensor):
        return None
    found = [name for name, wrong in mistakes.items()
             if actual.shape == wrong.shape and _within(actual, wrong, slack, rtol)]
    return found[0] if len(found) == 1 else None


def _within(actual, wrong, slack, rtol):
    diff = (actual.double() - wrong.double()).abs().nan_to_num(nan=float("inf"))
    bound = rtol * wrong.double().abs() + torch.as_tensor(slack, dtype=torch.float64, device=diff.device)
    return bool((diff <= bound).all())


def expect_unchanged(before, after, name, function, hint=None):
    """Fail unless the argument `name` was left as it was by the call of `function`: its values (NaN
    equal to NaN), shape, dtype and strides, as Student.with_inputs reads them back (an argument
    crosses as a dense tensor: one left with other strides is no longer contiguous)."""
    expected = f"{name} unchanged by {function}"
    if isinstance(after, torch.Tensor) and (after.shape != before.shape or after.dtype != before.dtype):
        what = f"shape {tuple(before.shape)} to {tuple(after.shape)}" if after.shape != before.shape \
            else f"{before.dtype} to {after.dtype}"
        raise CheckFailed(expected, f"{name} was changed in place from {what}", RESHAPED.format(name=name))
    if isinstance(after, torch.Tensor) and not after.is_contiguous():
        raise CheckFailed(expected, f"{name}'s strides were changed in place, to {after.stride()}",
                          RESHAPED.format(name=name))
    same = isinstance(after, torch.Tensor) and torch.equal(before.cpu().nan_to_num(), after.cpu().nan_to_num()) \
        and torch.equal(before.cpu().isnan(), after.cpu().isnan())
    expect(same, expected, f"{name} was modified", hint)


RESHAPED = ("an in-place method ({name}.unsqueeze_, .resize_, .t_, .as_strided_, or {name}.data = ...) changes the "
            "caller's tensor: {name}[None], {name}.view(...) or {name}.reshape(...) give a new tensor and leave "
            "{name} as it was")


def expect_close(actual, expected, what, atol, hint=None):
    """Fail unless |actual - expected| <= atol everywhere (atol may be a tensor of bounds)."""
    diff = (actual.double() - expected.double()).abs().nan_to_num(nan=float("inf"))
    bound = torch.as_tensor(atol, dtype=torch.float64, device=diff.device).expand_as(diff)
    bad = diff > bound
    if bad.any():
        index = tuple(int(i) for i in bad.nonzero()[0])
        raise CheckFailed(
            f"{what} within {float(bound[index]):.1e} of the right values",
            f"{what}{list(index)} = {float(actual[index]):.6g}, should be {float(expected[index]):.6g} "
            f"({int(bad.sum())} of {bad.numel()} values off, largest error {float(diff.max()):.3g})",
            hint)


def load_beside(check_file, name):
    """The module `name`.py beside (or, as "../public/x", near) a check file: a helper that holds no
    checks. The judge runs pytest with --import-mode=importlib, which puts no check folder on
    sys.path: helpers are loaded from their files, once per process."""
    path = (Path(check_file).parent / f"{name}.py").resolve()
    key = f"grader_lab_helper_{hashlib.sha256(str(path).encode()).hexdigest()[:16]}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path)
        module = sys.modules[key] = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
    return sys.modules[key]
