"""Crash: exit the process from each function."""
import os
import sys


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    sys.exit(0)


def apply_rope(x, cos, sin):
    os._exit(3)
