"""The tables of grade.py gradebook, as each LMS's importer reads them (export.py builds the Lines).

Canvas (its gradebook importer): a header starting Student, ID, and ending its student columns with
Section; a "Points Possible" row; each row's student found by ID (digits), else SIS User ID, else
SIS Login ID, else by name (a guess, which these files never leave it to); each assignment column
titled "Title (id)" (Assignment.title_and_id), any other title creating a new assignment.
Moodle (grade/import/csv): one identifier column mapped to the user, which must be filled in every
row (a blank one applies the row to the student of the row before; an unknown one stops the
import); grades numeric, '' or '-' for none, at most 100 (its gradepointmax by default); the
feedback shown as HTML.
"""
import html
import re

from grader.cells import inert
from grader.errors import UsageError
from grader.instructor.gradebook import lesson_complete
from grader.results import SCORED

TITLE_AND_ID = re.compile(r"(.*)\s\(([0-9]+)\)")      # Ruby's \d, as Canvas reads it: 0-9 only
CANVAS_NOT_ASSIGNMENTS = ("Current Score", "Current Points", "Current Grade", "Final Score", "Final Points",
                          "Final Grade", "Override Score", "Override Grade", "Override Status", "Student", "ID",
                          "SIS User ID", "SIS Login ID", "Section", "Integration ID", "Root Account")
CANVAS_IDS = (("id", "ID"), ("sis_user_id", "SIS User ID"), ("sis_login_id", "SIS Login ID"))
MOODLE_IDS = (("sis_user_id", "ID number"), ("email", "Email address"))
MOODLE_MAX = 100
OPTION = {"lab": "--column", "quiz": "--quiz-column", "lesson": "--lesson-column"}


def _number(value, digits=2):
    return "" if value is None else f"{round(value, digits) + 0.0:g}"


def _scaled(points, top, scale):
    if points is None or scale == "points":
        return points
    return 100 * points / top if top else None


def _grades(line, max_score, scale, columns):
    quiz, cells = line.quiz, {"lab": _number(_scaled(line.final, max_score, scale))}
    cells["quiz"] = _number(_scaled(quiz.score, quiz.max, scale)) if quiz else ""
    cells["lesson"] = {"yes": "1", "no": "0"}.get(lesson_complete(line.row, quiz), "")
    return [cells[kind] for kind in columns]


def _tops(lines, max_score, scale, columns):
    quiz_max = next((line.quiz.max for line in lines if line.quiz), None)
    tops = {"lab": max_score, "quiz": quiz_max, "lesson": 1} if scale == "points" else \
        {"lab": 100, "quiz": 100, "lesson": 1}
    return [_number(tops[kind]) for kind in columns]


def table(fmt, lines, max_score, scale, columns):
    """The rows of the `fmt` file for `lines` (all of them on the roster, but in csv)."""
    chosen = {kind: title for kind, title in (columns or {"lab": "lab"}).items() if title}
    if fmt == "canvas":
        return _canvas(lines, max_score, scale, _canvas_columns(chosen))
    if fmt == "moodle":
        return _moodle(lines, max_score, scale, chosen)
    return _plain(lines, max_score)


def _canvas_columns(chosen):
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
        if any(word in title_part for word in CANVAS_NOT_ASSIGNMENTS[:9]) or title_part in CANVAS_NOT_ASSIGNMENTS:
            raise UsageError(f"{OPTION[kind]} {title!r}: Canvas reads a column so named as its own, not an assignment")
    if len({TITLE_AND_ID.fullmatch(t).group(2) for t in chosen.values()}) < len(chosen):
        raise UsageError("--format canvas: two columns give the same assignment id")
    return chosen


def _kept(value):
    """Whether a cell writes `value` as it is (grader.cells.inert leaves it alone), so that the LMS
    finds the identifier again."""
    return inert(value) == value


def _identifiers(lines, fields, fmt):
    """Refuses a roster where two students share an identifier of `fields` (the LMS would give both
    rows to one of them), or one a cell would write otherwise (made inert: no one's)."""
    for name, _ in fields:
        seen = {}
        for line in lines:
            value = getattr(line.entry, name)
            if not _kept(value):
                raise UsageError(f"--roster line {line.entry.line}, column {name}: {value!r} would be written as "
                                 f"{inert(value)!r} (a spreadsheet reads it as a formula), which {fmt.capitalize()} "
                                 "matches to no one")
            if value and value in seen:
                raise UsageError(f"--format {fmt}: roster lines {seen[value]} and {line.entry.line} have the same "
                                 f"{name} {value!r}: {fmt.capitalize()} would give both rows to one student")
            seen[value] = line.entry.line


