"""Blackboard Learn's Grade Center upload ("Work Offline > Upload"): a header row, then a row a
student, found by the Username column (a row without one fails the upload, one of a user not
enrolled is skipped); each grade column titled as the Grade Center's download titles it,
"Title [Total Pts: N Score] |column id": a title without its column id makes a new text column of
0 points. A comma-separated file holds every value inside quotes."""
import re
from collections.abc import Sequence

from grader.base.errors import UsageError
from grader.base.text import inert
from grader.instructor.lms.common import OPTION, Columns, Line, Scale, Table, grades, identifiers, tops

TITLE_AND_ID = re.compile(r"(.*?)\s*\|\s*([0-9]+)")     # "Lab 2 |123456", as --column gives it
IDS = (("sis_login_id", "Username"),)


def table(lines: Sequence["Line"], max_score: float | None, scale: Scale, columns: Columns) -> Table:
    titled = _columns(columns)
    identifiers(lines, IDS, "Blackboard")
    for line in lines:
        if not line.on_roster.sis_login_id:
            raise UsageError(f"--roster line {line.on_roster.line} ({line.on_roster.student!r}): no sis_login_id, the "
                             "Blackboard Username by which the upload finds the student")
    points = tops(lines, max_score, scale, titled)
    rows = [["Username", *(f"{title} [Total Pts: {top} Score] |{column}"
                           for (title, column), top in zip(titled.values(), points))]]
    for line in lines:
        rows.append([line.on_roster.sis_login_id, *grades(line, max_score, scale, titled)])
    return rows


def text(rows: Table) -> str:
    """Comma-separated, every value inside quotes, each cell inert (grader.base.text)."""
    return "".join(",".join('"' + inert(cell).replace('"', '""') + '"' for cell in row) + "\r\n" for row in rows)


def _columns(chosen):
    """{kind: (title, Grade Center column id)}: each column names the id Blackboard matches it by."""
    found = {kind: TITLE_AND_ID.fullmatch(title) for kind, title in chosen.items()}
    if "lab" not in found or not found["lab"]:
        raise UsageError(f"--format blackboard: give --column 'NAME |ID' with the Grade Center column's id (got "
                         f"{chosen.get('lab')!r}, the id is in its download's header): Blackboard makes a new text "
                         "column of any column without it")
    for kind, match in found.items():
        if not match or not match.group(1):
            raise UsageError(f"{OPTION[kind]} {chosen[kind]!r}: expected 'NAME |ID' with the Grade Center column's id")
    if len({match.group(2) for match in found.values()}) < len(found):
        raise UsageError("--format blackboard: two columns give the same column id")
    return {kind: (match.group(1), match.group(2)) for kind, match in found.items()}
