"""The safe format the judge and the child speak: plain data only, framed over pipes.

Values are trees of None, bool, int, float, str, bytes, list, tuple, dict (str keys) and
plain dense tensors. A frame is a JSON tree followed by the raw bytes of its tensors and bytes
objects, which the tree points into: reading one parses JSON and copies bytes, so it can never
run code in the reader, and it is fast (a grading makes a hundred calls). The judge
additionally passes everything it reads through `sanitize`, which rebuilds the tree from exact
built-in types and fresh tensors, and refuses bytes.

This module is loaded by path in the child, so it imports nothing from the grader.
"""
import json
import math
import os
import socket
import struct
from collections.abc import Callable, Sequence
from typing import Any

import torch

MAX_FRAME = 256 * 2**20        # bytes of a frame, and of the tensors rebuilt from one
SMALL_FRAME = 2**16            # bytes of a frame that carries no tensors (the zygote's replies)
MAX_TREE = 2**20               # bytes of a frame's JSON tree
MAX_RECORDS = 10_000           # records (tensors and bytes objects) of a frame
MAX_STRING = 4000              # characters of a string kept by sanitize; the rest is cut
MAX_DEPTH = 32
MAX_ITEMS = 100_000
BUILD = "__build__"            # a request argument the child constructs from handout code
TENSOR = "__tensor__"          # a tensor with the device it lived on
DEVICE = "__device__"          # a torch.device
SHARED = "__shared__"          # a tensor argument in memory the judge reads back after the call
TUPLE = "__tuple__"            # JSON has lists only
BYTES = "__bytes__"            # a bytes object (the files the judge sends a child)
SHARED_BYTES = 32 * 2**20      # that memory, per child
_HEADER = struct.Struct("<Q")
_DTYPES = {torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
           torch.complex128, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
           torch.bool}
_DTYPE_NAMES = {str(dtype).removeprefix("torch."): dtype for dtype in _DTYPES}


class WireError(Exception):
    """What came over the wire is not plain data."""


def build(factory: str, *args: Any, **kwargs: Any) -> dict:
    """Ask the child to call `factory` ("module:function" of the handout) and pass the result."""
    return {BUILD: factory, "args": list(args), "kwargs": kwargs}


def encode(value: Any, depth: int = 0) -> Any:
    """Turn a value into the wire's plain tree; dataclasses and pydantic models become dicts."""
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
        tensor = torch.Tensor.as_subclass(value.detach(), torch.Tensor)
        return {TENSOR: tensor.cpu().clone(), "device": str(tensor.device)}
    if isinstance(value, (list, tuple)):
        items = [encode(v, depth + 1) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {str(k): encode(v, depth + 1) for k, v in value.items()}
    if hasattr(value, "model_dump"):                       # pydantic model
        return encode(value.model_dump(), depth + 1)
    if hasattr(value, "__dataclass_fields__"):
        return encode({f: getattr(value, f) for f in value.__dataclass_fields__}, depth + 1)
    if hasattr(value, "item") and hasattr(value, "dtype"):  # numpy scalar
        return encode(value.item(), depth + 1)
    raise WireError(f"a {type(value).__name__}, which is not plain data "
                    "(tensors, numbers, strings, lists, dicts, dataclasses)")


def dumps(value: Any) -> bytes:
    """A frame's body: the JSON tree's length, the tree, then the bytes its records point into."""
    blob = bytearray()
    try:
        tree = json.dumps(_to_json(value, blob, 0), separators=(",", ":")).encode()
    except (TypeError, ValueError) as error:    # e.g. an int of more than 4300 digits
        raise WireError(f"not plain data ({error})") from None
    return _HEADER.pack(len(tree)) + tree + blob


def _to_json(value, blob, depth):
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply")
    if isinstance(value, torch.Tensor):
        data = value.detach().resolve_conj().resolve_neg().cpu().contiguous().reshape(-1)
        record = _record(blob, data.view(torch.uint8).numpy().tobytes() if data.numel() else b"")
        record.update(dtype=str(data.dtype).removeprefix("torch."), shape=list(value.shape))
        return {TENSOR: record}
    if isinstance(value, (bytes, bytearray)):
        return {BYTES: _record(blob, value)}
    if isinstance(value, tuple):
        return {TUPLE: [_to_json(v, blob, depth + 1) for v in value]}
    if isinstance(value, list):
        return [_to_json(v, blob, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v, blob, depth + 1) for k, v in value.items()}
    return value


def _record(blob, data):
    """Append `data` to the blob; where it went."""
    record = {"at": len(blob), "size": len(data)}
    blob += data
    return record


def loads(data: bytes) -> Any:
    """Read a frame's body without running code; raises WireError on anything odd.

    The tree is at most MAX_TREE bytes, its records at most MAX_RECORDS, and what they point to
    inside the body, together, at most the body's own size: a frame unpacks to no more than
    was sent.
    """
    if len(data) < _HEADER.size:
        raise WireError("unreadable data (a frame too short)")
    (size,) = _HEADER.unpack_from(data)
    if size > min(MAX_TREE, len(data) - _HEADER.size):
        raise WireError("unreadable data (a tree too large, or cut)")
    blob = memoryview(data)[_HEADER.size + size:]
    try:
        tree = json.loads(bytes(data[_HEADER.size:_HEADER.size + size]))
    except (ValueError, RecursionError):
        raise WireError("unreadable data (not a frame of plain data)") from None
    return _refusing(_from_json, tree, blob, 0, {"records": 0, "bytes": 0})


def _refusing(read, *args):
    """read(*args), with whatever it raises on a crafted value (torch's errors on absurd shapes
    or devices, say) turned into WireError: the reader never lets another exception out."""
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
    """The bytes a record points to, within the frame and its budget of records and bytes."""
    if type(record) is not dict or type(record.get("at")) is not int or type(record.get("size")) is not int:
        raise WireError("unreadable data (a malformed record)")
    at, size = record["at"], record["size"]
    budget["records"] += 1
    budget["bytes"] += size
    if budget["records"] > MAX_RECORDS or budget["bytes"] > len(blob):
        raise WireError(f"unreadable data (records of more than the frame's {len(blob)} bytes in all)")
    if at < 0 or size < 0 or at + size > len(blob):
        raise WireError("unreadable data (a record outside its frame)")
    return blob[at:at + size]


def _tensor_from(record, blob, budget):
    """A fresh tensor of the record's dtype and shape, from exactly the bytes it needs."""
    span = _span(record, blob, budget)
    dtype, shape = _DTYPE_NAMES.get(str(record.get("dtype"))), record.get("shape")
    if dtype is None or type(shape) is not list or len(shape) > MAX_DEPTH or \
            any(type(n) is not int or n < 0 for n in shape):
        raise WireError("a tensor that is not a plain dense tensor")
    if math.prod(shape) * dtype.itemsize != len(span):
        raise WireError(f"a tensor of shape {shape[:8]} that does not match its {len(span)} bytes")
    if not len(span):
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(span), dtype=dtype).reshape(shape)


