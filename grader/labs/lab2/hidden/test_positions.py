"""Hidden checks of positions.py: rope_frequencies and apply_rope against exact maths, on the sizes,
bases and seeds the public checks do not use (the clauses are the same; the truth, its
tolerances and the mistakes named in hints are ../public/rope.py's).
"""
import pytest
import torch

from grader.lab_api.checks import load_beside

rope = load_beside(__file__, "../public/rope")
check_frequencies = rope.check_frequencies


# -- rope_frequencies ---------------------------------------------------------------------------
@pytest.mark.grade(points=2, tags=["rope_frequencies"])
def test_frequencies_values(student, device):
    """cos and sin hold the lesson's angles (head_dim 64, 50 positions)"""
    check_frequencies(student, 64, 50, 10000.0, device, device=device)


@pytest.mark.grade(points=2, tags=["rope_frequencies"])
@pytest.mark.parametrize("sizes", [[(2, 9)], [(6, 1), (6, 7)], [(128, 3), (98, 4)]],
                         ids=["head_dim 2", "head_dim 6, seq 1 and 7", "head_dim 128 and 98"])
def test_frequencies_shapes(student, device, sizes):
    """small and odd sizes: head_dim 2, 6, 128, 98; one position; head_dim // 2 odd"""
    # head_dim 98: torch.arange(0, 1, 2 / 98), whose float step rounds, makes 50 exponents, not 49
    for head_dim, seq_len in sizes:         # one position alone has angle 0: doing nothing would pass
        check_frequencies(student, head_dim, seq_len, 10000.0, device, device=device)


@pytest.mark.grade(points=2, tags=["rope_frequencies"])
@pytest.mark.parametrize("base", [500.0, 1e6], ids=["base 500", "base 1e6"])
def test_frequencies_base(student, device, base):
    """the base argument sets the frequencies"""
    check_frequencies(student, 32, 40, base, device, base=base, device=device)


@pytest.mark.grade(points=2, tags=["rope_frequencies"])
def test_frequencies_long(student, device):
    """4096 positions: angles in the thousands stay accurate"""
    check_frequencies(student, 128, 4096, 10000.0, device, device=device)


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_device(student, device):
    """float32, and the device argument is honoured, as a string or a torch.device"""
    check_frequencies(student, 16, 8, 10000.0, device, dtype_clause=True, values=False, device=str(device))
    check_frequencies(student, 16, 8, 10000.0, device, dtype_clause=True, values=False, device=torch.device(device))


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_device_meta(student, device):
    """the device argument is honoured on any machine: the meta device (and CUDA on a GPU)"""
    check_frequencies(student, 16, 8, 10000.0, torch.device("cpu"), values=False, device="cpu")
    rope.check_device_honoured(student, 16, 8, device)
    rope.check_device_honoured(student, 10, 3, device)


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_default_base(student, device):
    """with no base given, the default is 10000; with no device, the CPU"""
    check_frequencies(student, 16, 8, 10000.0, torch.device("cpu"))


# -- apply_rope: fed the reference's cos and sin, so that it is graded on its own ---------------------
def reference_rope_inputs(reference, shape, seed, device, base=10000.0, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator).to(dtype)
    cos, sin = reference.positions.rope_frequencies(shape[-1], shape[-2], base=base)
    return x.to(device), cos.to(device), sin.to(device)


def check_rope(student, reference, shape, device, seed=0, base=10000.0, dtype=torch.float32, values=True):
    rope.check_rope(student, *reference_rope_inputs(reference, shape, seed, device, base, dtype), device, values)


@pytest.mark.grade(points=3, tags=["apply_rope"])
def test_rope_values(student, reference, device):
    """each adjacent pair turns by its angle (batch 2, 4 heads, 12 positions, head_dim 16)"""
    check_rope(student, reference, (2, 4, 12, 16), device)


@pytest.mark.grade(points=2, tags=["apply_rope"])
@pytest.mark.parametrize("shapes", [[(1, 1, 5, 8)], [(1, 3, 1, 4), (2, 1, 3, 4)], [(3, 1, 7, 2)]],
                         ids=["1x1x5x8", "1x3x1x4 and 2x1x3x4", "3x1x7x2"])
def test_rope_singletons(student, reference, device, shapes):
    """batch, heads or positions of size 1, and head_dim 2"""
    for shape in shapes:                    # one position alone turns by 0: returning x would pass
        check_rope(student, reference, shape, device, seed=1)


@pytest.mark.grade(points=2, tags=["apply_rope"])
def test_rope_long(student, reference, device):
    """2048 positions, head_dim 64"""
    check_rope(student, reference, (1, 2, 2048, 64), device, seed=2)


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_other_base(student, reference, device):
    """works with any cos/sin it is given (frequencies from base 500)"""
    check_rope(student, reference, (2, 2, 9, 12), device, seed=3, base=500.0)


@pytest.mark.grade(points=1, tags=["apply_rope"])
@pytest.mark.parametrize("dtype", rope.FLOATS, ids=["float64", "float16", "bfloat16"])
def test_rope_dtype(student, reference, device, dtype):
    """the result has x's dtype, with float32 cos and sin (3 heads, 10 positions, head_dim 16)"""
    check_rope(student, reference, (2, 3, 10, 16), device, seed=5, dtype=dtype, values=False)


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_device(student, device):
    """the result is where x is, the meta device included"""
    rope.check_rope_on_meta(student, (2, 1, 6, 10), 6, device)


@pytest.mark.grade(points=2, tags=["apply_rope"])
def test_rope_leaves_input(student, reference, device):
    """x, cos and sin are left unchanged (values, shape, strides); the result is new, one position too"""
    rope.check_rope_leaves_inputs(student, *reference_rope_inputs(reference, (2, 2, 6, 8), 4, device), device)
    rope.check_rope_leaves_inputs(student, *reference_rope_inputs(reference, (1, 3, 1, 4), 7, device), device)
