"""The meta device, played on the CPU for a child's call that asks for it: whether a function
honours `device=` and keeps its result where x is, without torch's meta kernels (the first op on the
real meta device imports torch._dynamo and sympy, over 800 modules and a CPU-second).

A call whose arguments name the meta device (a meta tensor, "meta", torch.device("meta")) runs
under a TorchFunctionMode. Its meta tensors become CPU tensors of zeros marked as meta; `device=`
meta becomes the CPU and marks what comes out, as does an op on a marked tensor; a marked tensor
says it is on meta (.device, .is_meta). An op that mixes marked tensors with unmarked ones (but a
0-dim CPU scalar) is refused as a device other than the CPU refuses it: "Expected all tensors to be
on the same device" (Mixed). Moves are not mixing (.to, copy_, type_as, indexing, torch.tensor): .cpu() and
.to("cpu") give an unmarked copy, as they would from CUDA. Values may be read (a device has them):
only where a tensor is, is the question. Marked tensors in the answer cross the wire as meta ones.
An answer with a tensor off the played device is asked for again on the real one (`lost`), as is a
call the played device refused as mixed: tensors it never saw made (torch.func.vmap's batched
tensors carry no mark) are no device slip until the real meta device says so.
"""
import contextlib

import torch
from torch.overrides import TorchFunctionMode

MARK = "_grader_on_meta"            # an attribute of a tensor played on the meta device (wire.PLAYED)
CPU = torch.device("cpu")
Tensor = torch.Tensor
MOVES = {Tensor.to, Tensor.copy_, Tensor.type_as, Tensor.__getitem__, Tensor.__setitem__, Tensor.new_tensor,
         torch.tensor, torch.as_tensor, Tensor.cpu}
MIXED = "Expected all tensors to be on the same device, but found at least two devices, meta and cpu!"


class Mixed(RuntimeError):
    """The played device's refusal of an op that mixes marked tensors with unmarked ones (MIXED)."""


def on_meta(value):
    return isinstance(value, Tensor) and value.__dict__.get(MARK, False)


def names_meta(device):
    """Whether an argument names the meta device."""
    if isinstance(device, torch.device):
        return device.type == "meta"
    return isinstance(device, str) and device.split(":")[0] == "meta"


def _leaves(value, depth=0):
    """The items of nested lists, tuples and dicts (arguments, results)."""
    if depth < 4 and isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item, depth + 1)]
    if depth < 4 and isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item, depth + 1)]
    return [value]


def _mark(value, unmarked):
    """`value` with its tensors marked; a tensor of its own where it is one of `unmarked` (moved)."""
    if isinstance(value, Tensor) and any(value is t for t in unmarked):
        value = value.clone()
    for leaf in _leaves(value):
        if isinstance(leaf, Tensor):
            leaf.__dict__[MARK] = True
    return value


def _unmarked_copy(value, marked):
    """`value` as a CPU tensor of its own, not on meta (the result of moving a marked tensor)."""
    return value.clone() if any(value is t for t in marked) else value


class PlayedMeta(TorchFunctionMode):
    """While active, the meta device is the CPU with marks (see the module's docstring)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.device:        # torch.device("meta") names meta for the calls it is handed to
            return func(*args, **kwargs)
        getter = getattr(func, "__self__", None) if getattr(func, "__name__", "") == "__get__" else None
        if getter is not None and args and on_meta(args[0]):
            if getter is Tensor.device:
                return torch.device("meta")
            if getter is Tensor.is_meta:
                return True
            if getter is Tensor.is_cpu:
                return False
        asked = [a for a in [*args, *kwargs.values()] if names_meta(a)]
        if asked:
            args = tuple(CPU if names_meta(a) else a for a in args)
            kwargs = {k: CPU if names_meta(v) else v for k, v in kwargs.items()}
        tensors = [t for t in _leaves((args, kwargs)) if isinstance(t, Tensor)]
        marked = [t for t in tensors if on_meta(t)]
        unmarked = [t for t in tensors if not on_meta(t)]
        if marked and func not in MOVES and any(t.dim() for t in unmarked):
            raise Mixed(MIXED)
        result = func(*args, **kwargs)
        if not any(isinstance(leaf, Tensor) for leaf in _leaves(result)):
            return result
        target = self._target(func, args, kwargs, asked)
        if target is None:              # in place (copy_), or x itself: where it was
            return _mark(result, unmarked) if marked and not any(result is t for t in tensors) else result
        if target:
            return _mark(result, unmarked)
        return _unmarked_copy(result, marked) if isinstance(result, Tensor) else result

    @staticmethod
    def _target(func, args, kwargs, asked):
        """Whether the result goes to meta (True) or elsewhere (False) by a device the call names,
        or None when it names none: then it is where its inputs are."""
        if asked:
            return True
        if func in (Tensor.cpu, Tensor.cuda):
            return False
        if func is Tensor.type_as and len(args) > 1:
            return on_meta(args[1])
        devices = [kwargs["device"]] if kwargs.get("device") is not None else []
        if func is Tensor.to:
            devices += [a for a in args[1:] if isinstance(a, (str, int, torch.device)) and not isinstance(a, bool)]
            other = [a for a in [*args[1:], kwargs.get("other")] if isinstance(a, Tensor)]
            if other:
                return on_meta(other[0])
        return False if devices else None


def lost(value):
    """Whether a played call's answer holds a tensor off the meta device: a function that ignores
    `device=`, or one whose ops the mode never saw (TorchScript runs them in C++). The call is then
    made again on the real meta device, whose answer stands where it gives one (grader/judge/child.py:
    on_real_meta): code that is right pays nothing, and a slip pays torch's meta kernels, once per child."""
    return any(isinstance(leaf, Tensor) and not on_meta(leaf) for leaf in _leaves(value))


def asks_for_meta(value):
    """Whether a call's arguments name the meta device anywhere (a tensor the judge sent there with
    its values, wire.valued_meta, is one played there already)."""
    return any(leaf.device.type == "meta" or on_meta(leaf) if isinstance(leaf, Tensor) else names_meta(leaf)
               for leaf in _leaves(value))


def real(value):
    """Arguments with each tensor played on meta made a real meta tensor, values and all gone (the
    call made again on the real meta device)."""
    return _each_tensor(value, lambda t: torch.empty(t.shape, dtype=t.dtype, device="meta") if on_meta(t) else t)


def _each_tensor(value, change):
    """`value` with each tensor in its nested lists, tuples and dicts `change`d (arguments)."""
    if isinstance(value, Tensor):
        return change(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_each_tensor(v, change) for v in value)
    if isinstance(value, dict):
        return {k: _each_tensor(v, change) for k, v in value.items()}
    return value


def _played(value):
    """Arguments with each real meta tensor replaced by a marked CPU tensor of zeros (one played with
    the judge's values already is kept)."""
    def zeros(tensor):
        if on_meta(tensor) or tensor.device.type != "meta":
            return tensor
        played = torch.zeros(tensor.shape, dtype=tensor.dtype)
        played.__dict__[MARK] = True
        return played
    return _each_tensor(value, zeros)


@contextlib.contextmanager
def played(args, kwargs):
    """(args, kwargs) to call with: under PlayedMeta while the block runs where they name the meta
    device (its answer encoded inside the block crosses as meta tensors), else as they are."""
    if not asks_for_meta([args, kwargs]):
        yield args, kwargs
        return
    with PlayedMeta():
        yield _played(args), _played(kwargs)
