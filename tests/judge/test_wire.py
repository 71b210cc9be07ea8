"""The wire between judge and child carries plain data and nothing that runs, every tensor a correct
answer may be, and no more of an answer than the lab allows; the judge holds one copy of it."""
import io
import json
import os
import pickle
import struct
from pathlib import Path

import pytest
import torch
import yaml

from grader.judge import meta_device, wire
from grader.judge.sandbox import CallFailed, Sandbox
from grader.readers.manifest import find_lab


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
    with pytest.raises(wire.WireError, match="unexpected device"):     # a child's claim, to the judge
        wire.sanitize({wire.TENSOR: torch.zeros(1), "device": "meta"}, "cpu")
    with pytest.raises(wire.WireError, match="unexpected device"):
        wire.sanitize({wire.TENSOR: torch.zeros(1), "device": "tpu"})
    with pytest.raises(wire.WireError, match="unknown device"):
        wire.sanitize({wire.DEVICE: "bogus"})


def test_meta_tensors_carry_their_dtype_and_shape_only():
    """What a check of device handling sends and gets back: a meta tensor stays one, both ways."""
    for device in (None, "cpu"):
        back = roundtrip((torch.empty(2, 0, 3, dtype=torch.bfloat16, device="meta"), torch.empty((), device="meta")),
                         device)
        assert [(t.device.type, t.dtype, tuple(t.shape)) for t in back] == \
            [("meta", torch.bfloat16, (2, 0, 3)), ("meta", torch.float32, ())]
    for forged in ({wire.META: "object", "shape": [1]}, {wire.META: "float32", "shape": [-1]},
                   {wire.META: ["float32"], "shape": [1]}, {wire.META: "float32", "shape": [1] * 40}):
        with pytest.raises(wire.WireError):
            wire.sanitize(wire.loads(crafted(forged)))


def test_a_meta_tensor_with_values_takes_them_to_the_child_alone():
    """valued_meta: a meta tensor to the judge, whose values go to the child, played on meta there
    (a CPU tensor of its own, marked); the judge takes no values on meta from a child."""
    values = torch.arange(6.0).view(2, 3).T            # a view: carried as its values
    sent = wire.valued_meta(values)
    assert sent.device.type == "meta" and sent.shape == (3, 2)
    played = roundtrip(sent, None)
    assert played.device.type == "cpu" and played.__dict__ == {wire.PLAYED: True} and torch.equal(played, values)
    assert meta_device.on_meta(played) and meta_device.asks_for_meta([played])
    again = meta_device.real([played, {"cos": played}, 1])
    assert again[0].device.type == "meta" and again[1]["cos"].device.type == "meta" and again[2] == 1
    with pytest.raises(wire.WireError, match="unexpected device"):
        roundtrip(sent, "cpu")
    plain = roundtrip(torch.empty(2, device="meta"), None)
    assert plain.device.type == "meta" and not plain.__dict__


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
    with pytest.raises(wire.WireError, match="over another"):
        wire.loads(crafted([same] * 8, bytes(2**20)))                   # 8 MiB from 1 MiB
    with pytest.raises(wire.WireError, match="outside its frame"):     # a float64 at an odd address
        wire.loads(crafted({wire.TENSOR: {"at": 1, "size": 8, "dtype": "float64", "shape": [1]}}, bytes(16)))
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
    wire.write_all(write_fd, wire.frame({"x": torch.ones(3)}))
    assert torch.equal(wire.recv(read_fd)["x"], torch.ones(3))
    wire.write_all(write_fd, wire.frame(torch.zeros(1000)))
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


# -- every tensor a correct answer may be -----------------------------------------------------------
NUMBERS = torch.arange(24.0).reshape(2, 3, 4)
COMPLEX = torch.polar(torch.ones(5, 3), torch.arange(15.0).reshape(5, 3))
VIEWS = {
    "polar().real, one position: a size-1 dimension of stride 2": torch.polar(torch.ones(1, 1), torch.ones(1, 1)).real,
    "polar().imag": COMPLEX.imag,
    "transposed": NUMBERS.transpose(0, 2),
    "sliced with steps": NUMBERS[:, ::2, 1::2],
    "expanded (stride 0)": torch.arange(3.0).expand(4, 3),
    "a broadcast scalar": torch.tensor(1.5).expand(1, 1, 2),
    "zero-size": torch.empty(0, 3),
    "a zero-size slice": NUMBERS[:, 3:],
    "a complex slice": COMPLEX[::2, 1:],
    "conjugate": COMPLEX.conj(),
    "negative (imag of a conjugate)": COMPLEX.conj().imag,
    "bfloat16, transposed": NUMBERS.bfloat16().mT,
    "bool, sliced": (NUMBERS > 5)[..., ::3],
    "0-d": torch.tensor(3.5),
}


