"""Lesson tests as data: the quiz file, answers, grading, exam form, class gradebook, attempts.

A quiz file (`quizzes/labN.yaml`) holds a title, `pass_fraction` and exactly five scored
`questions`, each `{id, type, prompt, choices, answer, tolerance?, reject?, explanation}`, plus
unscored `hard_questions: [{prompt, reveal}]`. A keyed quiz (practice) has every answer and
explanation; its exam form (see `exam_form`) has none, and can be taken but not graded.

Answers, in one form everywhere (answers files, response files, the class CSV):
  single: a choice key ("b")   multiple: keys ([x, y] or "x, y")   numeric: a number
  text: a string, matched by the rule below.

Text answers. A text question's `answer` lists accepted forms, each a phrase ("relative size") or
an expression ("a - b"), and `reject` optionally lists forms that make an answer wrong even
beside an accepted one (a hedge such as "a + b or a - b"). Answer and forms are normalised
alike: case folded; dashes and the minus sign read as "-", and the words "minus" and "plus" as
"-" and "+"; brackets, operators (- + * /) and runs of letters or digits are tokens, all other
punctuation and spacing is dropped; a word longer than three letters loses a plural "s". The
answer is right when it contains an accepted form as a run of whole tokens, not extended by an
operator on either side ("a-b+1" does not contain "a - b"; "(a - b) * c" does), and contains no
rejected form. So "a − b.", "(a - b)", "a minus b" and "the relative sizes" all contain "a - b" or
"relative size". List the words a right answer would use; a wrong one must not contain any.
This module draws nothing on screen (that is grader/quiz/terminal.py) and never imports torch.
"""
import csv
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    ValidationError,
    field_validator,
    model_validator,
)

from grader.errors import QuizError
from grader.labs import ROOT, find_lab

QUESTIONS_PER_TEST = 5                  # "5 questions. Get 3 right (60%) to pass."
STATE = ROOT / ".grade"                 # local attempts: quiz-<name>.json
Answer = str | list[str] | float


class AnswerError(ValueError):
    """An answer not in the form its question expects; the message says what to type."""


def _question_at(number, question_id=None, field=None):
    """'question 'q2' (#2), field 'answer'': where a problem is, for error messages."""
    where = f"question {question_id!r} (#{number})" if question_id else f"question #{number}"
    return f"{where}, field {field!r}" if field else where


# ---------------------------------------------------------------------------------------- models

class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    type: Literal["single", "multiple", "numeric", "text"]
    prompt: str = Field(min_length=1)
    choices: dict[str, str] | None = Field(None, validate_default=True)
    answer: Answer | None = None
    tolerance: float | None = Field(None, ge=0)
    reject: list[str] | None = None
    explanation: str | None = None

    @field_validator("choices")
    @classmethod
    def _choices_fit_type(cls, choices, info):
        kind = info.data.get("type")
        if kind in ("single", "multiple") and len(choices or {}) < 2:
            raise ValueError(f"a {kind} question needs at least two choices, e.g. {{a: ..., b: ...}}")
        if kind in ("numeric", "text") and choices is not None:
            raise ValueError(f"a {kind} question has no choices (remove them, or make it single/multiple)")
        return choices

    @field_validator("answer", mode="before")
    @classmethod
    def _answer_fits_type(cls, answer, info):
        """Check the key against the question's type before parsing, so the message can say what fits."""
        kind, keys = info.data.get("type"), list(info.data.get("choices") or {})
        if answer is None or kind is None or (kind in ("single", "multiple") and not keys):
            return answer                   # no key, or its type or choices are reported already
        if kind == "single" and answer not in keys:
            raise ValueError(f"expected one of the choice keys {', '.join(keys)}, got {answer!r}")
        if kind == "multiple" and not (isinstance(answer, list) and answer
                                       and all(key in keys for key in answer) and len(set(answer)) == len(answer)):
            raise ValueError(f"expected a list of distinct choice keys from {', '.join(keys)}, "
                             f"e.g. [{keys[0]}, {keys[-1]}], got {answer!r}")
        if kind == "numeric":
            if not isinstance(answer, (int, float)) or isinstance(answer, bool):
                raise ValueError(f"expected a number, e.g. 2.5, got {answer!r}")
            return float(answer)
        if kind == "text" and not (isinstance(answer, list) and answer
                                   and all(isinstance(text, str) and text.strip() for text in answer)):
            raise ValueError(f"expected a list of accepted forms, e.g. [a - b, difference], got {answer!r}")
        return answer

    @field_validator("tolerance")
    @classmethod
    def _tolerance_only_for_numbers(cls, tolerance, info):
        if tolerance is not None and info.data.get("type") != "numeric":
            raise ValueError("only numeric questions have a tolerance")
        return tolerance

    @field_validator("reject")
    @classmethod
    def _reject_only_for_text(cls, reject, info):
        if reject is not None and info.data.get("type") != "text":
            raise ValueError("only text questions have forms to reject")
        if reject is not None and not all(_tokens(form) for form in reject):
            raise ValueError(f"expected a list of non-empty forms to reject, got {reject!r}")
        return reject


