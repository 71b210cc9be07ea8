"""Canvas's gradebook importer: a header starting Student, ID, and ending its student columns with
Section; a "Points Possible" row; each row's student found by ID (digits), else SIS User ID, else
SIS Login ID, else by name (a guess, which these files never leave it to); each assignment column
titled "Title (id)" (Assignment.title_and_id), any other title creating a new assignment."""
import re
from collections.abc import Sequence

from grader.base.errors import UsageError
from grader.instructor.lms.common import OPTION, Columns, Line, Scale, Table, grades, identifiers, tops

TITLE_AND_ID = re.compile(r"(.*)\s\(([0-9]+)\)")      # Ruby's \d, as Canvas reads it: 0-9 only
NOT_ASSIGNMENTS = ("Current Score", "Current Points", "Current Grade", "Final Score", "Final Points",
                   "Final Grade", "Override Score", "Override Grade", "Override Status", "Student", "ID",
                   "SIS User ID", "SIS Login ID", "Section", "Integration ID", "Root Account")
IDS = (("id", "ID"), ("sis_user_id", "SIS User ID"), ("sis_login_id", "SIS Login ID"))


def table(lines: Sequence["Line"], max_score: float | None, scale: Scale, columns: Columns) -> Table:
    columns = _columns(columns)
    identifiers(lines, IDS, "Canvas")
    for line in lines:
        entry = line.on_roster
        if entry.id and not re.fullmatch("[0-9]+", entry.id):
            raise UsageError(f"--roster line {entry.line}, column id: {entry.id!r} is not a Canvas user id (digits)")
        if not any(getattr(entry, name) for name, _ in IDS):
            raise UsageError(f"--roster line {entry.line} ({entry.student!r}): no id, sis_user_id or sis_login_id, "
                             "by which Canvas finds the student")
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *columns.values()],
            ["Points Possible", "", "", "", "", *tops(lines, max_score, scale, columns)]]
    for line in lines:
        entry = line.on_roster
        name = (entry.name or entry.student).replace("Points Possible", "Points_Possible")   # else read as points
        rows.append([name, entry.id, entry.sis_user_id, entry.sis_login_id, entry.section,
                     *grades(line, max_score, scale, columns)])
    return rows


def _columns(chosen):
    """Each column titled as Canvas reads an assignment's own: "Title (id)"; a lab column is needed."""
    if "lab" not in chosen or not TITLE_AND_ID.fullmatch(chosen["lab"]):
        raise UsageError(f"--format canvas: give --column 'NAME (ID)' with the assignment's Canvas id (got "
                         f"{chosen.get('lab')!r}): Canvas matches a column to its assignment by that id, and makes "
                         "a new assignment of any other")
    for kind, title in chosen.items():
        found = TITLE_AND_ID.fullmatch(title)
        if not found:
            raise UsageError(f"{OPTION[kind]} {title!r}: expected 'NAME (ID)' with the Canvas assignment's id")
        title_part = found.group(1)
        if any(word in title_part for word in NOT_ASSIGNMENTS[:9]) or title_part in NOT_ASSIGNMENTS:
            raise UsageError(f"{OPTION[kind]} {title!r}: Canvas reads a column so named as its own, not an assignment")
    if len({TITLE_AND_ID.fullmatch(t).group(2) for t in chosen.values()}) < len(chosen):
        raise UsageError("--format canvas: two columns give the same assignment id")
    return chosen