def _canvas(lines, max_score, scale, columns):
    _identifiers(lines, CANVAS_IDS, "canvas")
    for line in lines:
        entry = line.entry
        if entry.id and not re.fullmatch("[0-9]+", entry.id):
            raise UsageError(f"--roster line {entry.line}, column id: {entry.id!r} is not a Canvas user id (digits)")
        if not any(getattr(entry, name) for name, _ in CANVAS_IDS):
            raise UsageError(f"--roster line {entry.line} ({entry.student!r}): no id, sis_user_id or sis_login_id, "
                             "by which Canvas finds the student")
    table = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *columns.values()],
             ["Points Possible", "", "", "", "", *_tops(lines, max_score, scale, columns)]]
    for line in lines:
        entry = line.entry
        name = (entry.name or entry.student).replace("Points Possible", "Points_Possible")   # else read as points
        table.append([name, entry.id, entry.sis_user_id, entry.sis_login_id, entry.section,
                      *_grades(line, max_score, scale, columns)])
    return table


def _moodle(lines, max_score, scale, columns):
    fields = [(name, label) for name, label in MOODLE_IDS
              if all(getattr(line.entry, name) and _kept(getattr(line.entry, name)) for line in lines)]
    if not fields:
        counts = ", ".join(f"{name} for {sum(bool(getattr(line.entry, name)) for line in lines)}"
                           for name, _ in MOODLE_IDS)
        raise UsageError(f"--format moodle: Moodle maps every row to its user by one column, filled in every row; "
                         f"the roster gives {counts} of {len(lines)} students: fill sis_user_id or email for all "
                         "(none starting with =, +, - or @, which a cell writes made inert)")
    _identifiers(lines, fields, "moodle")
    tops = [float(top) for top in _tops(lines, max_score, scale, columns) if top]
    if any(top > MOODLE_MAX for top in tops):
        raise UsageError(f"--format moodle: Moodle refuses grades above {MOODLE_MAX} (its gradepointmax by "
                         "default); give --scale percent")
    table = [[label for _, label in fields] + [*columns.values(), "Feedback"]]
    for line in lines:
        feedback = html.escape("; ".join(line.notes), quote=False)     # Moodle shows feedback as HTML
        table.append([getattr(line.entry, name) for name, _ in fields] + [*_grades(line, max_score, scale, columns),
                                                                          feedback])
    return table


def _plain(lines, max_score):
    table = [["student", "id", "sis_user_id", "email", "section", "status", "raw_score", "max_score",
              "submitted_at", "time_source", "late_by_hours", "penalty_percent", "adjustment", "final_score",
              "final_percent", "quiz_score", "quiz_max", "lesson_complete", "note"]]
    for line in lines:
        entry, row, quiz = line.entry, line.row, line.quiz
        raw = row.score if row and row.status in SCORED else None
        table.append([line.student, *(getattr(entry, f) if entry else "" for f in ("id", "sis_user_id", "email",
                                                                                    "section")),
                      line.status, _number(raw), _number(max_score),
                      row.submitted_at.isoformat() if row and row.submitted_at else "", row.time_source if row else "",
                      _number(row and row.late_by_hours), _number(row and row.penalty_percent),
                      _number(row.adjusted if row and row.adjustments else None), _number(line.final),
                      _number(_scaled(line.final, max_score, "percent")), _number(quiz.score) if quiz else "",
                      _number(quiz.max) if quiz else "", lesson_complete(row, quiz),
                      "; ".join(filter(None, [*line.notes, line.matched]))])
    return table


def unmatched(lines, max_score):
    """The lines an LMS could not match (not on the roster), to grade by hand."""
    table = [["student", "status", "raw_score", "max_score", "final_score", "quiz_score", "note"]]
    for line in lines:
        row = line.row
        table.append([line.student, line.status, _number(row.score if row else None), _number(max_score),
                      _number(line.final), _number(line.quiz.score) if line.quiz else "", "; ".join(line.notes)])
    return table
