"""Grading the lesson test: answers read and checked (the text-answer rule among them), the pass
rule on an answers file, the exam form, and a class CSV into a gradebook."""
import json
import os
import subprocess
import sys

import pytest
import yaml

from grader.quiz.answers import AnswerError, parse_answer
from grader.quiz.grading import check, exam_form
from grader.quiz.model import load_quiz
from grader.quiz.progress import quiz_status

from conftest import LAB2_QUIZ, RIGHT, answers_file, run_cli

pytestmark = pytest.mark.usefixtures("state")

def is_correct(question, given):
    return check(question, given)[0]


WRONG = {"table-size": 12, "order": ["c"], "methods": "a", "rope-score": "absolute position", "tied": "a"}


# ----------------------------------------------------------------------------------- answers

@pytest.fixture(scope="module")
def lab2():
    return {question.id: question for question in load_quiz(LAB2_QUIZ).questions}


def test_answers_are_read_and_checked(lab2):
    assert parse_answer(lab2["methods"], " D ") == "d"
    assert parse_answer(lab2["order"], "e, A  b") == ["a", "b", "e"]
    assert parse_answer(lab2["order"], ["b", "a", "b"]) == ["a", "b"]
    assert is_correct(lab2["table-size"], parse_answer(lab2["table-size"], "38.6"))
    assert not is_correct(lab2["table-size"], 38.0)
    assert is_correct(lab2["rope-score"], parse_answer(lab2["rope-score"], "  Relative   DISTANCE "))
    assert not is_correct(lab2["rope-score"], "m + n")


@pytest.mark.parametrize("question, raw, hint", [
    ("methods", "e", "type one of a, b, c, d"),
    ("methods", "positions", "fits choices a, b and c: type the letter of one"),
    ("order", "a x", "'x' is not a choice"),
    ("order", " , ", "no choice given"),
    ("table-size", "lots", "not a number"),
    ("table-size", "nan", "not a number"),
    ("rope-score", "   ", "no answer given"),
    ("order", "a " * 600, "1,199 characters is not a multiple answer: type the letters that apply"),
])
def test_answers_in_the_wrong_form_say_what_to_type(lab2, question, raw, hint):
    with pytest.raises(AnswerError, match=hint):
        parse_answer(lab2[question], raw)


@pytest.mark.parametrize("right, code", [(5, 0), (3, 0), (2, 1)])
def test_answers_file_grades_by_the_pass_rule(right, code, tmp_path, capsys):
    answers = {question_id: (RIGHT if n < right else WRONG)[question_id] for n, question_id in enumerate(RIGHT)}
    out_json = tmp_path / "result.json"
    exit_code, out = run_cli(capsys, "lab2", "--answers", answers_file(tmp_path, answers), "--json", out_json)
    result = json.loads(out_json.read_text())
    assert exit_code == code
    assert (result["score"], result["max"], result["passed"]) == (right, 5, code == 0)
    assert [question["correct"] for question in result["questions"]] == [n < right for n in range(5)]
    assert ("PASS" if code == 0 else "FAIL") in out and f"{right} of 5 right" in out
    assert "38,597,376" in out                                  # the review shows explanations


def test_answers_file_in_another_encoding_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "answers.yaml"
    path.write_bytes("rope-score: différence\n".encode("latin-1"))
    code, out = run_cli(capsys, "lab2", "--answers", path)
    assert code == 2 and "answers.yaml: not UTF-8 text (save it as UTF-8)" in " ".join(out.split())


def test_answers_file_with_an_unknown_question_exits_2_and_an_unread_answer_counts_wrong(tmp_path, capsys):
    code, out = run_cli(capsys, "lab2", "--answers", answers_file(tmp_path, {"q9": "a"}))
    assert code == 2 and "question 'q9': no such question" in out and "answers.yaml" in out
    code, out = run_cli(capsys, "lab2", "--answers", answers_file(tmp_path, {**RIGHT, "methods": "z"}))
    out = " ".join(out.split())
    assert code == 0 and "4 of 5 right" in out and "your answer: “z”" in out
    assert "why not: not read: 'z' is not a choice: type one of a, b, c, d" in out
    assert quiz_status("lab2") is None


# ---------------------------------------------------------------------------------- exam form

def test_exam_form_has_no_key_and_cannot_be_graded(tmp_path, capsys):
    key = load_quiz(LAB2_QUIZ)
    exam = exam_form(key)
    text = yaml.safe_dump(exam, allow_unicode=True)
    assert all(set(question) - {"choices", "unit"} == {"id", "type", "prompt"} for question in exam["questions"])
    assert exam["questions"][0]["unit"] == "million"                     # how answers are read, not a key
    assert not [x for question in key.questions for x in (question.explanation[:40], str(question.answer))
                if len(x) > 2 and x in text]
    assert exam["hard_questions"] == [{"prompt": h.prompt} for h in key.hard_questions]   # no reveal
    assert not [h.reveal[:40] for h in key.hard_questions if h.reveal[:40] in text]
    path = tmp_path / "lab2-exam.yaml"
    path.write_text(text)
    assert not load_quiz(path).keyed
    code, out = run_cli(capsys, path, "--answers", answers_file(tmp_path, {"methods": "d"}))
    assert code == 2 and "exam form with no answer key" in out


def test_exam_mode_writes_responses_and_says_nothing_about_right_answers(tmp_path, course):
    exam = tmp_path / "lab2-exam.yaml"
    exam.write_text(yaml.safe_dump(exam_form(load_quiz(LAB2_QUIZ)), allow_unicode=True))
    response = tmp_path / "mine.yaml"
    shown = subprocess.run([sys.executable, "grade.py", "quiz", str(exam), "--response", str(response)],
                           cwd=course, input="38.6\nz\na b e\nd\nm - n\nc\n", capture_output=True, text=True,
                           env=os.environ | {"COLUMNS": "300"})
    assert shown.returncode == 0 and "hand that file in" in shown.stdout
    assert "Right" not in shown.stdout and "Not quite" not in shown.stdout and "PASS" not in shown.stdout
    assert yaml.safe_load(response.read_text()) == RIGHT | {"table-size": 38.6}
    assert not (course / ".grade").exists()
