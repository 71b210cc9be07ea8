"""docs/figures.md, written by the scripts that measure: each benchmark shows its table on the
terminal and rewrites its own section of the page, stamped with the date, the machine and its
load average, so that no figure there can be older than the script that wrote it."""
import datetime
import os
import platform
import re
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

PAGE = Path(__file__).resolve().parent.parent / "docs" / "figures.md"


class Figures:
    """One benchmark's table: `row(...)` as it measures, `note(...)` for a line under it, then
    `publish()` shows it and writes it into docs/figures.md."""

    def __init__(self, script, title, columns):
        self.script, self.title, self.columns = Path(script).stem, title, list(columns)
        self.rows, self.notes = [], []

    def row(self, *cells):
        self.rows.append([str(cell) for cell in cells])

    def note(self, text):
        self.notes.append(text)

    def publish(self, console=None):
        table = Table(title=self.title)
        for column in self.columns:
            table.add_column(column)
        for row in self.rows:
            table.add_row(*row)
        console = console or Console()
        console.print(table)
        for line in self.notes:
            console.print(line, highlight=False, markup=False)
        write_section(self.script, self.markdown())

    def markdown(self):
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        lines = [f"## {self.title}", "",
                 f"`python {' '.join([f'benchmarks/{self.script}.py', *sys.argv[1:]])}`, "
                 f"{datetime.date.today().isoformat()}, "
                 f"{os.cpu_count()} cores ({platform.machine()}, {platform.system()}), load average {load}.", "",
                 "| " + " | ".join(self.columns) + " |", "|" + " --- |" * len(self.columns)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in self.rows]
        return "\n".join(lines + ([""] + self.notes if self.notes else []))


def write_section(script, text):
    """Replace the script's section of the page (between its markers), or add it at the end."""
    begin, end = f"<!-- {script}: begin -->", f"<!-- {script}: end -->"
    page = PAGE.read_text(encoding="utf-8") if PAGE.exists() else "# Figures\n"
    section = f"{begin}\n{text}\n{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    page = pattern.sub(lambda _: section, page) if pattern.search(page) else page.rstrip("\n") + f"\n\n{section}\n"
    PAGE.write_text(page, encoding="utf-8")
