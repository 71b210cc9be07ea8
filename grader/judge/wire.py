"""The safe format the judge and the child speak: plain data only, framed over pipes.

Values are trees of None, bool, int, float, str, list, tuple, dict (str keys) and plain
tensors. Frames are `torch.save` bytes read back with `weights_only=True`, so a frame can
never run code in the reader. The judge additionally passes everything it reads through
`sanitize`, which rebuilds the tree from exact built-in types and fresh tensors.

This module is loaded by path in the child, so it imports nothing from the grader.
"""
import io
import os
import socket
import struct
import warnings
import zipfile
from collections.abc import Callable, Sequence
from typing import Any

import torch

MAX_FRAME = 256 * 2**20        # bytes of a frame, and of the tensors rebuilt from one
SMALL_FRAME = 2**16            # bytes of a frame that carries no tensors (the zygote's replies)
MAX_PICKLE = 2**20             # bytes of a frame's pickle: torch reads it in Python, ~1 s per MB
MAX_RECORDS = 10_000           # records (tensors) of a frame
MAX_STRING = 4000              # characters of a string kept by sanitize; the rest is cut
MAX_DEPTH = 32
MAX_ITEMS = 100_000
BUILD = "__build__"            # a request argument the child constructs from handout code
TENSOR = "__tensor__"          # a tensor with the device it lived on
DEVICE = "__device__"          # a torch.device
SHARED = "__shared__"          # a tensor argument in memory the judge reads back after the call
SHARED_BYTES = 32 * 2**20      # that memory, per child
_HEADER = struct.Struct("<Q")
_DTYPES = {torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
           torch.complex128, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
           torch.bool}


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


def dumps(value):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    """Read a frame's bytes without running code; raises WireError on anything odd.

    A frame must be torch.save's zip with stored (uncompressed) records adding up to at most
    MAX_FRAME, so that what it unpacks to is no larger than what was sent.
    """
    try:
        records = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError):
        raise WireError("unreadable data (not a torch.save frame)") from None
    if any(r.compress_type != zipfile.ZIP_STORED for r in records) or len(records) > MAX_RECORDS or \
            sum(r.file_size for r in records) > MAX_FRAME or \
            any(r.filename.endswith(".pkl") and r.file_size > MAX_PICKLE for r in records):
        raise WireError("unreadable data (compressed or oversized records)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # torch's notes on odd pickles: refused anyway
            return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception:  # the unpickler's refusals come in many types
        raise WireError("unreadable data (objects other than plain data)") from None


def sanitize(value: Any, device: str | torch.device | None = None) -> Any:
    """Rebuild a decoded tree from exact built-in types and fresh tensors, within budgets of
    depth, items and tensor bytes (a crafted frame can claim huge shapes over tiny storage).

    The judge passes its grading `device`: tensors the child had on that kind of device come
    back on it, all others on the CPU. The child passes None: tensors go where the judge had them.
    """
    return _sanitize(value, device, 0, {"items": 0, "bytes": 0})


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
        except (RuntimeError, TypeError):
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
    """One frame's bytes: a length header, then torch.save's."""
    data = dumps(value)
    return _HEADER.pack(len(data)) + data


def send(fd: int, value: Any) -> None:
    """Write one frame to a (blocking) file descriptor."""
    _write_all(fd, frame(value))


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


def _write_all(fd, data):
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
