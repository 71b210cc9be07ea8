"""Labs as data: find a lab by name or folder and validate its manifest (`lab.yaml`).

A lab folder holds `lab.yaml`, `public/` and `hidden/` (pytest files of checks) and `stubs/`
(each student file as learners first get it). The manifest names the handout, the reference,
the student files with their functions, and the quiz; paths in it are relative to the lab folder.
"""
import difflib
import re
from datetime import datetime
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from grader.base.errors import LabError, UsageError
from grader.base.root import LABS, ROOT, lab_folder  # noqa: F401 (ROOT: the course's folder, as users import it)

ENGINE = Path(__file__).resolve().parents[1]    # the grader package


class DoneWhen(BaseModel):
    """One line of the lab's "you are done when" list, ticked when its checks all pass."""
    model_config = ConfigDict(extra="forbid")
    text: str = Field(description="what the learner has done, as the report lists it")
    tags: list[str] = Field(min_length=1, description="ticked when every check carrying any of these tags passes")


class Deadline(BaseModel):
    """When the lab is due and what lateness costs: `penalty` percent of the lab's points per
    started day (or hour) past `due` + `grace`, at most `cap` percent; past the cap the score
    either keeps the capped penalty or, with `after_cap: zero`, is 0."""
    model_config = ConfigDict(extra="forbid")
    due: datetime = Field(description="with its time zone, e.g. 2026-12-01T23:59:00+01:00")
    grace_minutes: float = Field(0, ge=0, le=366 * 24 * 60)      # at most a year: a clock can hold it
    penalty: float = Field(0, ge=0, le=100, description="percent of the points per period late")
    per: Literal["day", "hour"] = "day"
    cap: float = Field(100, ge=0, le=100, description="the largest penalty, percent of the points")
    after_cap: Literal["keep", "zero"] = "keep"

    @field_validator("due", mode="before")
    @classmethod
    def _written(cls, due):
        """A time or its text, never a number (which would be read as seconds since 1970)."""
        if isinstance(due, bool | int | float):
            raise ValueError(f"{due!r} is no time: give the due time with its time zone, e.g. "
                             "2026-12-01T23:59:00+01:00")
        return due

    @field_validator("due")
    @classmethod
    def _zoned(cls, due):
        if due.tzinfo is None:
            raise ValueError("give the due time with its time zone, e.g. 2026-12-01T23:59:00+01:00")
        return due


class ExceptionHint(BaseModel):
    """A known cause of an exception student code raises: shown above the traceback it matches."""
    model_config = ConfigDict(extra="forbid")
    match: str = Field(description="a regular expression searched in 'ExceptionType: message'")
    hint: str

    @model_validator(mode="after")
    def _compiles(self):
        try:
            re.compile(self.match)
        except re.error as error:
            raise ValueError(f"match {self.match!r} is not a regular expression: {error}") from None
        return self


