"""`grade.py check-lab LAB`: is a lab sound? Checked as data, then by grading it.

As data: the manifest and the quiz (every problem of each; a note where an earlier form is
translated), every check's marker (points, tags naming student functions), where checks live
(public/ ships to learners, hidden/ does not; elsewhere never runs), no public check needing the
`reference` fixture (a release has none: it would be skipped), every function with checks, every
`done_when` tag carried by a check, no forbidden call in the reference, no name a forbid: rule leaves
open that lab.yaml's forbid_allowed does not allow. By running it (unless the
checks themselves are malformed): the reference earns full marks, and the pristine stubs earn
nothing, each raising NotImplementedError. Each problem is one sentence; notes are advice that
does not fail the lab.
"""
import re
from pathlib import Path
from typing import NamedTuple

from grader.base.errors import GraderError
from grader.core import forbid, forbid_rules
from grader.readers.manifest import DoneWhen, Manifest


class Collected(NamedTuple):
    """A check as pytest collects it, before anything runs."""
    test: str                       # pytest's node id
    visibility: str                 # "visible" (public/) or "hidden"
    marker: dict                    # the grade marker's keyword arguments (None: no marker)
    fixtures: tuple                 # every fixture it needs, directly or through others


def check_lab(lab, zygote=None):
    """(problems, notes): sentences, every problem found, not only the first. No problem: the lab is sound."""
    problems, notes = _as_data(lab)
    checks, collect_problems = collect(lab)
    malformed = collect_problems + _marker_problems(lab, checks)
    problems += malformed + _coverage(lab, checks, notes)
    if not malformed:               # grading a lab whose checks are malformed only repeats them
        problems += _graded(lab, zygote)
    return problems, notes


# -- as data ---------------------------------------------------------------------------------------
def _as_data(lab):
    problems, notes = [], []
    if lab.reference is None:
        problems.append("lab.yaml names no reference (reference: FOLDER): check-lab grades it for full marks")
    elif missing := [f for f in lab.manifest.student_files if not (lab.reference / f).is_file()]:
        problems.append(f"the reference has no {missing[0]}: it should hold every student file, solved")
    else:
        problems += _forbidden_in_reference(lab)
        left = _left_open(lab)
        problems += left[0]
        notes += left[1]
    notes += lab.notes
    if lab.quiz:
        from grader.quiz.model import quiz_problems

        found, quiz_notes = quiz_problems(lab.quiz)
        problems += [f"the quiz does not load: {problem}" for problem in found]
        notes += [f"the quiz: {note}" for note in quiz_notes]
    else:
        notes.append("the lab has no quiz (quiz: FILE): the lesson is complete when the lab passes")
    elsewhere = [f for f in (lab.folder / "public", lab.folder / "hidden", lab.handout, lab.reference, lab.stubs) if f]
    strays = [p for p in lab.folder.rglob("test_*.py") if not any(p.is_relative_to(f) for f in elsewhere)]
    problems += [f"{p.relative_to(lab.folder)} is outside public/ and hidden/: its checks never run" for p in strays]
    return problems, notes


def _forbidden_in_reference(lab):
    files = {name: (lab.reference / name).read_bytes() for name in lab.manifest.student_files}
    return [f"the reference's {file} line {hit.line} uses {hit.name}, which lab.yaml forbids in {function}"
            for function, (file, hit) in forbid.scan_files(lab, files).items()]