class HardQuestion(BaseModel):
    """Unscored: the learner tries an answer, then sees the reveal."""
    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(min_length=1)
    reveal: str = Field(min_length=1)


class Quiz(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    pass_fraction: float = Field(gt=0, le=1)
    questions: list[Question]
    hard_questions: list[HardQuestion] = []

    @model_validator(mode="after")
    def _whole_test(self):
        if len(self.questions) != QUESTIONS_PER_TEST:
            raise ValueError(f"field 'questions': a lesson test has exactly {QUESTIONS_PER_TEST} questions, "
                             f"this file has {len(self.questions)}")
        first_number = {}
        for number, question in enumerate(self.questions, 1):
            if question.id in first_number:
                raise ValueError(f"{_question_at(number, question.id, 'id')}: already the id of question "
                                 f"#{first_number[question.id]} (ids must be unique)")
            first_number[question.id] = number
        keyed = any(question.answer is not None for question in self.questions)
        for number, question in enumerate(self.questions, 1):
            for field in ("answer", "explanation"):
                present = getattr(question, field) is not None
                if keyed and not present:
                    raise ValueError(f"{_question_at(number, question.id, field)}: missing; other questions "
                                     "have answers, so every question needs an answer and an explanation")
                if not keyed and present:
                    raise ValueError(f"{_question_at(number, question.id, field)}: no question has an answer "
                                     "(an exam form), so none may have an explanation")
        return self

    @property
    def keyed(self):
        """True for a practice quiz with its answer key; False for an exam form."""
        return self.questions[0].answer is not None

    @property
    def needed(self):
        """Right answers needed to pass: 3 of 5 at pass_fraction 0.6."""
        return math.ceil(round(self.pass_fraction * len(self.questions), 9))


class QuestionResult(BaseModel):
    id: str
    type: str
    given: Answer | None         # None: not answered
    answer: Answer
    correct: bool


class QuizResult(BaseModel):
    quiz: str
    title: str
    score: int
    max: int
    needed: int
    passed: bool
    when: datetime
    questions: list[QuestionResult]


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

    @property
    def complete(self):
        return bool(self.lab_passed and self.test and self.test.passed)

    def line(self, name):
        """The lesson's state in words, the same wherever it is shown (quiz and lab reports)."""
        if self.complete:
            return "lesson complete"
        missing = [] if self.lab_passed else [f"the lab (python grade.py {name})"]
        if not (self.test and self.test.passed):
            missing.append(f"the lesson test (python grade.py quiz {name})")
        return f"lesson not complete yet: {' and '.join(missing)} must pass"


class GradebookRow(BaseModel):
    row: int                     # line number in the responses CSV (the header is line 1)
    student: str
    status: str                  # "graded", or what is wrong with the row
    result: QuizResult | None = None


AnswerSheet = RootModel[dict[str, str | int | float | list[str] | None]]

# --------------------------------------------------------------------------------- loading files


def find_quiz(name_or_path):
    """(name, path) of a quiz: a .yaml path, or a lab name whose manifest names its quiz."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise QuizError(f"no quiz file {path} (expected a quiz .yaml, or a lab name such as lab2)")
        return path.stem, path
    lab = find_lab(name_or_path)
    if lab.quiz is None:
        raise QuizError(f"lab {lab.name!r} has no lesson test (its lab.yaml has no 'quiz:')")
    return lab.name, lab.quiz


def _read_yaml(path):
    path = Path(path)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise QuizError(f"{path}: no such file") from None
    except yaml.YAMLError as error:
        raise QuizError(f"{path}: not valid YAML ({' '.join(str(error).split())})") from None


def load_quiz(path):
    """The validated quiz in `path`, or QuizError naming the file, question and field."""
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise QuizError(f"{path}: expected a mapping with title, pass_fraction, questions; "
                        f"got {'an empty file' if data is None else type(data).__name__}")
    try:
        return Quiz.model_validate(data)
    except ValidationError as error:
        raise QuizError(f"{path}: {_first_problem(error, data)}") from None


def _first_problem(error, data):
    """The first validation problem of a quiz file, as 'question 'q3' (#3), field 'answer': ...'."""
    problems = error.errors()
    problem, loc = problems[0], problems[0]["loc"]
    if problem["type"] == "value_error":
        message = str(problem["ctx"]["error"])
    elif problem["type"] == "missing":
        message = "missing (required)"
    elif problem["type"] == "extra_forbidden":
        message = "unknown field (check its spelling against the quiz schema in grader/quiz.py)"
    else:
        message = f"{problem['msg']}, got {str(problem['input'])[:60]!r}"
    if loc[:1] == ("questions",) and len(loc) >= 2:
        entry = data["questions"][loc[1]]
        question_id = entry.get("id") if isinstance(entry, dict) else None
        where = _question_at(loc[1] + 1, question_id, loc[2] if len(loc) > 2 else None)
    elif loc[:1] == ("hard_questions",) and len(loc) >= 2:
        where = f"hard {_question_at(loc[1] + 1, field=loc[2] if len(loc) > 2 else None)}"
    else:
        where = f"field {loc[0]!r}" if loc else ""
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    return f"{where}: {message}{more}" if where else f"{message}{more}"


# ------------------------------------------------------------------------------------- answers

DASHES = "\u2212\u2010\u2011\u2012\u2013\u2014\u2015\ufe63\uff0d"   # minus sign, hyphens, dashes
OPERATORS = set("-+*/")


def _tokens(text):
    """A text answer as the matching rule reads it (see the module's docstring)."""
    text = str(text).casefold()
    for dash in DASHES:
        text = text.replace(dash, "-")
    text = re.sub(r"\bminus\b", "-", re.sub(r"\bplus\b", "+", text))
    tokens = re.findall(r"[^\W_]+|[-+*/()]", text)
    return [t[:-1] if len(t) > 3 and t.endswith("s") and not t.endswith("ss") and t.isalpha() else t
            for t in tokens]


def _contains(tokens, form):
    """Whether `form`'s tokens occur in `tokens`, not extended by an operator on either side."""
    for start in range(len(tokens) - len(form) + 1):
        if tokens[start:start + len(form)] == form:
            before = tokens[start - 1] if start else None
            after = tokens[start + len(form)] if start + len(form) < len(tokens) else None
            if before not in OPERATORS and after not in OPERATORS:
                return True
    return False


def text_matches(answer, accepted, reject=()):
    """The text-answer rule: contains an accepted form, and no rejected one."""
    tokens = _tokens(answer)
    return any(_contains(tokens, _tokens(form)) for form in accepted) and \
        not any(_contains(tokens, _tokens(form)) for form in reject)


def parse_answer(question, raw):
    """The learner's `raw` answer (typed text, or a value from a file) in the schema's form."""
    keys = list(question.choices or {})
    by_lowercase_key = {key.lower(): key for key in keys}
    if question.type == "single":
        key = by_lowercase_key.get(str(raw).strip().lower())
        if key is None:
            raise AnswerError(f"{str(raw).strip()!r} is not a choice: type one of {', '.join(keys)}")
        return key
    if question.type == "multiple":
        picked = raw if isinstance(raw, list) else re.split(r"[\s,]+", str(raw).strip())
        picked = [str(key).strip().lower() for key in picked if str(key).strip()]
        unknown = [key for key in picked if key not in by_lowercase_key]
        if unknown or not picked:
            seen = f"{unknown[0]!r} is not a choice" if unknown else "no choice given"
            raise AnswerError(f"{seen}: type the keys that apply from {', '.join(keys)}, "
                              f"separated by spaces or commas, e.g. {keys[0]} {keys[-1]}")
        return sorted({by_lowercase_key[key] for key in picked}, key=keys.index)
    if question.type == "numeric":
        return _number(raw)
    text = " ".join(str(raw).split())
    if not text:
        raise AnswerError("no answer given: type a word or short phrase")
    return text


def _number(raw):
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    text = str(raw).strip()
    if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?", text):      # thousands separators: 1,234,567
        text = text.replace(",", "")
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise AnswerError(f"{text!r} is not a number: type digits, e.g. 12.5")
    return number


def is_correct(question, given):
    if given is None:
        return False
    if question.type == "multiple":
        return set(given) == set(question.answer)
    if question.type == "numeric":
        return math.isclose(given, question.answer, rel_tol=1e-9, abs_tol=question.tolerance or 0.0)
    if question.type == "text":
        return text_matches(given, question.answer, question.reject or ())
    return given == question.answer


def load_answers(quiz, path):
    """{question id: answer} from a YAML/JSON answers or response file; ids left out are unanswered."""
    data = _read_yaml(path) or {}
    try:
        sheet = AnswerSheet.model_validate(data).root
    except ValidationError:
        raise QuizError(f"{path}: expected a mapping of question id to answer, e.g. "
                        f"{{{quiz.questions[0].id}: ...}}; got {str(data)[:60]!r}") from None
    questions = {question.id: question for question in quiz.questions}
    answers = {}
    for question_id, raw in sheet.items():
        if question_id not in questions:
            raise QuizError(f"{path}: question {question_id!r}: no such question in this quiz "
                            f"(ids: {', '.join(questions)})")
        if raw is None:
            continue
        try:
            answers[question_id] = parse_answer(questions[question_id], raw)
        except AnswerError as error:
            raise QuizError(f"{path}: question {question_id!r}, answer: {error}") from None
    return answers


def write_answers(path, answers):
    """Save answers in the form load_answers reads (a response file, or progress so far)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(yaml.safe_dump(answers, sort_keys=False, allow_unicode=True), encoding="utf-8")


def grade(quiz, answers, name):
    """Score `answers` ({question id: parsed answer}) against the quiz's key."""
    if not quiz.keyed:
        raise QuizError(f"quiz {name!r} is an exam form with no answer key: it can be taken, not graded "
                        "(grade the responses with the keyed quiz file)")
    results = [QuestionResult(id=question.id, type=question.type, given=answers.get(question.id),
                              answer=question.answer, correct=is_correct(question, answers.get(question.id)))
               for question in quiz.questions]
    score = sum(result.correct for result in results)
    return QuizResult(quiz=name, title=quiz.title, score=score, max=len(results), needed=quiz.needed,
                      passed=score >= quiz.needed, when=datetime.now().astimezone(), questions=results)


def exam_form(quiz):
    """The quiz as a learner receives it in exam mode: plain data for yaml.safe_dump.

    Same schema with no key: each question loses answer, tolerance, reject and explanation. The unscored
    hard questions stay, as the lesson shows them: their reveals answer no scored question.
    load_quiz accepts the result; grade refuses it.
    """
    return quiz.model_dump(exclude={"questions": {"__all__": {"answer", "tolerance", "reject", "explanation"}}},
                           exclude_none=True)


# --------------------------------------------------------------------------------- class gradebook

def grade_class(quiz, name, responses_path, gradebook_path):
    """Grade one CSV row per student (`student` + one column per question id) into a gradebook CSV.

    A row that cannot be graded gets its problem as status and no score; the others are graded.
    """
    ids = [question.id for question in quiz.questions]
    try:
        with open(responses_path, newline="", encoding="utf-8-sig") as file:
            reader = csv.DictReader(file)
            missing = [column for column in ["student", *ids] if column not in (reader.fieldnames or [])]
            if missing:
                header = ", ".join(reader.fieldnames or []) or "an empty file"
                raise QuizError(f"{responses_path}: no column {missing[0]!r}; expected a header with "
                                f"student, {', '.join(ids)} (got {header})")
            rows = [_grade_row(quiz, name, line, cells) for line, cells in enumerate(reader, 2)]
    except FileNotFoundError:
        raise QuizError(f"{responses_path}: no such file") from None
    first_row = {}
    for row in rows:
        if row.student and row.student in first_row:
            row.status, row.result = f"duplicate of row {first_row[row.student]}", None
        first_row.setdefault(row.student, row.row)
    _write_gradebook(gradebook_path, ids, rows)
    return rows


def _grade_row(quiz, name, line, cells):
    student = (cells.get("student") or "").strip()
    if not student:
        return GradebookRow(row=line, student="", status="no student name")
    answers = {}
    for question in quiz.questions:
        raw = (cells.get(question.id) or "").strip()
        try:
            if raw:
                answers[question.id] = parse_answer(question, raw)
        except AnswerError as error:
            return GradebookRow(row=line, student=student, status=f"{question.id}: {error}")
    return GradebookRow(row=line, student=student, status="graded", result=grade(quiz, answers, name))


def _write_gradebook(path, ids, rows):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["student", "score", "max", "passed", "status", *ids])
        for row in rows:
            result = row.result
            marks = [int(q.correct) for q in result.questions] if result else [""] * len(ids)
            writer.writerow([row.student, result.score if result else "", len(ids),
                             ("yes" if result.passed else "no") if result else "", row.status, *marks])


# -------------------------------------------------------------------------------- attempts, status

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
    what the report shows of the lesson: None (no lesson test), "exam", or the LessonStatus."""
    lab_passed = results.all_passed and not results.selected
    if own_copy and not results.selected:
        record_lab(lab.name, lab_passed)
    if lab.quiz is None:
        return None
    return lesson_status(lab.name, lab_passed) if load_quiz(lab.quiz).keyed else "exam"


def quiz_status(lab_name):
    """The best recorded attempt at this lab's lesson test, or None before the first one."""
    record = _read_record(STATE / f"quiz-{lab_name}.json")
    return QuizStatus(**record.best.model_dump(), attempts=record.attempts) if record else None


def write_result(result, path):
    """--json: the graded attempt (score, max, passed, per question)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(result.model_dump_json(indent=2), encoding="utf-8")
