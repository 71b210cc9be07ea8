"""The learner's progress: attempts recorded (the best counts; an answers file is a check, not an
attempt), and one lesson completion shown alike in the quiz and the lab report."""
import pytest

from grader.quiz.grading import grade
from grader.quiz.model import load_quiz
from grader.quiz.progress import lesson_status, quiz_status, record_attempt, record_lab

from conftest import LAB2_QUIZ, RIGHT, answers_file, run_cli

pytestmark = pytest.mark.usefixtures("state")


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

    from grader.core.results import LabResults
    from grader.learner import report
    from grader.quiz import terminal as quiz_tui

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


def test_a_failed_retake_says_the_best_attempt_counts(capsys):
    from rich.console import Console

    from grader.quiz import terminal as quiz_tui

    quiz, console = load_quiz(LAB2_QUIZ), Console(width=300, force_terminal=False)
    first = grade(quiz, RIGHT | {"tied": "a"}, "lab2")
    record_attempt(first)
    quiz_tui.show_result(quiz, first, console, lesson=lesson_status("lab2"))
    assert "best of" not in capsys.readouterr().out                     # a first attempt: nothing to compare
    retake = grade(quiz, {"methods": "d"}, "lab2")
    record_attempt(retake)
    quiz_tui.show_result(quiz, retake, console, lesson=lesson_status("lab2"))
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "FAIL 1 of 5 right" in out and "your best of 2 attempts counts: 4 of 5, passed" in out
