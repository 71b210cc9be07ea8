"""What the page shows, worked out from a batch's output folder: plain data, no HTML here."""
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.base.errors import UsageError
from grader.base.kinds import UNKNOWN_TIMES, Timing
from grader.core.results import Check, LabResults
from grader.instructor import record
from grader.instructor.gradebook import ROWS
from grader.instructor.records import BatchRow, BatchSummary, StudentRecord

if TYPE_CHECKING:
    from grader.quiz.model import Quiz
    from grader.readers.manifest import Deadline

STUDENTS = "students"           # as grader/instructor/batch.py lays OUT out
OUTCOMES = ("passed", "failed", "not attempted", "not run")
NOT_GRADED = ("rejected", "empty", "regrade", "pending")
VARIANT = re.compile(r" \[[^\]]*\]$")
LATE = ("late", "penalty")      # a row's lateness fields start so (BatchRow: late_by_hours, penalty_percent)


@dataclass
class Student:
    name: str
    row: BatchRow
    results: LabResults | None
    quiz: dict | None = None    # {"score", "max", "passed", "answers": {id: (given, correct)}} when known

    @property
    def is_late(self) -> bool:
        """Whether the late policy charged this student (late, or assumed late)."""
        return any(k.startswith(LATE) and v not in (None, "", 0, False, [], {}) for k, v in self.row)

    @property
    def late(self) -> dict[str, object]:
        """What the page shows of the student's lateness: the row's account in words where it has
        one (late, or time unknown), else its lateness fields; {} when on time."""
        if self.row.timing and (self.is_late or self.row.timing_kind in UNKNOWN_TIMES):
            return {"lateness": self.row.timing}
        return {k: v for k, v in self.row if k.startswith(LATE) and v not in (None, "", 0, False, [], {})}


@dataclass
class Class:
    summary: BatchSummary
    students: list[Student]
    policy: "Deadline | None" = None    # the late policy in force, from the class's record
    quiz_title: str = ""
    questions: list = field(default_factory=list)      # the quiz's questions, when a class quiz was read


