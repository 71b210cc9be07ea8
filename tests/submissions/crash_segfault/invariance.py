"""Crash: a segmentation fault, and more memory than a child may have."""
import ctypes


def is_permutation_invariant(attn, x, atol=1e-5):
    if x.shape[1] == 1:
        ctypes.string_at(0)
    hoard = bytearray(3 * 2**30)
    return len(hoard) > 0
