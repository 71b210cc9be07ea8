"""The learner's progress, kept in `.grade/`: attempts at a lesson test (the best one counts), the
latest full grading of their lab, the answers given so far, and whether a lesson is complete.
"""
import functools
import os
from datetime import datetime

from pydantic import BaseModel, ValidationError

from grader.base.errors import QuizError
from grader.base.root import ROOT
from grader.quiz.model import load_quiz

STATE = ROOT / ".grade"                 # local attempts: quiz-<name>.json


class Attempt(BaseModel):
    score: int
    max: int
    passed: bool
    when: datetime


class QuizRecord(BaseModel):
    """What `.grade/quiz-<name>.json` holds."""
    attempts: int
    best: Attempt
    latest: Attempt


class QuizStatus(Attempt):
    """The best recorded attempt at a lesson test, and how many attempts there were."""
    attempts: int


class LabRecord(BaseModel):
    """What `.grade/lab-<name>.json` holds: the latest full grading of the learner's own copy."""
    passed: bool
    when: datetime


class LessonStatus(BaseModel):
    """Where the learner stands on a lesson: complete once its lab and its lesson test both pass."""
    lab_passed: bool | None      # None: the learner's copy of the lab not fully graded yet
    test: QuizStatus | None      # None: the lesson test not taken yet
    quiz_problem: str | None = None     # why the lesson test's file does not load, when it does not

    @property
    def complete(self):
        return bool(self.lab_passed and self.test and self.test.passed and not self.quiz_problem)

    def line(self, name):
        """The lesson's state in words, the same wherever it is shown (quiz and lab reports)."""
        if self.complete:
            return "lesson complete"
        if self.quiz_problem:
            return "lesson not complete yet: its lesson test's file is broken (see above); the lab is graded as usual"
        missing = [] if self.lab_passed else [f"the lab (python grade.py {name})"]
        if not (self.test and self.test.passed):
            missing.append(f"the lesson test (python grade.py quiz {name})")
        return f"lesson not complete yet: {' and '.join(missing)} must pass"


def progress_file(name):
    """Where the practice quiz keeps answers given so far, to continue after Ctrl-C."""
    return STATE / f"quiz-{name}-answers.yaml"


def record_attempt(result):
    """Add a graded attempt to `.grade/quiz-<name>.json`, keeping the best (earliest on a tie)."""
    record_path = STATE / f"quiz-{result.quiz}.json"
    attempt = Attempt(score=result.score, max=result.max, passed=result.passed, when=result.when)
    record = _read_record(record_path)
    if record is None:
        record = QuizRecord(attempts=0, best=attempt, latest=attempt)
    record.attempts += 1
    record.latest = attempt
    if attempt.score > record.best.score:
        record.best = attempt
    record_path.parent.mkdir(parents=True, exist_ok=True)
    record_path.write_text(record.model_dump_json(indent=2), encoding="utf-8")


def _read_record(record_path):
    try:
        return QuizRecord.model_validate_json(record_path.read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return None                     # no attempt yet, or an unreadable record: start afresh


def record_lab(lab_name, passed):
    """Note a full grading of the learner's own copy of the lab (the latest counts)."""
    path = STATE / f"lab-{lab_name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LabRecord(passed=passed, when=datetime.now().astimezone()).model_dump_json(indent=2),
                    encoding="utf-8")


def lesson_status(lab_name, lab_passed=None):
    """The one place lesson completion is decided. `lab_passed`: a grading just done, else the
    latest recorded one; the lesson test's best recorded attempt."""
    if lab_passed is None:
        try:
            lab_passed = LabRecord.model_validate_json((STATE / f"lab-{lab_name}.json").read_text()).passed
        except (OSError, ValidationError):
            pass
    return LessonStatus(lab_passed=lab_passed, test=quiz_status(lab_name))


def lesson_after(lab, results, own_copy):
    """After a grading of `lab`: note it when it was the learner's own copy in full, and return
    what the report shows of the lesson: None (no lesson test), "exam", or the LessonStatus (with
    `quiz_problem` where the quiz file does not load)."""
    lab_passed = results.all_passed and not results.selected
    if own_copy and not results.selected:
        record_lab(lab.name, lab_passed)
    if lab.quiz is None:
        return None
    try:
        keyed = _keyed(lab.quiz)
    except QuizError as error:          # a broken quiz file never stops a lab's grading
        return lesson_status(lab.name, lab_passed).model_copy(update={"quiz_problem": str(error)})
    return lesson_status(lab.name, lab_passed) if keyed else "exam"


def _keyed(path):
    """Whether the quiz in `path` has its answer key; read again only once the file changed
    (--watch asks after every round)."""
    try:
        stat = os.stat(path)
    except OSError:
        return load_quiz(path).keyed        # says what is wrong with the path
    return _keyed_as_of(str(path), (stat.st_mtime_ns, stat.st_size, stat.st_ino))


@functools.lru_cache(maxsize=8)
def _keyed_as_of(path, stamp):
    return load_quiz(path).keyed


def quiz_status(lab_name):
    """The best recorded attempt at this lab's lesson test, or None before the first one."""
    record = _read_record(STATE / f"quiz-{lab_name}.json")
    return QuizStatus(**record.best.model_dump(), attempts=record.attempts) if record else None
