"""Trusted results the judge computes once: kept for a worker's life and on disk under .grade/.

A lab's checks ask for it through grader.lab_api.TrustedWork, which calls `later(name, key,
start, check)` (or `held` and `compute`, from a thread other than the checks') for work that
depends only on trusted code and `key`, which names the lab's content (a hash of its files) and
what is computed (e.g. one run of the lab's recipe): a batch pays it once per key, a learner once
per machine. A file is written
aside, synced, then renamed; it holds its key and ends with the SHA-256 of all before it. Loaded,
it must have that digest and that key and pass the lab's `check` (e.g. the first steps of a run
replayed): one that does not is computed again and replaced, and no grade is made from it.

Only the judge reads and writes these files; children never see .grade/ inside bubblewrap. A
grading's results name the files it used and their digests (`used`), so that a batch regrades a
student whose memo has changed since (`changed`). Files load with torch.load(weights_only=True):
tensors and plain data, no code.
"""
import hashlib
import io
import os
import threading
from concurrent.futures import Future
from pathlib import Path

from grader.base.files import write_atomic
from grader.base.root import ROOT
from grader.lab_api.apart import then

STATE = ROOT / ".grade"
DIGEST = 32                     # bytes of SHA-256 that end every file
_memory: dict[str, tuple[object, str]] = {}     # file name -> (value, digest), for this process's life
_used: dict[str, str] = {}                      # file name -> digest, of what gradings used since forget_used()
_pending: dict[Path, Future] = {}               # path -> Future of a value being computed in this process
_lock = threading.RLock()       # reentrant: a value computed at once is kept under it


def file_name(name, key):
    return f"memo-{name}-{hashlib.sha256(repr(key).encode()).hexdigest()[:24]}.pt"


def later(name, key, start, check=None, folder=None):
    """A Future of the value for `key` (a repr-able tuple): done at once when this process has it,
    or its file is sound and check(value) holds; else start()'s Future (work in another process,
    say), whose value is kept when it comes."""
    value = recall(name, key, check, folder)
    if value is not None:
        done = Future()
        done.set_result(value)
        return done
    return compute(name, key, start, folder)


def compute(name, key, start, folder=None):
    """start()'s Future (work in another process, say), whose value is kept for `key` when it comes;
    the Future of one under way for `key` already, if any (a grading that ended before its work did,
    in a batch worker or --watch: the next one takes it over)."""
    path = str((folder or STATE) / file_name(name, key))
    with _lock:
        future = _pending.get(path)
        if future is None:
            future = _pending[path] = then(start(), lambda computed: keep(name, key, computed, folder))
            future.add_done_callback(lambda done: _forget_pending(path, done))
        return future


def _forget_pending(path, done):
    with _lock:
        if _pending.get(path) is done:
            del _pending[path]


def held(name, key, folder=None):
    """Whether a value for `key` is in this process's memory, under way, or in a file (not yet read
    nor checked): cheap, and safe from any thread."""
    path = (folder or STATE) / file_name(name, key)
    with _lock:
        if path.name in _memory or str(path) in _pending:
            return True
    return path.is_file()


def recall(name, key, check=None, folder=None):
    """The value kept for `key`, or None: a missing, damaged or foreign file, or one that fails `check`."""
    file = file_name(name, key)
    with _lock:
        kept = _memory.get(file)
    if kept is None:
        kept = _load((folder or STATE) / file, repr(key))
        if kept is None or not _passes(check, kept[0]):
            return None
    with _lock:
        _memory[file] = kept
        _used[file] = kept[1]
    return kept[0]


def keep(name, key, value, folder=None):
    """Keep `value` for `key`, in memory and on disk (a folder that cannot be written only costs
    time); returns it."""
    import torch

    buffer = io.BytesIO()
    torch.save({"key": repr(key), "value": value}, buffer)
    data = buffer.getvalue()
    digest = hashlib.sha256(data).digest()
    file = file_name(name, key)
    with _lock:
        _memory[file] = value, digest.hex()
        _used[file] = digest.hex()
    _store((folder or STATE) / file, data + digest)
    return value


def forget_used():
    with _lock:
        _used.clear()


def used():
    """{file name: digest} of every memo used since forget_used() (one grading's)."""
    with _lock:
        return dict(_used)


def changed(used_then, folder=None):
    """Whether a memo used then (`used()`'s dict) now holds something else. A missing file is no
    change: it is computed again, the same, when needed."""
    for file, digest in used_then.items():
        try:
            with open((folder or STATE) / Path(file).name, "rb") as handle:
                handle.seek(-DIGEST, os.SEEK_END)
                if handle.read().hex() != digest:
                    return True
        except OSError:
            continue
    return False


def _passes(check, value):
    try:
        return check is None or bool(check(value))
    except Exception:           # a file of the right key and digest, but not what the lab kept
        return False


def _load(path, key):
    """(value, digest) of a sound file of `key`, else None."""
    import torch

    try:
        data = path.read_bytes()
        body, digest = data[:-DIGEST], data[-DIGEST:]
        if len(data) <= DIGEST or hashlib.sha256(body).digest() != digest:
            return None
        saved = torch.load(io.BytesIO(body), weights_only=True)
    except Exception:           # missing, or damaged: torch.load fails in many ways. Compute afresh
        return None
    if isinstance(saved, dict) and saved.get("key") == key and saved.get("value") is not None:
        return saved["value"], digest.hex()
    return None


def _store(path, data):
    """Write atomically and durably: a whole file or none, synced before it takes the name; a
    memory that cannot be written is only not kept."""
    try:
        write_atomic(path, data, durable=True)
    except OSError:
        pass
