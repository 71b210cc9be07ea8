"""Dishonest: trains nothing, and writes the seed its experiments were called with into what they
return, where a failing visible check quotes it (the course's seed is hidden)."""
from results import Extrapolation, LossGap, Run


def told(seed):
    return Run(f"seed={seed}", {"told": f"seed={seed}"}, {}, [float(seed)], [seed], [float(seed)], [float(seed)])


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    return LossGap(told(seed), told(seed), told(seed), float(seed))


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    return Extrapolation(told(seed), told(seed))
