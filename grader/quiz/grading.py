"""Grading a lesson test: answers checked against the key and scored, for one learner (an attempt,
an answers file; a class is grader/quiz/classroom.py); and the exam form, the quiz without its key
or its reveals. Records no attempt (that is grader/quiz/progress.py).
"""
import math
from datetime import datetime
from pathlib import Path

import yaml
from pydantic import RootModel, ValidationError

from grader.base.errors import QuizError
from grader.quiz.answers import AnswerError, in_key_form, parse_answer, why_wrong
from grader.quiz.matching import judge
from grader.quiz.model import QuestionResult, QuizResult, read_yaml

AnswerSheet = RootModel[dict[str, str | int | float | list[str] | None]]


def check(question, given):
    """(right, why) for a parsed answer; `why` says what a wrong text answer did."""
    if given is None:
        return False, ""
    if not in_key_form(question, given):            # read as written: a hedge, or nothing to read
        return False, why_wrong(question, given)
    if question.type == "multiple":
        return set(given) == set(question.answer), ""
    if question.type == "numeric":
        return math.isclose(given, question.answer, rel_tol=1e-9, abs_tol=question.tolerance or 0.0), ""
    if question.type == "text":
        return judge(given, question.answer.rules)
    return given == question.answer, ""


def load_answers(quiz, path):
    """{question id: answer} from a YAML/JSON answers or response file; ids left out are unanswered,
    an answer that cannot be read is kept as written (and judged wrong with the reason)."""
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
        except AnswerError:                         # counted wrong, with the reason, as in a class's file
            answers[question_id] = " ".join((", ".join(map(str, raw)) if isinstance(raw, list) else str(raw)).split())
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
    results = []
    for question in quiz.questions:
        given = answers.get(question.id)
        correct, why = check(question, given)
        key = question.answer.shown() if question.type == "text" else question.answer
        results.append(QuestionResult(id=question.id, type=question.type, given=given, answer=key,
                                      correct=correct, why=why))
    score = sum(result.correct for result in results)
    return QuizResult(quiz=name, title=quiz.title, score=score, max=len(results), needed=quiz.needed,
                      passed=score >= quiz.needed, when=datetime.now().astimezone(), questions=results)


def exam_form(quiz):
    """The quiz as a learner receives it in exam mode: plain data for yaml.safe_dump.

    Same schema with no key: each question loses answer, tolerance, explanation and aliases (an
    alias of the right choice alone would give it away), each hard
    question its reveal (an exam ships no explanation). load_quiz accepts the result; grade refuses it.
    """
    return quiz.model_dump(exclude={"questions": {"__all__": {"answer", "tolerance", "explanation", "aliases"}},
                                    "hard_questions": {"__all__": {"reveal"}}}, exclude_none=True)


def write_result(result, path):
    """--json: the graded attempt (score, max, passed, per question)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(result.model_dump_json(indent=2), encoding="utf-8")
