"""`grade.py gradebook`: a batch's rows (OUT/rows.json), a roster, the late policy and the class
quiz into the CSV an LMS imports.

    canvas   Student, ID, SIS User ID, SIS Login ID, Section, then one column per assignment, and
             a "Points Possible" row first (Canvas's gradebook import; a column whose name is not
             an assignment's creates one out of those points)
    moodle   ID number, Email address, one column per grade item, Feedback (Moodle's "Import
             grades from CSV": map ID number or Email address to the user, each grade column to
             its item)
    csv      everything: status, raw score, submission time and its source, lateness, penalty,
             final score, quiz, lesson complete, and a note

A student is a row of the roster (`student` = the submission's folder or zip name); a roster
student with no submission gets the --missing mark; a submission not on the roster is kept, with
a note and a warning. Every cell goes through gradebook.inert (no formula, no control character).
"""
import csv
import os
from dataclasses import dataclass, field

from pydantic import BaseModel, ValidationError

from grader.errors import GraderError, QuizError, UsageError
from grader.instructor import deadlines
from grader.instructor.gradebook import inert, lesson_complete
from grader.results import SCORED, BatchRow

NOT_SCORED = {"pending": "not graded yet: rerun the batch",
              "regrade": "the grader could not grade it: rerun the batch"}


class RosterEntry(BaseModel):
    student: str
    name: str = ""
    id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    email: str = ""
    section: str = ""
    extension: str = ""             # hours, or the student's own due time (ISO 8601 with a zone)


@dataclass
class Quiz:
    score: float
    max: float
    passed: bool


@dataclass
class Line:
    """One student of the gradebook."""
    student: str
    entry: RosterEntry | None
    row: BatchRow | None
    quiz: Quiz | None = None
    late: deadlines.Lateness | None = None
    final: float | None = None      # points after the late policy; None: no mark
    notes: list[str] = field(default_factory=list)

    @property
    def status(self):
        return self.row.status if self.row else "missing"


