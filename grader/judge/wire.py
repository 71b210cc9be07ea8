"""The safe format the judge and the child speak: plain data only, framed over pipes. Values are
trees of None, bool, int, float, str, bytes, list, tuple, dict (str keys) and tensors, each a dense
copy of its values whatever its strides (a meta tensor: its dtype and shape). A frame is a JSON tree,
then the raw bytes of its tensors and bytes at aligned spans the tree points to: reading one runs no
code, lays each tensor over its span (one copy) and is fast. The judge then rebuilds what it read
from exact types (`sanitize`), refusing bytes. Loaded by path in the child: imports nothing of ours.
"""
import json
import math
import mmap
import os
import socket
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch

Bytes = bytes | bytearray | memoryview
MAX_FRAME = 256 * 2**20        # bytes of any frame
SMALL_FRAME = 2**16            # bytes of a frame that carries no tensors (the zygote's replies)
MAPPED = 2**20                 # bytes of a frame read into memory of its own (an mmap); smaller: a bytearray
MAX_TREE = 2**20               # bytes of a frame's JSON tree
MAX_RECORDS = 10_000           # records (tensors and bytes objects) of a frame
MAX_STRING = 4000              # characters of a string kept by sanitize; the rest is cut
MAX_DEPTH = 32
MAX_ITEMS = 100_000
ALIGN = 64                     # records start at multiples of this in a frame's body
SLACK = MAX_TREE + ALIGN * MAX_RECORDS      # a frame's bytes besides its records': tree, padding
BUILD = "__build__"            # a request argument the child constructs from handout code
TENSOR = "__tensor__"          # a tensor with the device it lived on
META = "__meta__"              # a tensor on the meta device: its dtype and shape, no values
DEVICE = "__device__"          # a torch.device
SHARED = "__shared__"          # a tensor argument in memory the judge reads back after the call
VALUES = "_grader_values"       # what a meta tensor of the judge's holds for the child (valued_meta)
PLAYED = "_grader_on_meta"      # a CPU tensor played on the meta device (meta_device.MARK)
TUPLE = "__tuple__"            # JSON has lists only
BYTES = "__bytes__"            # a bytes object (the files the judge sends a child)
SHARED_BYTES = 32 * 2**20      # that memory, per child
_HEADER = struct.Struct("<Q")
_DTYPES = {torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
           torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool}
_DTYPE_NAMES = {str(dtype).removeprefix("torch."): dtype for dtype in _DTYPES}


class WireError(Exception):
    """What came over the wire is not plain data."""


class GraderFault(Exception):
    """The wire could not carry a value that is plain data: the grader's failure, not the learner's."""


def build(factory: str, *args: Any, **kwargs: Any) -> dict:   # the child calls "module:function"
    return {BUILD: factory, "args": list(args), "kwargs": kwargs}


def encode(value: Any, limit: int = MAX_FRAME) -> Any:
    """A value as the wire's plain tree, at most `limit` bytes of tensors (dense CPU copies);
    dataclasses and pydantic models as dicts, numpy scalars as numbers."""
    return _encode(value, 0, {"bytes": 0, "limit": limit})


