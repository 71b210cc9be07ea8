"""The facade of a grading: grade(Request) -> LabResults (sandbox up, pytest over the lab's checks,
results out), then finish(results, request), the one finishing step every front door takes."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.base.errors import LabError, SetupError
from grader.core import fast_exit
from grader.core.request import NOT_GRADED_STATUS, Device, Request
from grader.core.submissions import file_problems, submission_files
from grader.judge.cgroup import Cgroup
from grader.judge.launchers import launcher_for
from grader.judge.sandbox import Sandbox, Settings, write_files
from grader.judge.zygote import Zygote

if TYPE_CHECKING:
    from grader.core.results import LabResults
    from grader.readers.manifest import Lab


def grade(request: Request, zygote: Zygote | None = None, ending: bool = False) -> LabResults:
    """Run the request's lab checks against its submission -> LabResults.

    `zygote`: a warm one to fork children from (a warm grader: batch workers, --watch, grade.py
    serve); by default one of the request's sandbox kind is started here, first, so that it
    imports torch while we do. `ending`: the zygote ends once this grading is over (cli's own),
    so that the grading's last reset, which its end does too, is left to it. A grading the grader
    could not finish (checks "not_graded": its fault, not the submission's) is done once more, afresh.
    """
    started = time.monotonic()
    own = zygote is None
    zygote = zygote or Zygote(launcher_for(request.sandbox))
    try:
        submitted = submission_files(request.lab, request.submission, laid_out=request.laid_out)   # (files, missing)
        before = None
        for attempt in (1, 2):
            if before is not None and before.hidden_ran:    # not the zygote whose pids and times its
                zygote.renew()                              # hidden calls could count a number out in
            results, before = _attempt(request, zygote, submitted, before, own or ending, started)
            results.attempts = attempt
            if not results.faults:      # (nothing of the first attempt stays for the second:
                return results          # its sandbox's close reset the zygote)
        return results
    finally:
        if own:
            zygote.close()


def finish(results: LabResults, request: Request) -> Finished:
    """The one finishing step of every front door: a grading with grader faults is no grade (no
    results.json, no lesson progress, exit status NOT_GRADED_STATUS); any other writes --json and
    notes the lab's progress in the lesson when it graded the learner's own copy in full."""
    from grader.quiz.progress import lesson_after

    if results.faults:
        return Finished(NOT_GRADED_STATUS, (False, None))
    lab = request.lab
    quiz = lesson_after(lab, results, own_copy=request.own_copy)
    if request.output.json is not None:
        from grader.core.results import write_json

        write_json(results, request.output.json)
    return Finished(0 if results.all_passed else 1, (lab.quiz is not None, quiz))


@dataclass(frozen=True)
class Finished:
    """What finish() leaves a front door: the exit status, and what the report shows of the lesson
    test (whether the lab has one, its status)."""
    status: int
    quiz: tuple


def _attempt(request, zygote, submitted, before, ending, started):
    """One try at the grading, in a sandbox of its own: (its results, that sandbox). `before`: the
    first try's sandbox, on the second. `ending`: the zygote ends after the grading, so a try with
    no grader fault (the last) leaves its reset to that end."""
    lab, (files, missing) = request.lab, submitted
    settings = Settings(device=resolve_device(request.device), show_all=request.output.show_all,
                        believe_faults=before is None, observers=request.observers.on_answer,
                        after_hidden=before is not None and before.hidden_ran)
    box = Sandbox(lab, files, zygote, settings)
    zygote.prepare_soon(box.device, lab.manifest.memory_mb)    # the first child, while pytest collects
    results = None
    try:
        plugin = _run_checks(request, box)
        results = _results(request, box, plugin, missing, started)
        return results, box
    finally:
        box.close(reset=not (ending and results is not None and not results.faults))


def _run_checks(request, box):
    """pytest over the lab's checks in `box`: the plugin, holding the checks as graded."""
    import pytest
    import torch

    from grader.core.plugin import GradingPlugin
    from grader.lab_api import memo

    lab = request.lab
    torch.set_num_threads(1)
    memo.forget_used()
    plugin = GradingPlugin(request, box)
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
        chosen = f" of {', '.join(sorted(plugin.select))}" if request.selection.only else ""
        raise LabError(f"lab {lab.name} has no checks{chosen} here")
    return plugin


def _results(request, box, plugin, missing, started):
    from grader.core.results import DoneItem, LabResults
    from grader.lab_api import memo
    from grader.readers.notebook import relocate

    lab, submission = request.lab, request.submission
    for check in plugin.checks:        # a notebook's files say where their lines came from: "cell 4, line 2"
        check.message, check.hint = relocate(check.message, box.files), relocate(check.hint, box.files)
    done = [DoneItem(text=d.text, done=_done(plugin.checks, d.tags),
                     graded=any(set(c.tags) & set(d.tags) for c in plugin.checks))
            for d in lab.manifest.done_when]
    return LabResults(
        lab=lab.name, title=lab.manifest.title, device=str(box.device), sandbox=box.zygote.launcher.name,
        submission=str(submission.resolve()) if submission else str(lab.handout),
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


def resolve_device(device: Device) -> str:
    """The device a grading's tensors go to: "cpu" or "cuda"."""
    import torch

    if device is Device.AUTO:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device is Device.CUDA and not torch.cuda.is_available():
        raise SetupError("--device cuda: this machine's torch sees no CUDA device")
    return device.value
