"""Every screen of grading, in rich: per-function points, failures that teach, the checklist."""
from __future__ import annotations

import contextlib
import io
import sys
import time
from typing import TYPE_CHECKING

from rich.console import Group
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from grader.core.results import NOT_GRADED

if TYPE_CHECKING:
    from rich.console import Console

    from grader.core.request import Request
    from grader.core.results import LabResults
    from grader.readers.manifest import Lab

MARK = {"passed": "[green]✓[/]", "failed": "[red]✗[/]", "not_implemented": "[yellow]·[/]",
        "skipped": "[yellow]-[/]", "not_graded": "[magenta]?[/]"}


def show(results: LabResults, lab: Lab, console: Console, quiz: tuple = (False, None)) -> None:
    """Print the full report of one grading; `quiz` is (the lab has a lesson test, its status)."""
    console.print(render(results, lab, quiz))


def ended(results: LabResults, request: Request, console: Console, served_by: int | None = None) -> int:
    """How a grading ends on a screen, from a terminal or for a warm grader's client alike:
    runner.finish (--json, lesson progress), the report, the line naming the warm grader that made
    it (`served_by`, its pid); finish's exit status."""
    from grader.core.runner import finish

    finished = finish(results, request)
    show(results, request.lab, console, quiz=finished.quiz)
    if served_by:
        served_line(request.lab, served_by, console)
    return finished.status


@contextlib.contextmanager
def progress(console):
    """Progress of one grading, as a callback (done, total, function): on a terminal a bar that
    goes when the report comes; elsewhere a line on stderr as each function's checks start."""
    if not console.is_terminal:
        started, seen = time.monotonic(), set()
        print("grading: starting the sandbox, then the checks", file=sys.stderr, flush=True)

        def line(done, total, function):
            if function not in seen:
                seen.add(function)
                print(f"checking {function} ({done}/{total} checks done, {time.monotonic() - started:.1f} s)",
                      file=sys.stderr, flush=True)
        yield line
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("starting the sandbox", total=None)
        yield lambda done, total, function: bar.update(task, completed=done, total=total,
                                                       description=f"checking [bold]{escape(function)}[/]")


def render(results, lab, quiz=(False, None), first=()):
    """The full report of one grading, the functions in `first` shown first."""
    order = sorted(lab.functions, key=lambda function: function not in first)
    blocks = [_function_block(function, lab, results, score, top)
              for function, (score, top) in results.by_function(order).items()]
    public_only = all(visibility == "visible" for _, visibility in lab.test_folders)
    return Group(_header(results), *blocks, _summary(results, quiz, public_only))


def _header(results):
    where = f"{results.submission} · device {results.device} · sandbox {results.sandbox}"
    if results.sandbox == "process":
        where += " (no OS sandbox: install bubblewrap for one)"
    lines = [Text(where, style="dim")]
    lines += [Text(problem, style="yellow")
              for problem in results.problems]
    if results.selected:
        lines.append(Text(f"graded only: {', '.join(results.selected)}", style="yellow"))
    if results.stopped:
        lines.append(Text(results.stopped, style="bold red"))
    if results.faults:
        lines.append(Text(f"{len(results.faults)} check(s) not graded after {results.attempts} attempt(s): "
                          f"{NOT_GRADED}. Grade again; if it persists, tell your instructor.", style="bold magenta"))
    if results.cpu_share and not results.cpu_share.startswith("a control group"):
        lines.append(Text(f"CPU shared between submissions by {results.cpu_share}", style="dim"))
    return Panel(Group(*lines), title=f"[bold]{results.title}[/]", title_align="left")


