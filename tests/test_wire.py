"""The wire between judge and child carries plain data and nothing that runs."""
import io
import json
import os
import pickle
import struct

import pytest
import torch

from grader.judge import wire


def roundtrip(value, device=None):
    return wire.sanitize(wire.loads(wire.dumps(wire.encode(value))), device)


def test_plain_values_roundtrip():
    value = {"a": [1, 2.5, None, True, "x"], "b": (torch.arange(3), {"c": torch.ones(2, 2)}),
             "d": torch.device("cpu")}
    back = roundtrip(value)
    assert back["a"] == [1, 2.5, None, True, "x"] and isinstance(back["b"], tuple)
    assert torch.equal(back["b"][0], torch.arange(3)) and back["d"] == torch.device("cpu")


def test_dataclasses_and_pydantic_become_dicts():
    from dataclasses import dataclass

    from pydantic import BaseModel

    @dataclass
    class Run:
        loss: float
        weights: dict

    class Summary(BaseModel):
        gap: float

    back = roundtrip([Run(0.5, {"w": torch.zeros(1)}), Summary(gap=1.0)])
    assert back[0]["loss"] == 0.5 and torch.equal(back[0]["weights"]["w"], torch.zeros(1))
    assert back[1] == {"gap": 1.0}


def test_objects_that_are_not_data_are_refused():
    with pytest.raises(wire.WireError, match="not plain data"):
        wire.encode(object())
    with pytest.raises(wire.WireError, match="nested too deeply"):
        deep = []
        for _ in range(100):
            deep = [deep]
        wire.encode(deep)


class Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/wire-test-was-pwned",))


def test_a_pickle_that_runs_code_is_refused_unrun(tmp_path):
    buffer = io.BytesIO()
    torch.save({"value": Boom()}, buffer)           # what a hostile child could send
    with pytest.raises(wire.WireError, match="unreadable"):
        wire.loads(buffer.getvalue())
    with pytest.raises(wire.WireError):
        wire.loads(pickle.dumps(Boom()))
    assert not os.path.exists("/tmp/wire-test-was-pwned")


def test_tensor_subclasses_and_odd_layouts_are_refused():
    class Sneaky(torch.Tensor):
        pass

    sneaky = {wire.TENSOR: torch.zeros(2).as_subclass(Sneaky), "device": "cpu"}
    with pytest.raises(wire.WireError, match="plain dense"):
        wire.sanitize(sneaky)
    sparse = {wire.TENSOR: torch.eye(2).to_sparse(), "device": "cpu"}
    with pytest.raises(wire.WireError, match="plain dense"):
        wire.sanitize(sparse)
    with pytest.raises(wire.WireError, match="unexpected device"):
        wire.sanitize({wire.TENSOR: torch.zeros(1), "device": "meta"})
    with pytest.raises(wire.WireError, match="unknown device"):
        wire.sanitize({wire.DEVICE: "bogus"})


def crafted(tree, blob=b""):
    """A frame's body as a hostile child could write it."""
    data = json.dumps(tree).encode()
    return struct.pack("<Q", len(data)) + data + blob


def test_a_huge_shape_over_tiny_storage_is_refused():
    huge = {wire.TENSOR: {"at": 0, "size": 8, "dtype": "float64", "shape": [2**40]}}    # 8 bytes
    with pytest.raises(wire.WireError, match="does not match its 8 bytes"):
        wire.loads(crafted(huge, bytes(8)))
    with pytest.raises(wire.WireError, match="plain dense"):
        wire.loads(crafted({wire.TENSOR: {"at": 0, "size": 8, "dtype": "object", "shape": [1]}}, bytes(8)))


def test_records_cannot_add_up_past_their_frame():
    same = {wire.TENSOR: {"at": 0, "size": 2**20, "dtype": "uint8", "shape": [2**20]}}
    with pytest.raises(wire.WireError, match="more than the frame's"):
        wire.loads(crafted([same] * 8, bytes(2**20)))                   # 8 MiB from 1 MiB
    with pytest.raises(wire.WireError, match="outside its frame"):
        wire.loads(crafted({wire.BYTES: {"at": 4, "size": 8}}, bytes(10)))
    with pytest.raises(wire.WireError, match="outside its frame"):
        wire.loads(crafted({wire.BYTES: {"at": -4, "size": 2}}, bytes(10)))


def test_malformed_frames_are_refused():
    deep = b"[" * 100_000 + b"]" * 100_000
    for body in (b"", b"\x05", struct.pack("<Q", 2**40) + b"{}", crafted({"a": 1})[:-1],
                 struct.pack("<Q", 8) + b"{'x': 1}", crafted({wire.BYTES: {"at": "0", "size": 1}}, b"x"),
                 struct.pack("<Q", len(deep)) + deep, crafted(json.loads("[" * 100 + "]" * 100))):
        with pytest.raises(wire.WireError, match="unreadable|deeply"):
            wire.loads(body)
    with pytest.raises(wire.WireError, match="too large"):
        wire.loads(crafted(["x" * wire.MAX_TREE]))


def test_bytes_go_to_the_child_but_never_back_to_the_judge():
    files = {"positions.py": b"\x00\xff code", "empty.py": b""}
    assert wire.loads(wire.dumps({"files": files})) == {"files": files}
    with pytest.raises(wire.WireError, match="unexpected bytes"):
        wire.sanitize(wire.loads(wire.dumps(files)))


def test_numpy_scalars_become_plain_numbers():
    import numpy

    back = roundtrip({"gap": numpy.float64(2.5), "n": numpy.int64(3), "s": numpy.str_("x")})
    assert back == {"gap": 2.5, "n": 3, "s": "x"} and type(back["gap"]) is float


def test_encoding_strips_subclasses():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    back = roundtrip(torch.zeros(2).as_subclass(Liar))
    assert type(back) is torch.Tensor


def test_frames_over_a_pipe_and_the_size_limit():
    read_fd, write_fd = os.pipe()
    wire.send(write_fd, {"x": torch.ones(3)})
    assert torch.equal(wire.recv(read_fd)["x"], torch.ones(3))
    wire.send(write_fd, torch.zeros(1000))
    with pytest.raises(wire.WireError, match="over the limit"):
        wire.recv(read_fd, limit=100)
    os.close(write_fd)
    os.close(read_fd)


def test_a_closed_channel_is_eof():
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"\x05\x00")
    os.close(write_fd)
    with pytest.raises(EOFError):
        wire.recv(read_fd)
    os.close(read_fd)


def test_cpu_grading_keeps_child_cuda_claims_on_cpu():
    back = wire.sanitize({wire.TENSOR: torch.ones(1), "device": "cuda:0"}, "cpu")
    assert back.device.type == "cpu"
