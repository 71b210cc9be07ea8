"""Lesson tests as data: the quiz file's schema, loading it with clear errors, and a graded attempt.

A quiz file (`quizzes/labN.yaml`) holds a title, `pass_fraction` and exactly five scored
`questions`, each `{id, type, prompt, choices, aliases?, answer, tolerance?, unit?, explanation}`
(`aliases`: choice key -> other names a learner may type for it, "SGD"), plus
unscored `hard_questions: [{prompt, reveal}]`. A keyed quiz (practice) has every answer, explanation
and reveal; its exam form (see grading.exam_form) has none, and can be taken but not graded.

Keys: single: a choice key; multiple: a list of keys; numeric: a number, in the question's `unit`
(thousand, million, billion) when it has one; text: a TextKey, read by grader/quiz/matching.py.
What a learner may type for each is in grader/quiz/answers.py.
Grading is grader/quiz/grading.py, attempts and lesson status grader/quiz/progress.py, the screens
grader/quiz/terminal.py. Nothing here draws on screen or imports torch.
"""
import math
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from grader.base.errors import QuizError
from grader.quiz.forms import translate
from grader.quiz.matching import Rules
from grader.quiz.numbers import Unit
from grader.quiz.paths import case_hint
from grader.readers.manifest import find_lab

if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)     # libyaml's where built: 10x faster


class UniqueKeyLoader(_SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (YAML would keep the last
    silently: an answers file's first answer to a question, or a quiz's first field, lost)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if key.value in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"{key.value!r} is given twice",
                                                            key.start_mark)
                seen.add(key.value)
        return super().construct_mapping(node, deep)


LOADER = UniqueKeyLoader
QUESTIONS_PER_TEST = 5                  # "5 questions. Get 3 right (60%) to pass."


def _question_at(number, question_id=None, field=None):
    """'question 'q2' (#2), field 'answer'': where a problem is, for error messages."""
    where = f"question {question_id!r} (#{number})" if question_id else f"question #{number}"
    return f"{where}, field {field!r}" if field else where


# ---------------------------------------------------------------------------------------- models

class TextKey(BaseModel):
    """The key of a text question, as data for grader/quiz/matching.py."""
    model_config = ConfigDict(extra="forbid")
    expression: str | None = None       # the answer as mathematics, e.g. "a - b"
    up_to: list[Literal["sign", "factor"]] = []     # sign: -(a - b), |a - b|; factor: c·(a - b) too
    names: dict[str, list[str]] = {}    # variable -> words that stand for it in an answer
    words: list[str] = Field(min_length=1)          # phrases that name the answer; the first shows it
    others: dict[str, list[str]] = {}   # another candidate -> phrases that name it
    neutral: list[str] = []             # phrases that name no candidate ("matrix product" is no product)
    _rules: Rules = PrivateAttr()

    @model_validator(mode="after")
    def _readable(self):
        try:
            self._rules = Rules(self)
        except SyntaxError as error:
            raise ValueError(f"field 'expression': {error}") from None
        unknown = set(self.names) - set(self._rules.variables)
        if self.expression and unknown:
            raise ValueError(f"field 'names': {', '.join(sorted(unknown))} not in the expression {self.expression!r}")
        return self

    @property
    def rules(self):
        """The key made ready to read answers with (grader/quiz/matching.py)."""
        return self._rules

    def shown(self):
        return f"{self.expression} ({self.words[0]})" if self.expression else self.words[0]


Answer = str | list[str] | float | TextKey


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    type: Literal["single", "multiple", "numeric", "text"]
    prompt: str = Field(min_length=1)
    choices: dict[str, str] | None = Field(None, validate_default=True)
    aliases: dict[str, list[str]] | None = None     # choice key -> other names of it ("SGD")
    answer: Answer | None = None
    tolerance: float | None = Field(None, ge=0)
    unit: Unit | None = None               # the scale a count is given in
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

    @field_validator("aliases")
    @classmethod
    def _aliases_name_choices(cls, aliases, info):
        keys = list(info.data.get("choices") or {})
        if aliases is not None and info.data.get("type") not in ("single", "multiple"):
            raise ValueError("only single and multiple questions have aliases of their choices")
        unknown = [key for key in aliases or {} if key not in keys]
        if unknown and keys:
            raise ValueError(f"{unknown[0]!r} is not a choice key ({', '.join(keys)})")
        if any(not alias.strip() for names in (aliases or {}).values() for alias in names):
            raise ValueError("an alias is an empty string")
        return aliases

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
        if kind == "text":
            if not isinstance(answer, dict):   # a list of phrases, an earlier form, is translated by forms.py
                raise ValueError(f"expected a mapping with words (and expression, others...), or a list of "
                                 f"phrases, got {answer!r}")
            try:
                return TextKey.model_validate(answer)
            except ValidationError as error:
                problem = error.errors()[0]
                where = ".".join(map(str, problem["loc"]))
                raise ValueError(f"{where + ': ' if where else ''}{problem['msg'].removeprefix('Value error, ')}") \
                    from None
        return answer

    @field_validator("tolerance", "unit")
    @classmethod
    def _only_for_numbers(cls, value, info):
        if value is not None and info.data.get("type") != "numeric":
            raise ValueError(f"only numeric questions have a {info.field_name}")
        return value


class HardQuestion(BaseModel):
    """Unscored: the learner tries an answer, then sees the reveal."""
    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(min_length=1)
    reveal: str | None = Field(None, min_length=1)      # None in an exam form