# -- reading --------------------------------------------------------------------------------------------
def _csv_rows(path, option, required):
    with open(path, newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise UsageError(f"{option} {path}: no column {missing[0]!r}; expected a header with "
                             f"{', '.join(required)} (got {', '.join(reader.fieldnames or []) or 'an empty file'})")
        return list(enumerate(reader, 2))


def read_roster(path):
    """{student: RosterEntry} from the roster CSV; a student listed twice is refused."""
    roster = {}
    for line, cells in _csv_rows(path, "--roster", ["student"]):
        cells = {key: (value or "").strip() for key, value in cells.items() if key}
        if not cells.get("student"):
            continue
        if cells["student"] in roster:
            raise UsageError(f"--roster {path} line {line}: {cells['student']!r} is listed twice")
        try:
            roster[cells["student"]] = RosterEntry.model_validate(cells, strict=False)
        except ValidationError as error:
            raise UsageError(f"--roster {path} line {line}: {error.errors()[0]['msg']}") from None
    return roster


def read_quiz(path, lab, students):
    """{student: Quiz} from the class quiz: a form's responses (graded against `lab`'s quiz) or the
    gradebook of grade.py quiz --class, read by the one reader of them (grader/quiz/responses.py).
    A quiz taker is keyed by the name of the one of `students` whose name is theirs in the normal
    form, else as written; QuizError when none of `students` took it."""
    from grader.quiz.model import load_quiz
    from grader.quiz.responses import read_class, student_key

    try:
        quiz, broken = (load_quiz(lab.quiz) if lab and lab.quiz else None), None
    except QuizError as error:
        quiz, broken = None, error
    try:
        answers = read_class(path, quiz, lab.name if lab else "", option="--quiz")
    except QuizError as error:
        raise QuizError(f"{error} (the lab's quiz does not load: {broken})" if broken else str(error)) from None
    answers.require_some_of(students, "--quiz")
    ours = {student_key(student): student for student in students}
    return {ours.get(student_key(row.student), row.student): Quiz(row.result.score, row.result.max, row.result.passed)
            for row in answers.counted()}


def _extension_hours(policy, entry, option="--roster"):
    text = entry.extension if entry else ""
    if not text or policy is None:
        return 0.0
    try:
        return float(text)
    except ValueError:
        due = deadlines.parse_time(text, f"{option}: extension of {entry.student}")
        return (due - policy.due).total_seconds() / 3600


# -- one gradebook -----------------------------------------------------------------------------------------
def build(rows, roster, quiz, policy, max_score, missing="zero", timestamps=None):
    """The gradebook's Lines: roster order first, then submissions not on the roster, then quiz
    takers who are in neither."""
    rows = {row.student: row for row in rows}
    students = list(roster or rows) + [s for s in rows if roster and s not in roster]
    students += [s for s in quiz if s not in students]
    lines = []
    for student in students:
        line = Line(student, (roster or {}).get(student), rows.get(student), quiz.get(student))
        if roster is not None and line.entry is None:
            line.notes.append("not on the roster")
        _time(line, timestamps or {})
        _score(line, policy, max_score, missing)
        lines.append(line)
    return lines


def _time(line, timestamps):
    """A timestamps file overrides every source but Gradescope's own metadata."""
    if line.row and line.student in timestamps and line.row.time_source != "gradescope":
        line.row = line.row.model_copy(update={"submitted_at": timestamps[line.student],
                                               "time_source": "timestamps"})


def _score(line, policy, max_score, missing):
    row = line.row
    if row is None:
        line.final = 0.0 if missing == "zero" else None
        line.notes.append("no submission")
    elif row.status in SCORED:
        line.late = deadlines.lateness(policy, row.submitted_at, _extension_hours(policy, line.entry))
        penalty = (max_score or 0) * line.late.penalty_percent / 100 if line.late else 0.0
        line.final = 0.0 if line.late and line.late.zeroed else max(row.score - penalty, 0.0)
        if line.late:
            cut = "score 0 past the cap" if line.late.zeroed else f"-{line.late.penalty_percent:g}%"
            line.notes.append(f"{deadlines.describe(line.late)}: {cut}")
        if policy is not None and row.submitted_at is None:
            line.notes.append("submission time unknown: no late policy applied")
    elif row.status in NOT_SCORED:
        line.notes.append(NOT_SCORED[row.status])
    else:
        line.final = 0.0
        line.notes.append(f"{row.status}: {row.detail}")


# -- writing ------------------------------------------------------------------------------------------------
def _number(value, digits=2):
    return "" if value is None else f"{round(value, digits):g}"


def _scaled(points, top, scale):
    if points is None or scale == "points":
        return points
    return 100 * points / top if top else None


def _grades(line, max_score, scale, with_quiz):
    cells = [_number(_scaled(line.final, max_score, scale))]
    if with_quiz:
        quiz = line.quiz
        cells += [_number(_scaled(quiz.score, quiz.max, scale)) if quiz else "",
                  {"yes": "1", "no": "0"}.get(lesson_complete(line.row, line.quiz), "")]
    return cells


def write(path, fmt, lines, max_score, scale="points", column="lab", quiz_column=None):
    """The gradebook in `fmt` (canvas, moodle, csv) at `path`, written atomically."""
    with_quiz = quiz_column is not None
    columns = [column, *([quiz_column, f"{column} lesson complete"] if with_quiz else [])]
    quiz_max = next((line.quiz.max for line in lines if line.quiz), None)
    scaled = scale == "points"
    tops = [max_score if scaled else 100, *([quiz_max if scaled else 100, 1] if with_quiz else [])]
    table = {"canvas": _canvas, "moodle": _moodle, "csv": _plain}[fmt](lines, columns, tops, max_score, scale)
    part = path.with_name(path.name + ".part")
    with open(part, "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([[inert(cell) for cell in row] for row in table])
    os.replace(part, path)


def _canvas(lines, columns, tops, max_score, scale):
    table = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *columns],
             ["Points Possible", "", "", "", "", *map(_number, tops)]]
    for line in lines:
        entry = line.entry or RosterEntry(student=line.student)
        table.append([entry.name or line.student, entry.id, entry.sis_user_id, entry.sis_login_id, entry.section,
                      *_grades(line, max_score, scale, len(columns) > 1)])
    return table


