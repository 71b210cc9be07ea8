"""A class's lesson-test answers into a gradebook CSV (`quiz --class`): the rows as the one reader
(grader/quiz/responses.py) reads and grades them, one row per row of the file. Every cell of the
gradebook is inert in a spreadsheet (no formula).
"""
import unicodedata

from grader.base.files import write_atomic
from grader.base.text import csv_text
from grader.quiz.responses import read_class


def grade_class(quiz, name, responses_path, gradebook_path):
    """Grade a class's responses (or read a gradebook again) into a gradebook CSV; the ClassAnswers."""
    answers = read_class(responses_path, quiz, name, option="--class")
    _write_gradebook(gradebook_path, [question.id for question in quiz.questions], answers)
    return answers


def _write_gradebook(path, ids, answers):
    """The gradebook CSV, written aside and renamed; every cell inert (grader.base.text)."""
    table = [["student", "score", "max", "passed", "status", *ids, "notes"]]
    for row in answers.rows:
        result = row.result
        marks = {q.id: int(q.correct) for q in result.questions} if result else {}
        score = [result.score, result.max, "yes" if result.passed else "no"] if result else ["", len(ids), ""]
        table.append([_visible(row.student), *score, row.status, *(marks.get(i, "") for i in ids),
                      "; ".join(row.notes)])
    write_atomic(path, csv_text(table))


def _visible(name):
    """A name without its invisible (format) characters, which a spreadsheet cell would show as
    replacement marks: the same student in the names' normal form (grader.readers.identity)."""
    return "".join(c for c in name if unicodedata.category(c) != "Cf")
