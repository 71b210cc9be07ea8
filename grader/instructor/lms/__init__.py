"""The files grade.py gradebook writes, one module a format: each declares what it needs and
writes its table. Adding an LMS is one module here and one line in FORMATS.

A format's table holds the gradebook's Lines (grader.instructor.export.Line): with `needs_roster`,
only the lines on the roster (the rest go to FILE.unmatched.csv, for grading by hand); with
`column_ids`, every column title carries the LMS's own id, so a quiz or lesson column is written
only when given one."""
from collections.abc import Callable
from dataclasses import dataclass

from grader.base.text import csv_text
from grader.instructor.lms import blackboard, canvas, moodle, plain
from grader.instructor.lms.common import Columns, Scale, Table, unmatched


@dataclass(frozen=True)
class LmsFormat:
    """One file format of `grade.py gradebook --format NAME`."""
    name: str
    summary: str                                    # a line of --help
    needs_roster: bool                              # rows found by the LMS's ids, which only --roster gives
    column_ids: bool                                # every column titled with the LMS's id of its item
    table: Callable[[list, float | None, Scale, Columns], Table]
    text: Callable[[Table], str] = csv_text         # the table as the file's text


FORMATS = {fmt.name: fmt for fmt in (
    LmsFormat("csv", "everything, for a spreadsheet", False, False, plain.table),
    LmsFormat("canvas", "Canvas's gradebook import", True, True, canvas.table),
    LmsFormat("moodle", "Moodle's 'Import grades from CSV'", True, False, moodle.table),
    LmsFormat("blackboard", "Blackboard Learn's Grade Center upload", True, True, blackboard.table,
              blackboard.text),
)}

__all__ = ["FORMATS", "LmsFormat", "unmatched"]
