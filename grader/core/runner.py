"""Grade one submission of a lab: sandbox up, pytest over the lab's checks, results out."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.core.submissions import file_problems, submission_files
from grader.errors import LabError, SetupError
from grader.judge.cgroup import Cgroup
from grader.judge.launchers import launcher_for
from grader.judge.sandbox import CallFailed, Sandbox, write_files
from grader.judge.zygote import Zygote
from grader.learner import fast_exit

if TYPE_CHECKING:
    from grader.core.results import LabResults
    from grader.manifest import Lab


@dataclass(frozen=True)
class Options:
    """How one grading runs. `device`: auto, cpu or cuda. `select`: -k's functions or files.
    `first`: functions whose checks run before the others (--watch: those of the file just saved).
    `show_output`: keep all that student code printed, not only its first lines (-s).
    `on_progress(done, total, function)`: called as each check starts and ends."""
    device: str = "auto"
    select: tuple[str, ...] = ()
    first: tuple[str, ...] = ()
    show_output: bool = False
    on_progress: Callable[[int, int, str], None] | None = None


def grade(lab: Lab, submission: str | Path | None = None, device: str = "auto", select: Sequence[str] = (),
          sandbox: str = "auto", zygote: Zygote | None = None, first: Sequence[str] = (),
          show_output: bool = False, on_progress=None) -> LabResults:
    """Run the lab's checks against `submission` (a folder; None: the handout) -> LabResults.

    `zygote`: a warm one to fork children from (batch grading, --watch); by default one is
    started here, first, so that it imports torch while we do. The rest are Options. A grading
    the grader could not finish (checks "not_graded": its fault, not the submission's) is done
    once more, afresh.
    """
    started = time.monotonic()
    options = Options(device, tuple(select), tuple(first), show_output, on_progress)
    own = zygote is None
    zygote = zygote or Zygote(launcher_for(sandbox))
    try:
        files, missing = submission_files(lab, submission)
        for attempt in (1, 2):
            box = Sandbox(lab, files, zygote, observers=simulated_faults())
            box.printed.show_all, box.believe_faults = show_output, attempt == 1
            try:
                plugin = _run_checks(lab, box, options)
                results = _results(lab, box, plugin, submission, missing, started)
            finally:
                box.close()
            results.attempts = attempt
            if not results.faults:
                return results
            zygote.reset()      # nothing of the first attempt stays for the second
        return results
    finally:
        if own:
            zygote.close()


def simulated_faults():
    """GRADER_FAULT=function, read as a grading starts: every answer of that function becomes a
    grader fault, on the judge's side (how the tests simulate one in a grade.py they start)."""
    function = os.environ.get("GRADER_FAULT")

    def fault(call, answer):
        if call.function == function and not isinstance(answer, CallFailed):
            return CallFailed(function, "grader_fault", "a simulated grader fault (GRADER_FAULT)")
        return answer
    return [fault] if function else []


def _run_checks(lab, box, options):
    """pytest over the lab's checks in `box`: the plugin, holding the checks as graded."""
    import pytest
    import torch

    from grader.core.plugin import GradingPlugin
    from grader.lab_api import memo

    torch.set_num_threads(1)
    memo.forget_used()
    box.device = resolve_device(options.device)
    plugin = GradingPlugin(lab, box, options)
    code = run_pytest(lab, [plugin, plugin.fixtures], "--capture=no")
    if plugin.setup_error:
        raise plugin.setup_error
    if code == pytest.ExitCode.INTERRUPTED and not plugin.problems:    # a check file that could not be
        raise KeyboardInterrupt                                         # collected stops pytest so too
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        plugin.problems.append(f"pytest stopped ({code.name})")
    if plugin.problems:
        raise LabError(f"lab {lab.name} is broken: " + "; ".join(plugin.problems))
    if not plugin.checks:
        chosen = f" of {', '.join(sorted(plugin.select))}" if options.select else ""
        raise LabError(f"lab {lab.name} has no checks{chosen} here")
    return plugin


def _results(lab, box, plugin, submission, missing, started):
    from grader.core.notebook_reader import relocate
    from grader.core.results import DoneItem, LabResults
    from grader.lab_api import memo

    for check in plugin.checks:        # a notebook's files say where their lines came from: "cell 4, line 2"
        check.message, check.hint = relocate(check.message, box.files), relocate(check.hint, box.files)
    done = [DoneItem(text=d.text, done=_done(plugin.checks, d.tags),
                     graded=any(set(c.tags) & set(d.tags) for c in plugin.checks))
            for d in lab.manifest.done_when]
    return LabResults(
        lab=lab.name, title=lab.manifest.title, device=str(box.device), sandbox=box.zygote.launcher.name,
        submission=str(Path(submission).resolve()) if submission else str(lab.handout),
        execution_time=time.monotonic() - started, checks=plugin.checks, done_when=done,
        missing_files=missing, selected=sorted(plugin.select), stopped=plugin.stopped,
        cpu_share=Cgroup.fairness(box.zygote.cgroup),
        problems=file_problems(lab, submission or lab.handout, box.files, missing), memos=memo.used())


def run_pytest(lab: Lab, plugins: list, *extra: str) -> int:
    """pytest over the lab's public and hidden checks with these plugins, and none of the user's own
    pytest setup (plugins, options, configuration files, conftest.py files around the lab)."""
    import pytest

    unused = ["cacheprovider", "terminal", "warnings", "stepwise", "unraisableexception",
              "threadexception", "faulthandler", "doctest", "junitxml", "pastebin", "logging"]
    args = [*(str(folder) for folder, _ in lab.test_folders), *[a for n in unused for a in ("-p", f"no:{n}")],
            "--import-mode=importlib", "--rootdir", str(lab.folder), "-c", os.devnull,
            "--confcutdir", str(lab.folder), *extra]
    _forget_other_labs(lab)
    with _environment(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTEST_ADDOPTS=None):
        return pytest.main(args, plugins=plugins)


def _forget_other_labs(lab):
    """pytest's importlib mode takes a check module from sys.modules by its dotted name (what keeps
    --watch warm); drop the modules of that name that another lab folder left (copies of a lab)."""
    from _pytest.pathlib import module_name_from_path

    for folder, _ in lab.test_folders:
        for path in folder.rglob("*.py"):
            name = module_name_from_path(path, lab.folder)
            module = sys.modules.get(name)
            if module is not None and Path(getattr(module, "__file__", None) or "") != path:
                del sys.modules[name]


def run_experiments(lab: Lab, submission: str | Path | None = None, device: str = "auto", out: str = "plots") -> int:
    """The learner's own experiment run (--experiments): the lab's script (it takes --device
    auto/cpu/cuda and --out), in a copy of the handout holding the submission's files, in its
    own process, printing to this terminal. Its exit status (130 when Ctrl-C stopped it)."""
    if not lab.manifest.experiments:
        raise LabError(f"lab {lab.name} has no experiments to run")
    files, _ = submission_files(lab, submission, pristine=False)    # the learner's copy, as edited
    with tempfile.TemporaryDirectory(prefix=f"{lab.name}-experiments-") as work:
        write_files(work, files)
        command = [sys.executable, fast_exit.__file__, lab.manifest.experiments, "--device", device,  # "auto"
                   "--out", str(Path(out).resolve())]              # too: torch is the script's to import
        process = subprocess.Popen(command, cwd=work, env={**os.environ, "OMP_NUM_THREADS": "1"})
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the script's to handle: it
        try:                                                        # keeps what finished, says so, exits 130
            return process.wait()
        finally:
            signal.signal(signal.SIGINT, previous)


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
