"""grader/lab_api/memo.py: what the judge computes once, kept in memory and on disk, never trusted blindly."""
import hashlib
import io
from concurrent.futures import Future

import pytest
import torch

from grader.lab_api import memo


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    monkeypatch.setattr(memo, "_memory", {})
    monkeypatch.setattr(memo, "_used", {})
    monkeypatch.setattr(memo, "_pending", {})


def counting(value):
    """start() for memo.later: a done Future of `value`, and the list of its calls."""
    calls = []

    def start():
        calls.append(1)
        done = Future()
        done.set_result(value)
        return done
    return start, calls


def new_worker(monkeypatch):
    monkeypatch.setattr(memo, "_memory", {})        # another process on the same machine


def test_computed_once_then_kept_in_memory_and_on_disk(tmp_path, monkeypatch):
    start, calls = counting({"losses": [1.0, 0.5], "weights": torch.ones(3)})
    first = memo.later("t", ("a", 1), start, folder=tmp_path).result()
    assert memo.later("t", ("a", 1), start, folder=tmp_path).result() is first and len(calls) == 1
    new_worker(monkeypatch)
    again = memo.later("t", ("a", 1), start, folder=tmp_path).result()
    assert len(calls) == 1 and again["losses"] == [1.0, 0.5] and torch.equal(again["weights"], torch.ones(3))
    assert [p.name for p in tmp_path.iterdir()] == [memo.file_name("t", ("a", 1))]     # no .part left


def test_a_file_ends_with_the_digest_of_the_rest(tmp_path):
    memo.keep("t", ("a", 1), [1.0], tmp_path)
    data = (tmp_path / memo.file_name("t", ("a", 1))).read_bytes()
    assert hashlib.sha256(data[:-32]).digest() == data[-32:]


def test_another_key_is_computed_apart(tmp_path):
    start, calls = counting([1.0])
    memo.later("t", ("a", 1), start, folder=tmp_path)
    memo.later("t", ("a", 2), start, folder=tmp_path)
    assert len(calls) == 2


def damage(path, how):
    data = path.read_bytes()
    if how == "one bit":
        path.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif how == "no digest":                        # the files of earlier versions
        path.write_bytes(data[:-32])
    elif how == "foreign key":
        buffer = io.BytesIO()
        torch.save({"key": repr(("other",)), "value": [9.0]}, buffer)
        path.write_bytes(buffer.getvalue() + hashlib.sha256(buffer.getvalue()).digest())
    else:
        path.write_bytes(how)


@pytest.mark.parametrize("how", [b"", b"not a torch file", "one bit", "no digest", "foreign key"])
def test_a_damaged_or_foreign_file_is_ignored_and_rebuilt(tmp_path, monkeypatch, how):
    start, calls = counting([2.0])
    memo.later("t", ("a", 1), start, folder=tmp_path)
    damage(tmp_path / memo.file_name("t", ("a", 1)), how)
    new_worker(monkeypatch)
    assert memo.later("t", ("a", 1), start, folder=tmp_path).result() == [2.0] and len(calls) == 2
    new_worker(monkeypatch)
    assert memo.later("t", ("a", 1), start, folder=tmp_path).result() == [2.0] and len(calls) == 2   # rewritten


def test_a_sound_file_that_fails_its_check_is_computed_again(tmp_path, monkeypatch):
    """A file whose digest and key are right but whose value is not what the lab computes (the
    judge's own run, trained from interleaved draws of a shared RNG, say)."""
    memo.keep("t", ("a", 1), [6.0], tmp_path)       # poisoned
    new_worker(monkeypatch)
    start, calls = counting([5.0])
    checked = []
    check = lambda value: checked.append(value) or value == [5.0]
    assert memo.later("t", ("a", 1), start, check, tmp_path).result() == [5.0] and len(calls) == 1
    assert checked == [[6.0]]
    new_worker(monkeypatch)
    assert memo.later("t", ("a", 1), start, check, tmp_path).result() == [5.0] and len(calls) == 1
    assert checked == [[6.0], [5.0]]                # read from disk: checked again; from memory: not
    memo.later("t", ("a", 1), start, check, tmp_path)
    assert len(checked) == 2


def test_a_check_that_raises_fails(tmp_path, monkeypatch):
    memo.keep("t", ("a", 1), {"not": "what the check expects"}, tmp_path)
    new_worker(monkeypatch)
    start, calls = counting({"losses": [1.0]})
    assert memo.later("t", ("a", 1), start, lambda value: value["losses"], tmp_path).result() == {"losses": [1.0]}


def test_a_folder_that_cannot_be_written_only_costs_time(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("in the way of a folder")
    start, calls = counting([3.0])
    assert memo.later("t", ("a", 1), start, folder=blocked / "cache").result() == [3.0] and len(calls) == 1


def test_a_grading_names_the_memos_it_used_and_a_changed_one_shows(tmp_path, monkeypatch):
    memo.keep("t", ("a", 1), [1.0], tmp_path)
    memo.forget_used()
    new_worker(monkeypatch)
    memo.recall("t", ("a", 1), folder=tmp_path)
    used = memo.used()
    assert list(used) == [memo.file_name("t", ("a", 1))]
    assert memo.changed(used, tmp_path) is False
    (tmp_path / next(iter(used))).unlink()
    assert memo.changed(used, tmp_path) is False        # missing: computed again, the same, when needed
    memo.keep("t", ("a", 1), [1.5], tmp_path)
    assert memo.changed(used, tmp_path) is True


def test_held_says_whether_a_value_is_kept_without_reading_it(tmp_path, monkeypatch):
    assert not memo.held("t", ("a", 1), tmp_path)
    memo.keep("t", ("a", 1), [1.0], tmp_path)
    assert memo.held("t", ("a", 1), tmp_path)
    new_worker(monkeypatch)
    (tmp_path / memo.file_name("t", ("a", 1))).write_bytes(b"damaged")
    assert memo.held("t", ("a", 1), tmp_path)       # a file: read, and checked, when asked for
    assert memo.recall("t", ("a", 1), folder=tmp_path) is None


def test_work_under_way_is_shared_and_forgotten_once_done(tmp_path):
    """A grading that ended before its work did (a batch worker's student, a --watch round): the
    next one asking for that value takes the work under way over instead of starting it again."""
    under_way, calls = Future(), []
    start = lambda: calls.append(1) or under_way
    first = memo.compute("t", ("a", 1), start, tmp_path)
    assert memo.held("t", ("a", 1), tmp_path) and not (tmp_path / memo.file_name("t", ("a", 1))).exists()
    assert memo.later("t", ("a", 1), start, folder=tmp_path) is first and len(calls) == 1
    under_way.set_result([4.0])
    assert first.result() == [4.0] and memo._pending == {}
    failed = Future()
    memo.compute("t", ("b", 1), lambda: failed, tmp_path)
    failed.set_exception(RuntimeError("cancelled with its pool"))
    assert not memo.held("t", ("b", 1), tmp_path)          # asked again, it is computed afresh
