"""The lesson test's file and screens: a quiz file is checked with one clear error, the terminal
quiz runs in a real pseudo-terminal against a copy of the course (so the real `.grade/` is never
touched), and taking a quiz never imports torch.
"""
import json
import shutil
import subprocess
import sys

import pexpect
import pytest
import yaml

from grader.quiz.model import load_quiz

from conftest import LAB2_QUIZ, RIGHT, answers_file, run_cli

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
    "unit on a choice": (lambda data: data["questions"][2].update(unit="million"),
                         ["'methods'", "'unit'", "only numeric questions have a unit"]),
    "unknown unit": (lambda data: data["questions"][0].update(unit="furlong"), ["'table-size'", "'unit'", "million"]),
    "alias of no choice": (lambda data: data["questions"][2]["aliases"].update(z=["zeta"]),
                           ["'methods'", "'aliases'", "'z' is not a choice key"]),
    "alias on a number": (lambda data: data["questions"][0].update(aliases={"a": ["x"]}),
                          ["'table-size'", "'aliases'", "only single and multiple"]),
    "text key's expression": (lambda data: data["questions"][3]["answer"].update(expression="m +"),
                              ["'rope-score'", "'answer'", "'m +' is not an expression"]),
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


def test_an_answer_given_twice_is_one_clear_error_not_the_last_kept(tmp_path, capsys):
    """YAML keeps the last of two equal keys silently; a learner's first answer would be lost."""
    path = tmp_path / "answers.yaml"
    path.write_text("methods: d\ntied: c\nmethods: c\n")
    code, out = run_cli(capsys, "lab2", "--answers", path)
    assert code == 2 and len(out.strip().splitlines()) == 1 and "Traceback" not in out
    assert "answers.yaml: not valid YAML ('methods' is given twice at line 3, column 1)" in " ".join(out.split())


def test_unknown_lab_and_missing_file_exit_2(capsys):
    assert run_cli(capsys, "lab99")[0] == 2
    code, out = run_cli(capsys, "nowhere.yaml")
    assert code == 2 and "no quiz file nowhere.yaml: it does not exist" in out


def usage_cases(tmp_path):
    """(arguments, what the one-line error must say) for each way a path argument can be wrong."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "dir.yaml").mkdir()
    (tmp_path / "answers.yaml").write_text("methods: d\n")
    (tmp_path / "responses.csv").write_text("student\n")
    (tmp_path / "Quiz.csv").write_text("")
    (tmp_path / "mine.yaml").write_text(LAB2_QUIZ.read_text())
    at = lambda name: str(tmp_path / name)
    return {
        "answers folder": (["lab2", "--answers", at("folder")], "--answers", "that is a folder; expected a file"),
        "class folder": (["lab2", "--class", at("folder"), "--out", at("q.csv")], "--class", "that is a folder"),
        "out folder": (["lab2", "--class", at("responses.csv"), "--out", at("folder")], "--out",
                       "that is a folder; expected the path of a file to write"),
        "json folder": (["lab2", "--answers", at("answers.yaml"), "--json", at("folder")], "--json", "a folder"),
        "missing answers": (["lab2", "--answers", at("none.yaml")], "none.yaml", "no such file"),
        "missing class": (["lab2", "--class", at("none.csv"), "--out", at("q.csv")], "none.csv", "no such file"),
        "answers in another case": (["lab2", "--answers", at("Answers.yaml")], "Answers.yaml: no such file",
                                    "(answers.yaml differs only in case: did you mean that?)"),
        "class in another case": (["lab2", "--class", at("RESPONSES.csv"), "--out", at("q.csv")],
                                  "RESPONSES.csv", "responses.csv differs only in case"),
        "out in another case": (["lab2", "--class", at("responses.csv"), "--out", at("quiz.csv")], "quiz.csv:",
                                "name differs from it only in case (Quiz.csv)"),
        "quiz in another case": ([at("Mine.yaml")], "no quiz file", "mine.yaml differs only in case"),
        "quiz folder": ([at("dir.yaml")], "no quiz file", "it is a folder"),
    }


@pytest.mark.parametrize("case", ["answers folder", "class folder", "out folder", "json folder", "missing answers",
                                  "missing class", "answers in another case", "class in another case",
                                  "out in another case", "quiz in another case", "quiz folder"])
def test_bad_paths_are_one_sentence_and_exit_2(case, tmp_path, capsys):
    argv, *fragments = usage_cases(tmp_path)[case]
    code, out = run_cli(capsys, *argv)
    out = " ".join(out.split())
    assert code == 2 and out.startswith("error:") and "Traceback" not in out and "please report" not in out
    for fragment in fragments:
        assert fragment in out, (fragment, out)
    assert not (tmp_path / "q.csv").exists() and not (tmp_path / "quiz.csv").exists()


# --------------------------------------------------------------------------- the terminal quiz

@pytest.fixture
def fresh_course(course):
    shutil.rmtree(course / ".grade", ignore_errors=True)
    return course


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
    child.sendline("ALiBi or RoPE")                             # a hedge: judged wrong, with the reason
    child.expect(r"Not quite.*It names more than one choice \(c\) RoPE \(rotary\) and d\) ALiBi\)")
    child.expect(r"The answer: d\) ALiBi")
    child.sendline("m − n")
    child.expect("Question 5 of 5")
    child.sendline("C")
    child.expect("Review")
    child.expect("your answer: “ALiBi or RoPE”")
    child.expect(r"the answer: d\) ALiBi")
    child.expect("PASS")
    child.expect("4 of 5 right")
    child.expect("Hard question 1 of 3")
    child.expect("Rescaling RoPE frequencies")
    child.sendline("")                                          # Enter skips it until the end
    child.expect("Skipped: it comes back at the end")
    child.expect("Hard question 2 of 3")
    child.sendline("one frequency wraps around")
    child.expect("Reveal")
    child.expect("hands of a clock")
    child.expect("Hard question 3 of 3")
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
    script = ("import sys; import grader.quiz.model, grader.quiz.terminal, grader.learner.cli\n"
              "assert 'torch' not in sys.modules, 'imported torch'\n"
              f"code = grader.learner.cli.main(['quiz', 'lab2', '--answers', {str(answers)!r}])\n"
              "assert not {'torch', 'sympy'} & set(sys.modules), 'grading a quiz imported torch or sympy'\n"
              "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script], cwd=course, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
