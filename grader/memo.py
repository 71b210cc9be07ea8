"""Trusted results the judge computes once: kept for a worker's life and on disk under .grade/.

A lab's checks call `remembered(name, key, compute)` for work that depends only on trusted code
and `key` (e.g. the lab's recipe trained by the judge for one seed): a batch pays it once per key,
a learner once per machine. Only the judge reads and writes these files; children never see
.grade/ inside bubblewrap (with the plain-process fallback nothing is hidden from student code
anyway). Files load with torch.load(weights_only=True): tensors and plain data, no code.
"""
import hashlib
import os
import tempfile
import threading
from pathlib import Path

import torch

from grader.labs import ROOT

STATE = ROOT / ".grade"
_memory = {}                    # (name, digest) -> value, for this process's life
_lock = threading.Lock()


def remembered(name, key, compute, folder=None):
    """compute()'s value for `key` (a repr-able tuple), computed at most once per process and
    kept in `folder`/memo-<name>-<digest>.pt; a missing, corrupt or foreign file is recomputed."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
    with _lock:
        if (name, digest) not in _memory:
            path = (folder or STATE) / f"memo-{name}-{digest}.pt"
            value = _load(path, repr(key))
            if value is None:
                value = compute()
                _store(path, repr(key), value)
            _memory[name, digest] = value
        return _memory[name, digest]


def _load(path, key):
    try:
        saved = torch.load(path, weights_only=True)
    except Exception:           # missing, or damaged: torch.load fails in many ways. Compute afresh
        return None
    return saved["value"] if isinstance(saved, dict) and saved.get("key") == key else None


def _store(path, key, value):
    """Write atomically (a whole file or none); a folder that cannot be written only costs time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".part")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as file:
            torch.save({"key": key, "value": value}, file)
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
