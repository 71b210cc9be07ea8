"""The lab's trusted modules, imported in the judge apart from everything else in its process."""
import importlib
import sys
import threading
from pathlib import Path


class Reference:
    """The lab's trusted modules (reference solutions over the handout's given files), imported
    here in the judge: `reference.solution`, `reference.given`. Imported apart from sys.modules,
    so that they import each other (given.py's `from solution import ...` gets the reference)
    and nothing else in this process sees or shadows them."""

    _lock = threading.Lock()
    _imported: dict = {}            # its folders -> a Reference, shared by a process's gradings

    @classmethod
    def of(cls, lab):
        """The lab's reference, imported once per process: a batch worker's students and the
        rounds of --watch share it (it is trusted code, and student code never reaches it)."""
        return cls.over([f for f in (lab.reference, lab.handout) if f] + [m.parent for m in lab.child_modules])

    @classmethod
    def over(cls, folders):
        """Trusted modules from `folders` (the first that has a name wins), once per process."""
        key = tuple(str(f) for f in folders)
        with cls._lock:
            if key not in cls._imported:
                cls._imported[key] = cls(key)
            return cls._imported[key]

    def __init__(self, folders):
        self._folders = list(folders)
        self._names = {p.stem for folder in self._folders for p in Path(folder).glob("*.py")}
        self._modules = {}

    def __getattr__(self, name):
        if name.startswith("_") or name not in self._names:
            raise AttributeError(f"the lab has no module {name!r}")
        with self._lock:
            if name not in self._modules:
                self._import(name)
        return self._modules[name]

    def _import(self, name):
        outside = {n: sys.modules.pop(n) for n in self._names if n in sys.modules}
        sys.modules.update(self._modules)           # ours, imported before
        path = sys.path[:]
        sys.path[:0] = self._folders
        try:
            importlib.import_module(name)
        finally:
            self._modules.update({n: sys.modules.pop(n) for n in self._names if n in sys.modules})
            sys.path[:] = path
            sys.modules.update(outside)
