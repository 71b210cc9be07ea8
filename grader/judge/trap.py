"""The child's second line against forbidden calls (`forbid:` in lab.yaml; the first is the judge's
reading of the source, grader/forbid.py): each forbidden callable is wrapped, and a call of it
made by the submission's code while a function that forbids it runs is recorded and ends that
call with ForbiddenCall, whatever the code does with the error. A call from torch's own code or
from the handout's given modules goes through: torch's functions call each other, and given code
may use what learners may not. This runs among student code, which could undo it: a second line
only, for names the source does not show (built at run time).
"""
import functools
import importlib
import sys
from pathlib import Path

METHOD = "torch.Tensor."


class ForbiddenCall(BaseException):
    """Raised for a forbidden call: a BaseException, so that `except Exception` does not keep it."""


class Trap:
    def __init__(self, rules, trusted):
        self.rules = {function: set(names) for function, names in rules.items()}
        self.trusted = trusted          # files and folders whose calls go through
        self.current = None             # the student function being called
        self.hit = None                 # the first forbidden name it called

    def install(self):
        for name in sorted(set().union(*self.rules.values())):
            found = _find(name)
            if found:
                owner, attribute, original = found
                try:
                    setattr(owner, attribute, self._wrap(name, original))
                except (TypeError, AttributeError):     # a built-in type's method: the source scan only
                    pass

    def _wrap(self, name, original):
        @functools.wraps(original)
        def trapped(*args, **kwargs):
            if name in self.rules.get(self.current, ()) and not self._trusted(sys._getframe(1).f_code.co_filename):
                self.hit = self.hit or name
                raise ForbiddenCall(name)
            return original(*args, **kwargs)
        return trapped

    def _trusted(self, filename):
        path = Path(filename)
        return path in self.trusted or any(path.is_relative_to(folder) for folder in self.trusted)

    def call(self, name, function, args, kwargs):
        """function(*args, **kwargs) as student function `name`: ForbiddenCall if it made a forbidden call."""
        self.current, self.hit = name, None
        try:
            value = function(*args, **kwargs)
        except BaseException:
            if self.hit:
                raise ForbiddenCall(self.hit) from None
            raise
        finally:
            self.current = None
        if self.hit:
            raise ForbiddenCall(self.hit)
        return value


def _find(name):
    """(owner, attribute, callable) for a dotted name, or None where this torch has no such thing."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:-1]:
                owner = getattr(owner, part)
            return owner, parts[-1], getattr(owner, parts[-1])
        except AttributeError:
            return None
    return None


def trap(rules, workdir, student_files):
    """A Trap for `rules` ({function: [dotted names]}), installed. Trusted: torch's folder and the
    files of `workdir` now there but the student files (the handout's given modules)."""
    if not rules:
        return Trap({}, [])
    import torch

    torch_folder = Path(torch.__file__).parent
    given = set(workdir.rglob("*.py")) - {workdir / name for name in student_files}
    made = Trap(rules, [torch_folder, torch_folder.resolve(), *given])
    made.install()
    return made
