"""A class's lesson-test answers into a gradebook CSV (`quiz --class`): the rows as the one reader
(grader/quiz/responses.py) reads and grades them, one row per row of the file. Every cell of the
gradebook is inert in a spreadsheet (no formula).
"""
import csv
import os
import unicodedata
from pathlib import Path

from grader.quiz.responses import read_class


def grade_class(quiz, name, responses_path, gradebook_path):
    """Grade a class's responses (or read a gradebook again) into a gradebook CSV; the ClassAnswers."""
    answers = read_class(responses_path, quiz, name, option="--class")
    _write_gradebook(gradebook_path, [question.id for question in quiz.questions], answers)
    return answers


def _write_gradebook(path, ids, answers):
    # TEMPORARY (issue 28): `inert` moves to the ground floor; until then it is imported here, lazily,
    # so that importing this module never needs grader/instructor/ (a learner's release has none).
    from grader.instructor.gradebook import inert

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    with open(part, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["student", "score", "max", "passed", "status", *ids, "notes"])
        for row in answers.rows:
            result = row.result
            marks = {q.id: int(q.correct) for q in result.questions} if result else {}
            score = [result.score, result.max, "yes" if result.passed else "no"] if result else ["", len(ids), ""]
            writer.writerow([inert(_visible(row.student)), *score, inert(row.status),
                             *(marks.get(i, "") for i in ids), inert("; ".join(row.notes))])
    os.replace(part, path)


def _visible(name):
    """A name without its invisible (format) characters, which a spreadsheet cell would show as
    replacement marks: the same student in the names' normal form (responses.student_key)."""
    return "".join(c for c in name if unicodedata.category(c) != "Cf")