def load(out: str | os.PathLike) -> Class:
    """The batch in OUT: its summary and a Student per folder of OUT/students/."""
    folder = Path(out)
    try:
        summary = BatchSummary.model_validate_json((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UsageError(f"{out}: no batch's summary.json to report on ({type(error).__name__}); "
                         "run grade.py batch LAB SUBMISSIONS --out OUT first") from None
    decided = record.load(folder)
    rows = {row.student: row for row in decided.rows} if decided else _rows(folder)
    students = []
    for mine in sorted((folder / STUDENTS).iterdir() if (folder / STUDENTS).is_dir() else []):
        try:
            graded = StudentRecord.model_validate_json((mine / "graded.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if rows and graded.row.student not in rows:
            continue                # a folder this batch no longer has (a student gone, or merged in a collision)
        name = graded.row.student
        students.append(Student(name, rows.get(name, graded.row), graded.results))
    return Class(summary, students, decided.policy if decided else None)


def _rows(out):
    """{student: row} of OUT/rows.json, for a batch from before the class's record (OUT/final.json,
    which holds what a student's graded.json cannot: the time, lateness, adjustments and final
    score last decided); {} where there is none."""
    try:
        return {row.student: row for row in ROWS.validate_json((out / "rows.json").read_text(encoding="utf-8"))}
    except (OSError, ValueError):
        return {}


def glance(klass: Class) -> dict[str, int]:
    """The class at a glance: {label: count}."""
    rows = [s.row for s in klass.students]
    counts = {"submitted": len(rows),
              "graded": sum(r.status not in NOT_GRADED for r in rows),
              "not graded (rejected, empty, error)": sum(r.status in NOT_GRADED for r in rows)}
    if klass.policy is not None or any(s.is_late for s in klass.students):     # no deadline, no "0 late"
        counts["late"] = sum(s.is_late for s in klass.students)
    counts["lab passed"] = sum(r.passed for r in rows)
    adjusted = sum(bool(r.adjustments) for r in rows)
    if adjusted:
        counts["adjusted by the instructor"] = adjusted
    unknown = sum(s.row.timing_kind in UNKNOWN_TIMES for s in klass.students)
    if unknown:
        counts[Timing.UNKNOWN.value] = unknown
    if klass.questions:
        counts["quiz passed"] = sum(bool(s.quiz and s.quiz["passed"]) for s in klass.students)
        counts["lesson complete (lab and quiz)"] = sum(
            bool(s.row.passed and s.quiz and s.quiz["passed"]) for s in klass.students)
    return counts


def family(name: str) -> str:
    """A check's name without its variant ("[head_dim 2, seq 1]"): the variants of one check together."""
    return VARIANT.sub("", name)


def check_outcomes(klass: Class) -> tuple[list[tuple[Check, dict[str, int]]], list[tuple[str, dict[str, int]]]]:
    """[(check, {outcome: students})] in the lab's order, and [(function, {outcome: students})]
    where a function's outcome is its worst check's: failed, else not run, else not attempted."""
    checks: dict[str, tuple[Check, Counter[str]]] = {}
    functions: dict[str, Counter[str]] = {}
    for s in klass.students:
        per_function: defaultdict[str, set[str]] = defaultdict(set)
        for check in s.results.checks if s.results else ():
            checks.setdefault(check.test, (check, Counter()))[1][check.outcome] += 1
            per_function[check.function].add(check.outcome)
        for function, outcomes in per_function.items():
            worst = next((o for o in ("failed", "not run", "not attempted") if o in outcomes), "passed")
            functions.setdefault(function, Counter())[worst] += 1
    return [(check, dict(c)) for check, c in checks.values()], [(f, dict(c)) for f, c in functions.items()]


def mistakes(klass: Class) -> list[tuple[Check, set[str], list[str]]]:
    """The failures' mistakes, most learners first: [(check, {checks' names}, [students])], one per
    Check.mistake_key (the first check met stands for the wording)."""
    found: dict[str, tuple[Check, set[str], list[str]]] = {}
    for s in klass.students:
        for check in s.results.checks if s.results else ():
            if check.outcome == "failed" and (check.hint or check.mistake):
                first, names, who = found.setdefault(check.mistake_key, (check, set(), []))
                names.add(family(check.name))
                if s.name not in who:
                    who.append(s.name)
    return sorted(found.values(), key=lambda m: (-len(m[2]), m[0].function))


@dataclass
class Experiment:
    """What one check measured (Check.data), by the keys' conventions: "NAME" the class's values
    (a number, or a list over the x values; NAME names the axis, its unit in parentheses),
    "reference NAME" the reference's, "above NAME" / "below NAME" the lab's claim, "x" or "x LABEL"
    the x values of the lists (LABEL names the x axis)."""
    check: Check
    values: dict = field(default_factory=lambda: defaultdict(dict))     # {NAME: {student: value}}
    reference: dict = field(default_factory=dict)                       # {NAME: value}
    claims: dict = field(default_factory=dict)                          # {NAME: ("above" or "below", value)}
    xs: list = field(default_factory=list)
    x_label: str = ""


def experiments(klass: Class) -> list[Experiment]:
    """What checks measured: [Experiment], one per check that recorded data, in the lab's order."""
    found: dict[str, Experiment] = {}
    for s in klass.students:
        for check in s.results.checks if s.results else ():
            if not check.data:
                continue
            experiment = found.setdefault(check.test, Experiment(check))
            for key, value in check.data.items():
                word, _, rest = key.partition(" ")
                if (key == "x" or (word == "x" and rest)) and isinstance(value, list):
                    experiment.xs[:], experiment.x_label = value, rest
                elif word == "reference" and rest:
                    experiment.reference[rest] = value
                elif word in ("above", "below") and rest and isinstance(value, float | int):
                    experiment.claims[rest] = (word, value)
                else:
                    experiment.values[key][s.name] = value
    return list(found.values())


# -- the class quiz: its answers as grader/quiz/responses.py reads them ------------------------------
def read_quiz(klass: Class, quiz: "Quiz", responses: str | os.PathLike, name: str = "") -> None:
    """Each student's counted row of `responses` (a form's export or the gradebook of grade.py quiz
    --class, read by grader/quiz/responses.py against the keyed `quiz`) into `klass`, names matched
    in their one normal form; QuizError when no student of the class is in it. Every answer is
    kept: a cell that could not be read is a wrong answer."""
    from grader.quiz.responses import read_class

    answers = read_class(responses, quiz, name)
    answers.require_some_of([s.name for s in klass.students], "--quiz")
    klass.quiz_title, klass.questions = quiz.title, quiz.questions
    for s in klass.students:
        row = answers.get(s.name)
        if row is None:
            continue
        marks = {q.id: _answer(q, answers.kind) for q in row.result.questions}
        s.quiz = {"score": row.result.score, "max": row.result.max, "passed": row.result.passed, "answers": marks}


def _answer(graded, kind):
    """(the answer as shown, right or not) of a grader.quiz.model.QuestionResult."""
    if kind == "gradebook":
        return "(not in the gradebook)", graded.correct
    given = graded.given
    if given is None:
        return "(no answer)", False
    shown = ", ".join(given) if isinstance(given, list) else f"{given:g}" if isinstance(given, float) else str(given)
    return shown[:80], graded.correct


def quiz_questions(klass: Class, shown: int = 3) -> list[tuple[Any, int, int, list[tuple[str, int]]]]:
    """[(question, right, answered, [(wrong answer, students)])] per question of the class quiz."""
    table = []
    for question in klass.questions:
        answers = [s.quiz["answers"][question.id] for s in klass.students
                   if s.quiz and question.id in s.quiz["answers"]]
        wrong = Counter(given for given, correct in answers if not correct)
        table.append((question, sum(correct for _, correct in answers), len(answers), wrong.most_common(shown)))
    return table


# -- the page's layout: the hardest checks, lesson completion ------------------------------------
WORST = ("failed", "not run", "not attempted")     # a student's outcome of several checks: the worst met


def hardest(klass: Class) -> list[tuple[Check, dict[str, int]]]:
    """[(check standing for its variants, {outcome: students})], one per test function (its variants
    together; a student's outcome: their worst variant's), lowest pass rate of those who reached it first."""
    families: dict[str, tuple[Check, Counter[str]]] = {}
    for s in klass.students:
        mine: dict[str, tuple[Check, set[str]]] = {}
        for check in s.results.checks if s.results else ():
            mine.setdefault(check.test.split("[")[0], (check, set()))[1].add(check.outcome)
        for test, (check, outcomes) in mine.items():
            worst = next((o for o in WORST if o in outcomes), "passed")
            families.setdefault(test, (check, Counter()))[1][worst] += 1
    found = [(check, dict(counts)) for check, counts in families.values()]

    def rate(item: tuple[Check, dict[str, int]]) -> tuple[bool, float, int]:
        reached = item[1].get("passed", 0) + item[1].get("failed", 0)
        return (not reached, item[1].get("passed", 0) / reached if reached else 0, -item[1].get("failed", 0))
    return sorted(found, key=rate)


def completion(klass: Class) -> list[tuple[str, int, int]]:
    """[(what the lesson asks, students who have done it, of how many)]: each "done when" line of
    the lab over the graded students, then the quiz where one was read."""
    graded = [s.results for s in klass.students if s.results]
    steps: Counter[str] = Counter()
    for results in graded:
        for item in results.done_when:
            steps[item.text] += item.done
    found = [(text, done, len(graded)) for text, done in steps.items()]
    if klass.questions:
        found.append(("Lesson test passed", sum(bool(s.quiz and s.quiz["passed"]) for s in klass.students),
                      len(klass.students)))
    return found
