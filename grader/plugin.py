"""The grading plugin: pytest collects a lab's checks, this turns each into a scored Check.

A check is a plain pytest test marked `@pytest.mark.grade(points=2, tags=["my_function"])`:
`tags` lists the student functions it exercises (the first owns the points) and `timeout`
optionally gives each of its calls more seconds. Fixtures: `student` (calls into the sandbox),
`reference` (the lab's trusted modules), `device` (the grading device).
"""
import importlib
import sys
import threading
from pathlib import Path
from types import ModuleType

import pytest
import torch

from grader.checks import CheckFailed
from grader.results import Check
from grader.sandbox import CallFailed

# Why a function's remaining checks do not run: as the check's own function, as a dependency.
BLOCKED = {"not_implemented": ("not implemented yet", "is not implemented yet"),
           "timeout": ("skipped: it timed out in an earlier check", "timed out in an earlier check")}


class Student:
    """The submission's functions, each call run in the sandbox: `student.my_function(x, y)`."""

    def __init__(self, sandbox, functions):
        self._sandbox, self._functions = sandbox, functions
        self.timeout = None             # seconds per call, from the running check's marker

    def __getattr__(self, name):
        self._known(name)
        return lambda *args, **kwargs: self._sandbox.call(name, args, kwargs, self.timeout)

    def with_inputs(self, name, *args, **kwargs):
        """Call `name`; return (its value, its positional arguments as they were afterwards)."""
        self._known(name)
        return self._sandbox.call(name, args, kwargs, self.timeout, echo=True)

    def submit(self, name, *args, timeout=None, **kwargs):
        """Start a call in a child of its own, in parallel; returns a concurrent Future."""
        self._known(name)
        return self._sandbox.submit(name, args, kwargs, timeout)

    def _known(self, name):
        if name not in self._functions:
            raise AttributeError(f"the lab has no student function {name!r}")


class Reference:
    """The lab's trusted modules (reference solutions over the handout's given files), imported
    here in the judge: `reference.solution`, `reference.given`. Imported apart from sys.modules,
    so that they import each other (given.py's `from solution import ...` gets the reference)
    and nothing else in this process sees or shadows them."""

    _lock = threading.Lock()

    def __init__(self, lab):
        self._folders = [str(f) for f in (lab.reference, lab.handout) if f is not None]
        self._folders += [str(m.parent) for m in lab.child_modules]
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


def fixtures(student, reference, device):
    """The checks' fixtures, as a plugin of their own."""

    @pytest.fixture(name="student", scope="session")
    def student_fixture():
        return student

    @pytest.fixture(name="reference", scope="session")
    def reference_fixture():
        if reference is None:
            pytest.skip("no reference solutions here")
        return reference

    @pytest.fixture(name="device", scope="session")
    def device_fixture():
        return device

    plugin = ModuleType("grader_fixtures")
    plugin.student, plugin.reference, plugin.device = student_fixture, reference_fixture, device_fixture
    return plugin