def sanitize(value: Any, device: str | torch.device | None = None) -> Any:
    """Rebuild a decoded tree from exact built-in types and fresh tensors, within budgets of
    depth, items and tensor bytes (a crafted frame can claim huge shapes over tiny storage).

    The judge passes its grading `device`: tensors the child had on that kind of device come
    back on it, all others on the CPU. The child passes None: tensors go where the judge had them.
    """
    return _refusing(_sanitize, value, device, 0, {"items": 0, "bytes": 0})


def _sanitize(value, device, depth, budget):
    budget["items"] += 1
    if depth > MAX_DEPTH or budget["items"] > MAX_ITEMS:
        raise WireError("the value is too deep or too large")
    if type(value) is str:
        return str(value[:MAX_STRING]) + (" [... cut]" if len(value) > MAX_STRING else "")
    if value is None or type(value) in (bool, int, float):
        return type(value)(value) if value is not None else None
    if type(value) is dict and set(value) == {TENSOR, "device"}:
        return _tensor(value[TENSOR], value["device"], device, budget)
    if type(value) is dict and set(value) == {DEVICE}:
        try:
            return torch.device(value[DEVICE])
        except (RuntimeError, TypeError, ValueError):
            raise WireError(f"an unknown device {str(value[DEVICE])[:40]!r}") from None
    if type(value) is dict:
        return {str(k): _sanitize(v, device, depth + 1, budget) for k, v in value.items()
                if type(k) is str}
    if type(value) in (list, tuple):
        items = [_sanitize(v, device, depth + 1, budget) for v in value]
        return items if type(value) is list else tuple(items)
    raise WireError(f"unexpected {type(value).__name__} in the data")


def _tensor(tensor, claimed, device, budget):
    if type(tensor) is not torch.Tensor or tensor.layout != torch.strided \
            or tensor.dtype not in _DTYPES or type(claimed) is not str:
        raise WireError("a tensor that is not a plain dense tensor")
    budget["bytes"] += tensor.numel() * tensor.element_size()
    if budget["bytes"] > MAX_FRAME:
        raise WireError(f"tensors of more than {MAX_FRAME} bytes in all")
    kind = claimed.split(":")[0]
    if kind not in ("cpu", "cuda"):
        raise WireError(f"a tensor on an unexpected device {claimed[:40]!r}")
    plain = torch.empty(tensor.shape, dtype=tensor.dtype)
    try:
        plain.copy_(tensor)
    except (RuntimeError, NotImplementedError):
        raise WireError("a tensor without readable data") from None
    if device is None:
        return plain.to(claimed)
    return plain.to(device) if kind == torch.device(device).type else plain


def frame(value: Any) -> bytes:
    """One frame's bytes: a length header, then its body."""
    data = dumps(value)
    return _HEADER.pack(len(data)) + data


def send(fd: int, value: Any) -> None:
    """Write one frame to a (blocking) file descriptor."""
    write_all(fd, frame(value))


def recv(fd: int, wait: Callable[[int], None] | None = None, limit: int = MAX_FRAME) -> Any:
    """Read one frame; `wait(fd)` runs before each read (it may block, or raise to give up)."""
    header = _read_exact(fd, _HEADER.size, wait)
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise WireError(f"an answer of {size} bytes, over the limit of {limit}")
    return loads(_read_exact(fd, size, wait))


def send_with_fds(sock: socket.socket, value: Any, fds: Sequence[int] = ()) -> None:
    """Write one frame to a Unix socket, handing over file descriptors with its header."""
    data = dumps(value)
    socket.send_fds(sock, [_HEADER.pack(len(data))], list(fds))
    sock.sendall(data)


def recv_with_fds(sock: socket.socket, limit: int = MAX_FRAME) -> tuple[Any, list[int]]:
    """Read one frame from a Unix socket: (value, file descriptors handed over)."""
    header, fds, _, _ = socket.recv_fds(sock, _HEADER.size, 8)
    if not header:
        raise EOFError("the channel closed")
    while len(header) < _HEADER.size:
        more = sock.recv(_HEADER.size - len(header))
        if not more:
            raise EOFError("the channel closed")
        header += more
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise WireError(f"a frame of {size} bytes, over the limit of {limit}")
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the channel closed")
        chunks.append(chunk)
        left -= len(chunk)
    return loads(b"".join(chunks)), fds


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd, size, wait):
    chunks, left = [], size
    while left:
        if wait:
            wait(fd)
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the channel closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
