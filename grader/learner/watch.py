"""`grade.py LAB --watch`: grade, then grade again each time a student file is saved.

One judge and one warm zygote for the whole session, kept as a batch worker keeps them (reset
between rounds): torch, pytest, the lab's check modules, the reference modules and the truths
the checks memoise are paid once. Each round forks a fresh child from the zygote, so the saved
code is what runs, and a crash, a timeout or an endless loop ends with its round.
"""
import os
import signal
import time
from pathlib import Path

from rich.control import Control
from rich.live import Live
from rich.markup import escape
from rich.panel import Panel
from rich.spinner import Spinner
from rich.text import Text

from grader.errors import GraderError, UsageError
from grader.judge.launchers import launcher_for
from grader.judge.zygote import Zygote
from grader.learner import report

QUIET_MS = 20       # a save is over when its files are quiet this long (editors write in bursts)


def watch(lab, console, submission=None, select=(), device="auto", sandbox="auto", json_path=None,
          show_output=False):
    """Grade `submission` (a folder; None: the handout) round after round until Ctrl-C -> 0."""
    if submission is not None and not Path(submission).is_dir():
        raise UsageError(f"submission folder {submission} does not exist")
    lab.select(select)                              # a bad -k is refused now, not every round
    zygote = Zygote(launcher_for(sandbox))          # first: it imports torch while we do
    try:
        with Live(_status("starting", "importing torch and the checks"), console=console,
                  refresh_per_second=8, transient=True) as live:
            _rounds(lab, live, zygote, submission, select, device, json_path, show_output)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C must not cut the cleanup
        zygote.close()
    console.print("[dim]stopped watching[/]")
    return 0


def _rounds(lab, live, zygote, submission, select, device, json_path, show_output):
    from grader.core.runner import grade
    from grader.quiz.progress import lesson_after

    folder = Path(submission or lab.handout).resolve()
    saves = _saves(folder, lab.manifest.student_files)
    saved = sorted(next(saves))         # watching from here on: a save during a round is not missed
    while True:
        what = escape(", ".join(saved)) or "all selected checks"
        live.update(_status("grading", what, spinning=True))
        started = time.monotonic()
        first = [f for name in saved for f in lab.manifest.student_files[name]]

        def progress(done, total, function, what=what):
            live.update(_status("grading", f"{what} · {escape(function)} · {done}/{total} checks", spinning=True))
        results = None
        try:
            try:
                results = grade(lab, submission, device=device, select=select, zygote=zygote, first=first,
                                show_output=show_output, on_progress=progress)
            except GraderError as error:       # e.g. a file too large: said, and the next save is awaited
                live.console.print(Control.clear(), Control.home(),
                                   Panel(Text(str(error)), title="[red]not graded[/]", title_align="left"))
                verdict = "not graded"
            else:
                quiz = lesson_after(lab, results, own_copy=submission is None)
                live.console.print(Control.clear(), Control.home(),
                                   report.render(results, lab, (lab.quiz is not None, quiz), first))
                if json_path:
                    report.write_json(results, json_path)
                verdict = f"{results.score:g}/{results.max_score:g}"
            took = time.monotonic() - started
        finally:
            zygote.reset()
        if results is not None:         # the next round's child, forked while the learner reads
            zygote.prepare(results.device, lab.manifest.memory_mb)
        live.update(_status("watching", f"{escape(str(folder))} · last round {verdict} in {took:.2f} s"
                            " · save a file to grade again, Ctrl-C to stop"))
        while not (batch := next(saves)):
            pass
        saved = sorted(batch)


def _saves(folder, names):
    """Batches of the student files saved in `folder` (their names; an empty batch each quiet
    tick). A folder deleted or replaced by another (git checkout, some editors) ends the inotify
    watch on it: a deleted one is a batch of every file (its round says so), and the folder then
    at the path is watched anew, every file of it counting as saved."""
    import watchfiles

    paths = {folder / name: name for name in names}
    recursive = any("/" in name for name in names)
    gone = False
    while True:
        identity = _identity(folder)
        if identity is None:            # not there (yet): look again each tick
            time.sleep(0.1)
            yield set()
            continue
        changes = watchfiles.watch(folder, watch_filter=lambda _, path: Path(path) in paths or Path(path) == folder,
                                   step=QUIET_MS, rust_timeout=100, yield_on_timeout=True, recursive=recursive)
        try:
            for batch in changes:
                touched = {Path(path) for _, path in batch}
                if folder in touched or _identity(folder) != identity:     # deleted, or another folder
                    break                                                   # now (its inode may be reused)
                yield set(paths.values()) if gone else {paths[path] for path in touched}
                gone = False
        finally:
            changes.close()
        gone = True
        if _identity(folder) is None:   # a round that says so
            yield set(paths.values())


def _identity(folder):
    """Which folder is at this path now (device, inode), or None when there is none."""
    try:
        stat = os.stat(folder)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (stat.st_dev, stat.st_ino)


def _status(state, detail, spinning=False):
    """The one line under the report: what the watcher is doing."""
    line = Text.from_markup(f"[bold cyan]{state}[/] [dim]{detail}[/]")
    return Spinner("dots", line) if spinning else Text.assemble("● ", line)
