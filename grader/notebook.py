"""The lab from a notebook cell (Jupyter, Colab): check what the kernel has, verify the saved file,
run the experiments, take the lesson test.

    from grader import notebook
    notebook.check("lab2", "rope_frequencies")    # the public checks of one function (None: the lab)
    notebook.check("lab2", experiments=True)      # the experiments, with progress in the cell
    notebook.verify("lab2.ipynb")                 # the saved notebook, read as the course reads it
    notebook.quiz("lab2")                         # the lesson test (practice form)

A check grades source, never the kernel's objects: the cells the kernel ran (IPython's raw input
history, the last definition winning) go through the reader every grading uses
(grader/readers/notebook.py), and the functions run in a sandboxed child, as from a terminal. A
notebook holds the public checks only: the course's grading adds hidden ones. A warm zygote is
kept in the kernel's process between checks, so that the second one answers at once; every check
still runs in fresh children.
"""
import atexit
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.base.errors import GraderError
from grader.readers.manifest import Lab, find_lab, list_labs
from grader.readers.notebook import NotebookError, extract_cells

KERNEL = "the kernel's cells"
_warm: dict = {}        # "grader": the warm Grader (one judge, one zygote) kept between checks in this kernel


class PublicLab(Lab):
    """A lab seen from a notebook: its public checks only, wherever it lies."""

    @property
    def test_folders(self):
        return [(folder, visibility) for folder, visibility in super().test_folders if visibility == "visible"]


def public(name):
    lab = find_lab(name)
    return PublicLab(lab.name, lab.folder, lab.manifest, lab.notes)


def start(name):
    """The notebook's first cell: the lab's given modules importable in the kernel (model, tasks),
    and one line on where checks will run."""
    lab = public(name)
    if str(lab.handout) not in sys.path:
        sys.path.insert(0, str(lab.handout))
    from grader.judge.launchers import launcher_for

    sandbox = launcher_for("auto").name
    _console().print(f"[dim]{escape(lab.manifest.title)}: checks run in a separate process "
                     + ("(bubblewrap sandbox)" if sandbox == "bubblewrap" else
                        "(no OS sandbox here: bubblewrap cannot start, so a plain child process)") + "[/]",
                     soft_wrap=True)


def check(lab="lab2", function=None, experiments=False, device="cpu", history=None):
    """Grade the functions as the kernel has them (the cells it ran) with the lab's public checks:
    the report in the cell, and the results --json writes (grader.core.results.GradescopeResults:
    `score`, `tests` each with its `max_score`), or None when nothing could be graded (said in one
    sentence). `function`: one function's checks
    (or a file's); `experiments`: run the experiments instead, with progress in the cell;
    `device`: "cpu", or "cuda" where there is one. `history`: the cells' sources in the order run
    (default: IPython's)."""
    console = _console()
    try:
        lab_ = public(lab)
        cells = _history() if history is None else [(f"In [{n}]", s) for n, s in enumerate(history, 1)]
        found = extract_cells(lab_, cells, KERNEL)
        if experiments:
            return _experiments(lab_, found.files, device)
        with tempfile.TemporaryDirectory(prefix=f"{lab_.name}-notebook-") as folder:
            _write(folder, found.files)
            results = _grade(lab_, folder, [function] if function else [], device)
        results = results.model_copy(update={"submission": KERNEL})
    except (GraderError, NotebookError) as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        return None
    _show(lab_, results, console, own_copy=function is None)
    return results.gradescope()


def verify(path="lab2.ipynb", lab=None, device="cpu"):
    """Grade the saved notebook at `path` as the course's grading reads it (its public checks
    here): save it first (Ctrl-S), since the file on disk is what is sent. Returns what check does."""
    console = _console()
    if not Path(path).is_file():
        console.print(f"[bold red]error:[/] {escape(str(path))} is not on this machine's disk (Colab keeps a notebook "
                      "in Drive): download it (File > Download > .ipynb), upload it beside this notebook (the Files "
                      "pane) and verify again; notebook.check grades what this kernel ran", soft_wrap=True)
        return None
    try:
        lab_ = public(lab or _lab_of(path))
        results = _grade(lab_, Path(path), [], device)
    except GraderError as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        return None
    _show(lab_, results, console, own_copy=True)
    return results.gradescope()


def quiz(lab="lab2"):
    """The lesson test in the cell (the practice form: feedback after each answer, and the lesson
    complete once it and the lab are passed, as in the terminal)."""
    from grader.quiz import terminal
    from grader.quiz.model import find_quiz, load_quiz

    console = _console()
    try:
        name, path = find_quiz(lab)
        test = load_quiz(path)
    except GraderError as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        return None
    if test.keyed:
        return terminal.take_practice(test, name, console)
    return terminal.take_exam(test, console, Path(f"{name}-response.yaml"))


# -- inside ----------------------------------------------------------------------------------------
def _grade(lab, submission, select, device):
    """The one grading a notebook asks for: a Request, graded by this kernel's warm grader (one judge
    and zygote kept between checks; every check a fresh child, nothing kept from the last)."""
    from grader.core.request import Device, Request, Selection
    from grader.core.warm import Grader

    grader = _warm.get("grader")
    if grader is None:
        grader = _warm["grader"] = Grader()
        atexit.register(grader.close)           # the kernel's end (or restart) ends it
    return grader.grade(Request(lab, submission, Device(device), Selection(tuple(select)),
                                laid_out=True))   # check's folder: what the reader made of the cells


def _show(lab, results, console, own_copy):
    from grader.learner import report
    from grader.quiz.progress import lesson_after

    quiz = lesson_after(lab, results, own_copy=own_copy) if not results.faults else None
    report.show(results, lab, console, quiz=(lab.quiz is not None, quiz))
    console.print(f'[dim]In this notebook: notebook.check("{lab.name}") for the whole lab'
                  + (f', notebook.quiz("{lab.name}") for the lesson test' if lab.quiz else "") + "[/]", soft_wrap=True)


def _history():
    """[(execution number, raw source)] of the cells the kernel ran, in order."""
    try:
        from IPython import get_ipython
    except ImportError:
        get_ipython = lambda: None
    shell = get_ipython()
    if shell is None:
        raise NotebookError("notebook.check reads the cells a Jupyter kernel ran; outside one, grade files with "
                            "python grade.py, or a saved notebook with notebook.verify(PATH)")
    return [(f"In [{n}]", source) for n, source in enumerate(shell.history_manager.input_hist_raw) if n]


def _lab_of(path):
    """The lab a notebook is for: the one lab of this handout, else the file's name (lab2.ipynb)."""
    labs = list_labs()
    return labs[0] if len(labs) == 1 else Path(path).stem


def _write(folder, files):
    for name, data in files.items():
        (Path(folder) / name).write_bytes(data)


def _experiments(lab, files, device):
    """The lab's experiment script (as --experiments runs it) on the kernel's functions, in a
    process of its own, its lines printed into the cell as they come; its exit status."""
    from grader.core import fast_exit
    from grader.core.submissions import submission_files
    from grader.judge.sandbox import write_files

    given, _ = submission_files(lab, None, pristine=False)
    with tempfile.TemporaryDirectory(prefix=f"{lab.name}-experiments-") as work:
        write_files(work, {**given, **files})
        command = [sys.executable, fast_exit.__file__, lab.manifest.experiments or "", "--device", device,
                   "--out", str(Path("plots").resolve())]
        process = subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   env={**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "100"})
        try:
            for line in process.stdout:
                print(line, end="", flush=True)
            return process.wait()
        except KeyboardInterrupt:
            process.terminate()
            return process.wait()


def _console():
    return Console(highlight=False)
