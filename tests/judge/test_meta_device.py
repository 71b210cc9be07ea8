"""The meta device as a child plays it on the CPU (grader/judge/meta_device.py): the verdicts of the
real meta device on device slips and on correct code in other styles, without torch's meta kernels."""
import subprocess
import sys
import textwrap

import pytest
import torch
import yaml

from grader.judge import meta_device
from grader.judge.sandbox import Sandbox
from grader.readers.manifest import find_lab

META = torch.device("meta")


def inputs(shape=(1, 2, 3, 4)):
    """x, cos, sin on the real meta device."""
    return (torch.empty(shape, device=META), torch.empty(shape[-2], shape[-1] // 2, device=META),
            torch.empty(shape[-2], shape[-1] // 2, device=META))


def turn(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


def frequencies(made_on):
    """rope_frequencies whose positions' arange is made by `made_on(device)`'s keywords."""
    def rope_frequencies(head_dim, seq_len, device):
        inv = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
        return torch.outer(torch.arange(seq_len, **made_on(device)).float(), inv).cos()
    return rope_frequencies


def empty_like_rope(x, cos, sin):
    out = torch.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out


def zeros_shape_rope(x, cos, sin):
    out = torch.zeros(x.shape)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out


def complex_rope(x, cos, sin):
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_ * torch.polar(torch.ones_like(cos), torch.atan2(sin, cos))).flatten(-2).type_as(x)


def matrix_rope(x, cos, sin):
    rotation = torch.stack((torch.stack((cos, -sin), -1), torch.stack((sin, cos), -1)), -2).to(x.dtype)
    return (rotation @ x.unflatten(-1, (-1, 2))[..., None])[..., 0].flatten(-2)


def moved_rope(x, cos, sin):
    sign = torch.tensor([-1.0, 1.0]).to(x.device)
    pairs = x.unflatten(-1, (-1, 2))
    swapped = pairs.flip(-1) * sign
    return (pairs * cos[..., None] + swapped * sin[..., None]).flatten(-2)


def cpu_sign_rope(x, cos, sin):
    sign = torch.tensor([-1.0, 1.0])           # made on the CPU: x on another device refuses it
    pairs = x.unflatten(-1, (-1, 2))
    return (pairs * cos[..., None] + pairs.flip(-1) * sign * sin[..., None]).flatten(-2)


CORRECT = {     # name -> (function, its arguments on the real meta device)
    "arange(device=device), as a string": (frequencies(lambda d: {"device": d}), (8, 5, "meta")),
    "arange(device=device), a torch.device": (frequencies(lambda d: {"device": d}), (8, 5, META)),
    "arange(device=torch.device(device))": (frequencies(lambda d: {"device": torch.device(d)}), (8, 5, "meta")),
    "slices and stack": (turn, inputs()),
    "empty_like and slices": (empty_like_rope, inputs()),
    "complex numbers, .type_as(x)": (complex_rope, inputs()),
    "rotation matrices": (matrix_rope, inputs()),
    "a small tensor moved .to(x.device)": (moved_rope, inputs()),
    "a python number and a 0-dim CPU tensor": (lambda x, c, s: x * 2 + torch.tensor(1.0), inputs()),
}
SLIPS = {
    "arange without device": (frequencies(lambda d: {}), (8, 5, "meta")),
    "arange(device='cpu')": (frequencies(lambda d: {"device": "cpu"}), (8, 5, "meta")),
    "zeros(x.shape)": (zeros_shape_rope, inputs()),
    "a CPU tensor mixed with x": (cpu_sign_rope, inputs()),
    "x moved to the CPU": (lambda x, c, s: turn(x, c, s).cpu(), inputs()),
}


def verdict(function, args):
    """'meta' when the answer is on the meta device, else what went wrong."""
    try:
        out = function(*args)
    except (RuntimeError, NotImplementedError) as error:
        return f"raised {type(error).__name__}"
    return out.device.type


def played_verdict(function, args):
    with meta_device.played(args, {}) as (played, kwargs):
        return verdict(function, played)


@pytest.mark.parametrize("name", CORRECT)
def test_correct_styles_answer_on_meta_as_on_the_real_device(name):
    function, args = CORRECT[name]
    assert played_verdict(function, args) == "meta"
    assert verdict(function, args) == "meta"


@pytest.mark.parametrize("name", SLIPS)
def test_device_slips_are_caught_as_the_real_device_catches_them(name):
    function, args = SLIPS[name]
    assert verdict(function, args) != "meta"
    assert played_verdict(function, args) != "meta"


def test_inputs_sent_with_their_values_are_played_with_them():
    """A check that sends x, cos and sin on meta with their values (wire.valued_meta) gives a right
    apply_rope that asserts on its inputs' values (cos² + sin² = 1) the meta device's answer, as CUDA
    would; the same device slips are caught; the real meta device, which has no values, raises."""
    from grader.judge import wire

    angles = torch.outer(torch.arange(3.0), torch.tensor([1.0, 0.01]))
    given = [wire.sanitize(wire.loads(wire.dumps(wire.encode(wire.valued_meta(t))))) for t in
             (torch.randn(1, 2, 3, 4), angles.cos(), angles.sin())]

    def careful(x, cos, sin):
        assert torch.allclose(cos ** 2 + sin ** 2, torch.ones_like(cos)), "not on the unit circle"
        return turn(x, cos, sin)

    def careful_slip(x, cos, sin):
        assert torch.allclose(cos ** 2 + sin ** 2, torch.ones_like(cos)), "not on the unit circle"
        return turn(x, cos, sin) + torch.zeros(x.shape)

    assert played_verdict(careful, given) == "meta" and played_verdict(careful_slip, given) != "meta"
    with pytest.raises(RuntimeError):
        careful(*meta_device.real(given))


def test_a_marked_tensor_says_meta_and_moves_as_a_device_does():
    with meta_device.played((torch.empty(2, 3, device=META),), {}) as ((x,), _):
        assert x.device == META and x.is_meta and not x.is_cpu
        assert (x + 1).device.type == "meta" and x.T.device.type == "meta" and x[0].device.type == "meta"
        made = torch.empty(3, device=x.device)
        assert made.device.type == "meta" and torch.zeros(3).to(x.device).device.type == "meta"
        assert torch.zeros(3).to(x).device.type == "meta" and torch.zeros(3).type_as(x).device.type == "meta"
        moved = x.cpu()
        assert moved.device.type == "cpu" and x.device.type == "meta"     # a copy: x stays where it was
        cpu = torch.ones(2, 3)
        assert cpu.copy_(x).device.type == "cpu" and cpu.device.type == "cpu"
        with pytest.raises(RuntimeError, match="same device"):
            torch.cat([x, cpu])
        with pytest.raises(RuntimeError, match="same device"):
            cpu.add_(x)
        assert float(x.sum()) == 0.0            # values can be read: where a tensor is, is the question
    assert not meta_device.asks_for_meta(([torch.ones(1)], {"device": "cpu"}))
    assert meta_device.asks_for_meta(((), {"device": "meta:0"})) and meta_device.asks_for_meta([[META]])


@pytest.fixture(scope="module")
def probe_lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("course") / "probe"
    for part in ("handout", "stubs"):
        (folder / part).mkdir(parents=True)
        (folder / part / "probe.py").write_text("def probe(x, device):\n    raise NotImplementedError\n")
    (folder / "lab.yaml").write_text(yaml.safe_dump({
        "title": "Probe", "handout": "handout", "student_files": {"probe.py": ["probe"]}}))
    return find_lab(folder)


PROBE = textwrap.dedent('''\
    import sys
    import torch

    def probe(x, device):
        made = torch.arange(3, device=device).float().cos()
        turned = (x.cos() * 2 + 1).sum(-1)
        loaded = sorted(m for m in sys.modules if m.startswith("torch._dynamo") or m.split(".")[0] == "sympy")
        return made, turned, loaded, len(sys.modules)
    ''')


def test_a_child_on_meta_loads_no_meta_kernels(probe_lab, zygote):
    """Meta inputs and device="meta" answer on meta, and neither the zygote nor the child imports
    torch._dynamo or sympy (the real meta device's first op imports some 800 modules)."""
    box = Sandbox(probe_lab, {"probe.py": PROBE.encode()}, zygote)
    try:
        made, turned, loaded, modules = box.call("probe", [torch.empty(2, 4, device=META), "meta"])
        assert (made.device.type, tuple(made.shape), turned.device.type, tuple(turned.shape)) == \
            ("meta", (3,), "meta", (2,))
        assert loaded == []
        made, turned, loaded, _ = box.call("probe", [torch.ones(2, 4), "cpu"])
        assert made.device.type == turned.device.type == "cpu" and float(turned[0]) == pytest.approx(
            4 * (2 * torch.cos(torch.tensor(1.0)).item() + 1))
    finally:
        box.close()
    real = subprocess.run([sys.executable, "-c", "import sys, torch; torch.zeros(1, device='meta').cos(); "
                           "print(len(sys.modules))"], capture_output=True, text=True, check=True)
    assert int(real.stdout) > modules + 500         # what the real meta device would have cost


VMAPPED = textwrap.dedent('''\
    import torch
    from torch.func import vmap

    def probe(x, device):
        sign = torch.tensor([-1.0, 1.0]) if device == "cpu sign" else torch.tensor([-1.0, 1.0], device=x.device)
        one = lambda row: row.flip(-1) * sign           # noqa: E731
        return vmap(one)(x)
    ''')


def test_a_call_the_played_device_refuses_as_mixed_is_asked_of_the_real_one(probe_lab, zygote):
    """torch.func.vmap's batched tensors carry no mark, so the played device refuses their ops with
    marked ones as mixed: the real meta device, asked again, answers there. A tensor really made on
    the CPU and mixed in gets no answer on meta either way."""
    box = Sandbox(probe_lab, {"probe.py": VMAPPED.encode()}, zygote)
    try:
        out = box.call("probe", [torch.empty(3, 2, device=META), "x.device"])
        assert (out.device.type, tuple(out.shape)) == ("meta", (3, 2))
        try:
            slip = box.call("probe", [torch.empty(3, 2, device=META), "cpu sign"]).device.type
        except Exception as error:      # noqa: BLE001 (the call's failure, whatever it is)
            slip = str(error)
        assert slip != "meta"
        assert torch.equal(box.call("probe", [torch.tensor([[1.0, 2.0]]), "cpu sign"]), torch.tensor([[-2.0, 1.0]]))
    finally:
        box.close()
