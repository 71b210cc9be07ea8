"""Moodle's "Import grades from CSV" (grade/import/csv): one identifier column mapped to the user,
which must be filled in every row (a blank one applies the row to the student of the row before; an
unknown one stops the import); grades numeric, '' or '-' for none, at most 100 (its gradepointmax
by default); the feedback shown as HTML."""
import html
from collections.abc import Sequence

from grader.base.errors import UsageError
from grader.instructor.lms.common import Columns, Line, Scale, Table, grades, identifiers, kept, tops

IDS = (("sis_user_id", "ID number"), ("email", "Email address"))
MAX = 100


def table(lines: Sequence["Line"], max_score: float | None, scale: Scale, columns: Columns) -> Table:
    fields = [(name, label) for name, label in IDS
              if all(getattr(line.entry, name) and kept(getattr(line.entry, name)) for line in lines)]
    if not fields:
        counts = ", ".join(f"{name} for {sum(bool(getattr(line.entry, name)) for line in lines)}"
                           for name, _ in IDS)
        raise UsageError(f"--format moodle: Moodle maps every row to its user by one column, filled in every row; "
                         f"the roster gives {counts} of {len(lines)} students: fill sis_user_id or email for all "
                         "(none starting with =, +, - or @, which a cell writes made inert)")
    identifiers(lines, fields, "Moodle")
    if any(float(top) > MAX for top in tops(lines, max_score, scale, columns) if top):
        raise UsageError(f"--format moodle: Moodle refuses grades above {MAX} (its gradepointmax by "
                         "default); give --scale percent")
    rows = [[label for _, label in fields] + [*columns.values(), "Feedback"]]
    for line in lines:
        feedback = html.escape("; ".join(line.notes), quote=False)     # Moodle shows feedback as HTML
        rows.append([getattr(line.entry, name) for name, _ in fields] + [*grades(line, max_score, scale, columns),
                                                                         feedback])
    return rows