@pytest.mark.parametrize("name", VIEWS)
def test_every_view_is_carried_as_its_values(name):
    value = VIEWS[name]
    back = roundtrip(value)
    assert back.dtype == value.dtype and back.shape == value.shape
    assert torch.equal(back, value.resolve_conj().resolve_neg())
    assert back.is_contiguous() and not back.is_conj() and not back.is_neg()


def test_numpy_arrays_are_refused_with_the_way_out():
    import numpy

    with pytest.raises(wire.WireError, match=r"numpy array .*torch.from_numpy\(array\)"):
        wire.encode({"losses": numpy.zeros(3)})


def test_tensors_past_the_limit_are_refused_before_they_are_copied():
    wire.encode([torch.zeros(500)] * 2, limit=4000)
    with pytest.raises(wire.WireError, match="over the lab's limit"):
        wire.encode([torch.zeros(500)] * 3, limit=4000)


def test_a_read_tensor_lies_over_the_frame_it_came_in():
    body = bytearray(wire.dumps(wire.encode({"x": torch.arange(1000.0), "y": torch.ones(3, dtype=torch.complex128)})))
    back = wire.sanitize(wire.loads(body), "cpu")                     # as the judge reads it
    start = torch.frombuffer(body, dtype=torch.uint8).data_ptr()
    for tensor in back.values():
        assert start <= tensor.data_ptr() < start + len(body) and (tensor.data_ptr() - start) % wire.ALIGN == 0
    assert torch.equal(back["x"], torch.arange(1000.0))


# -- through a real child ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def wire_lab(tmp_path_factory):
    """A lab of one student file, `wired.py`, whose functions each test writes as it needs."""
    folder = tmp_path_factory.mktemp("course") / "wired"
    for part in ("handout", "stubs"):
        (folder / part).mkdir(parents=True)
        (folder / part / "wired.py").write_text("def give(n):\n    raise NotImplementedError\n")
    (folder / "lab.yaml").write_text(yaml.safe_dump({
        "title": "Wired", "handout": "handout", "student_files": {"wired.py": ["give", "scale"]},
        "call_timeout": 60, "time_budget": 120, "answer_mb": 64}))
    return find_lab(folder)


def sandbox(lab, zygote, source):
    return Sandbox(lab, {"wired.py": source.encode()}, zygote)


def memory_mib(key):
    """This process's VmRSS or VmHWM (its peak since the last reset), MiB."""
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(key))
    return int(line.split()[1]) / 1024


def test_the_judge_holds_one_copy_of_an_answer(wire_lab, zygote):
    """An answer of the lab's largest size costs the judge about its own size (it held two, then three)."""
    box = sandbox(wire_lab, zygote, "import torch\n\ndef give(n):\n    return torch.ones(n, dtype=torch.uint8)\n")
    size = wire_lab.manifest.answer_mb * 2**20
    box.call("give", [1])
    before = memory_mib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")               # VmHWM starts again from here
    value = box.call("give", [size])
    assert memory_mib("VmHWM") - before < 1.4 * size / 2**20
    assert value.numel() == size and bool(value.bool().all())
    box.close()


def test_answers_past_the_labs_limit_are_the_learners(wire_lab, zygote):
    box = sandbox(wire_lab, zygote, "import torch\n\ndef give(n):\n    return [torch.ones(n, dtype=torch.uint8)] * 2\n")
    with pytest.raises(CallFailed) as failure:
        box.call("give", [33 * 2**20])
    assert failure.value.kind == "bad_answer" and "over the lab's limit" in failure.value.message
    box.close()


INJECTED = '''import sys
import torch

def give(n):
    """A correct answer, after breaking the wire of the child it runs in (a stand-in for a bug of ours)."""
    frame = sys._getframe()
    while "wire" not in frame.f_locals:
        frame = frame.f_back
    def broken(tensor):
        raise RuntimeError("the grader's own mistake")
    frame.f_locals["wire"].raw_bytes = broken
    return torch.ones(n)
'''
SLY = '''import torch

class Sly(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise ValueError("nothing of me is read")

def give(n):
    return torch.ones(n).as_subclass(Sly)
'''