class Quiz(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    pass_fraction: float = Field(gt=0, le=1)
    questions: list[Question]
    hard_questions: list[HardQuestion] = []
    _notes: list[str] = PrivateAttr(default_factory=list)

    @property
    def notes(self):
        """What load_quiz translated from an earlier form of the file (grader/quiz/forms.py)."""
        return self._notes

    @notes.setter
    def notes(self, notes):
        self._notes = list(notes)

    @model_validator(mode="after")
    def _whole_test(self):
        """Every problem of the test as a whole, one a line (problems_of splits them)."""
        found = []
        if len(self.questions) != QUESTIONS_PER_TEST:
            found.append(f"field 'questions': a lesson test has exactly {QUESTIONS_PER_TEST} questions, "
                         f"this file has {len(self.questions)}")
        first_number = {}
        for number, question in enumerate(self.questions, 1):
            if question.id in first_number:
                found.append(f"{_question_at(number, question.id, 'id')}: already the id of question "
                             f"#{first_number[question.id]} (ids must be unique)")
            first_number.setdefault(question.id, number)
        keyed = any(question.answer is not None for question in self.questions)
        found += [f"hard {_question_at(number, field='reveal')}: " + ("missing; a keyed quiz reveals every hard "
                  "question" if keyed else "an exam form has no answers, so no reveals")
                  for number, hard in enumerate(self.hard_questions, 1) if (hard.reveal is not None) != keyed]
        for number, question in enumerate(self.questions, 1):
            for field in ("answer", "explanation"):
                present = getattr(question, field) is not None
                if keyed and not present:
                    found.append(f"{_question_at(number, question.id, field)}: missing; other questions "
                                 "have answers, so every question needs an answer and an explanation")
                if not keyed and present:
                    found.append(f"{_question_at(number, question.id, field)}: no question has an answer "
                                 "(an exam form), so none may have an explanation")
        if found:
            raise ValueError("\n".join(found))
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
    answer: str | list[str] | float     # a text question's: the key as shown
    correct: bool
    why: str = ""                # a wrong text answer: what it did (hedged, ruled the answer out...)


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
            what = "is a folder" if path.is_dir() else f"does not exist{case_hint(path)}"
            raise QuizError(f"no quiz file {path}: it {what} (expected a quiz .yaml, or a lab name such as lab2)")
        return path.stem, path
    lab = find_lab(name_or_path)
    if lab.quiz is None:
        raise QuizError(f"lab {lab.name!r} has no lesson test (its lab.yaml has no 'quiz:')")
    return lab.name, lab.quiz


def read_yaml(path):
    """The data in a YAML (or JSON) file, or QuizError saying why it cannot be read."""
    path = Path(path)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)
    except FileNotFoundError:
        raise QuizError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise QuizError(f"{path}: not UTF-8 text (save it as UTF-8)") from None
    except yaml.YAMLError as error:
        where = " ".join(re.sub(r'\s+in "<unicode string>",', " at", str(error)).split())
        raise QuizError(f"{path}: not valid YAML ({where})") from None


def load_quiz(path):
    """The validated quiz in `path` (an earlier form translated, with notes in `quiz.notes`), or
    QuizError naming the file, question and field of its first problem (and how many more)."""
    data, notes = _data(path)
    try:
        quiz = Quiz.model_validate(data)
    except ValidationError as error:
        found = problems_of(error, data)
        more = f" (and {len(found) - 1} more problems)" if len(found) > 1 else ""
        raise QuizError(f"{path}: {found[0]}{more}") from None
    quiz.notes = notes
    return quiz


def quiz_problems(path):
    """([every problem of the quiz file], [notes]), each a sentence: what check-lab lists."""
    try:
        data, notes = _data(path)
    except QuizError as error:
        return [str(error)], []
    try:
        Quiz.model_validate(data)
    except ValidationError as error:
        return [f"{path}: {problem}" for problem in problems_of(error, data)], notes
    return [], notes


def _data(path):
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise QuizError(f"{path}: expected a mapping with title, pass_fraction, questions; "
                        f"got {'an empty file' if data is None else type(data).__name__}")
    return translate(data)


def problems_of(error, data):
    """Every validation problem of a quiz file, as 'question 'q3' (#3), field 'answer': ...'."""
    return [sentence for problem in error.errors() for sentence in _sentences(problem, data)]


def _sentences(problem, data):
    loc = problem["loc"]
    if problem["type"] == "value_error":
        messages = str(problem["ctx"]["error"]).split("\n")     # a whole test's problems, one a line
    elif problem["type"] == "missing":
        messages = ["missing (required)"]
    elif problem["type"] == "extra_forbidden":
        messages = ["unknown field (check its spelling against the quiz schema in grader/quiz/model.py)"]
    else:
        messages = [f"{problem['msg']}, got {str(problem['input'])[:60]!r}"]
    if loc[:1] == ("questions",) and len(loc) >= 2 and isinstance(loc[1], int):
        entry = data["questions"][loc[1]]
        question_id = entry.get("id") if isinstance(entry, dict) else None
        where = _question_at(loc[1] + 1, question_id, loc[2] if len(loc) > 2 else None)
    elif loc[:1] == ("hard_questions",) and len(loc) >= 2:
        where = f"hard {_question_at(loc[1] + 1, field=loc[2] if len(loc) > 2 else None)}"
    else:
        where = f"field {loc[0]!r}" if loc else ""
    return [f"{where}: {message}" if where else message for message in messages]
