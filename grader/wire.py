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

import torch

MAX_FRAME = 256 * 2**20        # bytes; the judge refuses larger answers
MAX_DEPTH = 32
MAX_ITEMS = 100_000
MAX_ELEMENTS = 2**26           # per tensor: a crafted frame can claim a huge shape over tiny storage
BUILD = "__build__"            # a request argument the child constructs from handout code
TENSOR = "__tensor__"          # a tensor with the device it lived on
DEVICE = "__device__"          # a torch.device
_HEADER = struct.Struct("<Q")
_DTYPES = {torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
           torch.complex128, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
           torch.bool}


class WireError(Exception):
    """What came over the wire is not plain data."""


def build(factory, *args, **kwargs):
    """Ask the child to call `factory` ("module:function" of the handout) and pass the result."""
    return {BUILD: factory, "args": list(args), "kwargs": kwargs}


def encode(value, depth=0):
    """Turn a value into the wire's plain tree; dataclasses and pydantic models become dicts."""
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
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


def loads(data):
    """Read a frame's bytes without running code; raises WireError on anything odd."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # torch's notes on odd pickles: refused anyway
            return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as error:  # the unpickler's refusals come in many types
        raise WireError(f"unreadable data ({type(error).__name__}: {str(error)[:200]})") from None


def sanitize(value, device=None, depth=0, count=None):
    """Rebuild a decoded tree from exact built-in types and fresh tensors.

    The judge passes its grading `device`: tensors the child had on that kind of device come
    back on it, all others on the CPU. The child passes None: tensors go where the judge had them.
    """
    count = count if count is not None else [0]
    count[0] += 1
    if depth > MAX_DEPTH or count[0] > MAX_ITEMS:
        raise WireError("the value is too deep or too large")
    if value is None or type(value) in (bool, int, float, str):
        return type(value)(value) if value is not None else None
    if type(value) is dict and set(value) == {TENSOR, "device"}:
        return _tensor(value[TENSOR], value["device"], device)
    if type(value) is dict and set(value) == {DEVICE} and type(value[DEVICE]) is str:
        return torch.device(value[DEVICE])
    if type(value) is dict:
        return {str(k): sanitize(v, device, depth + 1, count) for k, v in value.items()
                if type(k) is str}
    if type(value) in (list, tuple):
        items = [sanitize(v, device, depth + 1, count) for v in value]
        return items if type(value) is list else tuple(items)
    raise WireError(f"unexpected {type(value).__name__} in the data")


def _tensor(tensor, claimed, device):
    if type(tensor) is not torch.Tensor or tensor.layout != torch.strided \
            or tensor.dtype not in _DTYPES or type(claimed) is not str:
        raise WireError("a tensor that is not a plain dense tensor")
    if tensor.numel() > MAX_ELEMENTS:
        raise WireError(f"a tensor of {tensor.numel()} elements, over the limit of {MAX_ELEMENTS}")
    kind = claimed.split(":")[0]
    if kind not in ("cpu", "cuda"):
        raise WireError(f"a tensor on an unexpected device {claimed!r}")
    plain = torch.empty(tensor.shape, dtype=tensor.dtype)
    plain.copy_(tensor)
    if device is None:
        return plain.to(claimed)
    return plain.to(device) if kind == torch.device(device).type else plain


def send(fd, value):
    """Write one frame (length header + bytes) to a file descriptor."""
    data = dumps(value)
    _write_all(fd, _HEADER.pack(len(data)) + data)


def recv(fd, wait=None, limit=MAX_FRAME):
    """Read one frame; `wait(fd)` runs before each read (it may block, or raise to give up)."""
    header = _read_exact(fd, _HEADER.size, wait)
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise WireError(f"an answer of {size} bytes, over the limit of {limit}")
    return loads(_read_exact(fd, size, wait))


def send_with_fds(sock, value, fds=()):
    """Write one frame to a Unix socket, handing over file descriptors with its header."""
    data = dumps(value)
    socket.send_fds(sock, [_HEADER.pack(len(data))], list(fds))
    sock.sendall(data)


def recv_with_fds(sock, limit=MAX_FRAME):
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
