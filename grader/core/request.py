"""One grading, asked for: the frozen Request every front door builds (the command line, --watch,
batch workers, Ray actors, mutants, check-lab, the warm grader, the notebook) and hands to
grader.core.runner.grade; what comes back goes through grader.core.runner.finish, the one finishing step.

Kinds are enums, never strings; a Request checks what it names (-k) when it is made, before any
sandbox starts. Imports nothing heavy: a front door builds one before torch is on its way.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.base.errors import UsageError

if TYPE_CHECKING:
    from grader.readers.manifest import Lab

NOT_GRADED_STATUS = 3          # the grader could not grade the submission: its fault, regrade


class Device(str, Enum):
    """Where tensors go: the GPU when there is one (AUTO), or the one named."""
    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"

    def __str__(self):
        return self.value


class SandboxKind(str, Enum):
    """How the zygote runs: bubblewrap where it works (AUTO), bubblewrap or refuse (REQUIRED), or a
    plain process (PROCESS)."""
    AUTO = "auto"
    REQUIRED = "required"
    PROCESS = "process"

    def __str__(self):
        return self.value


@dataclass(frozen=True)
class Selection:
    """Which checks run, and in what order: `only` is -k's functions or student files (none: all);
    `first` the functions whose checks run before the others (--watch: those of the file saved)."""
    only: tuple[str, ...] = ()
    first: tuple[str, ...] = ()


@dataclass(frozen=True)
class Output:
    """What the grading leaves: `show_all` keeps all that student code printed, not only its first
    lines (-s); `json` is where finish() writes Gradescope's results.json (None: nowhere)."""
    show_all: bool = False
    json: Path | None = None


@dataclass(frozen=True)
class Observers:
    """Who watches the grading as it goes: `on_progress(done, total, function)` as each check
    starts and ends; `on_answer`: callables (call, answer) -> answer that see every call of
    student code and its answer, and may replace it (grade.py mutants' record of calls)."""
    on_progress: Callable[[int, int, str], None] | None = None
    on_answer: tuple[Callable[[Any, Any], Any], ...] = ()


@dataclass(frozen=True)
class Request:
    """One grading: the lab, the submission (a folder or a notebook; None: the learner's own copy, the handout),
    the device, which checks, the sandbox, what it leaves and who watches it. Made with a bad -k
    (the closest name suggested) or a submission that is no folder or notebook, it raises UsageError, before
    anything starts."""
    lab: Lab
    submission: Path | None = None
    device: Device = Device.AUTO
    selection: Selection = field(default_factory=Selection)
    sandbox: SandboxKind = SandboxKind.AUTO
    output: Output = field(default_factory=Output)
    observers: Observers = field(default_factory=Observers)
    laid_out: bool = False      # the submission folder is the grader's own layout of files it read (a batch
    #                             worker's, Gradescope's, a notebook check's): a notebook's generated files there
    #                             keep their header; in a student's own folder one posing as it is disowned

    def __post_init__(self):
        for name, kind in (("device", Device), ("sandbox", SandboxKind)):
            object.__setattr__(self, name, kind(getattr(self, name)))     # a front door's word, checked
        if self.submission is not None:
            object.__setattr__(self, "submission", Path(self.submission))
            notebook = self.submission.suffix.lower() == ".ipynb" and self.submission.is_file()
            if not self.submission.is_dir() and not notebook:
                where = f"--submission {self.submission}"
                raise UsageError(f"{where} is a file, not a folder or a notebook" if self.submission.exists()
                                 else f"{where} does not exist")
        self.lab.select(self.selection.only)

    @property
    def own_copy(self):
        """Whether this grades the learner's own copy (no --submission): what lesson progress notes."""
        return self.submission is None


def grading_options(parser):
    """The options every grading command takes."""
    parser.add_argument("-k", dest="select", action="append", default=[], metavar="NAME",
                        help="grade only checks of this function or file (repeatable), e.g. -k FUNCTION or -k FILE.py")
    parser.add_argument("--device", choices=[d.value for d in Device], default="auto")
    parser.add_argument("--sandbox", choices=[k.value for k in SandboxKind], default="auto",
                        help="auto: bubblewrap when installed; required: refuse without it")
    return parser
