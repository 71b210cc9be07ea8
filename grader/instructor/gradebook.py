"""The class's gradebook: one row per student, the CSV an LMS imports, and the summary of where
the class struggles. Pure functions of the rows and results: nothing here grades or writes
anything but the file it is asked for."""
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from pydantic import TypeAdapter
from rich.markup import escape

from grader.base.files import write_atomic
from grader.base.kinds import Failure, Status
from grader.base.text import csv_text, one_line, printable
from grader.core.results import GradescopeResults, LabResults
from grader.instructor.records import SCORED, BatchRow, BatchSummary, CheckRate, Mistake, RowStatus, ScoreBin
from grader.readers.identity import identity

if TYPE_CHECKING:
    from grader.core.submissions import Submission
    from grader.instructor.record import FinalRecord
    from grader.readers.manifest import Lab

INCIDENTS = (Failure.TIMEOUT, Failure.CRASHED, Failure.BUDGET)    # calls that never came back, listed for the class
ROWS = TypeAdapter(list[BatchRow])              # OUT/rows.json


class Mark(Protocol):
    """A student's mark on the class quiz (roster.Quiz, record.QuizMark)."""
    @property
    def score(self) -> float: ...
    @property
    def max(self) -> float: ...
    @property
    def passed(self) -> bool: ...


def row(lab: "Lab", sub: "Submission", results: LabResults) -> BatchRow:
    incidents = dict.fromkeys(c.message.splitlines()[0][:160] for c in results.checks
                              if c.failure in INCIDENTS)
    return BatchRow(student=sub.student, status=cast(RowStatus, sub.status), detail=sub.detail, score=results.score,
                    max_score=results.max_score, passed=results.all_passed,
                    functions={f: score for f, (score, _) in results.by_function(lab.functions).items()},
                    incidents=list(incidents), seconds=round(results.execution_time, 2))


def line(row: BatchRow) -> str:
    marks = {"graded": "[green]✓[/]", "incomplete": "[yellow]✓[/]", "regrade": "[magenta]?[/]"}
    mark = marks.get(row.status, "[red]✗[/]")
    score = f"{row.score:g}/{row.max_score:g}" if row.score is not None else "-"
    note = "; ".join(filter(None, [row.detail, *row.incidents]))
    return f"{mark} {escape(one_line(row.student))}  [bold]{score}[/]  " \
           f"[dim]{row.status} {row.seconds:.1f} s {escape(printable(note))}[/]"


def not_graded(why: str, sandbox_name: str) -> GradescopeResults:
    """Gradescope's results.json for a submission that could not be graded: 0 points, and why."""
    return GradescopeResults(score=0, execution_time=0, output=f"Not graded: {why}",
                             extra_data={"sandbox": sandbox_name}, tests=[])


# -- the class: gradebook and summary -------------------------------------------------------------------
def _number(value, digits=None):
    return "" if value is None else f"{round(value, digits):g}" if digits is not None else f"{value:g}"


def write_grades(out: Path, lab: "Lab", record: "FinalRecord") -> None:
    """OUT/grades.csv from the class's record (grader/instructor/record.py), its quiz where it has one."""
    write_csv(out / "grades.csv", lab, record.rows, record.max_score, record.quiz or None)


def write_csv(path: Path, lab: "Lab", rows: Iterable[BatchRow], max_score: float | None,
              quiz: Mapping[str, Mark] | None = None) -> None:
    """The gradebook: one row per student; per-function points after the totals, then when it came
    in, what that cost (deadlines.assess), the instructor's adjustments and the final score. A row
    graded before the lab's points were known (not gradable) is out of `max_score`. With the class
    quiz ({identity: a score, max and passed}): its score and whether the lesson is complete."""
    functions = list(lab.functions)
    lesson = ["quiz_score", "quiz_max", "lesson_complete"] if quiz is not None else []
    table = [["student", "status", "score", "max_score", "percent", "passed", *functions, "incidents", "detail",
              "seconds", "submitted_at", "time_source", "late_by_hours", "penalty_percent", "final_score", "timing",
              "adjustment", "adjustments", *lesson]]
    for row in (out_of(row, max_score) for row in rows):
        known, taken = row.score is not None, (quiz or {}).get(identity(row.student))
        table.append([row.student, row.status, _number(row.score), _number(row.max_score), _number(row.percent, 1),
                      ("yes" if row.passed else "no") if known else "",
                      *(_number(row.functions.get(f)) for f in functions),
                      "; ".join(row.incidents), row.detail, f"{row.seconds:.1f}",
                      row.submitted_at.isoformat() if row.submitted_at else "", row.time_source,
                      _number(row.late_by_hours), _number(row.penalty_percent), _number(row.final_score), row.timing,
                      _number(row.adjusted if row.adjustments else None),
                      "; ".join(f"{a.reason}: {a.points:+g}" for a in row.adjustments),
                      *([_number(taken and taken.score), _number(taken and taken.max), lesson_complete(row, taken)]
                        if lesson else [])])
    write_atomic(path, csv_text(table))


