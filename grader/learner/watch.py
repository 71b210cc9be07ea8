"""`grade.py LAB --watch`: grade, then grade again each time a student file is saved.

A warm grader for the whole session (grader/core/warm.py): this checkout's server for the lab when one
runs (grade.py serve), else one in this process. torch, pytest, the lab's check modules, the
reference modules and the truths the checks memoise are paid once. Each round forks a fresh child
from the zygote, so the saved code is what runs, and a crash, a timeout or an endless loop ends
with its round; nothing of a round stays for the next. Each round ends as every grading does
(runner.finish: results.json, lesson progress).
"""
import dataclasses
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

from grader.base import collector
from grader.base.errors import GraderError
from grader.core.request import Observers, Request, Selection
from grader.learner import report

QUIET_MS = 20       # a save is over when its files are quiet this long (editors write in bursts)


def watch(request: Request, console) -> int:
    """Grade the request's submission round after round until Ctrl-C -> 0."""
    from grader.core.warm import Grader
    from grader.learner.serve import WarmClient

    live = Live(_status("starting", "importing torch and the checks"), console=console,
                refresh_per_second=8, transient=True)
    live.start()                                    # the first line, before anything is imported
    graders = []                                    # the one grading now last
    try:
        client = WarmClient.for_checkout(request.lab, request.sandbox)
        if client is not None:      # its rounds collect no checks here: grade.py's pause ends now
            collector.resume()      # (grading here, the first round's collection ends it, frozen)
        graders.append(client or Grader(request.sandbox))
        with live:
            _rounds(request, live, graders)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C must not cut the cleanup
        live.stop()
        for grader in graders:
            grader.close()
    console.print("[dim]stopped watching[/]")
    return 0


def _rounds(request, live, graders):
    from grader.core.runner import finish
    from grader.core.warm import Grader
    from grader.learner.serve import WarmGone

    lab = request.lab
    folder = Path(request.submission or lab.handout).resolve()
    saves = _saves(folder, lab.manifest.student_files)
    saved = sorted(next(saves))         # watching from here on: a save during a round is not missed
    while True:
        what = escape(", ".join(saved)) or "all selected checks"
        started = time.monotonic()
        status = _Grading(what, started)
        live.update(status)
        first = tuple(f for name in saved for f in lab.manifest.student_files[name])

        def progress(done, total, function, what=what, status=status):
            status.detail = f"{what} · {escape(function)} · {done}/{total} checks"
        results = None
        try:                                # a folder deleted since: this round says so
            this_round = dataclasses.replace(request, selection=Selection(request.selection.only, first),
                                             observers=Observers(progress))
            try:
                results = graders[-1].grade(this_round)
            except WarmGone:                # the server went: this process grades from now on
                graders.append(Grader(request.sandbox))
                results = graders[-1].grade(this_round)
        except GraderError as error:       # e.g. a file too large: said, and the next save is awaited
            live.console.print(Control.clear(), Control.home(),
                               Panel(Text(str(error)), title="[red]not graded[/]", title_align="left"))
            verdict = "not graded"
        else:
            finished = finish(results, request)
            live.console.print(Control.clear(), Control.home(), report.render(results, lab, finished.quiz, first))
            verdict = f"{results.score:g}/{results.max_score:g}"
        took = time.monotonic() - started
        if results is not None:         # the next round's child, forked while the learner reads
            graders[-1].prepare(results, lab)
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


class _Grading:
    """The line under the report while a round grades: what, which check, and its seconds counting
    as the screen refreshes (a check that trains models runs for a while)."""

    def __init__(self, detail, started):
        self.detail, self.started = detail, started
        self.spinner = Spinner("dots")

    def __rich__(self):
        took = time.monotonic() - self.started
        self.spinner.update(text=Text.from_markup(f"[bold cyan]grading[/] [dim]{self.detail} · {took:.0f} s[/]"))
        return self.spinner


def _status(state, detail):
    """The one line under the report: what the watcher is doing."""
    line = Text.from_markup(f"[bold cyan]{state}[/] [dim]{detail}[/]")
    return Text.assemble("● ", line)
