"""A warm grader in this process: torch, pytest, the lab's check and reference modules and one
zygote, paid once. Batch workers and Ray actors keep one for their life, --watch and the notebook
for their session, and `grade.py serve` (grader/learner/serve.py) behind a socket. Every grading
forks fresh children from the zygote, which runs no student code, and is followed by a reset that
kills every process of that grading and wipes its files: nothing a round leaves (a file, a
process, a patched torch, an RNG drawn) reaches the next round or student.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from grader.core.request import Request, SandboxKind

if TYPE_CHECKING:
    from grader.core.results import LabResults
    from grader.readers.manifest import Lab

class Grader:
    """A warm grader in this process: one zygote for gradings one after another, reset by each."""

    def __init__(self, kind: SandboxKind = SandboxKind.AUTO):
        from grader.judge.launchers import launcher_for
        from grader.judge.linux import PR_SET_DUMPABLE, libc
        from grader.judge.zygote import Zygote

        # Under --sandbox process as a user other than root, student code is this process's user:
        # tried, it opened /proc/PID/mem of a server for writing, and could change every later
        # round's grade. Not dumpable, this process is traced and read by no process without
        # CAP_SYS_PTRACE (as the zygote is not).
        libc.prctl(PR_SET_DUMPABLE, 0)
        self.kind = SandboxKind(kind)
        self.zygote = Zygote(launcher_for(self.kind))      # first: it imports torch while we do

    def grade(self, request: Request) -> LabResults:
        """runner.grade on this grader's zygote; every process and file of it is gone afterwards
        (each of its sandboxes resets the zygote as it closes)."""
        from grader.core.runner import grade

        return grade(request, self.zygote)

    def end_calls(self):
        """From another thread: kill every child of the grading now (its calls fail at once; the
        grading goes on to its next check, which its front door stops)."""
        self.zygote.reset()

    def prepare(self, results: LabResults, lab: Lab):
        """Fork the next grading's first child now, while nobody waits."""
        self.zygote.prepare(results.device, lab.manifest.memory_mb)

    def close(self):
        self.zygote.close()