def _function_block(function, lab, results, score, top):
    checks = [c for c in results.checks if c.function == function]
    colour = "green" if score == top else ("red" if score == 0 else "yellow")
    title = Text.assemble((f"{function}", "bold"), (f"  {lab.functions[function]}", "dim"),
                          (f"   {score:g}/{top:g}", f"bold {colour}"))
    if all(c.status == "not_implemented" for c in checks) and len({c.message for c in checks}) == 1:
        why = checks[0].message
        advice = "fill in the stub, then grade again" if checks[0].blocked_by == function else "that comes first"
        return Group(title, Text(f"    {why}: {advice}", style="yellow"))
    table = Table.grid(padding=(0, 1))
    table.add_column(width=3)
    table.add_column()
    shown = set()               # messages and hints already printed for this function
    for check in checks:
        tag = "" if check.visibility == "visible" else f" [dim]({check.visibility.replace('_', ' ')})[/]"
        table.add_row(MARK[check.status], f"{escape(check.name)}{tag} [dim]{check.score:g}/{check.points:g}[/]")
        if check.status == "passed":
            pass
        elif check.message in shown or (check.hint and check.hint in shown):
            if not check.blocked_by or check.blocked_by == function:    # "not graded because X ...": said once
                table.add_row("", Text("the same problem as above", style="dim"))
        else:
            shown.update({check.message, check.hint} - {""})
            if check.hint and check.hint not in check.message:      # a known cause of what your code raised
                table.add_row("", Text(f"hint {check.hint}", style="bold yellow"))
            table.add_row("", Text(check.message, style="red" if check.status == "failed" else "yellow"))
        if check.output:
            table.add_row("", Text(f"your code printed:\n{check.output}", style="dim"))
    return Group(title, table, Text(""))


def _summary(results, quiz, public_only=False):
    total = Table.grid(padding=(0, 2))
    colour = "green" if results.all_passed else "magenta" if results.faults else "red"
    total.add_row("[bold]Total[/]", f"[bold {colour}]{results.score:g}/{results.max_score:g}[/]",
                  f"[dim]{results.execution_time:.1f} s[/]")
    hidden = sum(c.visibility != "visible" for c in results.checks)
    total.add_row("[bold]Checks[/]", f"{len(results.checks) - hidden} public, {hidden} hidden", "")
    parts = [total]
    if results.done_when:
        parts += [Text(""), Text("You are done when", style="bold")]
        parts += [Text.from_markup(f"  {'[green]☑[/]' if d.done else '[red]☐[/]'} {escape(d.text)}"
                                   if d.graded else f"  [dim]☐ {escape(d.text)} (not checked here)[/]")
                  for d in results.done_when]
        if public_only:
            parts.append(Text("Ticked by the public checks here; the course's grading adds hidden checks of the "
                              "same contracts, on other sizes and seeds.", style="dim"))
    has_quiz, status = quiz
    if has_quiz:
        parts += [Text(""), _lesson(results, status)]
    return Panel(Group(*parts), border_style=colour)


def _lesson(results, status):
    """The lesson test beside the lab. `status` is a grader.quiz.progress.LessonStatus, or "exam" for a quiz
    without its key (graded by the instructor)."""
    if status == "exam":
        return Text.from_markup(f"[bold]Lesson test[/]  an exam: python grade.py quiz {results.lab}, then hand "
                                "your response file to your instructor, who grades it")
    if status.quiz_problem:
        test = f"[red]its file is broken[/]: {escape(status.quiz_problem)}"
    elif status.test is None:
        test = f"[yellow]not taken yet[/]: python grade.py quiz {results.lab}"
    else:
        verdict = "[green]passed[/]" if status.test.passed else "[red]not passed[/]"
        test = f"{verdict}, best {status.test.score}/{status.test.max} of {status.test.attempts} attempt(s)"
    lesson = status.line(results.lab)
    lesson = f"[bold green]{lesson}[/]" if status.complete else escape(lesson)
    if results.selected:            # a -k run says nothing about the lesson either way
        lesson = escape(f"only checks of {', '.join(results.selected)} were run; the lesson status needs the "
                        f"whole lab (python grade.py {results.lab})")
    return Text.from_markup(f"[bold]Lesson test[/]  {test}\n[bold]Lesson[/]       {lesson}")


def served_line(lab, pid, console):
    """The last line of a grading a warm grader made."""
    console.print(f"[dim]graded by this checkout's warm grader for {escape(lab.name)} (pid "
                  f"{pid}); grade.py serve --stop stops it[/]")


def said(error, console):
    """An error a user can fix, in one line on `console`; what the console holds, when it writes to a
    string (a warm grader's for its client)."""
    console.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
    return console.file.getvalue() if isinstance(console.file, io.StringIO) else ""
