"""`grade.py LAB --watch`: grade, then grade again each time a student file is saved.

One judge and one warm zygote for the whole session, kept as a batch worker keeps them (reset
between rounds): torch, pytest, the lab's check modules, the reference modules and the truths
the checks memoise are paid once. Each round forks a fresh child from the zygote, so the saved
code is what runs, and a crash, a timeout or an endless loop ends with its round.
"""
import signal
import time
from pathlib import Path

from rich.control import Control
from rich.live import Live
from rich.markup import escape
from rich.panel import Panel
from rich.spinner import Spinner
from rich.text import Text

from grader import report
from grader.errors import GraderError, UsageError
from grader.judge.launchers import launcher_for
from grader.judge.zygote import Zygote

QUIET_MS = 30       # a save is over when its files are quiet this long (editors write in bursts)


def watch(lab, console, submission=None, select=(), device="auto", sandbox="auto", json_path=None):
    """Grade `submission` (a folder; None: the handout) round after round until Ctrl-C -> 0."""
    if submission is not None and not Path(submission).is_dir():
        raise UsageError(f"submission folder {submission} does not exist")
    lab.select(select)                              # a bad -k is refused now, not every round
    zygote = Zygote(launcher_for(sandbox))          # first: it imports torch while we do
    try:
        with Live(_status("starting", "importing torch and the checks"), console=console,
                  refresh_per_second=8, transient=True) as live:
            _rounds(lab, live, zygote, submission, select, device, json_path)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C must not cut the cleanup
        zygote.close()
    console.print("[dim]stopped watching[/]")
    return 0


def _rounds(lab, live, zygote, submission, select, device, json_path):
    import watchfiles

    from grader.quiz.progress import lesson_after
    from grader.runner import grade

    folder = Path(submission or lab.handout).resolve()
    names = {folder / name: name for name in lab.manifest.student_files}
    changes = watchfiles.watch(folder, watch_filter=lambda _, path: Path(path) in names, step=QUIET_MS,
                               rust_timeout=100, yield_on_timeout=True,
                               recursive=any("/" in name for name in names.values()))
    saved = sorted({names[Path(path)] for _, path in next(changes)})   # watching from here on: a save
    while True:                                                         # during a round is not missed
        live.update(_status("grading", escape(", ".join(saved)) or "all selected checks", spinning=True))
        started = time.monotonic()
        first = [f for name in saved for f in lab.manifest.student_files[name]]
        try:
            try:
                results = grade(lab, submission, device=device, select=select, zygote=zygote, first=first)
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
        live.update(_status("watching", f"{escape(str(folder))} · last round {verdict} in {took:.2f} s"
                            " · save a file to grade again, Ctrl-C to stop"))
        while not (batch := next(changes)):
            pass
        saved = sorted({names[Path(path)] for _, path in batch})


def _status(state, detail, spinning=False):
    """The one line under the report: what the watcher is doing."""
    line = Text.from_markup(f"[bold cyan]{state}[/] [dim]{detail}[/]")
    return Spinner("dots", line) if spinning else Text.assemble("● ", line)
