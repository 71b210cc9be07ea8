"""The lesson test: quiz file, answer normalisation, pass rule, CLI modes, and the terminal quiz.

Commands that record attempts run against a copy of the course (grade.py, grader/, quizzes/)
so the real `.grade/` is never touched; the terminal quiz runs in a real pseudo-terminal.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
import yaml

from grader.cli import main
from grader.errors import QuizError
from grader.quiz import progress
from grader.quiz.grading import AnswerError, exam_form, grade, is_correct, parse_answer
from grader.quiz.matching import text_matches
from grader.quiz.model import load_quiz
from grader.quiz.progress import lesson_status, quiz_status, record_attempt, record_lab

ROOT = Path(__file__).resolve().parent.parent
LAB2_QUIZ = ROOT / "quizzes" / "lab2.yaml"
RIGHT = {"table-size": 38.6, "order": ["a", "b", "e"], "methods": "d", "rope-score": "m - n", "tied": "c"}
WRONG = {"table-size": 12, "order": ["c"], "methods": "a", "rope-score": "absolute position", "tied": "a"}


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    """Attempts recorded in-process go to a temporary `.grade/`."""
    monkeypatch.setattr(progress, "STATE", tmp_path / ".grade")
    return tmp_path / ".grade"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A copy of the course whose grade.py records attempts in its own `.grade/`."""
    copy = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "grade.py", copy)
    for folder in ("grader", "quizzes"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "assignments" / "lab2").mkdir(parents=True)
    return copy


@pytest.fixture
def fresh_course(course):
    shutil.rmtree(course / ".grade", ignore_errors=True)
    return course


