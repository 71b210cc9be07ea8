"""Lab 2's experiments, run for their checks (test_experiments.py), and the judge's own runs of the
lab's recipe that the checks hold them to.

A learner's experiments start as soon as their checks are selected, each call in a child of its
own, with a correct RoPE in place of the learner's positions.py (fed/positions.py), while the other
checks run. A run of the recipe starts only once a learner's experiment that trains it has returned
a value: nothing is trained for a stub, a crash, or a -k that leaves the experiments out. It runs
in a process of its own, once for both experiments (learned positions on lookback is in both), and
is kept in .grade/ for the next grading (grader.lab_api.TrustedWork).

The seeds: a handout's checks run every experiment at PUBLIC_SEEDS, the learner's default 0 and
another, so that experiments that ignore `seed` show; the course's grading runs them at the seed its
hidden folder keeps (hidden/seed.py), which no visible message names."""
import math
from pathlib import Path

import pytest

from grader.lab_api import TrustedWork, after, build, selected, trusted_modules
from grader.lab_api.checks import load_beside
from grader.lab_api.provenance import Seed, replays, work_key

RECIPE = Path(__file__).with_name("recipe.py")     # the judge's run of the recipe
FED = Path(__file__).with_name("fed")              # the positions.py the experiments run with
ON_STEP = FED / "on_step" / "tasks.py"            # the tasks.py of the on_step probe
COURSE_SEED = Path(__file__).parent.parent / "hidden" / "seed.py"
PUBLIC_SEEDS = (0, 7)
EXPERIMENTS = ("measure_loss_gap", "extrapolation_runs")
RUNS = {"measure_loss_gap": [("learned", "lookback"), ("none", "lookback"), ("none", "majority")],
        "extrapolation_runs": [("learned", "lookback"), ("rope", "lookback")]}       # (pos, task)
LENGTHS = {"measure_loss_gap": (1,), "extrapolation_runs": (1, 2, 4)}             # x TRAIN_LEN
GIVEN = ("model", "tasks", "positions", "toy_attention")      # the modules the recipe runs

provenance = load_beside(__file__, "provenance")


@pytest.fixture(scope="session")
def seeds():
    """The seeds the experiments run with: hidden ones are never named."""
    if COURSE_SEED.is_file():
        return [Seed(load_beside(__file__, "../hidden/seed").SEED, hidden=True)]
    return [Seed(seed) for seed in PUBLIC_SEEDS]


def judge_folders(lab):
    """Where the judge's own copy of the experiments' code comes from, the first that has a name
    winning: the correct RoPE of fed/positions.py, the handout's given modules, pristine (lab.given)."""
    return [FED, lab.given, lab.folder]


@pytest.fixture(scope="session")
def given(lab):
    """The handout's model.py and tasks.py, imported here with fed/positions.py as their positions.py."""
    return trusted_modules(judge_folders(lab))


def recipe_files(lab):
    """Every file the recipe's run executes, for its memo's key: toy_attention.py too, whose
    turn_pairs is the checks' RoPE (fed/positions.py imports it). Found as `given` imports them."""
    found = [next(Path(f) / f"{name}.py" for f in judge_folders(lab) if (Path(f) / f"{name}.py").is_file())
             for name in GIVEN]
    return [*found, Path(__file__), RECIPE]


def given_file(lab, name):
    """The handout's module `name`.py, pristine, as the judge's copy of the experiments' code has it."""
    return next(Path(f) / f"{name}.py" for f in judge_folders(lab)[1:] if (Path(f) / f"{name}.py").is_file())


def measured_at(pos, task):
    """The lengths (x TRAIN_LEN) at which the recipe's run of (pos, task) is measured: every
    experiment's that trains it."""
    return tuple(sorted({m for name, runs in RUNS.items() if (pos, task) in runs for m in LENGTHS[name]}))


