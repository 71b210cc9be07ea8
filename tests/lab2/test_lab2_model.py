"""Lab 2's given files: the tiny transformer (model.py) and the tasks with their loops (tasks.py).

RoPE comes from the reference positions.py, since the handout's is a stub for the learner.
"""
import importlib.util
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
HANDOUT, REFERENCE = ROOT / "assignments" / "lab2", ROOT / "reference" / "lab2"
POSITIONS = ("none", "learned", "sinusoidal", "rope", "alibi")


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_handout():
    """model.py bound to the reference positions.py, and tasks.py; sys.modules left as found."""
    saved = sys.modules.get("positions")
    sys.modules["positions"] = load("lab2_reference_positions", REFERENCE / "positions.py")
    try:
        return load("lab2_model", HANDOUT / "model.py"), load("lab2_tasks", HANDOUT / "tasks.py")
    finally:
        if saved is None:
            del sys.modules["positions"]
        else:
            sys.modules["positions"] = saved


model, tasks = load_handout()
torch.set_num_threads(1)


@pytest.mark.parametrize("pos", POSITIONS)
def test_logits_shape_for_every_position_encoding(pos):
    net = model.build_model(model.Config(pos=pos))
    for seq_len in (1, tasks.TRAIN_LEN, net.cfg.max_len):
        tokens, _ = tasks.make_batch("lookback", 2, seq_len, torch.Generator().manual_seed(0))
        assert net(tokens).shape == (2, seq_len, tasks.VOCAB_SIZE)


def test_unknown_position_encoding_is_refused():
    with pytest.raises(ValueError):
        model.Config(pos="absolute")


def test_same_seed_same_model_data_and_training():
    a, b = (model.build_model(model.Config(pos="rope"), seed=3) for _ in range(2))
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    other = model.build_model(model.Config(pos="rope"), seed=4)
    assert not torch.equal(a.lm_head.weight, other.lm_head.weight)
    losses = [tasks.train(net, "lookback", steps=5, seed=1) for net in (a, b)]
    assert losses[0] == losses[1]
    for task in tasks.TASKS:
        x1, y1 = tasks.make_batch(task, 4, 10, torch.Generator().manual_seed(7))
        x2, y2 = tasks.make_batch(task, 4, 10, torch.Generator().manual_seed(7))
        assert torch.equal(x1, x2) and torch.equal(y1, y2)


def test_targets_are_what_the_tasks_say():
    tokens, targets = tasks.make_batch("lookback", 8, 30, torch.Generator().manual_seed(0))
    k = tasks.LOOKBACK
    assert (targets[:, :k] == tasks.IGNORE).all() and torch.equal(targets[:, k:], tokens[:, :-k])
    tokens, targets = tasks.make_batch("majority", 8, 30, torch.Generator().manual_seed(0))
    for b in range(8):
        for t in range(k, 30):
            counts = torch.bincount(tokens[b, : t + 1], minlength=tasks.VOCAB_SIZE)
            assert targets[b, t] == int((counts == counts.max()).nonzero()[0])   # smallest mode


def test_no_positions_learns_the_order_free_task_but_not_lookback():
    accuracy = {}
    for task in tasks.TASKS:
        net = model.build_model(model.Config(pos="none"))
        tasks.train(net, task)
        accuracy[task] = tasks.evaluate(net, task, tasks.TRAIN_LEN)[1]
    assert accuracy["majority"] > 0.7 and accuracy["lookback"] < 0.4, accuracy


def test_learned_rows_past_the_training_length_stay_as_initialised():
    net = model.build_model(model.Config(pos="learned"))
    before = net.add_pos.table.detach().clone()
    tasks.train(net, "lookback", steps=5)
    after, trained = net.add_pos.table.detach(), tasks.TRAIN_LEN
    assert torch.equal(after[trained:], before[trained:])
    assert not torch.equal(after[:trained], before[:trained])


class RightBefore(torch.nn.Module):
    """Answers "lookback" correctly at positions < 24 and wrongly from 24 on."""

    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Parameter(torch.zeros(1))

    def forward(self, tokens):
        answer = tokens.roll(tasks.LOOKBACK, dims=1)
        answer[:, 24:] = (answer[:, 24:] + 1) % tasks.VOCAB_SIZE
        return torch.nn.functional.one_hot(answer, tasks.VOCAB_SIZE).float() * 10


def test_evaluate_scores_only_the_positions_asked_for():
    fake, k = RightBefore(), tasks.LOOKBACK
    assert tasks.evaluate(fake, "lookback", 24)[1] == 1.0
    assert tasks.evaluate(fake, "lookback", 48, start=24)[1] == 0.0
    assert tasks.evaluate(fake, "lookback", 48)[1] == pytest.approx((24 - k) / (48 - k))
    assert tasks.evaluate(fake, "lookback", 48, start=24)[0] > 5                # wrong, confidently
    with pytest.raises(ValueError):
        tasks.evaluate(fake, "lookback", 24, start=24)


def summed_output_changes(attn, x):
    """Largest change of attn(x).sum(1) under a swap, a rotation or a reversal of positions."""
    T = x.shape[1]
    perms = [torch.tensor([1, 0, *range(2, T)]), torch.arange(T).roll(1), torch.arange(T).flip(0)]
    with torch.no_grad():
        summed = attn(x).sum(1)
        return max((attn(x[:, p]).sum(1) - summed).abs().max().item() for p in perms)


def test_attention_without_positions_or_mask_is_permutation_invariant():
    x = torch.randn(1, 5, 64, generator=torch.Generator().manual_seed(0))
    attn = model.attention_layer(64)
    assert attn(x).shape == x.shape
    assert summed_output_changes(attn, x) < 1e-5


@pytest.mark.parametrize("pos,causal", [(p, False) for p in POSITIONS[1:]] + [("none", True)])
def test_attention_with_positions_or_mask_is_not(pos, causal):
    x = torch.randn(1, 5, 64, generator=torch.Generator().manual_seed(0))
    attn = model.attention_layer(64, pos=pos, causal=causal, seed=1)
    assert attn(x).shape == x.shape
    assert summed_output_changes(attn, x) > 1e-3
    again = model.attention_layer(64, pos=pos, causal=causal, seed=1)
    assert torch.equal(attn(x), again(x))                          # built from the seed alone


@pytest.mark.parametrize("pos", POSITIONS)
def test_rebuilt_from_config_and_state_dict_gives_the_same_outputs(pos):
    net = model.build_model(model.Config(pos=pos), seed=0)
    tasks.train(net, "lookback", steps=3)
    state = {name: t.clone() for name, t in net.state_dict().items()}
    assert not any(name.endswith(("cos", "sin", "slopes")) for name in state)   # fixed, not saved
    rebuilt = model.build_model(asdict(net.cfg), state, seed=123)
    tokens, _ = tasks.make_batch("lookback", 4, 96, torch.Generator().manual_seed(1))
    assert torch.equal(net(tokens), rebuilt(tokens))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_trains_and_evaluates_like_cpu():
    results = []
    for device in ("cpu", "cuda"):
        net = model.build_model(model.Config(pos="rope"), device=device)
        losses = tasks.train(net, "lookback", steps=20)
        results.append((losses[0], tasks.evaluate(net, "lookback", 96, start=24)[1]))
    (cpu_first, cpu_acc), (cuda_first, cuda_acc) = results
    assert cuda_first == pytest.approx(cpu_first, abs=1e-4)        # same init, same first batch
    assert cuda_acc == pytest.approx(cpu_acc, abs=0.1)