def answers_file(tmp_path, answers, name="answers.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(answers))
    return path


def run_cli(capsys, *argv):
    code = main(["quiz", *map(str, argv)])
    return code, capsys.readouterr().out


# ------------------------------------------------------------------------------------ the quiz file

def test_lab2_quiz_is_a_valid_five_question_test():
    quiz = load_quiz(LAB2_QUIZ)
    assert len(quiz.questions) == 5 and quiz.pass_fraction == 0.6 and quiz.needed == 3
    assert len({question.type for question in quiz.questions}) >= 3
    assert all(question.explanation for question in quiz.questions)
    assert quiz.hard_questions[0].prompt.startswith("Rescaling RoPE frequencies")
    assert set(RIGHT) == {question.id for question in quiz.questions}


def break_quiz(tmp_path, change):
    data = yaml.safe_load(LAB2_QUIZ.read_text())
    change(data)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def duplicate_id(data):
    data["questions"][3]["id"] = "order"


BREAKS = {      # kind: (change to the lab2 quiz, fragments the one-line error must hold)
    "unknown type": (lambda data: data["questions"][2].update(type="choice"),
                     ["'methods'", "'type'", "single"]),
    "answer not a choice": (lambda data: data["questions"][2].update(answer="e"),
                            ["'methods'", "'answer'", "'e'"]),
    "duplicate id": (duplicate_id, ["'order'", "(#4)", "'id'", "#2"]),
    "wrong count": (lambda data: data["questions"].pop(), ["'questions'", "exactly 5", "has 4"]),
    "missing field": (lambda data: data["questions"][0].pop("prompt"), ["'table-size'", "'prompt'", "missing"]),
    "unknown field": (lambda data: data["questions"][4].update(hint="x"), ["'tied'", "'hint'", "unknown field"]),
    "half keyed": (lambda data: data["questions"][1].pop("answer"), ["'order'", "'answer'", "missing"]),
    "answer of the wrong type": (lambda data: data["questions"][0].update(answer={"x": 1}),
                                 ["'table-size'", "'answer'", "expected a number"]),
    "bad hard question": (lambda data: data["hard_questions"][0].pop("reveal"),
                          ["hard question #1", "'reveal'"]),
}


@pytest.mark.parametrize("kind", BREAKS)
def test_broken_quiz_is_one_clear_error_and_exit_2(kind, tmp_path, capsys):
    change, expected = BREAKS[kind]
    code, out = run_cli(capsys, break_quiz(tmp_path, change))
    assert code == 2
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out
    assert out.startswith("error:") and "broken.yaml" in out
    for fragment in expected:
        assert fragment in out, (fragment, out)


def test_bad_yaml_is_one_clear_error(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("title: [unclosed\nquestions: {}\n")
    code, out = run_cli(capsys, path)
    assert code == 2 and len(out.strip().splitlines()) == 1
    assert "bad.yaml: not valid YAML" in out and "line" in out


def test_unknown_lab_and_missing_file_exit_2(capsys):
    assert run_cli(capsys, "lab99")[0] == 2
    code, out = run_cli(capsys, "nowhere.yaml")
    assert code == 2 and "no quiz file nowhere.yaml" in out


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


def test_answers_files_are_checks_not_attempts(tmp_path, capsys, state):
    """An instructor checking a key with --answers leaves the learner's record alone."""
    for _ in range(3):
        code, out = run_cli(capsys, "lab2", "--answers", answers_file(tmp_path, RIGHT))
        out = " ".join(out.replace("│", " ").split())
        assert code == 0 and "not recorded as an attempt" in out and "lesson complete" not in out
    assert quiz_status("lab2") is None and not state.exists()


def test_attempts_keep_the_best():
    three, one = (grade(load_quiz(LAB2_QUIZ), answers, "lab2") for answers in (
        {"methods": "d", "tied": "c", "order": ["a", "b", "e"]}, {"methods": "d"}))
    record_attempt(three)
    record_attempt(one)
    status = quiz_status("lab2")
    assert (status.score, status.max, status.passed, status.attempts) == (3, 5, True, 2)


def test_lesson_completion_is_the_same_in_the_quiz_and_the_lab_report(capsys):
    """A passed lesson test with the lab not passed is not a complete lesson, on either screen."""
    from rich.console import Console

    from grader import report
    from grader.quiz import terminal as quiz_tui
    from grader.results import LabResults

    quiz = load_quiz(LAB2_QUIZ)
    result = grade(quiz, RIGHT, "lab2")
    record_attempt(result)
    lab = LabResults(lab="lab2", title="Lab 2", device="cpu", sandbox="process", submission="x",
                     execution_time=1.0, checks=[], done_when=[], missing_files=[], selected=[])
    console = Console(width=200, force_terminal=False)

    def screens():
        quiz_tui.show_result(quiz, result, console, lesson=lesson_status("lab2"))
        console.print(report._lesson(lab, lesson_status("lab2")))
        return capsys.readouterr().out

    out = screens()
    assert out.count("lesson not complete yet: the lab (python grade.py lab2) must pass") == 2, out
    record_lab("lab2", True)
    out = screens()
    assert out.count("lesson complete") == 2 and "not complete" not in out, out
    record_lab("lab2", False)
    assert not lesson_status("lab2").complete and lesson_status("lab2", lab_passed=True).complete


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


# --------------------------------------------------------------------------- the terminal quiz

def spawn_quiz(course):
    return pexpect.spawn(sys.executable, ["grade.py", "quiz", "lab2"], cwd=str(course), encoding="utf-8",
                         dimensions=(50, 160), timeout=10)


def test_terminal_quiz_with_bad_input_feedback_review_and_reveal(fresh_course):
    child = spawn_quiz(fresh_course)
    child.expect("Question 1 of 5")
    child.sendline("lots")
    child.expect("is not a number: type digits")
    child.sendline("38.6")
    child.expect("Right")
    child.expect("Question 2 of 5")
    child.sendline("a q")
    child.expect("'q' is not a choice")
    child.sendline("a, b e")
    child.expect("Question 3 of 5")
    child.sendline("b")
    child.expect(r"Not quite.*The answer: d\) ALiBi")
    child.sendline("m − n")
    child.expect("Question 5 of 5")
    child.sendline("C")
    child.expect("Review")
    child.expect(r"the answer: d\) ALiBi")
    child.expect("PASS")
    child.expect("4 of 5 right")
    child.expect("Hard question 1 of 3")
    child.expect("Rescaling RoPE frequencies")
    child.sendline("")
    child.expect("Try first")
    child.sendline("it never trained on long dependencies")
    child.expect("Reveal")
    child.expect("training signal at length")
    child.expect("Hard question 2 of 3")
    child.sendintr()                                            # Ctrl-C, even mid-drawing
    child.expect("Hard questions skipped")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    status = json.loads((fresh_course / ".grade" / "quiz-lab2.json").read_text())
    assert status["best"]["score"] == 4 and status["attempts"] == 1
    assert not (fresh_course / ".grade" / "quiz-lab2-answers.yaml").exists()


def test_terminal_quiz_ctrl_c_keeps_answers_and_continues(fresh_course):
    child = spawn_quiz(fresh_course)
    child.expect("Question 1 of 5")
    child.sendline("38.6")
    child.expect("Question 2 of 5")
    child.sendline("a b e")
    child.expect("Question 3 of 5")
    child.sendintr()                                            # Ctrl-C, even mid-drawing
    child.expect("with 2 of 5 answered")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1 and "Traceback" not in child.before
    saved = fresh_course / ".grade" / "quiz-lab2-answers.yaml"
    assert yaml.safe_load(saved.read_text()) == {"table-size": 38.6, "order": ["a", "b", "e"]}

    child = spawn_quiz(fresh_course)                            # again: it continues at question 3
    child.expect("Continuing: 2 of 5 answered")
    child.expect(r"Question (\d) of 5")
    assert child.match.group(1) == "3"
    child.sendline("d")
    child.expect("Question 4 of 5")
    child.sendeof()                                             # end of input
    child.expect("with 3 of 5 answered")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1 and "Traceback" not in child.before
    assert yaml.safe_load(saved.read_text())["methods"] == "d"
    assert not (fresh_course / ".grade" / "quiz-lab2.json").exists()


def test_quiz_path_never_imports_torch(tmp_path, course):
    answers = answers_file(tmp_path, RIGHT)
    script = ("import sys; import grader.quiz.model, grader.quiz.terminal, grader.cli\n"
              "assert 'torch' not in sys.modules, 'imported torch'\n"
              f"code = grader.cli.main(['quiz', 'lab2', '--answers', {str(answers)!r}])\n"
              "assert 'torch' not in sys.modules, 'grading a quiz imported torch'\n"
              "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script], cwd=course, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
