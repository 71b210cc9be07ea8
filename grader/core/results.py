"""Results of grading a lab, and their export in Gradescope's results.json shape
(https://gradescope-autograders.readthedocs.io/en/latest/specs/)."""
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from grader.base.files import write_atomic
from grader.base.kinds import Failure, Status

NOT_GRADED = "the grader could not grade this; nothing was charged to you"
Visibility = Literal["hidden", "after_due_date", "after_published", "visible"]
NUMBER = re.compile(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?")
HIDDEN_INPUTS = ("this check used what your code made of inputs the course keeps hidden, so its details stay "
                 "hidden: the same check in your own copy of the lab shows them, on the inputs given there")


class Check(BaseModel):
    """One hidden or public test, as graded."""
    name: str                       # what it checks, in words
    test: str                       # file::function of the test, for instructors
    tags: list[str]                 # the student functions it exercises; the first owns the points
    points: float
    score: float
    status: Status
    message: str = ""               # expected / saw / hint, or why it did not run
    hint: str = ""                  # the likely mistake, when the check could tell
    failure: Failure | Literal[""] = ""     # how student code failed to answer; "": it did not
    output: str = ""                # what student code printed, cut
    blocked_by: str = ""            # the function whose stub or failure kept this check from running
    visibility: Visibility          # Gradescope's: hidden checks are "hidden" unless lab.yaml says
    mistake: str = ""               # an id of the mistake the hint names, so a class's are counted as one
    data: dict[str, float | list[float]] = {}   # what the check measured (record_property); "reference
    #                                             X" is the reference's X, "x" the x values of the lists
    inputs_hidden: bool = False     # it came after a call on inputs the learner may not see (a seed of the
    #                                 course's) gave it a value: its words may hold them, for instructors only

    @property
    def function(self) -> str:
        return self.tags[0]

    @property
    def mistake_key(self) -> str:
        """What makes two failures the same mistake: its id, else the function and the hint with
        its numbers left out (one hint, worded with another student's numbers, is one mistake)."""
        return self.mistake or f"{self.function}: {' '.join(NUMBER.sub('#', self.hint.lower()).split())}"

    def for_learner(self) -> "Check":
        """The check as a learner may read it: one whose words may hold hidden inputs keeps its
        name and score, and says so instead of its message, hint and output."""
        if not self.inputs_hidden:
            return self
        return self.model_copy(update={"message": HIDDEN_INPUTS, "hint": "", "output": "", "mistake": ""})

    @property
    def outcome(self) -> str:
        """passed, failed, not attempted (the function's own stub) or not run (blocked by another
        function, or the time budget): only "failed" counts against the class."""
        if self.status == Status.NOT_IMPLEMENTED and self.blocked_by in ("", self.function):
            return "not attempted"
        return {Status.PASSED: "passed", Status.FAILED: "failed"}.get(self.status, "not run")


class DoneItem(BaseModel):
    text: str
    done: bool
    graded: bool = True             # False when -k left its checks out


class LabResults(BaseModel):
    lab: str
    title: str
    submission: str
    device: str
    sandbox: Literal["bubblewrap", "process"]
    execution_time: float
    checks: list[Check]
    done_when: list[DoneItem]
    missing_files: list[str] = []   # student files the submission lacked (the stubs stood in)
    problems: list[str] = []        # what the learner should read first: a syntax error, a file missing
    selected: list[str] = []        # -k selections, when only part of the lab was graded
    stopped: str = ""               # why grading stopped early (the time budget ran out)
    memos: dict[str, str] = {}      # trusted results it used: memo file -> digest (grader/lab_api/memo.py)
    cpu_share: str = ""             # how the submission's CPU use was kept from others' (cgroup.fairness)
    attempts: int = 1               # gradings it took: a grader fault is retried once

    @property
    def faults(self) -> list[Check]:
        """Checks the grader could not grade (status not_graded): the grade is not final."""
        return [c for c in self.checks if c.status == Status.NOT_GRADED]

    @property
    def score(self) -> float:
        return sum(c.score for c in self.checks)

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.checks)

    @property
    def all_passed(self) -> bool:
        return bool(self.checks) and all(c.status == Status.PASSED for c in self.checks)

    def by_function(self, functions: Iterable[str]) -> dict[str, tuple[float, float]]:
        """{function: (score, max)} in the order given, for functions with checks."""
        totals: dict[str, tuple[float, float]] = {}
        for c in self.checks:
            score, top = totals.get(c.function, (0.0, 0.0))
            totals[c.function] = (score + c.score, top + c.points)
        return {f: totals[f] for f in functions if f in totals}

    def gradescope(self, score_visibility: Visibility | None = None) -> "GradescopeResults":
        """Gradescope's results.json. `score_visibility` (lab.yaml's): when the learner sees the
        total, hidden checks included; unset, never while a check is not visible (Gradescope's
        own rule), and the output then gives the points of the visible checks only."""
        output = f"{self.title}: {self.score:g}/{self.max_score:g} points"
        shown = [c for c in self.checks if c.visibility == "visible"]
        if score_visibility is None and len(shown) < len(self.checks):
            output = f"{self.title}: {len(self.checks) - len(shown)} checks hidden from you count too"
            if shown:
                output = f"{self.title}: {sum(c.score for c in shown):g}/{sum(c.points for c in shown):g} points " \
                    f"on the visible checks; {len(self.checks) - len(shown)} more, hidden from you, count too"
        if self.missing_files:
            output += f"\nNot submitted (graded as the stubs): {', '.join(self.missing_files)}"
        return GradescopeResults(
            score=self.score, execution_time=round(self.execution_time, 3), output=output,
            visibility=score_visibility or "visible", extra_data={"sandbox": self.sandbox, "lab": self.lab},
            tests=[GradescopeTest(
                name=c.name, number=str(i), score=c.score, max_score=c.points,
                status="passed" if c.status == Status.PASSED else "failed",
                output="\n".join(filter(None, ["" if c.hint in c.message else f"hint {c.hint}", c.message,
                                                c.output and f"Your code printed:\n{c.output}"])),
                visibility=c.visibility, tags=c.tags)
                for i, c in enumerate((c.for_learner() for c in self.checks), 1)])


