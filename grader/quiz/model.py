"""Lesson tests as data: the quiz file's schema, loading it with clear errors, and a graded attempt.

A quiz file (`quizzes/labN.yaml`) holds a title, `pass_fraction` and exactly five scored
`questions`, each `{id, type, prompt, choices, answer, tolerance?, reject?, explanation}`, plus
unscored `hard_questions: [{prompt, reveal}]`. A keyed quiz (practice) has every answer and
explanation; its exam form (see grading.exam_form) has none, and can be taken but not graded.

Answers, in one form everywhere (answers files, response files, the class CSV):
  single: a choice key ("b")   multiple: keys ([x, y] or "x, y")   numeric: a number
  text: a string, matched by the rule in grader/quiz/matching.py (`reject`: forms that make it wrong).
Grading is grader/quiz/grading.py, attempts and lesson status grader/quiz/progress.py, the screens
grader/quiz/terminal.py. Nothing here draws on screen or imports torch.
"""
import math
from datetime import datetime
from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from grader.errors import QuizError
from grader.labs import find_lab
from grader.quiz.matching import tokens_of

QUESTIONS_PER_TEST = 5                  # "5 questions. Get 3 right (60%) to pass."
Answer = str | list[str] | float


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
        if reject is not None and not all(tokens_of(form) for form in reject):
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


def read_yaml(path):
    """The data in a YAML (or JSON) file, or QuizError saying why it cannot be read."""
    path = Path(path)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise QuizError(f"{path}: no such file") from None
    except yaml.YAMLError as error:
        raise QuizError(f"{path}: not valid YAML ({' '.join(str(error).split())})") from None


def load_quiz(path):
    """The validated quiz in `path`, or QuizError naming the file, question and field."""
    data = read_yaml(path)
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
        message = "unknown field (check its spelling against the quiz schema in grader/quiz/model.py)"
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
