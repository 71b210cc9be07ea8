"""grader/memo.py: what the judge computes once, kept in memory and on disk, never trusted blindly."""
import pytest
import torch

from grader import memo


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    monkeypatch.setattr(memo, "_memory", {})


def counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value
    return compute, calls


def test_computed_once_then_kept_in_memory_and_on_disk(tmp_path, monkeypatch):
    compute, calls = counting({"losses": [1.0, 0.5], "weights": torch.ones(3)})
    first = memo.remembered("t", ("a", 1), compute, tmp_path)
    assert memo.remembered("t", ("a", 1), compute, tmp_path) is first and len(calls) == 1
    monkeypatch.setattr(memo, "_memory", {})          # a new worker on the same machine
    again = memo.remembered("t", ("a", 1), compute, tmp_path)
    assert len(calls) == 1 and again["losses"] == [1.0, 0.5] and torch.equal(again["weights"], torch.ones(3))
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".part"] == []


def test_another_key_is_computed_apart(tmp_path):
    compute, calls = counting([1.0])
    memo.remembered("t", ("a", 1), compute, tmp_path)
    memo.remembered("t", ("a", 2), compute, tmp_path)
    assert len(calls) == 2


@pytest.mark.parametrize("damage", [b"", b"not a torch file", None], ids=["empty", "garbage", "foreign key"])
def test_a_damaged_or_foreign_file_is_ignored_and_rebuilt(tmp_path, monkeypatch, damage):
    compute, calls = counting([2.0])
    memo.remembered("t", ("a", 1), compute, tmp_path)
    (path,) = tmp_path.iterdir()
    if damage is None:
        torch.save({"key": repr(("other",)), "value": [9.0]}, path)
    else:
        path.write_bytes(damage)
    monkeypatch.setattr(memo, "_memory", {})
    assert memo.remembered("t", ("a", 1), compute, tmp_path) == [2.0] and len(calls) == 2
    monkeypatch.setattr(memo, "_memory", {})
    assert memo.remembered("t", ("a", 1), compute, tmp_path) == [2.0] and len(calls) == 2   # rewritten


def test_a_folder_that_cannot_be_written_only_costs_time(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("in the way of a folder")
    compute, calls = counting([3.0])
    assert memo.remembered("t", ("a", 1), compute, blocked / "cache") == [3.0] and len(calls) == 1
