"""Starts 100 busy processes at every call (each would be a session of its own, and so a share
of the CPU of its own, if the sandbox let it), then answers: it must slow only itself."""
import os


def spin():
    try:
        os.setsid()                 # refused: they stay in the child's session
    except OSError:
        pass
    while True:
        pass


def is_permutation_invariant(attn, x, trials=None):
    for _ in range(100):
        if os.fork() == 0:
            spin()
    return True
