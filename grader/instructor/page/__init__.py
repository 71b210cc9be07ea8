"""The class report page and every learner's feedback, from a batch's output folder.

`python grade.py report OUT` (and the end of every batch) writes
    OUT/report.html                         the class: one self-contained page (no network)
    OUT/students/<student>/feedback.html    what the learner may read of their grade
    OUT/students/<student>/feedback.md      the same in Markdown
"""
import os
from dataclasses import replace
from pathlib import Path

from grader.base.errors import QuizError, UsageError
from grader.base.files import write_atomic
from grader.core.submissions import folder_name, read_submission
from grader.instructor import similarity
from grader.instructor.gradebook import out_of
from grader.instructor.page import classdata, feedback, report
from grader.readers.manifest import Lab, find_lab

QUIZ_RESPONSES = "quiz-responses.csv"       # the class quiz last given, kept in OUT for the commands after


def write_report(out: str | os.PathLike, lab: Lab | None = None, quiz: str | os.PathLike | None = None) -> Path:
    """Write the page and the feedback files; returns the page's path. `quiz`: the class's lesson-test
    responses CSV, kept as OUT/quiz-responses.csv once read (the default), so that a later command
    not given it again (adjust, report, gradebook, a regrade) shows the quiz grades.csv keeps."""
    out = Path(out)
    klass = classdata.load(out)
    lab = lab or find_lab(klass.summary.lab)
    kept = out / QUIZ_RESPONSES
    notes = [_read_quiz(klass, lab, quiz or (kept if kept.is_file() else None))]
    if quiz and klass.questions and Path(quiz).resolve() != kept.resolve():
        write_atomic(kept, Path(quiz).read_bytes())
    found, missing = _similar(lab, klass)
    if missing:
        notes.append(f"Similarity leaves out {missing} submission(s) that could not be read again from where "
                     "they were graded.")
    absent = [path.name for path in lab.given_code if not path.is_file()]
    if absent:
        notes.append(f"Similarity counts as the learners' own the given code not found here: {', '.join(absent)}.")
    write_atomic(out / "report.html", report.render(klass, found, list(filter(None, notes))))
    for student in klass.students:      # a row not graded (empty, rejected): out of the lab's points, as grades.csv
        student = replace(student, row=out_of(student.row, klass.summary.max_score))
        folder = out / classdata.STUDENTS / folder_name(student.name)
        write_atomic(folder / "feedback.html", feedback.html(student, klass.summary.title, list(lab.functions)))
        write_atomic(folder / "feedback.md", feedback.markdown(student, klass.summary.title, list(lab.functions)))
    return out / "report.html"


def _read_quiz(klass, lab, responses):
    """Grade the class quiz into `klass` where there is one (a form's responses or the gradebook of
    grade.py quiz --class, read by the one reader of them); a note when it cannot be."""
    if responses is None:
        return ""
    if not Path(responses).is_file():
        raise UsageError(f"--quiz {responses}: no such file")
    if lab.quiz is None:
        raise UsageError(f"--quiz {responses}: lab {lab.name} has no lesson test")
    from grader.quiz.model import load_quiz

    try:
        quiz = load_quiz(lab.quiz)
    except QuizError as error:
        return f"The lesson test's file is broken, so the class quiz is left out: {error}"
    if not quiz.keyed:
        return f"The lesson test of {lab.name} has no answer key here: the class quiz is left out."
    classdata.read_quiz(klass, quiz, responses, lab.name)
    return ""


def _similar(lab, klass):
    """(a similarity.Similarity, how many submissions could not be read), None if none could be."""
    sources, missing = {}, 0
    for student in klass.students:
        if student.results is None:
            continue
        files, status, _ = read_submission(lab, student.results.submission)
        if status in ("rejected", "empty"):
            missing += 1
            continue
        sources[student.name] = {name: data.decode("utf-8", "replace") for name, data in files.items()}
    if missing and not sources:
        return None, missing
    given = [path.read_text(encoding="utf-8") for path in [*(lab.stubs / file for file in lab.manifest.student_files),
                                                           *lab.given_code] if path.is_file()]
    reference = {file: (lab.reference / file).read_text(encoding="utf-8") for file in lab.manifest.student_files
                 if lab.reference and (lab.reference / file).is_file()}
    return similarity.similarity(sources, lab.functions, given, reference or None), missing


