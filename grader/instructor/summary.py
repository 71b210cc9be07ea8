"""The class at a glance, on the instructor's terminal after a batch: scores, where the class
struggles, what went wrong, where the files are."""
from pathlib import Path

from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grader.base.text import printable


def show_batch(summary, console, out):
    """The class at a glance: scores, where it struggles, what went wrong, where the files are."""
    statuses = ", ".join(f"{n} {status}" for status, n in sorted(summary.statuses.items()))
    average = "" if summary.mean_percent is None else \
        f" · mean {summary.mean_percent:.0f}% · median {summary.median_percent:.0f}% of {summary.counted} scored"
    header = Text.from_markup(
        f"{summary.students} students ({escape(statuses)}){average}\n"
        f"[dim]{summary.graded_now} graded now on {summary.workers} worker(s) in {summary.seconds:.0f} s; "
        f"the rest unchanged since graded, or not gradable[/]")
    console.print(Panel(header, title=f"[bold]{escape(summary.title)}[/] · class summary", title_align="left"))
    console.print(_histogram(summary))
    if summary.checks:
        console.print(_pass_rates(summary))
    if summary.mistakes:
        console.print(_mistakes(summary))
    if summary.problems:
        console.print(_problems(summary))
    if summary.ignored:
        console.print(f"[dim]not submissions, ignored: {escape(', '.join(summary.ignored))}[/]")
    console.print(f"[dim]gradebook {escape(str(Path(out) / 'grades.csv'))} · summary "
                  f"{escape(str(Path(out) / 'summary.json'))} · per student "
                  f"{escape(str(Path(out)))}/students/<student>/results.json[/]")
    regrade = [row.student for row in summary.problems if row.status == "regrade"]
    if regrade:
        console.print(f"[bold magenta]not graded through the grader's fault (no score given):[/] "
                      f"{escape(', '.join(map(printable, regrade)))}. Run the same command again to grade "
                      "them (or --student ID for one).")


def _histogram(summary):
    table = Table(title="Scores", title_justify="left", box=None, padding=(0, 1))
    table.add_column("percent", justify="right")
    table.add_column("students", justify="right")
    table.add_column("")
    most = max((b.students for b in summary.histogram), default=0) or 1
    for b in summary.histogram:
        label = f"{b.low:g}" if b.low == b.high else f"{b.low:g}–{b.high:g}"
        table.add_row(label, str(b.students), "[cyan]" + "█" * round(30 * b.students / most) + "[/]")
    return table


def _pass_rates(summary, shown=12):
    table = Table(title="Checks, worst pass rate first (of the students who reached them)", title_justify="left",
                  box=None, padding=(0, 1))
    for name, justify in (("pass rate", "right"), ("passed", "right"), ("not reached", "right"),
                          ("function", "left"), ("check", "left")):
        table.add_column(name, justify=justify)
    for rate in summary.checks[:shown]:
        colour = "green" if rate.rate >= 0.8 else "yellow" if rate.rate >= 0.5 else "red"
        table.add_row(f"[{colour}]{100 * rate.rate:.0f}%[/]" if rate.graded else "[dim]-[/]",
                      f"{rate.passed}/{rate.graded}", f"[dim]{rate.not_attempted + rate.not_run or ''}[/]",
                      escape(rate.function), escape(rate.name))
    if len(summary.checks) > shown:
        table.add_row("", "", "", "", f"[dim]... {len(summary.checks) - shown} more in summary.json[/]")
    return table


def _mistakes(summary, shown=8):
    table = Table(title="Most common diagnosed mistakes", title_justify="left", box=None, padding=(0, 1))
    table.add_column("students", justify="right")
    table.add_column("function")
    table.add_column("hint")
    for mistake in summary.mistakes[:shown]:
        who = ", ".join(mistake.students[:3]) + (" ..." if len(mistake.students) > 3 else "")
        table.add_row(str(len(mistake.students)), escape(mistake.function),
                      f"{escape(mistake.hint)} [dim]({escape(printable(who))})[/]")
    return table


def _problems(summary):
    table = Table(title="Not graded, broken, crashed or timed out", title_justify="left", box=None, padding=(0, 1))
    table.add_column("student")
    table.add_column("status")
    table.add_column("what happened")
    for row in summary.problems:
        colour = "yellow" if row.status in ("broken_code", "pending", "graded", "incomplete") else "red"
        table.add_row(escape(printable(row.student)), f"[{colour}]{row.status}[/]",
                      escape(printable("; ".join(filter(None, [row.detail, *row.incidents])))))
    return table
