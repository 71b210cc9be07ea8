"""Grading a lesson test: answers read into the schema's form, checked against the key and scored,
for one learner (an attempt, an answers file) or a class (a responses CSV into a gradebook CSV);
and the exam form, the quiz without its key. Records no attempt (that is grader/quiz/progress.py).
"""
import csv
import math
import re
from datetime import datetime
from pathlib import Path

import yaml
from pydantic import BaseModel, RootModel, ValidationError

from grader.errors import QuizError
from grader.quiz.matching import text_matches
from grader.quiz.model import QuestionResult, QuizResult, read_yaml

AnswerSheet = RootModel[dict[str, str | int | float | list[str] | None]]


class AnswerError(ValueError):
    """An answer not in the form its question expects; the message says what to type."""


# ------------------------------------------------------------------------------------- answers

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
    data = read_yaml(path) or {}
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


def write_result(result, path):
    """--json: the graded attempt (score, max, passed, per question)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(result.model_dump_json(indent=2), encoding="utf-8")


# --------------------------------------------------------------------------------- class gradebook

class GradebookRow(BaseModel):
    row: int                     # line number in the responses CSV (the header is line 1)
    student: str
    status: str                  # "graded", or what is wrong with the row
    result: QuizResult | None = None


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
