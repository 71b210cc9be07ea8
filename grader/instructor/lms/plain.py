"""The plain CSV: every student, on the roster or not, with everything the record decided."""
from collections.abc import Sequence

from grader.instructor.gradebook import lesson_complete
from grader.instructor.lms.common import Columns, Line, Scale, Table, number, scaled
from grader.instructor.records import SCORED


def table(lines: Sequence["Line"], max_score: float | None, scale: Scale, columns: Columns) -> Table:
    rows = [["student", "id", "sis_user_id", "email", "section", "status", "raw_score", "max_score",
             "submitted_at", "time_source", "late_by_hours", "penalty_percent", "adjustment", "final_score",
             "final_percent", "quiz_score", "quiz_max", "lesson_complete", "note"]]
    for line in lines:
        entry, row, quiz = line.entry, line.row, line.quiz
        raw = row.score if row and row.status in SCORED else None
        rows.append([line.student, *(getattr(entry, f) if entry else "" for f in ("id", "sis_user_id", "email",
                                                                                   "section")),
                     line.status, number(raw), number(max_score),
                     row.submitted_at.isoformat() if row and row.submitted_at else "", row.time_source if row else "",
                     number(row.late_by_hours if row else None), number(row.penalty_percent if row else None),
                     number(row.adjusted if row and row.adjustments else None), number(line.final),
                     number(scaled(line.final, max_score, "percent")), number(quiz.score) if quiz else "",
                     number(quiz.max) if quiz else "", lesson_complete(row, quiz),
                     "; ".join(filter(None, [*line.notes, line.matched]))])
    return rows