class Manifest(BaseModel):
    """lab.yaml. Every field added after the first lab is optional, so older labs keep working."""
    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="the lab's name in every report")
    handout: str = Field(description="the learner's folder: student files, given modules, README")
    reference: str | None = Field(None, description="folder of the reference solutions (never shipped); "
                                  "the `reference` fixture of hidden checks")
    student_files: dict[str, list[str]] = Field(min_length=1, description="file -> its functions")
    stubs: str = Field("stubs", description="pristine copies of the student files: what a missing file "
                       "is graded as and what a release ships, whatever the handout folder holds now")
    child_modules: list[str] = Field([], description="modules of the lab folder a child imports beside the "
                                     "handout (given code the checks build objects from)")
    quiz: str | None = Field(None, description="the lesson test's .yaml (grader/quiz/model.py)")
    experiments: str | None = Field(None, description="a handout script run by --experiments")
    given_code: list[str] = Field([], description="files of code the course showed learners beyond the stubs "
                                  "(the lesson's listings): similarity leaves out what they share with it")
    done_when: list[DoneWhen] = Field([], description='the "you are done when" list (text, tags)')
    call_timeout: float = Field(10.0, gt=0, description="seconds charged to one call of student code: its "
                                "own CPU or running time, never time lost to the machine's load")
    timeouts: dict[str, float] = Field({}, description="function -> seconds charged to one of its calls, "
                                       "where not call_timeout")
    memory_mb: int = Field(2048, gt=0, description="address space of a child, MiB (CPU only)")
    answer_mb: int = Field(64, gt=0, le=256, description="the largest answer a call may return, MiB of "
                           "tensors: a small multiple of the lab's largest legal answer (at most 256, the wire's "
                           "frame limit); larger ones are refused as the learner's")
    time_budget: float = Field(300.0, gt=0, description="seconds charged to all of one submission's calls")
    backstop: float = Field(5.0, ge=2, description="wall-time backstop of every limit, as a multiple of it: "
                            "past it the machine, not the submission, kept a call from ending (not graded)")
    judge_budget: float = Field(300.0, gt=0, description="CPU seconds of the judge's own work for one "
                                "submission (truths, re-measurements); past it the rest is not graded")
    deadline: Deadline | None = Field(None, description="when the lab is due and what lateness costs (a Deadline)")
    visibility: dict[str, Literal["hidden", "after_due_date", "after_published", "visible"]] = Field(
        {}, description="Gradescope visibility by check file or file::test, e.g. hidden/test_x.py: after_due_date")
    score_visibility: Literal["hidden", "after_due_date", "after_published", "visible"] | None = Field(
        None, description="Gradescope: when the learner sees the total score, hidden checks included; unset, "
        "never while any check is hidden (the output then gives the visible checks' points)")
    depends: dict[str, list[str]] = Field({}, description="function -> the functions every check of it needs, "
                                          "where the checks cannot feed it the right ones")
    exception_hints: list[ExceptionHint] = Field([], description="known causes of exceptions student code "
                                                 "raises (match, hint): shown above the traceback")
    model_calls: dict[str, str] = Field(
        {}, description="function -> 'module:name' of a child module that calls it as the lab's own code "
        "does (its model: the inputs' layout, the calls in a row, a backward pass): a function of it, run in "
        "the child by Student.in_model, whose answer the checks judge; full marks mean the function survives it")
    forbid: list[str] | dict[str, list[str]] = Field(
        [], description="calls the learner must write themselves: dotted names for every function, "
        "or function -> names; a name forbids every name of its object and its ATen ops, the method on "
        "any value too (grader/core/forbid.py)")
    forbid_allowed: list[str] = Field(
        [], description="names check-lab finds may compute what a forbid: rule forbids, from ops the rule does "
        "not cover, that learners may use all the same (check-lab fails on any other it finds)")

    @model_validator(mode="after")
    def _consistent(self):
        names = [f for functions in self.student_files.values() for f in functions]
        if len(names) != len(set(names)):
            raise ValueError("a function is listed under two student files")
        unknown = sorted(set(self.timeouts) - set(names))
        if unknown:
            raise ValueError(f"timeouts names {', '.join(unknown)}, not a student function")
        unknown = {name for function, needs in self.depends.items() for name in [function, *needs]} - set(names)
        if unknown:
            raise ValueError(f"depends names {', '.join(sorted(unknown))}, not a function of student_files")
        unknown = sorted(set(self.model_calls) - set(names))
        if unknown:
            raise ValueError(f"model_calls names {', '.join(unknown)}, not a student function")
        modules = {Path(m).stem for m in self.child_modules}
        odd = [call for call in self.model_calls.values()
               if not re.fullmatch(r"[A-Za-z_]\w*:[A-Za-z_]\w*", call) or call.split(":")[0] not in modules
               or call.split(":")[1] in names]
        if odd:
            raise ValueError(f"model_calls: {odd[0]!r} is not 'module:name' of a child module, named apart from the "
                             "student functions")
        unknown = sorted(set(self.forbid) - set(names)) if isinstance(self.forbid, dict) else []
        if unknown:
            raise ValueError(f"forbid names {', '.join(unknown)}, not a student function")
        listed = self.forbid if isinstance(self.forbid, list) else [n for ns in self.forbid.values() for n in ns]
        odd = [n for n in listed + self.forbid_allowed if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", n)]
        if odd:
            raise ValueError(f"forbid: {odd[0]!r} is not a dotted name such as torch.softmax")
        return self


class Lab:
    """A validated lab: its manifest plus resolved paths."""

    def __init__(self, name, folder, manifest, notes=()):
        self.name, self.folder, self.manifest = name, folder, manifest
        self.notes = list(notes)        # what find_lab translated from an earlier form of lab.yaml
        self.handout = self._path(manifest.handout)
        self.reference = self._path(manifest.reference) if manifest.reference else None
        self.stubs = self._path(manifest.stubs)
        self.quiz = self._path(manifest.quiz) if manifest.quiz else None
        self.child_modules = [self._path(p) for p in manifest.child_modules]
        self.given_code = [self._path(p) for p in manifest.given_code]
        self.functions = {f: file for file, fs in manifest.student_files.items() for f in fs}

    def _path(self, relative):
        return (self.folder / relative).resolve()

    @property
    def given(self):
        """Where the judge imports the handout's given modules from, pristine: the handout in the
        course's repository; in a release, whose handout is the learner's working copy, the copies
        kept beside the checks (given/)."""
        kept = self.folder / "given"
        return kept if kept.is_dir() else self.handout

    @property
    def test_folders(self):
        """(folder, visibility) pairs of the checks that exist here."""
        return [(self.folder / kind, vis) for kind, vis in (("public", "visible"), ("hidden", "hidden"))
                if (self.folder / kind).is_dir()]

    def visibility_of(self, path, nodeid):
        """Gradescope's visibility of a check: lab.yaml's for its test or file, else its folder's."""
        default = next(v for folder, v in self.test_folders if Path(path).is_relative_to(folder))
        table = self.manifest.visibility
        return table.get(nodeid.split("[")[0], table.get(nodeid.split("::")[0], default))

    def exception_hint(self, raised):
        """The hint of the first exception_hints pattern found in `raised` ("Type: message"), or ""."""
        return next((h.hint for h in self.manifest.exception_hints if re.search(h.match, raised)), "")

    @property
    def forbidden(self):
        """function -> the dotted names it must not use (`forbid:`), for the functions with any."""
        forbid = self.manifest.forbid
        rules = {f: forbid for f in self.functions} if isinstance(forbid, list) else forbid
        return {f: list(names) for f, names in rules.items() if names}

    def module_of(self, function):
        """The module whose `function` a call runs: a student file's, or a child module's model call."""
        calls = dict(call.split(":")[::-1] for call in self.manifest.model_calls.values())
        return calls[function] if function in calls else Path(self.functions[function]).stem

    def model_call(self, function):
        """The name of the child module's function that calls student `function` as the lab's own code
        does (lab.yaml's model_calls), or None."""
        call = self.manifest.model_calls.get(function)
        return call and call.split(":")[1]

    def select(self, names):
        """The functions -k names choose: each a function, or a student file (with or without .py)."""
        chosen = set()
        for name in names:
            files = [fs for f, fs in self.manifest.student_files.items() if name in (f, Path(f).stem)]
            if name not in self.functions and not files:
                known = [*self.functions, *self.manifest.student_files]
                close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
                guess = f"did you mean {close[0]}? " if close else ""
                raise UsageError(f"-k {name}: not a function or file of this lab ({guess}choose from "
                               f"{', '.join(known)})")
            chosen.update([name] if name in self.functions else files[0])
        return chosen


def find_lab(name_or_path):
    """The lab called `name_or_path` under grader/labs/, or the lab folder at that path."""
    folder = lab_folder(name_or_path)
    manifest_file = folder / "lab.yaml"
    if not manifest_file.is_file():
        known = ", ".join(list_labs()) or "none"
        raise LabError(f"no lab called {name_or_path!r} (labs here: {known})")
    try:
        data, notes = earlier_forms(yaml.safe_load(manifest_file.read_text()), folder)
        manifest = Manifest.model_validate(data)
    except yaml.YAMLError as error:
        raise LabError(f"{manifest_file}: {yaml_problem(error)}") from None
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'top level'}: {e['msg']}"
                             for e in error.errors())
        raise LabError(f"{manifest_file}: {problems}") from None
    lab = Lab(folder.resolve().name, folder.resolve(), manifest, notes)
    if not lab.handout.is_dir():
        raise LabError(f"{manifest_file}: handout folder {lab.handout} does not exist")
    missing = [name for name in manifest.student_files if not (lab.stubs / name).is_file()]
    if missing:
        raise LabError(f"{manifest_file}: no pristine stub {lab.stubs / missing[0]} (the stubs folder holds "
                       "each student file as learners first get it)")
    return lab


def earlier_forms(data, folder):
    """(lab.yaml's data in the current form, [notes]): a manifest written before `stubs:` existed,
    whose folder has no stubs/, had its handout hold the pristine stubs, and is read so."""
    if isinstance(data, dict) and "stubs" not in data and isinstance(data.get("handout"), str) \
            and not (folder / "stubs").is_dir():
        return {**data, "stubs": data["handout"]}, [
            "lab.yaml has no stubs: and the lab no stubs/ (an earlier form): the handout's files are read as "
            "the pristine stubs; add stubs: FOLDER with a copy of each student file as learners first get it"]
    return data, []


def yaml_problem(error):
    """A YAML error in one line: where and what."""
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"not valid YAML{where}: {getattr(error, 'problem', None) or error}"


def engine_files():
    """The engine's own Python files, as paths relative to grader/: what a release ships and what
    a grade's fingerprint covers. Labs (grader/labs/) are data, not engine."""
    return sorted(p.relative_to(ENGINE) for p in ENGINE.rglob("*.py")
                  if p.relative_to(ENGINE).parts[0] != "labs" and "__pycache__" not in p.parts)


def list_labs():
    return sorted(p.parent.name for p in LABS.glob("*/lab.yaml"))
