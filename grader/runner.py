"""Grade one submission of a lab: sandbox up, pytest over the lab's checks, results out."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from grader.errors import LabError, SetupError
from grader.instructor.submissions import submission_files
from grader.judge.launchers import launcher_for
from grader.judge.sandbox import Sandbox, write_files
from grader.judge.zygote import Zygote

if TYPE_CHECKING:
    from grader.labs import Lab
    from grader.results import LabResults


def grade(lab: Lab, submission: str | Path | None = None, device: str = "auto", select: Sequence[str] = (),
          sandbox: str = "auto", zygote: Zygote | None = None, first: Sequence[str] = ()) -> LabResults:
    """Run the lab's checks against `submission` (a folder; None: the handout) -> LabResults.

    `zygote`: a warm one to fork children from (batch grading, --watch); by default one is
    started here, first, so that it imports torch while we do. `first`: functions whose checks
    run before the others (--watch: those of the file just saved).
    """
    started = time.monotonic()
    own = zygote is None
    zygote = zygote or Zygote(launcher_for(sandbox))
    try:
        files, missing = submission_files(lab, submission)
        box = Sandbox(lab, files, zygote)
        try:
            return _run_checks(lab, box, missing, submission, device, select, started, first)
        finally:
            box.close()
    finally:
        if own:
            zygote.close()


def _run_checks(lab, box, missing, submission, device, select, started, first):
    import pytest
    import torch

    from grader import memo
    from grader.plugin import GradingPlugin
    from grader.results import DoneItem, LabResults

    torch.set_num_threads(1)
    memo.forget_used()
    box.device = resolve_device(device)
    plugin = GradingPlugin(lab, box, box.device, select, first)
    folders = [str(folder) for folder, _ in lab.test_folders]
    unused = ["cacheprovider", "terminal", "warnings", "stepwise", "unraisableexception",
              "threadexception", "faulthandler", "doctest", "junitxml", "pastebin", "logging"]
    args = [*folders, *[arg for name in unused for arg in ("-p", f"no:{name}")],
            "--import-mode=importlib", "--rootdir", str(lab.folder), "-c", os.devnull]
    with _environment(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTEST_ADDOPTS=None):   # the user's own
        code = pytest.main(args, plugins=[plugin, plugin.fixtures])                 # pytest setup stays out
    if plugin.setup_error:
        raise plugin.setup_error
    if code == pytest.ExitCode.INTERRUPTED:
        raise KeyboardInterrupt
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        plugin.problems.append(f"pytest stopped ({code.name})")
    if plugin.problems:
        raise LabError(f"lab {lab.name} is broken: " + "; ".join(plugin.problems))
    if not plugin.checks:
        chosen = f" of {', '.join(sorted(plugin.select))}" if select else ""
        raise LabError(f"lab {lab.name} has no checks{chosen} here")
    done = [DoneItem(text=d.text, done=_done(plugin.checks, d.tags),
                     graded=any(set(c.tags) & set(d.tags) for c in plugin.checks))
            for d in lab.manifest.done_when]
    return LabResults(
        lab=lab.name, title=lab.manifest.title, device=str(box.device), sandbox=box.zygote.launcher.name,
        submission=str(Path(submission).resolve()) if submission else str(lab.handout),
        execution_time=time.monotonic() - started, checks=plugin.checks, done_when=done,
        missing_files=missing, selected=sorted(plugin.select), stopped=plugin.stopped, memos=memo.used())


def run_experiments(lab: Lab, submission: str | Path | None = None, device: str = "auto", out: str = "plots") -> int:
    """The learner's own experiment run (--experiments): the lab's script, in a copy of the
    handout holding the submission's files, in its own process, printing to this terminal."""
    if not lab.manifest.experiments:
        raise LabError(f"lab {lab.name} has no experiments to run")
    files, _ = submission_files(lab, submission)
    with tempfile.TemporaryDirectory(prefix=f"{lab.name}-experiments-") as work:
        write_files(work, files)
        command = [sys.executable, lab.manifest.experiments, "--device", resolve_device(device),
                   "--out", str(Path(out).resolve())]
        return subprocess.run(command, cwd=work, env={**os.environ, "OMP_NUM_THREADS": "1"}).returncode


@contextlib.contextmanager
def _environment(**changes):
    """Set (or, with None, remove) environment variables for the duration of a block."""
    saved = {name: os.environ.get(name) for name in changes}
    _set_environment(changes)
    try:
        yield
    finally:
        _set_environment(saved)


def _set_environment(values):
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _done(checks, tags):
    mine = [c for c in checks if set(c.tags) & set(tags)]
    return bool(mine) and all(c.status == "passed" for c in mine)


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise SetupError("--device cuda: this machine's torch sees no CUDA device")
    return device