def _encode(value, depth, budget):
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply")
    for kind in (bool, int, float, str):    # exact types: numpy's float64 is a float subclass
        if isinstance(value, kind):
            return kind(value)
    if value is None:
        return None
    if isinstance(value, torch.device):
        return {DEVICE: str(value)}
    if isinstance(value, torch.Tensor):
        return _dense(value, budget)
    numpy = sys.modules.get("numpy")        # none of its values exist unless it was imported
    if numpy and isinstance(value, numpy.ndarray):
        raise WireError(f"a numpy array of shape {value.shape}, where a tensor or a list is asked for: "
                        "return torch.from_numpy(array), or array.tolist()")
    if numpy and isinstance(value, numpy.generic):
        return _encode(value.item(), depth + 1, budget)
    if isinstance(value, (list, tuple)):
        items = [_encode(v, depth + 1, budget) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {str(k): _encode(v, depth + 1, budget) for k, v in value.items()}
    if hasattr(value, "model_dump"):                       # pydantic model
        return _encode(value.model_dump(), depth + 1, budget)
    if hasattr(value, "__dataclass_fields__"):
        return _encode({f: getattr(value, f) for f in value.__dataclass_fields__}, depth + 1, budget)
    raise WireError(f"a {type(value).__name__}, which is not plain data "
                    "(tensors, numbers, strings, lists, dicts, dataclasses)")


def _dense(value, budget):
    """A tensor as the wire carries it: a fresh, dense CPU copy of its values, and its device."""
    plain = type(value) is torch.Tensor
    if not plain:       # a subclass's own code may run here: what it raises is the learner's
        value = torch.Tensor.as_subclass(value.detach(), torch.Tensor)
    device = str(value.device)
    if value.device.type == "meta" and value.layout == torch.strided and value.dtype in _DTYPES:
        values = value.__dict__.get(VALUES) if plain else None
        if not isinstance(values, torch.Tensor):
            return {META: str(value.dtype).removeprefix("torch."), "shape": list(value.shape)}
        value = values              # valued_meta's: its values go with it, to be played on meta
    if value.layout != torch.strided or value.is_nested or value.dtype not in _DTYPES \
            or value.device.type not in ("cpu", "cuda"):
        raise WireError(f"a {value.dtype} tensor ({value.layout}) on {value.device.type}: not plain dense data")
    budget["bytes"] += value.numel() * value.element_size()
    if budget["bytes"] > budget["limit"]:
        raise WireError(f"tensors of more than {budget['limit'] / 2**20:g} MiB in all, over the lab's limit")
    last = value.storage_offset() + sum((n - 1) * s for n, s in zip(value.shape, value.stride()))
    if value.numel() and value.untyped_storage().nbytes() < (last + 1) * value.element_size():
        raise WireError("a tensor whose storage no longer holds its values")
    if value.device.type == "cuda":
        torch.cuda.synchronize(value.device)    # errors of the learner's own kernels surface here
    copy = torch.empty(value.shape, dtype=value.dtype)     # out of memory: the learner's process
    try:
        copy.copy_(value.detach().resolve_conj().resolve_neg())
    except Exception as error:
        if not plain:
            raise WireError(f"a {type(value).__name__} whose values could not be read") from None
        raise GraderFault(f"copying a tensor of strides {value.stride()}: {type(error).__name__}: {error}") from None
    return {TENSOR: copy, "device": device}


def valued_meta(values: torch.Tensor) -> torch.Tensor:
    """A meta tensor of `values`' dtype and shape that takes those values to the child, which plays
    the meta device with them (grader/judge/meta_device.py): code that reads its inputs' values (an
    assert that cos² + sin² = 1) runs there as on any device that has them. To the judge it is a
    meta tensor like any other."""
    tensor = torch.empty(values.shape, dtype=values.dtype, device="meta")
    tensor.__dict__[VALUES] = values.detach().cpu().contiguous()
    return tensor


def dumps(value: Any) -> bytes:         # a frame's body: the tree's length, the tree, the records
    return b"".join(_body(value))


def _body(value):
    """A frame's body as buffers: the tree's length, the tree padded to align, each record's bytes."""
    blob = {"parts": [], "size": 0}
    try:
        tree = json.dumps(_to_json(value, blob, 0), separators=(",", ":")).encode()
    except (TypeError, ValueError) as error:    # e.g. an int of more than 4300 digits
        raise WireError(f"not plain data ({error})") from None
    tree += b" " * (-(_HEADER.size + len(tree)) % ALIGN)
    parts, end = [_HEADER.pack(len(tree)) + tree], 0
    for at, data in blob["parts"]:
        parts += [bytes(at - end), data]
        end = at + data.nbytes
    return parts


def _to_json(value, blob, depth):
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply")
    if isinstance(value, torch.Tensor):
        record = _record(blob, memoryview(raw_bytes(value)))
        record.update(dtype=str(value.dtype).removeprefix("torch."), shape=list(value.shape))
        return {TENSOR: record}
    if isinstance(value, (bytes, bytearray)):
        return {BYTES: _record(blob, memoryview(value))}
    if isinstance(value, tuple):
        return {TUPLE: [_to_json(v, blob, depth + 1) for v in value]}
    if isinstance(value, list):
        return [_to_json(v, blob, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v, blob, depth + 1) for k, v in value.items()}
    return value


def raw_bytes(tensor: torch.Tensor) -> Any:
    """A tensor's values as one run of bytes (a numpy array): its own memory if dense on the CPU, else
    a copy (a one-element tensor may keep any stride through reshape: it is set to 1)."""
    flat = tensor.detach().resolve_conj().resolve_neg().cpu().reshape(-1)
    return flat.as_strided(flat.shape, (1,)).view(torch.uint8).numpy()


def _record(blob, data):       # `data` at the blob's next aligned offset: where it went
    at = -(-blob["size"] // ALIGN) * ALIGN
    blob["parts"].append((at, data))
    blob["size"] = at + data.nbytes
    return {"at": at, "size": data.nbytes}


def loads(data: bytes | bytearray | mmap.mmap) -> Any:
    """Read a frame's body without running code (WireError on anything odd): a tree of at most MAX_TREE
    bytes, at most MAX_RECORDS records, each aligned, in the body, after the one before, so a frame
    unpacks to no more than was sent; each tensor lies over bytes of its own (bytes: copied first)."""
    if len(data) < _HEADER.size:
        raise WireError("unreadable data (a frame too short)")
    (size,) = _HEADER.unpack_from(data)
    if size > min(MAX_TREE, len(data) - _HEADER.size):
        raise WireError("unreadable data (a tree too large, or cut)")
    blob = memoryview(bytearray(data) if isinstance(data, bytes) else data)[_HEADER.size + size:]
    try:
        tree = json.loads(bytes(data[_HEADER.size:_HEADER.size + size]))
    except (ValueError, RecursionError):
        raise WireError("unreadable data (not a frame of plain data)") from None
    return _refusing(_from_json, tree, blob, 0, {"records": 0, "end": 0})


def _refusing(read, *args):     # read(*args); what a crafted value makes torch raise: a WireError
    try:
        return read(*args)
    except WireError:
        raise
    except Exception as error:
        raise WireError(f"unreadable data ({type(error).__name__})") from None


def _from_json(value, blob, depth, budget):
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply")
    if isinstance(value, list):
        return [_from_json(v, blob, depth + 1, budget) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {TUPLE} and isinstance(value[TUPLE], list):
        return tuple(_from_json(v, blob, depth + 1, budget) for v in value[TUPLE])
    if set(value) == {BYTES}:
        return bytes(_span(value[BYTES], blob, budget))
    if set(value) == {TENSOR}:
        return _tensor_from(value[TENSOR], blob, budget)
    return {k: _from_json(v, blob, depth + 1, budget) for k, v in value.items()}


def _span(record, blob, budget):
    """The bytes a record points to: aligned, within the frame, after the last record's."""
    if type(record) is not dict or type(record.get("at")) is not int or type(record.get("size")) is not int:
        raise WireError("unreadable data (a malformed record)")
    at, size = record["at"], record["size"]
    budget["records"] += 1
    if budget["records"] > MAX_RECORDS or at < budget["end"] or at % ALIGN or size < 0 or at + size > len(blob):
        raise WireError(f"unreadable data (over {MAX_RECORDS} records, or one outside its frame's {len(blob)} "
                        "bytes or over another)")
    budget["end"] = at + size
    return blob[at:at + size]


def _tensor_from(record, blob, budget):
    """A tensor of the record's dtype and shape, over exactly the bytes it needs."""
    span = _span(record, blob, budget)
    dtype, shape = _DTYPE_NAMES.get(str(record.get("dtype"))), record.get("shape")
    if dtype is None:
        raise WireError("a tensor that is not a plain dense tensor")
    _shape(shape)
    if math.prod(shape) * dtype.itemsize != len(span):
        raise WireError(f"a tensor of shape {shape[:8]} that does not match its {len(span)} bytes")
    return torch.frombuffer(span, dtype=dtype).view(shape) if len(span) else torch.empty(shape, dtype=dtype)


def _shape(shape):     # a tensor's shape as a frame gives it, checked
    if type(shape) is not list or len(shape) > MAX_DEPTH or any(type(n) is not int or n < 0 for n in shape):
        raise WireError("a tensor that is not a plain dense tensor")
    return shape


def sanitize(value: Any, device: str | torch.device | None = None) -> Any:
    """A decoded tree rebuilt from exact built-in types and plain tensors, within budgets of depth and
    items. Tensors the child had on the kind of the judge's `device` go there, others to the CPU; the
    child passes None: they go, copied, where the judge had them."""
    return _refusing(_sanitize, value, device, 0, {"items": 0})


def _sanitize(value, device, depth, budget):
    budget["items"] += 1
    if depth > MAX_DEPTH or budget["items"] > MAX_ITEMS:
        raise WireError("the value is too deep or too large")
    if type(value) is str:
        return str(value[:MAX_STRING]) + (" [... cut]" if len(value) > MAX_STRING else "")
    if value is None or type(value) in (bool, int, float):
        return type(value)(value) if value is not None else None
    if type(value) is dict and set(value) == {TENSOR, "device"}:
        return _tensor(value[TENSOR], value["device"], device)
    if type(value) is dict and set(value) == {META, "shape"}:
        return torch.empty(_shape(value["shape"]), dtype=_DTYPE_NAMES[value[META]], device="meta")
    if type(value) is dict and set(value) == {DEVICE}:
        try:
            return torch.device(value[DEVICE])
        except (RuntimeError, TypeError, ValueError):
            raise WireError(f"an unknown device {str(value[DEVICE])[:40]!r}") from None
    if type(value) is dict:
        return {str(k): _sanitize(v, device, depth + 1, budget) for k, v in value.items() if type(k) is str}
    if type(value) in (list, tuple):
        items = [_sanitize(v, device, depth + 1, budget) for v in value]
        return items if type(value) is list else tuple(items)
    raise WireError(f"unexpected {type(value).__name__} in the data")


def _tensor(tensor, claimed, device):
    """The tensor on its device; only what `loads` makes (dense, on the CPU, over bytes of its own), not copied."""
    if type(tensor) is not torch.Tensor or tensor.layout != torch.strided or tensor.dtype not in _DTYPES \
            or tensor.device.type != "cpu" or not tensor.is_contiguous() or tensor.is_conj() \
            or tensor.is_neg() or type(claimed) is not str:
        raise WireError("a tensor that is not a plain dense tensor")
    kind = claimed.split(":")[0]
    if kind == "meta" and device is None:       # the child: valued_meta's, played on meta with its values
        played = tensor.clone()
        played.__dict__[PLAYED] = True
        return played
    if kind not in ("cpu", "cuda"):
        raise WireError(f"a tensor on an unexpected device {claimed[:40]!r}")
    if device is None:              # the child: a tensor of its own, that its code may even resize
        return tensor.to(claimed, copy=True)
    return tensor.to(device) if kind == torch.device(device).type else tensor


def frame(value: Any) -> bytes:
    return b"".join(frame_parts(value))     # a length header, then the body


def frame_parts(value: Any) -> list:
    """One frame as buffers to write in turn, its tensors' bytes not copied (see `write_all`)."""
    parts = _body(value)
    return [_HEADER.pack(sum(memoryview(part).nbytes for part in parts)), *parts]


def recv(fd: int, wait: Callable[[int], None] | None = None, limit: int = MAX_FRAME,
         received: Callable[[], None] | None = None) -> Any:
    """One frame: `wait(fd)` before each read (it may block, or raise to give up), `received()` once its
    bytes are in, before parsing; its tensors lie over one buffer, paged in as the bytes come (a
    large frame's an mmap; a small one's a bytearray, cheaper than an mmap of its own)."""
    def read_into(view):
        if wait:
            wait(fd)
        return os.readv(fd, [view])

    (size,) = _HEADER.unpack(_fill(read_into, bytearray(_HEADER.size)))
    if size > limit:
        raise WireError(f"an answer of {size} bytes, over the limit of {limit}")
    data = _fill(read_into, mmap.mmap(-1, size) if size > MAPPED else bytearray(size))
    if received:
        received()
    return loads(data)


def send_with_fds(sock: socket.socket, value: Any, fds: Sequence[int] = ()) -> None:
    """Write one frame to a Unix socket, file descriptors handed over with its header."""
    data = dumps(value)
    socket.send_fds(sock, [_HEADER.pack(len(data))], list(fds))
    sock.sendall(data)


def recv_with_fds(sock: socket.socket, limit: int = MAX_FRAME) -> tuple[Any, list[int]]:
    """Read one frame from a Unix socket: (value, file descriptors handed over)."""
    first, fds, _, _ = socket.recv_fds(sock, _HEADER.size, 8)
    (size,) = _HEADER.unpack(_fill(sock.recv_into, bytearray(first.ljust(_HEADER.size, b"\0")), len(first)))
    if size > limit:
        raise WireError(f"a frame of {size} bytes, over the limit of {limit}")
    return loads(_fill(sock.recv_into, bytearray(size))), fds


def write_all(fd: int, data: Bytes | Sequence[Bytes]) -> None:
    """Write bytes, or a frame's parts in turn, to a blocking file descriptor."""
    for part in [data] if isinstance(data, (bytes, bytearray, memoryview)) else data:
        view = memoryview(part).cast("B")
        while view:
            view = view[os.write(fd, view):]


def _fill(read_into, buffer, done=0):
    """Fill `buffer` from byte `done` on with read_into(view) -> count; EOFError if the channel closes."""
    view = memoryview(buffer)
    while done < len(view):
        got = read_into(view[done:])
        if not got:
            raise EOFError("the channel closed")
        done += got
    return buffer
