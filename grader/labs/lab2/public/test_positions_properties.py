"""Public checks of positions.py: every clause of the two docstrings (angles from position 0,
the exponent, the base, float32 on the device asked for, the meta device included; adjacent pairs
turned counter-clockwise by the cos and sin given, x's dtype (float64, float16, bfloat16) and
device kept, a new tensor, inputs left unchanged, gradients reaching x), at their edges (one
position, thousands of positions), with the hints of the hidden checks (rope.py). Every scored
check of apply_rope also asks how it does in the lab's own model (rope.expect_in_model).
apply_rope is given the right cos and sin here, computed by the grader: a mistake in
rope_frequencies costs rope_frequencies only. The course's hidden checks ask the same clauses on
other sizes, bases and seeds."""
import pytest
import torch

from grader.lab_api.checks import load_beside

rope = load_beside(__file__, "rope")


# -- rope_frequencies ---------------------------------------------------------------------------
@pytest.mark.grade(points=2, tags=["rope_frequencies"])
def test_frequencies_values(student, device):
    """cos and sin hold the angles p * 10000 ** (-2i / head_dim), from position 0 (head_dim 8, 6 positions)"""
    rope.check_frequencies(student, 8, 6, 10000.0, device, device=device)


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_base(student, device):
    """the base argument sets the frequencies (base 100), and 10000 is the default"""
    rope.check_frequencies(student, 12, 5, 100.0, device, base=100.0, device=device)
    rope.check_frequencies(student, 4, 3, 10000.0, torch.device("cpu"))


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_one_position(student, device):
    """one position has its row, of angle 0 (head_dim 10, one position and four)"""
    rope.check_frequencies(student, 10, 1, 10000.0, device, device=device)
    rope.check_frequencies(student, 10, 4, 10000.0, device, device=device)


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_long(student, device):
    """3000 positions: the angles of late positions are as accurate as the first ones' (head_dim 32)"""
    rope.check_frequencies(student, 32, 3000, 10000.0, device, device=device)


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_device(student, device):
    """float32 on the device asked for, as a string or a torch.device, the meta device too (and CUDA on a GPU)"""
    rope.check_frequencies(student, 6, 4, 10000.0, device, dtype_clause=True, values=False, device=str(device))
    rope.check_frequencies(student, 6, 4, 10000.0, device, dtype_clause=True, values=False, device=torch.device(device))
    rope.check_device_honoured(student, 6, 4, device, dtype_clause=True)


# -- apply_rope ---------------------------------------------------------------------------------
@pytest.mark.grade(points=2, tags=["apply_rope"])
def test_rope_values(student, device):
    """each adjacent pair (2i, 2i+1) turns counter-clockwise by its angle (batch 2, 3 heads, 5 positions, head_dim 8)"""
    rope.check_rope(student, *rope.rope_inputs((2, 3, 5, 8), 10, device), device)


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_any_cos_sin(student, device):
    """works for any shape and any cos/sin it is given (frequencies of base 500; head_dim 2 and 8)"""
    rope.check_rope(student, *rope.rope_inputs((3, 1, 7, 2), 11, device, base=500.0), device)
    rope.check_rope(student, *rope.rope_inputs((2, 2, 5, 8), 13, device, base=500.0), device)


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_one_position(student, device):
    """one position turns by angle 0; three turn (2 batches, 3 heads, head_dim 6)"""
    rope.check_rope(student, *rope.rope_inputs((2, 3, 1, 6), 16, device), device)
    rope.check_rope(student, *rope.rope_inputs((2, 3, 3, 6), 17, device), device)


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_long(student, device):
    """3000 positions (2 heads, head_dim 8)"""
    rope.check_rope(student, *rope.rope_inputs((1, 2, 3000, 8), 18, device), device)


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_dtypes(student, device):
    """the result has x's dtype: float64, float16 and bfloat16 x, with float32 cos and sin"""
    rope.check_rope_dtypes(student, (2, 1, 4, 6), 14, device)


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_device(student, device):
    """the result is where x is: on the grading device, and on the meta device"""
    rope.check_rope_on_meta(student, (1, 2, 3, 4), 15, device)


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_leaves_inputs(student, device):
    """returns a new tensor, even for one position: x, cos and sin are left unchanged (values, shape, strides)"""
    rope.check_rope_leaves_inputs(student, *rope.rope_inputs((1, 2, 4, 6), 12, device), device)
    rope.check_rope_leaves_inputs(student, *rope.rope_inputs((2, 2, 1, 6), 19, device), device)
