"""Lab 2's recipe as the judge runs it (grader/labs/lab2/public/conftest.py: recipe_runs): each run
once for both experiments, the same whatever else the judge's threads draw from torch's global RNG
meanwhile, and a poisoned copy in .grade/ is found and computed again, at no cost to the student."""
import ast
import hashlib
import importlib.util
import io
import shutil
import threading
from pathlib import Path

import pytest
import torch

from grader.lab_api import apart, memo
from grader.lab_api.trusted import Reference
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "grader/labs/lab2/public/recipe.py"
GAP = ["measure_loss_gap"]          # three runs of the recipe
EXPERIMENTS = ["measure_loss_gap", "extrapolation_runs"]       # four: the learned one is in both


@pytest.fixture
def state(tmp_path, monkeypatch):
    """An empty .grade/ for the judge's memos, and nothing of them in this process's memory."""
    monkeypatch.setattr(memo, "STATE", tmp_path / ".grade")
    monkeypatch.setattr(memo, "_memory", {})
    return tmp_path / ".grade"


def kept(folder):
    """{file: (key, value)} of the memos in `folder`."""
    found = {}
    for path in sorted(folder.glob("memo-*.pt")):
        saved = torch.load(io.BytesIO(path.read_bytes()[:-32]), weights_only=True)
        found[path.name] = saved["key"], saved["value"]
    return found


def same_runs(ours, theirs):
    """Whether every run in `ours` is in `theirs`, the same bit for bit."""
    return ours.keys() <= theirs.keys() and all(
        ours[f][1]["train_losses"] == theirs[f][1]["train_losses"]
        and all(torch.equal(w, theirs[f][1]["state_dict"][k]) for k, w in ours[f][1]["state_dict"].items())
        for f in ours)


@pytest.fixture(scope="module")
def quiet(grade_lab2, tmp_path_factory):
    """The reference graded on both experiments with no memo kept: (results, the memos' folder,
    the runs of the recipe the judge started)."""
    folder = tmp_path_factory.mktemp("quiet") / ".grade"
    started = []
    submit = apart.submit
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memo, "STATE", folder)
        patch.setattr(memo, "_memory", {})
        patch.setattr(apart, "submit", lambda *args: started.append(args[4:6]) or submit(*args))
        results = grade_lab2(ROOT / "reference/lab2", EXPERIMENTS)
    return results, folder, started


@pytest.mark.slow
def test_each_run_of_the_recipe_is_trained_once_for_both_experiments(quiet):
    results, folder, started = quiet
    assert results.score == results.max_score, [c.message for c in results.checks if c.status != "passed"]
    assert sorted(started) == [("learned", "lookback"), ("none", "lookback"), ("none", "majority"),
                               ("rope", "lookback")]
    runs = {ast.literal_eval(key)[3:5]: value for key, value in kept(folder).values()}
    assert len(runs) == 4           # kept with the judge's measurements, for both experiments' lengths
    assert {(n, data) for n, data, *_ in runs["learned", "lookback"]["scores"]} == \
        {(n, data) for n in (24, 48, 96) for data in (90_001, 6)}
    assert {(n, data) for n, data, *_ in runs["none", "majority"]["scores"]} == {(24, 90_001), (24, 6)}


@pytest.fixture(scope="module")
def grade_lab2(lab2, zygote):
    from grader.core.request import Device, Request, Selection
    from grader.core.runner import grade

    def run(submission, select):
        zygote.reset()
        return grade(Request(lab2, submission, Device.CPU, Selection(tuple(select))), zygote)
    return run


@pytest.mark.slow
def test_the_recipe_is_the_same_while_another_thread_draws_from_the_global_rng(quiet, grade_lab2, state):
    """A thread that seeds and draws all the time, as the judge's main thread does when it builds
    models (build_model(seed=...)), while the judge runs the recipe: nothing changes."""
    _, folder, _ = quiet
    stop = threading.Event()

    def hammer():
        while not stop.is_set():
            torch.manual_seed(1234)
            torch.randn(256)

    drawing = threading.Thread(target=hammer, daemon=True)
    drawing.start()
    try:
        raced = grade_lab2(ROOT / "reference/lab2", GAP)
    finally:
        stop.set()
        drawing.join()
    assert raced.score == raced.max_score, [c.message for c in raced.checks if c.status != "passed"]
    assert same_runs(kept(state), kept(folder))


def poison(path, reference):
    """Replace a kept run by a consistent wrong one (trained from another initialisation), under
    the right key and with a right digest: what a judge racing on the RNG would have written."""
    saved = torch.load(io.BytesIO(path.read_bytes()[:-32]), weights_only=True)
    spec = importlib.util.spec_from_file_location("test_lab2_recipe_code", RECIPE)
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    *_, pos, task, seed, device = ast.literal_eval(saved["key"])
    wrong = recipe.train(reference, pos, task, seed + 1, device)
    assert wrong["train_losses"] != saved["value"]["train_losses"]
    buffer = io.BytesIO()
    torch.save({"key": saved["key"], "value": wrong}, buffer)
    path.write_bytes(buffer.getvalue() + hashlib.sha256(buffer.getvalue()).digest())


@pytest.mark.slow
def test_a_poisoned_memo_is_found_and_computed_again(quiet, grade_lab2, state, lab2):
    _, folder, _ = quiet
    shutil.copytree(folder, state)
    path = sorted(state.glob("memo-*.pt"))[0]
    poison(path, Reference.of(lab2))
    results = grade_lab2(ROOT / "reference/lab2", EXPERIMENTS)
    assert results.score == results.max_score, [c.message for c in results.checks if c.status != "passed"]
    assert path.read_bytes() == (folder / path.name).read_bytes()       # the recipe's run, again


def test_the_recipes_memo_key_digests_the_rope_it_runs():
    """A run of the recipe kept in .grade/ is keyed by a digest of the code it ran: the checks' RoPE
    is toy_attention.turn_pairs (fed/positions.py imports it), so toy_attention.py is digested too; left
    out, a changed turn_pairs would meet a kept run made with the old one, and only its first steps'
    replay stood between the judge's truth and a stale one."""
    folder = ROOT / "grader/labs/lab2/public"
    spec = importlib.util.spec_from_file_location("lab2_public_conftest_keyed", folder / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    lab = find_lab("lab2")
    given = Reference.over(conftest.judge_folders(lab))
    files = conftest.recipe_files(lab)
    assert {Path(f).name for f in files} >= {
        "model.py", "tasks.py", "positions.py", "toy_attention.py", "conftest.py", "recipe.py"}
    assert {Path(getattr(given, name).__file__) for name in conftest.GIVEN} <= set(files)      # what it runs
    assert Path(given.positions.__file__).parent == conftest.FED
    assert "from toy_attention import" in Path(given.positions.__file__).read_text()