class GradescopeTest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    number: str
    score: float
    max_score: float
    status: Literal["passed", "failed"]
    output: str
    output_format: Literal["text"] = "text"     # messages are plain text (no HTML, no Markdown)
    visibility: Visibility
    tags: list[str]


class GradescopeResults(BaseModel):
    """Gradescope's autograder results.json; what its specification has no key for (the sandbox
    this grading ran in) goes in `extra_data`. `visibility`: of the whole result, the score and
    the output (each test's own overrides it); `stdout_visibility`: of run_autograder's log, which
    names failed hidden checks: instructors' only."""
    model_config = ConfigDict(extra="forbid")
    score: float
    execution_time: float
    output: str
    output_format: Literal["text"] = "text"
    visibility: Visibility = "visible"
    stdout_visibility: Visibility = "hidden"
    extra_data: dict[str, str] = {}
    tests: list[GradescopeTest]

    def summary(self) -> str:
        """A readable account for run_autograder's stdout (Gradescope shows it to instructors)."""
        failed = [t for t in self.tests if t.status == "failed"]
        lines = [self.output, f"score {self.score:g}; {len(self.tests)} checks, {len(failed)} failed"]
        lines += [f"  failed: {t.name} ({t.score:g}/{t.max_score:g})" for t in failed]
        return "\n".join(lines)


def write_json(results: LabResults, path: str | Path) -> None:
    """Write Gradescope's results.json for these results, atomically: whoever reads the file
    (a watcher, an editor plugin) sees the old results or the new ones, never half of them."""
    write_atomic(path, results.gradescope().model_dump_json(indent=2))
