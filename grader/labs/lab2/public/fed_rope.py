"""The positions.py that the experiments run with instead of the student's: a correct RoPE, so that
they are graded on their own and a RoPE mistake costs positions.py only (conftest.py). The judge's
own copy of model.py imports it too. It is what the public checks' truth is (rope.py: the angles
in float64) and toy_attention.turn_pairs, which the handout already has."""
import atexit
import shutil
import tempfile
from pathlib import Path

POSITIONS = '''"""positions.py as the grader runs your experiments: a correct RoPE, so that they are graded on
their own (your positions.py is graded by its own checks)."""
import torch
from toy_attention import turn_pairs as apply_rope  # noqa: F401


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    pair = torch.arange(head_dim // 2, dtype=torch.float64)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), base ** (-2 * pair / head_dim))
    return angles.cos().float().to(device), angles.sin().float().to(device)
'''
_folder = []


def positions_file():
    """positions.py's bytes, for a child."""
    return POSITIONS.encode()


def folder():
    """A folder of this process holding only that positions.py, for the judge's imports."""
    if not _folder:
        _folder.append(Path(tempfile.mkdtemp(prefix="grader-fed-rope-")))
        atexit.register(shutil.rmtree, _folder[0], True)
        (_folder[0] / "positions.py").write_text(POSITIONS)
    return _folder[0]