def _left_open(lab):
    """(problems, notes): what the lab's forbid: rules leave open that lab.yaml's forbid_allowed does
    not allow, what they are refused as, and the given modules that use a forbidden name (learners
    may call it through them: the trap lets given code use it)."""
    names = sorted({name for names in lab.forbidden.values() for name in names})
    if not names:
        return [], []
    problems, notes, allowed, others = [], [], set(lab.manifest.forbid_allowed), set()
    for left in forbid_rules.left_open(names):      # each name said once, by the first rule that leaves it open
        notes.append(left.said)
        if left.other and left.other not in others:
            others.add(left.other)
            more = f" and {len(left.other) - 8} more" if len(left.other) > 8 else ""
            notes.append(f"forbid: {left.rule}: relatives by name that compute other ops stay allowed: "
                         + ", ".join(left.other[:8]) + more)
        open_ = [name for name in left.open if name not in allowed]
        allowed.update(open_)
        if open_ == [left.rule]:
            problems.append(left.said + ": forbid a name of torch's, or name it in lab.yaml's forbid_allowed")
        elif open_:
            problems.append(f"forbid: {left.rule} leaves open {', '.join(open_)}: named like it, none is refused and "
                            "the judge could not tell whether it computes the same; forbid each that does, and name "
                            "the others in lab.yaml's forbid_allowed")
    for path in sorted(lab.given.rglob("*.py")):
        if path.relative_to(lab.given).as_posix() not in lab.manifest.student_files:
            hits = forbid.scan(path.read_text("utf-8", "replace"), {"": names}).get("", [])
            notes += [f"the given {path.relative_to(lab.given)} line {hit.line} uses {hit.name}, which lab.yaml "
                      "forbids: learners may reach it through the given module" for hit in hits]
    return problems, notes


# -- the checks as collected -------------------------------------------------------------------------
class _Collector:
    """A pytest plugin that only collects."""

    def __init__(self, lab):
        self.visibility = dict(lab.test_folders)
        self.checks, self.problems = [], []

    def pytest_configure(self, config):
        config.addinivalue_line("markers", "grade(points, tags, timeout=None): a scored check")

    def pytest_collectreport(self, report):
        if report.failed:
            last = report.longreprtext.strip().splitlines()[-1]
            self.problems.append(f"{report.nodeid} cannot be collected: {last}")

    def pytest_collection_modifyitems(self, items):
        for item in items:
            marker = item.get_closest_marker("grade")
            visibility = next(v for folder, v in self.visibility.items() if Path(item.path).is_relative_to(folder))
            self.checks.append(Collected(item.nodeid, visibility, dict(marker.kwargs) if marker else None,
                                         tuple(item.fixturenames)))


def collect(lab):
    """([Collected], problems) of the lab's checks, collected by pytest, not run."""
    from grader.core.runner import run_pytest

    collector = _Collector(lab)
    run_pytest(lab, [collector], "--collect-only")
    return collector.checks, collector.problems


def _marker_problems(lab, checks):
    """One sentence per malformed grade marker, saying what is wrong with it."""
    functions, problems = list(lab.functions), []
    for check in checks:
        marker, where = check.marker, f"check {check.test}"
        points, tags, timeout = (marker or {}).get("points"), (marker or {}).get("tags"), (marker or {}).get("timeout")
        if marker is None:
            problems.append(f"{where} has no @pytest.mark.grade(points=N, tags=[...]): it cannot be scored")
        elif not isinstance(points, (int, float)) or isinstance(points, bool) or points <= 0:
            problems.append(f"{where} has no points: give its marker points=N with N > 0 (it has {points!r})")
        elif not tags or not isinstance(tags, (list, tuple)):
            problems.append(f"{where} names no student function: give its marker tags=[one of {', '.join(functions)}]")
        elif unknown := [t for t in tags if t not in functions]:
            problems.append(f"{where} is tagged {unknown[0]!r}, not a function of this lab ({', '.join(functions)})")
        elif set(marker) - {"points", "tags", "timeout"}:
            problems.append(f"{where}: the grade marker takes points, tags and timeout, not "
                            f"{', '.join(sorted(set(marker) - {'points', 'tags', 'timeout'}))}")
        elif timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            problems.append(f"{where}: timeout={timeout!r} should be seconds > 0")
    return problems


def _coverage(lab, checks, notes):
    """Functions without checks, public checks that need the reference, done_when tags no check carries."""
    problems = [f"public check {c.test} uses the reference fixture, which a release does not ship: learners "
                "would see it skipped; move it to hidden/, or compute what it expects in the check"
                for c in checks if c.visibility == "visible" and "reference" in c.fixtures]
    owners = {(c.marker or {}).get("tags", [None])[0]: c for c in checks}
    public = {(c.marker or {}).get("tags", [None])[0] for c in checks if c.visibility == "visible"}
    for function, file in lab.functions.items():
        if function not in owners:
            problems.append(f"{function} ({file}) has no check: add one with tags=[{function!r}]")
        elif function not in public:
            notes.append(f"{function} has no public check: learners get no feedback on it before they submit")
    carried = {t for c in checks for t in (c.marker or {}).get("tags", [])}
    problems += [f"done_when {d.text!r} names {t!r}, which no check carries: it can never be ticked"
                 for d in lab.manifest.done_when for t in d.tags if t not in carried]
    return problems