class GradingPlugin:
    def __init__(self, lab, sandbox, device, select=()):
        self.lab = lab
        self.select = lab.select(select)
        self.visibility = {folder: visibility for folder, visibility in lab.test_folders}
        self.checks = []
        self.problems = []          # what is wrong with the lab itself
        self.blocked = {}           # function -> why its remaining checks do not run
        self.calls = Student(sandbox, lab.functions)
        reference = Reference(lab) if lab.reference else None
        self.fixtures = fixtures(self.calls, reference, torch.device(device))

    # -- collection -------------------------------------------------------------------------
    def pytest_configure(self, config):
        config.addinivalue_line("markers", "grade(points, tags, timeout=None): a scored check")

    def pytest_collectreport(self, report):
        if report.failed:
            self.problems.append(f"{report.nodeid}: {report.longreprtext.strip().splitlines()[-1]}")

    def pytest_collection_modifyitems(self, session, config, items):
        order = list(self.lab.functions)
        kept = []
        for item in items:
            marker = item.get_closest_marker("grade")
            points = marker and marker.kwargs.get("points")
            tags = marker and marker.kwargs.get("tags")
            if not (isinstance(points, (int, float)) and points > 0 and tags
                    and set(tags) <= set(order)):
                self.problems.append(f"{item.nodeid}: needs @pytest.mark.grade(points=N > 0, "
                                     f"tags=[functions of {', '.join(order)}])")
            elif not self.select or tags[0] in self.select:
                kept.append(item)
        kept.sort(key=lambda item: order.index(item.get_closest_marker("grade").kwargs["tags"][0]))
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = [] if self.problems else kept

    # -- running ----------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        grade = item.get_closest_marker("grade").kwargs
        self.calls.timeout = grade.get("timeout")
        for function in grade["tags"]:
            if function in self.blocked:
                own, dependency = BLOCKED[self.blocked[function]]
                pytest.skip(own if function == grade["tags"][0] else f"needs {function}, which {dependency}")
        for function in grade["tags"][1:]:     # a check is not charged for another function's bug
            if any(c.function == function and c.status != "passed" for c in self.checks):
                pytest.skip(f"needs {function}, which does not pass its own checks yet")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if call.when == "call" or (call.when == "setup" and not report.passed):
            self._record(item, call, report)

    def _record(self, item, call, report):
        grade = item.get_closest_marker("grade").kwargs
        error = call.excinfo.value if call.excinfo else None
        if call.when == "setup" and isinstance(error, pytest.FixtureLookupError):
            self.problems.append(f"{item.nodeid}: {error.msg or 'unknown fixture ' + str(error.argname)}")
        status, message, hint, output, failure = "passed", "", "", "", ""
        if report.skipped:
            status = "not_implemented" if "not implemented" in str(error) else "skipped"
            message = str(error.msg if hasattr(error, "msg") else error)
        elif report.failed:
            status, message = "failed", self._explain(error, grade["tags"][0])
            hint = getattr(error, "hint", None) or ""
            if isinstance(error, CallFailed):
                output, failure = error.output, error.kind
                if error.kind == "not_implemented":
                    status = "not_implemented"
        doc = (item.function.__doc__ or "").strip().splitlines()
        variant = f" [{item.callspec.id}]" if hasattr(item, "callspec") else ""
        self.checks.append(Check(
            name=(doc[0] if doc else item.originalname) + variant, test=item.nodeid, tags=list(grade["tags"]),
            points=grade["points"], score=grade["points"] if status == "passed" else 0,
            status=status, message=printable(message), hint=hint, output=printable(output), failure=failure,
            visibility=next(v for folder, v in self.visibility.items() if Path(item.path).is_relative_to(folder))))

    def _explain(self, error, function):
        """The failure in words for the learner, blocking what cannot run any more."""
        if isinstance(error, CheckFailed | AssertionError):
            return str(error)
        if not isinstance(error, CallFailed):
            return (f"the check could not use what your code returned "
                    f"({type(error).__name__}: {str(error)[:300]})")
        if error.kind == "not_implemented":
            missing = error.message if error.message in self.lab.functions else error.function
            self.blocked[missing] = error.kind
            own, dependency = BLOCKED[error.kind]
            return own if missing == function else f"needs {missing}, which {dependency}"
        if error.kind == "timeout":
            self.blocked[error.function] = error.kind
            return f"{error.function}: {error.message}"
        if error.kind == "raised":
            where = "".join(f"\n  at {w}" for w in error.where)
            return f"{error.function} raised {error.message}{where}"
        return f"{error.function}: {error.message}"


def printable(text):
    """Text from student code made safe for a terminal and a JSON file: no control characters."""
    return "".join(c if c.isprintable() or c in "\n\t" else "\N{REPLACEMENT CHARACTER}" for c in text)