def _moodle(lines, columns, tops, max_score, scale):
    table = [["ID number", "Email address", *columns, "Feedback"]]
    for line in lines:
        entry = line.entry or RosterEntry(student=line.student)
        table.append([entry.sis_user_id or entry.id, entry.email, *_grades(line, max_score, scale, len(columns) > 1),
                      "; ".join(line.notes)])
    return table


def _plain(lines, columns, tops, max_score, scale):
    table = [["student", "id", "sis_user_id", "email", "section", "status", "raw_score", "max_score",
              "submitted_at", "time_source", "late_by_hours", "penalty_percent", "final_score", "final_percent",
              "quiz_score", "quiz_max", "lesson_complete", "note"]]
    for line in lines:
        entry, row, late, quiz = line.entry or RosterEntry(student=line.student), line.row, line.late, line.quiz
        raw = row.score if row and row.status in SCORED else None
        table.append([line.student, entry.id, entry.sis_user_id, entry.email, entry.section, line.status,
                      _number(raw), _number(max_score), row.submitted_at.isoformat() if row and row.submitted_at
                      else "", row.time_source if row else "",
                      _number(late.late_by.total_seconds() / 3600) if late else "",
                      _number(late.penalty_percent) if late else "", _number(line.final),
                      _number(_scaled(line.final, max_score, "percent")), _number(quiz.score) if quiz else "",
                      _number(quiz.max) if quiz else "", lesson_complete(line.row, line.quiz), "; ".join(line.notes)])
    return table


# -- the command ------------------------------------------------------------------------------------------
def _batch_lab(summary):
    """The lab a batch graded, where this course has it (its quiz grades a form's responses)."""
    from grader.labs import find_lab

    try:
        return find_lab(summary.lab)
    except GraderError:
        return None


def load_batch(out):
    """(BatchSummary, [BatchRow]) of a batch's output folder."""
    from grader.instructor.gradebook import ROWS
    from grader.results import BatchSummary

    for name in ("summary.json", "rows.json"):
        if not (out / name).is_file():
            raise UsageError(f"{out} holds no {name}: expected the --out folder of grade.py batch (a batch "
                             "graded before rows.json existed writes it when run again)")
    try:
        return (BatchSummary.model_validate_json((out / "summary.json").read_text(encoding="utf-8")),
                ROWS.validate_json((out / "rows.json").read_text(encoding="utf-8")))
    except (ValueError, OSError) as error:
        raise UsageError(f"{out}: summary.json or rows.json cannot be read ({type(error).__name__})") from None


def policy(lab, overrides):
    """lab.yaml's deadline with the command line's `overrides` (fields of labs.Deadline) over it."""
    from grader.labs import Deadline

    base = lab.manifest.deadline if lab else None
    if not overrides:
        return base
    data = {**(base.model_dump() if base else {}), **overrides}
    if "due" not in data:
        raise UsageError("a late policy needs a due time: give --due, or a deadline in lab.yaml")
    try:
        return Deadline.model_validate(data)
    except ValidationError as error:
        problem = error.errors()[0]
        raise UsageError(f"late policy: {'.'.join(map(str, problem['loc']))}: {problem['msg']}") from None


def gradebook(out, fmt, dest, lab=None, roster=None, quiz=None, timestamps=None, overrides=None,
              scale="points", column=None, quiz_column=None, missing="zero"):
    """Read, build and write one gradebook (paths already checked); returns its Lines."""
    summary, rows = load_batch(out)
    deadline = policy(lab, overrides or {})
    roster = read_roster(roster) if roster else None
    quiz_rows = read_quiz(quiz, lab or _batch_lab(summary), [*(row.student for row in rows), *(roster or {})]) \
        if quiz else {}
    lines = build(rows, roster, quiz_rows, deadline, summary.max_score,
                  missing, deadlines.read_timestamps(timestamps) if timestamps else None)
    column = column or summary.lab
    write(dest, fmt, lines, summary.max_score, scale, column,
          (quiz_column or f"{column} quiz") if quiz else None)
    return lines
