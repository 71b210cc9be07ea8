"""Public checks of positions.py: properties any correct RoPE has, no answers needed."""
import pytest
import torch

from grader.checks import describe, expect, expect_tensor


def frequencies(student, head_dim, seq_len, device):
    result = student.rope_frequencies(head_dim, seq_len, device=device)
    expect(isinstance(result, (tuple, list)) and len(result) == 2, "a pair (cos, sin)", describe(result))
    for name, value in zip(("cos", "sin"), result):
        expect_tensor(value, name, (seq_len, head_dim // 2), torch.float32, device)
    return result


@pytest.mark.grade(points=1, tags=["rope_frequencies"])
def test_frequencies_on_the_circle(student, device):
    """cos² + sin² = 1, and position 0 has angle 0 (cos 1, sin 0)"""
    cos, sin = frequencies(student, 16, 10, device)
    radius = (cos.double() ** 2 + sin.double() ** 2).cpu()
    expect(torch.allclose(radius, torch.ones_like(radius), atol=1e-5),
           "cos² + sin² = 1 everywhere", f"values from {radius.min():.4f} to {radius.max():.4f}",
           "cos and sin must be of the same angles")
    swapped = torch.allclose(sin[0].cpu(), torch.ones(8)) and torch.allclose(cos[0].cpu(), torch.zeros(8))
    expect(torch.allclose(cos[0].cpu(), torch.ones(8)) and torch.allclose(sin[0].cpu(), torch.zeros(8)),
           "cos[0] all 1 and sin[0] all 0 (position 0 turns by 0)",
           f"cos[0] = {[round(v, 4) for v in cos[0].tolist()[:3]]}..., "
           f"sin[0] = {[round(v, 4) for v in sin[0].tolist()[:3]]}...",
           "cos and sin are swapped" if swapped else "positions count from 0")


@pytest.mark.grade(points=1, tags=["apply_rope"])
def test_rope_keeps_lengths(student, device):
    """rotation keeps the length of every pair; position 0 is left as it was"""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 5, 8, generator=generator).to(device)
    angles = torch.rand(5, 4, generator=generator).to(device) * 6
    angles[0] = 0
    out = student.apply_rope(x, angles.cos(), angles.sin())
    expect_tensor(out, "apply_rope(x, cos, sin)", x.shape, torch.float32, device)
    pair_length = lambda t: t.double().cpu().reshape(*t.shape[:-1], -1, 2).norm(dim=-1)
    expect(torch.allclose(pair_length(out), pair_length(x), atol=1e-5),
           "each pair (2i, 2i+1) keeps its length", "pair lengths changed",
           "rotate adjacent pairs (x[..., 0::2], x[..., 1::2]) with both cos and sin")
    expect(torch.allclose(out[:, :, 0].cpu(), x[:, :, 0].cpu(), atol=1e-6),
           "position 0 unchanged (its angle is 0)", "position 0 changed")


@pytest.mark.grade(points=2, tags=["apply_rope", "rope_frequencies"])
def test_rope_relative(student, device):
    """with your frequencies, q·k depends only on the distance between positions"""
    head_dim, seq = 32, 48
    cos, sin = frequencies(student, head_dim, seq, device)
    generator = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, head_dim, generator=generator)
    # the same q and k at every position: scores[m, n] = rope(q)_m . rope(k)_n
    x = torch.stack([q.expand(seq, head_dim), k.expand(seq, head_dim)])[:, None].to(device)
    out = student.apply_rope(x, cos, sin)
    expect_tensor(out, "apply_rope(x, cos, sin)", x.shape, torch.float32, device)
    scores = out[0, 0].double().cpu() @ out[1, 0].double().cpu().T
    tolerance = 1e-3 * q.norm() * k.norm()
    shifted = (scores[1:, 1:] - scores[:-1, :-1]).abs().max().item()
    expect(shifted < tolerance, "scores[m, n] == scores[m + 1, n + 1]",
           f"a difference of {shifted:.3g}", "cos and sin must be of the same angles, each "
           "pair rotated as a point in the plane")
    same_place = (scores.diagonal() - q.double() @ k.double()).abs().max().item()
    expect(same_place < tolerance, "scores[m, m] == q·k (no distance, no rotation between them)",
           f"a difference of {same_place:.3g}")
