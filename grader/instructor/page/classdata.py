"""What the page shows, worked out from a batch's output folder: plain data, no HTML here."""
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import UsageError
from grader.results import BatchRow, BatchSummary, LabResults, StudentRecord

STUDENTS = "students"           # as grader/instructor/batch.py lays OUT out
OUTCOMES = ("passed", "failed", "not attempted", "not run")
NOT_GRADED = ("rejected", "empty", "regrade", "pending")
VARIANT = re.compile(r" \[[^\]]*\]$")
LATE = ("late", "penalty", "submitted")     # the gradebook's lateness fields start so, where it has them


@dataclass
class Student:
    name: str
    row: BatchRow
    results: LabResults | None
    quiz: dict | None = None    # {"score", "max", "passed", "answers": {id: (given, correct)}} when known

    @property
    def late(self):
        """The row's lateness fields, where the gradebook records them and this student was late."""
        return {k: v for k, v in self.row if k.startswith(LATE) and v not in (None, "", 0, False, [], {})}


@dataclass
class Class:
    summary: BatchSummary
    students: list[Student]
    quiz_title: str = ""
    questions: list = field(default_factory=list)      # the quiz's questions, when a class quiz was read


def load(out):
    """The batch in OUT: its summary and a Student per folder of OUT/students/."""
    out = Path(out)
    try:
        summary = BatchSummary.model_validate_json((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UsageError(f"{out}: no batch's summary.json to report on ({type(error).__name__}); "
                         "run grade.py batch LAB SUBMISSIONS --out OUT first") from None
    students = []
    for folder in sorted((out / STUDENTS).iterdir() if (out / STUDENTS).is_dir() else []):
        try:
            record = StudentRecord.model_validate_json((folder / "graded.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        students.append(Student(folder.name, record.row, record.results))
    return Class(summary, students)


def glance(klass):
    """The class at a glance: {label: count}."""
    rows = [s.row for s in klass.students]
    counts = {"submitted": len(rows),
              "graded": sum(r.status not in NOT_GRADED for r in rows),
              "not graded (rejected, empty, error)": sum(r.status in NOT_GRADED for r in rows),
              "late": sum(bool(s.late) for s in klass.students),
              "lab passed": sum(r.passed for r in rows)}
    if klass.questions:
        counts["quiz passed"] = sum(bool(s.quiz and s.quiz["passed"]) for s in klass.students)
        counts["lesson complete (lab and quiz)"] = sum(
            bool(s.row.passed and s.quiz and s.quiz["passed"]) for s in klass.students)
    return counts


def histogram(klass):
    """[(the bin's lowest percent, students)] in ten bins of 10%, over graded students (100% in the last)."""
    bins = [0] * 10
    for s in klass.students:
        if s.row.status not in NOT_GRADED and s.row.percent is not None:
            bins[min(int(s.row.percent // 10), 9)] += 1
    return [(f"{10 * i}%", n) for i, n in enumerate(bins)]


def family(name):
    """A check's name without its variant ("[head_dim 2, seq 1]"): the variants of one check together."""
    return VARIANT.sub("", name)


def check_outcomes(klass):
    """[(check, {outcome: students})] in the lab's order, and [(function, {outcome: students})]
    where a function's outcome is its worst check's: failed, else not run, else not attempted."""
    checks, functions = {}, {}
    for s in klass.students:
        per_function = defaultdict(set)
        for check in s.results.checks if s.results else ():
            checks.setdefault(check.test, (check, Counter()))[1][check.outcome] += 1
            per_function[check.function].add(check.outcome)
        for function, outcomes in per_function.items():
            worst = next((o for o in ("failed", "not run", "not attempted") if o in outcomes), "passed")
            functions.setdefault(function, Counter())[worst] += 1
    return [(check, dict(c)) for check, c in checks.values()], [(f, dict(c)) for f, c in functions.items()]


def mistakes(klass):
    """The failures' mistakes, most learners first: [(check, {checks' names}, [students])], one per
    Check.mistake_key (the first check met stands for the wording)."""
    found = {}
    for s in klass.students:
        for check in s.results.checks if s.results else ():
            if check.outcome == "failed" and (check.hint or check.mistake):
                first, names, who = found.setdefault(check.mistake_key, (check, set(), []))
                names.add(family(check.name))
                if s.name not in who:
                    who.append(s.name)
    return sorted(found.values(), key=lambda m: (-len(m[2]), m[0].function))


def experiments(klass):
    """What checks measured: [(check, {key: {student: value}}, {key: reference value}, xs)]."""
    found = {}
    for s in klass.students:
        for check in s.results.checks if s.results else ():
            if not check.data:
                continue
            _, values, reference, xs = found.setdefault(check.test, (check, defaultdict(dict), {}, []))
            for key, value in check.data.items():
                if key == "x":
                    xs[:] = value
                elif key.startswith("reference "):
                    reference[key.removeprefix("reference ")] = value
                else:
                    values[key][s.name] = value
    return list(found.values())


# -- the class quiz: its answers as grader/quiz/responses.py reads them ------------------------------
def read_quiz(klass, quiz, responses, name=""):
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


def quiz_questions(klass, shown=3):
    """[(question, right, answered, [(wrong answer, students)])] per question of the class quiz."""
    table = []
    for question in klass.questions:
        answers = [s.quiz["answers"][question.id] for s in klass.students
                   if s.quiz and question.id in s.quiz["answers"]]
        wrong = Counter(given for given, correct in answers if not correct)
        table.append((question, sum(correct for _, correct in answers), len(answers), wrong.most_common(shown)))
    return table
