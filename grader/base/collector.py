"""Python's cyclic garbage collector in a process that imports torch for one job (grade.py, a batch
worker): off while it imports, on again once its checks are collected, with everything imported so
far frozen (gc.freeze: never scanned again). Importing torch, pytest and a lab's checks makes
full collections of a growing heap in a cold grading, a share of the judge's time for no
garbage worth it. A process that did not pause it (a notebook's kernel, a test) is left as it is.
The zygote does the same for itself (grader/judge/child.py), so that its forks start frozen too.
"""
import gc

_paused = False


def pause() -> None:
    """No collections until resume(): call first thing, before the imports."""
    global _paused
    _paused = gc.isenabled()
    gc.disable()


def resume() -> None:
    """Collections again, what is alive now frozen; only where pause() turned them off."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
