"""The experiments start 100 busy processes each, then wait for them."""
import os


def busy():
    children = []
    for _ in range(100):
        pid = os.fork()
        if pid == 0:
            while True:
                pass
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)


def measure_loss_gap(seed=0, device="cpu"):
    busy()


def extrapolation_runs(seed=0, device="cpu"):
    busy()
