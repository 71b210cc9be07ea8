"""Grading the lesson test: answers read and checked (the text-answer rule among them), the pass
rule on an answers file, the exam form, and a class CSV into a gradebook."""
import csv
import json
import os
import subprocess
import sys

import pytest
import yaml

from grader.errors import QuizError
from grader.quiz.grading import AnswerError, exam_form, is_correct, parse_answer
from grader.quiz.matching import text_matches
from grader.quiz.model import load_quiz
from grader.quiz.progress import quiz_status

from conftest import LAB2_QUIZ, RIGHT, answers_file, run_cli

pytestmark = pytest.mark.usefixtures("state")

WRONG = {"table-size": 12, "order": ["c"], "methods": "a", "rope-score": "absolute position", "tied": "a"}


# ----------------------------------------------------------------------------------- answers

@pytest.fixture(scope="module")
def lab2():
    return {question.id: question for question in load_quiz(LAB2_QUIZ).questions}


def test_answers_are_normalised(lab2):
    assert parse_answer(lab2["methods"], " D ") == "d"
    assert parse_answer(lab2["order"], "e, A  b") == ["a", "b", "e"]
    assert parse_answer(lab2["order"], ["b", "a", "b"]) == ["a", "b"]
    assert parse_answer(lab2["table-size"], "38,597,376") == 38597376.0
    assert parse_answer(lab2["table-size"], 38) == 38.0
    assert is_correct(lab2["table-size"], parse_answer(lab2["table-size"], "38.6"))
    assert not is_correct(lab2["table-size"], 38.0)
    assert is_correct(lab2["rope-score"], parse_answer(lab2["rope-score"], "  Relative   DISTANCE "))
    assert not is_correct(lab2["rope-score"], "m + n")


RIGHT_PHRASINGS = [
    "how far apart they are", "m-n.", "(m - n)", "m minus n", "the relative distance between them",
    "relative distance m-n", "n-m", "their offset", "the difference of the positions", "relative position",
    "m − n", "m–n", "|m-n|", "(m - n) * theta", "(m-n)θ", "the gap between positions", "n minus m",
    "how many positions apart", "their relative positions", "  Relative   DISTANCE ", "position delta",
    "the displacement between query and key", "m - n, the relative position", "positional difference",
    "how far the query is from the key", "the distance between m and n", "'m - n'", "M - N",
]
WRONG_PHRASINGS = [
    "m + n", "the absolute position", "the angle", "m", "n", "position", "m*n", "m n", "m and n", "their sum",
    "m times n", "the product", "m/n", "absolute positions", "the frequency", "theta", "m-n+1",
    "m + n or m - n", "the dot product", "m plus n", "the position m", "mn", "m×n", "the rotation angle",
]


@pytest.mark.parametrize("answer", RIGHT_PHRASINGS)
def test_free_text_accepts_the_ways_people_write_it(lab2, answer):
    assert is_correct(lab2["rope-score"], parse_answer(lab2["rope-score"], answer))


@pytest.mark.parametrize("answer", WRONG_PHRASINGS)
def test_free_text_rejects_wrong_answers(lab2, answer):
    assert not is_correct(lab2["rope-score"], parse_answer(lab2["rope-score"], answer))


def test_free_text_rule_is_the_quiz_schema(tmp_path):
    """The rule is generic: accepted phrases and expressions, operators bound expressions, rejects win."""
    assert text_matches("the Sizes, relatively", ["size"]) and not text_matches("sighs", ["size"])
    assert text_matches("(a − b) / 2", ["a - b"]) and not text_matches("a - b*c", ["a - b"])
    assert not text_matches("a - b, or a + b", ["a - b"], reject=["a + b"])
    data = yaml.safe_load(LAB2_QUIZ.read_text())
    data["questions"][2]["reject"] = ["x"]
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(QuizError, match="only text questions have forms to reject"):
        load_quiz(tmp_path / "q.yaml")


@pytest.mark.parametrize("question, raw, hint", [
    ("methods", "e", "type one of a, b, c, d"),
    ("order", "a x", "'x' is not a choice"),
    ("order", " , ", "no choice given"),
    ("table-size", "lots", "not a number"),
    ("table-size", "nan", "not a number"),
    ("rope-score", "   ", "no answer given"),
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


def test_answers_file_with_unknown_question_or_bad_answer_exits_2(tmp_path, capsys):
    code, out = run_cli(capsys, "lab2", "--answers", answers_file(tmp_path, {"q9": "a"}))
    assert code == 2 and "question 'q9': no such question" in out and "answers.yaml" in out
    code, out = run_cli(capsys, "lab2", "--answers", answers_file(tmp_path, {"methods": "z"}))
    assert code == 2 and "question 'methods'" in out and "type one of a, b, c, d" in out
    assert quiz_status("lab2") is None


# ---------------------------------------------------------------------------------- exam form

def test_exam_form_has_no_key_and_cannot_be_graded(tmp_path, capsys):
    key = load_quiz(LAB2_QUIZ)
    exam = exam_form(key)
    text = yaml.safe_dump(exam, allow_unicode=True)
    assert all(set(question) == {"id", "type", "prompt"} | ({"choices"} if "choices" in question else set())
               for question in exam["questions"])
    assert not [x for question in key.questions for x in (question.explanation[:40], str(question.answer))
                if len(x) > 2 and x in text]
    assert exam["hard_questions"] == [h.model_dump() for h in key.hard_questions]   # as the lesson shows them
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


# ----------------------------------------------------------------------------------- the class

def test_class_csv_into_gradebook_with_bad_rows_flagged(tmp_path, capsys):
    responses = tmp_path / "responses.csv"
    responses.write_text("student,timestamp,table-size,order,methods,rope-score,tied\n"
                         'ada,1,38.6,"a, b, e",d,m-n,c\n'
                         "bob,2,12,a,d,,c\n"
                         "cy,3,38.6,a b e,z,m-n,c\n"
                         ",4,38.6,a,d,m-n,c\n"
                         "ada,5,1,a,a,a,a\n")
    gradebook = tmp_path / "out" / "gradebook.csv"
    code, out = run_cli(capsys, "lab2", "--class", responses, "--out", gradebook)
    rows = list(csv.DictReader(gradebook.open()))
    assert code == 0 and "2 graded, 1 passed" in out
    assert [(row["student"], row["score"], row["passed"]) for row in rows[:2]] == [("ada", "5", "yes"),
                                                                                  ("bob", "2", "no")]
    assert rows[1]["rope-score"] == "0"
    assert rows[2]["status"].startswith("methods: 'z' is not a choice") and rows[2]["score"] == ""
    assert rows[3]["status"] == "no student name"
    assert rows[4]["status"] == "duplicate of row 2"
    assert quiz_status("lab2") is None                        # grading a class records no attempt


def test_class_csv_missing_a_question_column_exits_2(tmp_path, capsys):
    responses = tmp_path / "responses.csv"
    responses.write_text("student,table-size\nada,38.6\n")
    code, out = run_cli(capsys, "lab2", "--class", responses, "--out", tmp_path / "gradebook.csv")
    assert code == 2 and "no column 'order'" in out