def test_a_wire_failure_is_the_graders_fault_and_the_learners_objects_are_theirs(wire_lab, zygote):
    box = sandbox(wire_lab, zygote, INJECTED)
    with pytest.raises(CallFailed) as failure:
        box.call("give", [3])
    assert failure.value.kind == "grader_fault" and "the grader's own mistake" in failure.value.message
    box.close()
    box = sandbox(wire_lab, zygote, SLY)               # its own code raising: no grader fault to hide behind
    with pytest.raises(CallFailed) as failure:
        box.call("give", [3])
    assert failure.value.kind == "raised" and "nothing of me is read" in failure.value.message
    box.close()


SCALE = "def scale(x):\n    x.mul_(2)\n    return True\n"


def test_a_child_cannot_cut_the_memory_it_shares_with_the_judge(wire_lab, zygote, monkeypatch):
    """The memory file that carries tensor arguments is sealed: whoever holds it (here the test holds
    what the child is handed) cannot shrink it under the judge's mapping, whose next read would
    kill the judge with SIGBUS."""
    handed, ask = [], zygote.ask

    def keeping(order, fds=()):
        handed.extend(os.dup(fd) for fd in fds if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:"))
        return ask(order, fds)

    monkeypatch.setattr(zygote, "ask", keeping)
    box = sandbox(wire_lab, zygote, SCALE)
    x = torch.arange(6.0).reshape(2, 3)
    box.call("scale", [x], echo=True)
    (shared,) = handed
    for size in (0, 4096, 2**30):
        with pytest.raises(PermissionError):
            os.ftruncate(shared, size)
    os.close(shared)
    value, (after,) = box.call("scale", [x.mT], echo=True)         # the judge reads it back, alive
    assert value is True and torch.equal(after, 2 * x.mT)
    box.close()


LEFT = {        # what a call did to its argument x (2, 3) beyond its values -> what the judge reads back
    "x.unsqueeze_(0)": ((1, 2, 3), "float32", "shape (2, 3) to (1, 2, 3)"),
    "x.as_strided_((2, 3), (1, 2))": ((2, 3), "float32", "strides were changed in place, to (1, 2)"),
    "x.data = x.data.double()": ((2, 3), "float64", "torch.float32 to torch.float64"),
}


@pytest.mark.parametrize("change", LEFT)
def test_an_argument_changed_in_shape_strides_or_dtype_is_read_back_so(wire_lab, zygote, change):
    """The judge reads an argument's values from the memory it shares with the child, in the layout
    it was sent in; the layout the call left it in comes with the answer, and the check sees it."""
    from grader.lab_api.checks import CheckFailed, expect_unchanged

    box = sandbox(wire_lab, zygote, f"def scale(x):\n    {change}\n    return True\n")
    x = torch.arange(6.0).reshape(2, 3)
    value, (after,) = box.call("scale", [x], echo=True)
    box.close()
    shape, dtype, said = LEFT[change]
    assert value is True and tuple(after.shape) == shape and str(after.dtype) == f"torch.{dtype}"
    with pytest.raises(CheckFailed) as failure:
        expect_unchanged(x, after, "x", "scale")
    assert said in failure.value.seen and "x.unsqueeze_" in failure.value.hint
    if change.startswith("x.as_strided_"):
        assert torch.equal(after, x.flatten().as_strided((2, 3), (1, 2)))     # its values, as the call sees them


def test_the_judge_knows_which_arguments_an_answer_holds(wire_lab, zygote):
    """x itself, or a view of it, as the answer: the Echo says so; a new tensor is not x."""
    for body, returned in (("return x", {0}), ("return x[0]", {0}), ("return [x + 1, y]", {1}),
                           ("return x.clone()", set())):
        box = sandbox(wire_lab, zygote, f"def scale(x, y):\n    {body}\n")
        echo = box.call("scale", [torch.ones(2, 3), torch.zeros(2)], echo=True)
        box.close()
        value, (x, y) = echo
        assert echo.returned == returned and torch.equal(x, torch.ones(2, 3)) and torch.equal(y, torch.zeros(2))
