"""The grading plugin: pytest collects a lab's checks, this turns each into a scored Check.

A check is a plain pytest test marked `@pytest.mark.grade(points=2, tags=["my_function"])`:
`tags` lists the student functions it exercises (the first owns the points) and `timeout`
optionally gives each of its calls more seconds. Fixtures: `student` (calls into the sandbox),
`reference` (the lab's trusted modules), `device` (the grading device).
"""
import time
from types import ModuleType

import pytest
import torch

from grader.base import collector
from grader.base.errors import SetupError
from grader.base.kinds import Status, Why
from grader.base.text import printable
from grader.core import forbid
from grader.core.outcome import Blocked, blocked, outcome
from grader.core.results import NOT_GRADED, Check
from grader.judge.channel import CallFailed
from grader.judge.zygote import MESSAGE_LIMIT
from grader.lab_api.checks import CheckFailed
from grader.lab_api.marks import GRADE, Grade, grade_of
from grader.lab_api.trusted import Reference

# Checks run by room (visibility), the most exposed first, so that nothing a less visible check
# does (its outcome blocking a function, its time spent from the budget, its inputs in a child
# left running) reaches a check the learner sees sooner
EXPOSURE = ("visible", "after_published", "after_due_date", "hidden")


class Student:
    """The submission's functions, each call run in the sandbox: `student.my_function(x, y)`."""

    def __init__(self, sandbox, functions):
        self._sandbox, self._functions = sandbox, functions
        self.timeout = None             # seconds per call, from the running check's marker

    def __getattr__(self, name):
        self._known(name)
        return lambda *args, **kwargs: self._sandbox.call(name, args, kwargs, self.timeout)

    def with_inputs(self, name, *args, **kwargs):
        """Call `name`; return (its value, its positional arguments as they were afterwards: values,
        shape, strides and dtype), an Echo whose `returned` says which arguments the value holds."""
        self._known(name)
        return self._sandbox.call(name, args, kwargs, self.timeout, echo=True)

    def in_model(self, name, *args, **kwargs):
        """Call `name` as the lab's own code does: lab.yaml's model call of it, given these arguments
        (its child module's function, which calls the learner's); that call's value."""
        self._known(name)
        call = self._sandbox.lab.model_call(name)
        if call is None:
            raise AttributeError(f"lab.yaml declares no model call of {name!r}")
        try:
            return self._sandbox.call(call, args, kwargs, self.timeout)
        except CallFailed as failure:   # the learner's function's: its timeout blocks it, as any would
            failure.function = name
            raise

    def submit(self, name, *args, timeout=None, replace=None, hidden=False, **kwargs):
        """Start a call in a child of its own, in parallel; a concurrent Future. `replace`: {file:
        bytes} it gets instead of the submission's. `hidden`: its inputs are (no visible check shows its output)."""
        self._known(name)
        return self._sandbox.submit(name, args, kwargs, timeout, replace, hidden)

    def _known(self, name):
        if name not in self._functions:
            raise AttributeError(f"the lab has no student function {name!r}")


def fixtures(lab, student, reference, device):
    """The checks' fixtures, as a plugin of their own."""

    @pytest.fixture(name="lab", scope="session")
    def lab_fixture():
        return lab

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

    @pytest.fixture(name="record_property")
    def record_property_fixture(request):
        """record_property(name, number or list): kept in Check.data (pytest's comes with junitxml)."""
        return lambda name, value: request.node.user_properties.append((name, value))

    plugin = ModuleType("grader_fixtures")      # pytest takes each fixture's name from its decorator
    for i, fixture in enumerate((lab_fixture, student_fixture, reference_fixture, device_fixture,
                                 record_property_fixture)):
        setattr(plugin, f"fixture_{i}", fixture)
    return plugin


def after_needs(order, depends):
    """`order` with each function moved after the functions it depends on (lab.yaml's depends), so
    that whether those pass is known before its checks run, whatever order was asked for."""
    placed = []

    def place(function, seen=()):
        if function not in placed and function not in seen:
            for need in depends.get(function, []):
                place(need, (*seen, function))
            placed.append(function)

    for function in order:
        place(function)
    return placed