def lesson_complete(row: BatchRow | None, quiz: Mark | None) -> str:
    """'yes' when the lab passed and the quiz was passed, 'no' when either did not, '' unless
    both were graded."""
    if quiz is None or row is None or row.status not in SCORED:
        return ""
    return "yes" if row.passed and quiz.passed else "no"


def out_of(row: BatchRow, max_score: float | None) -> BatchRow:
    """The row, out of `max_score` when it was not graded and so has no points of its own."""
    if row.score is not None and row.max_score is None:
        return row.model_copy(update={"max_score": max_score})
    return row


@dataclass(frozen=True)
class Tally:
    """How this batch's grading went: how many it graded, with how many workers, in how many
    seconds, and whether Ctrl-C stopped it."""
    graded_now: int
    workers: int
    seconds: float
    interrupted: bool


def summarize(lab: "Lab", rows: Iterable[BatchRow], graded: Mapping[str, LabResults | None],
              tally: Tally) -> BatchSummary:
    """The class summary. Its statistics count the rows the grader scored (SCORED): rejected,
    empty, pending and error rows are listed among the problems, not counted as 0."""
    results = [r for r in graded.values() if r is not None]
    top = results[0].max_score if results else None
    functions = {f: points for f, (_, points) in results[0].by_function(lab.functions).items()} if results else {}
    rows = [out_of(row, top) for row in rows]
    percents = [row.percent for row in rows if row.percent is not None and row.status in SCORED]
    histogram = [ScoreBin(low=10 * i, high=min(10 * (i + 1), 100), students=0) for i in range(11)]   # 100: its own
    for percent in percents:
        histogram[min(int(percent // 10), 10)].students += 1
    rates: dict[str, CheckRate] = {}
    mistakes: dict[str, Mistake] = {}
    for student, result in sorted(graded.items()):
        for check in result.checks if result else ():
            rate = rates.setdefault(check.test, CheckRate(name=check.name, test=check.test,
                                                          function=check.function, passed=0, graded=0))
            outcome = check.outcome         # not attempted and not run are not failures
            rate.graded += outcome in ("passed", "failed")
            rate.passed += outcome == "passed"
            rate.not_attempted += outcome == "not attempted"
            rate.not_run += outcome == "not run"
            if check.status == Status.FAILED and check.hint:
                mistake = mistakes.setdefault(check.mistake_key, Mistake(hint=check.hint, function=check.function,
                                                                         students=[], id=check.mistake))
                if student not in mistake.students:
                    mistake.students.append(student)
    return BatchSummary(
        lab=lab.name, title=lab.manifest.title, students=len(rows),
        statuses=dict(Counter(row.status for row in rows)), graded_now=tally.graded_now, max_score=top,
        functions=functions, mean_percent=statistics.fmean(percents) if percents else None,
        median_percent=statistics.median(percents) if percents else None, histogram=histogram,
        checks=sorted(rates.values(), key=lambda r: (not r.graded, r.rate, r.name)),
        mistakes=sorted(mistakes.values(), key=lambda m: -len(m.students)),
        problems=sorted((row for row in rows if row.status not in ("graded", "incomplete") or row.incidents),
                        key=lambda r: r.student),
        workers=tally.workers, seconds=tally.seconds, interrupted=tally.interrupted, counted=len(percents))