# -- by grading ---------------------------------------------------------------------------------------
def _graded(lab, zygote):
    """The reference must earn every point; the pristine stubs none, each function not implemented."""
    from grader.core.request import Device, Request, SandboxKind
    from grader.core.runner import grade
    from grader.judge.launchers import launcher_for
    from grader.judge.zygote import Zygote

    own = zygote is None
    zygote = zygote or Zygote(launcher_for(SandboxKind.AUTO))
    try:
        problems = []
        for folder, judge in ((lab.reference, _reference_problems), (lab.stubs, _stub_problems)):
            if folder is None or not all((folder / f).is_file() for f in lab.manifest.student_files) or \
                    (folder == lab.reference and _forbidden_in_reference(lab)):
                continue            # said already, as data: its failures would only repeat it
            zygote.reset()
            try:
                problems += judge(lab, grade(Request(lab, folder, Device.CPU), zygote))
            except GraderError as error:
                problems.append(f"grading the {'reference' if folder == lab.reference else 'stubs'} failed: {error}")
        return problems
    finally:
        if own:
            zygote.close()


def _reference_problems(lab, results):
    return [f"the reference fails {c.test} ({c.status}): {_first_line(c.message)}"
            for c in results.checks if c.status != "passed"]


def _stub_problems(lab, results):
    problems = [f"the pristine stubs pass {c.test}: an unwritten function earns {c.points:g} points"
                for c in results.checks if c.score > 0]
    for function in lab.functions:
        mine = [c for c in results.checks if c.tags[0] == function]
        if mine and not any(c.status == "not_implemented" for c in mine):     # itself, or what it needs
            failed = mine[0]
            problems.append(f"the stub of {function} does not raise NotImplementedError: {failed.test} "
                            f"says {_first_line(failed.message) or failed.status!r}")
    return problems


def _first_line(text):
    return text.strip().splitlines()[0] if text.strip() else ""


def report(lab, console, zygote=None):
    """check_lab on screen; the exit status: 0 sound, 1 problems."""
    from rich.markup import escape

    with console.status(f"checking {lab.name}: its checks, then grading its reference and its stubs"):
        problems, notes = check_lab(lab, zygote)
    for note in notes:
        console.print(f"[dim]note:[/] {escape(note)}", soft_wrap=True)
    for problem in problems:
        console.print(f"[red]✗[/] {escape(problem)}", soft_wrap=True)
    if problems:
        console.print(f"[bold red]{lab.name}: {len(problems)} problem{'s' * (len(problems) > 1)}[/]")
        return 1
    console.print(f"[green]✓[/] {lab.name} is sound: manifest, checks, reference at full marks, stubs at 0")
    return 0


# -- the lab.yaml reference table ------------------------------------------------------------------
def manifest_fields():
    """Every lab.yaml field as a markdown table, from the pydantic models: the guide's table."""
    rows = ["| field | type | default | what it is |", "| --- | --- | --- | --- |"]
    for model, prefix in ((Manifest, ""), (DoneWhen, "done_when[].")):
        for name, field in model.model_fields.items():
            kind = getattr(field.annotation, "__name__", None) if isinstance(field.annotation, type) else None
            kind = kind or re.sub(r"\b[\w.]+\.(\w+)", r"\1", str(field.annotation))
            default = "required" if field.is_required() else "none" if field.default is None else f"`{field.default}`"
            kind = kind.replace("|", "\\|")           # a | in a table cell, even in code, needs escaping
            rows.append(f"| `{prefix}{name}` | `{kind}` | {default} | {field.description} |")
    return "\n".join(rows)
