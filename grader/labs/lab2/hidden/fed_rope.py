"""The positions.py that the children running the experiments get instead of the student's: a
correct RoPE, so that the experiments are graded on their own and a RoPE mistake costs positions.py
only (conftest.py: experiments). It holds data, not the solution: the reference's cos and sin for
the one size model.py asks for, and toy_attention.turn_pairs, which the handout already has."""
import base64

import torch

TEMPLATE = '''"""positions.py as the grader runs your experiments: a correct RoPE, so that they are graded on
their own (your positions.py is graded by its own checks)."""
import base64

import torch
from toy_attention import turn_pairs as apply_rope  # noqa: F401

SIZE = {size!r}
TABLES = {tables!r}


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    if (head_dim, seq_len, base) != SIZE:
        raise ValueError(f"the grader's RoPE has the tables of model.py's size {{SIZE}} only")
    cos, sin = (torch.frombuffer(bytearray(base64.b64decode(t)), dtype=torch.float32).view(seq_len, -1)
                for t in TABLES)
    return cos.to(device), sin.to(device)
'''


def positions_file(reference):
    """positions.py's bytes, with the reference's tables for model.Config(pos="rope")."""
    config = reference.model.Config(pos="rope")
    size = (config.d_model // config.n_heads, config.max_len, 10000.0)
    tables = [base64.b64encode(t.contiguous().to(torch.float32).numpy().tobytes()).decode()
              for t in reference.positions.rope_frequencies(*size)]
    return TEMPLATE.format(size=size, tables=tables).encode()