class GradingPlugin:
    """pytest's plugin for one grading (a grader.core.request.Request) in `sandbox`."""

    def __init__(self, request, sandbox):
        lab = request.lab
        self.lab, self.sandbox = lab, sandbox
        self.on_progress = request.observers.on_progress or (lambda done, total, function: None)
        self.total = 0
        self.select = lab.select(request.selection.only)
        self.order = sorted(lab.functions, key=lambda function: function not in request.selection.first)
        self.checks = []
        self.shown = {}             # check -> its place in the report (checks run room by room)
        self.problems = []          # what is wrong with the lab itself
        self.blocked = {}           # function -> why its remaining checks do not run
        self.stopped = ""           # why no more checks run at all (the time budget ran out)
        self.setup_error = None     # this machine cannot grade (no sandbox starts): said once
        self.judge_started = time.process_time()    # the judge's own CPU, all its threads
        self.calls = Student(sandbox, lab.functions)
        self.forbidden = forbid.scan_files(lab, sandbox.files)     # function -> (file, its first Hit)
        reference = Reference.of(lab) if lab.reference else None
        self.fixtures = fixtures(lab, self.calls, reference, torch.device(sandbox.device))

    # -- collection -------------------------------------------------------------------------
    def pytest_configure(self, config):
        config.addinivalue_line("markers", "grade(points, tags, timeout=None): a scored check")
        # a failed check's text is its own (grader/core/outcome.py); pytest's, unused, would otherwise repr every
        # argument of every frame, the runs and weights of the experiments' fixtures too (seconds)
        config.option.tbstyle = "value"

    def pytest_collectreport(self, report):
        if report.failed:       # its last line says what ("value" style: only the error's own text,
            said = report.longreprtext.strip().splitlines() or ["it could not be imported"]     # maybe none)
            self.problems.append(f"{report.nodeid}: {said[-1]}")

    def pytest_collection_modifyitems(self, session, config, items):
        order = self.order
        kept = []
        for item in items:
            try:
                item.stash[GRADE] = Grade.read(item, order)
            except ValueError as problem:
                self.problems.append(f"{item.nodeid}: {problem}")
                continue
            if not self.select or grade_of(item).function in self.select:
                kept.append(item)
        needs = {function: list(functions) for function, functions in self.lab.manifest.depends.items()}
        for item in kept:
            needs.setdefault(grade_of(item).function, []).extend(grade_of(item).tags[1:])
        order = after_needs(order, needs)
        kept.sort(key=lambda item: order.index(grade_of(item).function))
        self.shown = {item.nodeid: place for place, item in enumerate(kept)}     # the report's order
        kept.sort(key=lambda item: EXPOSURE.index(self.lab.visibility_of(item.path, item.nodeid)))
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = [] if self.problems else kept
        self.total = len(items)

    def pytest_collection_finish(self):
        collector.resume()      # imports are done: where grade.py paused the collector, it collects again

    def pytest_sessionfinish(self):
        """The checks in the report's order: by function, as the lab lists its checks."""
        self.checks.sort(key=lambda check: self.shown[check.test])

    # -- running ----------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        grade = grade_of(item)
        self.on_progress(len(self.checks), self.total, grade.function)
        self.calls.timeout = grade.timeout
        self.sandbox.serve(item.nodeid, self.lab.visibility_of(item.path, item.nodeid))
        if self.stopped:
            raise Blocked(grade.function, Why.BUDGET, self.stopped)
        if time.process_time() - self.judge_started > self.lab.manifest.judge_budget:
            raise Blocked(grade.function, Why.JUDGE, f"not graded: the grader's own work for this submission ran "
                          f"past its {self.lab.manifest.judge_budget:g} s ({NOT_GRADED})")
        needs = [*grade.tags[1:], *self.lab.manifest.depends.get(grade.function, [])]
        for function in [grade.function, *needs]:
            if function in self.blocked:
                raise blocked(function, self.blocked[function], grade.function)
        for function in needs:              # a check is not charged for another function's bug
            if any(c.function == function and c.status != Status.PASSED for c in self.checks):
                raise blocked(function, Why.FAILING, grade.function)
        if grade.function in self.forbidden:
            raise CheckFailed(*forbid.sentence(grade.function, *self.forbidden[grade.function]))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.when == "call" or (call.when == "setup" and not report.passed):
            self._record(item, call, report)
        return report

    def _record(self, item, call, report):
        error = call.excinfo.value if call.excinfo else None
        if isinstance(error, SetupError):
            self.setup_error = error
            item.session.shouldstop = str(error)
            return
        if call.when == "setup" and isinstance(error, pytest.FixtureLookupError):
            self.problems.append(f"{item.nodeid}: {error.msg or 'unknown fixture ' + str(error.argname)}")
        result = outcome(error, report.outcome, grade_of(item).function, self.lab)
        if result.blocks:                   # its effects on the checks after it
            function, why = result.blocks
            self.blocked[function] = why
        if result.stops:
            self.stopped = result.stops
        self.checks.append(self._check(item, result))
        self.on_progress(len(self.checks), self.total, grade_of(item).function)

    def _check(self, item, result):
        """The Check of a graded item: its outcome, what its calls printed, what it measured."""
        grade = grade_of(item)
        doc = (item.function.__doc__ or "").strip().splitlines()
        variant = f" [{item.callspec.id}]" if hasattr(item, "callspec") else ""
        visibility = self.lab.visibility_of(item.path, item.nodeid)
        return Check(
            name=(doc[0] if doc else item.originalname) + variant, test=item.nodeid, tags=list(grade.tags),
            points=grade.points, score=grade.points if result.status == Status.PASSED else 0, status=result.status,
            message=printable(result.message)[:MESSAGE_LIMIT], hint=result.hint, failure=result.failure,
            blocked_by=result.blocked_by, mistake=result.mistake,
            output=printable(self.sandbox.printed.take(item.nodeid)),
            data=dict(item.user_properties),        # what the check measured: pytest's record_property
            visibility=visibility, inputs_hidden=self.sandbox.inputs_seen and visibility != "hidden")
