"""A self-taught learner finishes in the handout: a release made with its defaults, in a temp
folder, ships the practice form of the quiz; its own grade.py (run as a learner runs it) takes the
quiz with feedback after each answer, a question skipped with Enter coming back at the end, the
hard questions' reveals after an attempt, and the lesson complete once the lab has passed too."""
import json
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from test_handout import AS_LEARNER

from grader.quiz import progress
from grader.quiz.model import load_quiz

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    out = tmp_path_factory.mktemp("self-taught") / "course"
    run = subprocess.run([sys.executable, str(ROOT / "grade.py"), "release", "lab2", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "(quiz: practice)" in " ".join(run.stdout.split())
    return out


def learner(handout, *args):
    return pexpect.spawn(sys.executable, ["-c", AS_LEARNER, str(handout / "grade.py"), *map(str, args)],
                         cwd=handout, dimensions=(60, 200), encoding="utf-8", timeout=20)


def test_the_handout_ships_the_practice_quiz(handout):
    assert load_quiz(handout / "quizzes" / "lab2.yaml").keyed
    assert "feedback after each answer" in (handout / "README.md").read_text()
    answers = handout / "answers.yaml"
    answers.write_text("table-size: 38.6M\norder: a, b, e\nmethods: d\nrope-score: m - n\ntied: c\n")
    child = learner(handout, "quiz", "lab2", "--answers", answers)     # graded, not refused
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and "5 of 5 right" in " ".join(child.before.split())


def test_a_learner_takes_the_quiz_sees_the_reveals_and_completes_the_lesson(handout, monkeypatch):
    monkeypatch.setattr(progress, "STATE", handout / ".grade")
    progress.record_lab("lab2", True)       # the lab passed: recorded as a full grading of the copy records it
    child = learner(handout, "quiz", "lab2")
    child.expect("Question 1 of 5")
    child.sendline("")                                              # hard for now: skipped
    child.expect("Skipped: it comes back at the end")
    for number, answer in [(2, "a, b and e"), (3, "d) ALiBi"), (4, "their difference — m − n"),
                           (5, "c) weight tying")]:
        child.expect(f"Question {number} of 5")
        child.sendline(answer)
        child.expect("Right")
    child.expect("Back to the 1 question")
    child.expect("Question 1 of 5")
    child.sendline("50257 × 768 = 38,597,376")
    child.expect("Right")
    child.expect("Review")
    child.expect("PASS")
    child.expect("5 of 5 right")
    child.expect("lesson complete")
    child.expect("Hard question 1 of 3")
    child.sendline("")
    child.expect("Skipped: it comes back at the end")
    for attempt, reveal in [("one would alias", "hands of a clock"), ("the heads would not fit", "retraining")]:
        child.sendline(attempt)
        child.expect("Reveal")
        child.expect(reveal)
    child.expect("Hard question 1 of 3")                            # back at the end
    child.sendline("it never saw long dependencies")
    child.expect("training signal at length")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    record = json.loads((handout / ".grade" / "quiz-lab2.json").read_text())
    assert record["best"]["passed"] and record["attempts"] == 1
    assert progress.lesson_status("lab2").complete