def kept_run_replays(given, kept, pos, task, seed, device):
    """Whether a run of the recipe read back from .grade/ is the recipe's as far as its first steps
    replayed here and its shapes show (grader.lab_api.provenance.replays), and the judge's
    measurements kept with it (provenance.know) are finite."""
    if not all(len(score) == 5 and all(math.isfinite(x) for x in score) for score in kept.get("scores", [])):
        return False
    model = given.model.build_model(given.model.Config(pos=pos), seed=seed, device=device)
    return replays(kept, model, given.tasks.STEPS, lambda steps: given.tasks.train(model, task, steps=steps, seed=seed))


@pytest.fixture(scope="session")
def recipe_runs(lab, device):
    """The judge's runs of the recipe (recipe.train), computed when first needed, kept in .grade/
    for this lab's files, torch and device, and checked when read back (kept_run_replays)."""
    check = lambda kept, *args: kept_run_replays(trusted_modules(judge_folders(lab)), kept, *args)
    with TrustedWork("lab2-recipe", judge_folders(lab), RECIPE, "train", work_key(recipe_files(lab), device),
                     check) as runs:
        yield runs


@pytest.fixture(scope="session", autouse=True)
def experiments(request, lab, student, device, seeds, recipe_runs):
    """{(experiment, seed): Future of its result}, for the experiments whose checks are selected: a
    call per seed, each once the one before has returned (two children at a time fill two cores, and
    a call that fails leaves the next unstarted). As one returns a value, the judge starts its own
    runs of the recipe that it and the later seeds' calls train. A hidden seed's calls are marked so:
    what they print or return shows under no visible check. Then, under (experiment, "on_step"),
    the on_step probe: the experiment at the first seed with fed/on_step/tasks.py, whose train()
    trains nothing (nor evaluate() measures) and raises OnStepNotPassed where the on_step the
    grader passed does not reach it unchanged."""
    fed = {"positions.py": (FED / "positions.py").read_bytes()}

    def returned(name, seed):
        """When a call returns a value: the recipe's runs of its experiment, at its seed and the later
        ones (whose calls come next, and fail seldom where this one did not)."""
        def start_recipe(call):
            values = [s.value for s in seeds]
            if call.exception() is None:
                for later in values[values.index(seed):]:
                    for pos, task in RUNS[name]:
                        recipe_runs.start(pos, task, later, str(device))
        return start_recipe

    calls = {}
    probe = {**fed, "tasks.py": ON_STEP.read_bytes(), "given_tasks.py": given_file(lab, "tasks").read_bytes()}
    for name in (name for name in EXPERIMENTS if name in selected(request)):
        previous = None
        for seed in seeds:
            call = lambda name=name, seed=seed: student.submit(name, seed=seed.value, device=str(device),
                                                               replace=fed, hidden=seed.hidden)
            previous = calls[name, seed.value] = call() if previous is None else after(previous, call)
            previous.add_done_callback(returned(name, seed.value))
        calls[name, ON_STEP.parent.name] = after(previous, lambda name=name, seed=seeds[0]: student.submit(
            name, seed=seed.value, device=str(device), replace=probe, hidden=seed.hidden, on_step=build("tasks:probe")))
    return calls


@pytest.fixture(scope="session")
def recipe(recipe_runs, given, device):
    """recipe(pos, task, seed): the judge's run of the lab's recipe, {"train_losses": [...],
    "state_dict": {name: CPU tensor}, "scores": [...]}. Its scores (provenance.know: measured here,
    the first time, while the next runs train) are kept with it, so the next grading need not
    measure weights that are the recipe's."""
    def run(pos, task, seed):
        value = recipe_runs.get(pos, task, seed, str(device))
        lengths = [m * given.tasks.TRAIN_LEN for m in measured_at(pos, task)]
        scores = provenance.know(given, value, pos, task, device, lengths, (provenance.FRESH, seed + 1))
        if "scores" not in value:
            value = recipe_runs.keep({**value, "scores": scores}, pos, task, seed, str(device))
        return value
    return run
