"""A class's lesson-test answers into a gradebook (grader/quiz/classroom.py): what spreadsheets and
forms really export (encodings, separators, very long cells, duplicates, unreadable cells) grades
every answer it can, and the gradebook is inert in a spreadsheet."""
import csv

import pytest

from grader.quiz.progress import quiz_status

from conftest import run_cli

pytestmark = pytest.mark.usefixtures("state")

HEADER = ["student", "timestamp", "table-size", "order", "methods", "rope-score", "tied"]


def grade_file(tmp_path, capsys, data):
    responses, gradebook = tmp_path / "responses.csv", tmp_path / "out" / "quiz.csv"
    responses.write_bytes(data)
    code, out = run_cli(capsys, "lab2", "--class", responses, "--out", gradebook)
    with open(gradebook, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    counted = {row[0]: dict(zip(rows[0], row)) for row in rows[1:] if not row[4].startswith("duplicate")}
    return code, out, counted, rows


def test_a_spreadsheet_export_in_utf16_grades_every_readable_answer(tmp_path, capsys):
    """UTF-16 with tabs (a spreadsheet's "Unicode text"), a 150,000-character cell, a Latin-1
    name, a duplicate student and one unreadable cell."""
    rows = [HEADER,
            ["ada", "2026-11-30 10:00:00", "38.6M", "a, b and e", "ALiBi", "m − n", "c"],
            ["bob", "2026-11-30 10:05:00", "38,597,376", "a b e", "d", "x" * 150_000, "c"],
            ["chloé", "2026-11-30 10:06:00", "lots", "A,B,E", "d", "how many tokens separate them", "c"],
            ["ada", "2026-11-30 09:00:00", "1", "c", "a", "m + n", "a"]]      # earlier: does not count
    text = "\r\n".join("\t".join(row) for row in rows) + "\r\n"
    code, out, book, rows = grade_file(tmp_path, capsys, text.encode("utf-16"))
    assert code == 0
    assert (book["ada"]["score"], book["ada"]["status"]) == ("5", "graded")
    assert "2 rows for this student (2, 5): this one counts, the latest by timestamp" in book["ada"]["notes"]
    assert book["bob"]["score"] == "4" and book["bob"]["rope-score"] == "0"         # the long cell: read, wrong
    assert book["chloé"]["score"] == "4" and book["chloé"]["table-size"] == "0"    # the bad cell costs one answer
    assert book["chloé"]["notes"].startswith("table-size: not read, counted wrong ('lots' is not a number")
    assert rows[4][:2] == ["ada", ""] and rows[4][4] == "duplicate: row 2 counts (the latest by timestamp)"
    assert "1 duplicate rows not counted, 1 cells not read" in " ".join(out.split())
    assert quiz_status("lab2") is None                                               # records no attempt


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "cp1252", "latin-1", "utf-16", "utf-16-le",
                                      "utf-16-be"])
def test_the_common_encodings_are_read(tmp_path, capsys, encoding):
    text = ",".join(HEADER) + "\n" + "José Müller,1,38.6,a b e,d,m-n,c\n"
    code, _, book, _ = grade_file(tmp_path, capsys, text.encode(encoding))
    assert code == 0 and book["José Müller"]["score"] == "5"


def test_semicolons_and_a_student_listed_twice_without_timestamps(tmp_path, capsys):
    text = "student;table-size;order;methods;rope-score;tied\nada;1;c;a;m+n;a\nAda;38.6;a b e;d;m-n;c\n"
    code, _, book, rows = grade_file(tmp_path, capsys, text.encode())
    assert code == 0 and book["Ada"]["score"] == "5" and "this one counts, the last" in book["Ada"]["notes"]
    assert rows[1][4] == "duplicate: row 3 counts (the last)"


def test_bad_rows_are_flagged_and_no_cell_is_a_formula(tmp_path, capsys):
    text = ("student,table-size,order,methods,rope-score,tied\n"
            '=HYPERLINK("http://x"),38.6,a b e,d,m-n,c\n'
            "+1,1,a,z,m-n,c\n"
            ",38.6,a,d,m-n,c\n"
            "\n"
            "@bob,-3,a,d,,c\n")
    code, out, _, rows = grade_file(tmp_path, capsys, text.encode())
    assert code == 0
    assert [row[0] for row in rows[1:]] == ["'=HYPERLINK(\"http://x\")", "'+1", "", "'@bob"]
    assert rows[3][4] == "no student name"
    assert "methods: not read, counted wrong ('z' is not a choice" in rows[2][-1]
    cells = [cell for row in rows for cell in row]
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert "3 graded, 1 passed, 1 not graded (see status), 1 cells not read" in " ".join(out.split())


def test_class_csv_missing_a_question_column_exits_2(tmp_path, capsys):
    responses = tmp_path / "responses.csv"
    responses.write_text("student,table-size\nada,38.6\n")
    code, out = run_cli(capsys, "lab2", "--class", responses, "--out", tmp_path / "gradebook.csv")
    assert code == 2 and "no column 'order'" in out


# ------------------------------------------------- one reader for quiz --class, report --quiz, batch --quiz

def class_export(lab2, tmp_path):
    """A batch of 5 (student004's submission rejected) and a UTF-16, semicolon export of its quiz
    whose names are written as people write them: other case, spaces, a zero-width space."""
    from synthetic_class import make_class

    out = tmp_path / "out"
    make_class(lab2, out, 5)
    rows = [HEADER,
            ["Student000\u200b", "2026-11-30 10:00:00", "38.6", "a b e", "d", "m - n", "c"],       # 5: pass
            ["STUDENT001", "2026-11-30 10:00:00", "38.6", "a b", "d", "m - n", "c"],          # 4: pass
            ["student\u200b002", "2026-11-30 10:00:00", "12", "a", "d", "m + n", "c"],          # 2: fail
            ["student003", "2026-11-30 10:00:00", "1", "c", "a", "m + n", "a"],               # 0 ...
            ["student003", "2026-11-30 11:00:00", "38.6M", "a,b,e", "ALiBi", "m−n", "c"],     # ... then 5
            ["someone else", "2026-11-30 10:00:00", "1", "c", "a", "m + n", "a"]]             # not in the batch
    export = tmp_path / "export.csv"
    export.write_bytes(("\r\n".join(";".join(row) for row in rows) + "\r\n").encode("utf-16"))
    return out, export


def page_passes(out):
    import re

    page = (out / "report.html").read_text()
    return int(re.search(r"<b>(\d+)</b>quiz passed", page).group(1))


def test_report_and_quiz_class_read_one_export_alike(lab2, tmp_path, capsys):
    """report --quiz on a UTF-16 semicolon export shows the passes quiz --class finds in it, and
    the same again given the gradebook quiz --class wrote."""
    from grader.learner.cli import main

    out, export = class_export(lab2, tmp_path)
    code, said, book, _ = grade_file(tmp_path, capsys, export.read_bytes())
    assert code == 0 and "5 graded, 3 passed, 1 duplicate" in " ".join(said.split())
    passed_in_class = sum(book[name]["passed"] == "yes" for name in ("Student000", "STUDENT001", "student002",
                                                                       "student003"))
    assert passed_in_class == 3
    assert main(["report", str(out), "--quiz", str(export)]) == 0
    assert page_passes(out) == passed_in_class
    assert main(["report", str(out), "--quiz", str(tmp_path / "out" / "quiz.csv")]) == 0     # the gradebook
    assert page_passes(out) == passed_in_class
    capsys.readouterr()


def test_batch_reads_the_export_and_the_gradebook_alike(lab2, tmp_path, capsys):
    from grader.instructor.export import read_quiz

    out, export = class_export(lab2, tmp_path)
    students = [f"student{i:03d}" for i in range(5)]
    raw = read_quiz(export, lab2, students)
    grade_file(tmp_path, capsys, export.read_bytes())
    graded = read_quiz(tmp_path / "out" / "quiz.csv", lab2, students)
    assert raw == graded
    assert {s: (q.score, q.passed) for s, q in raw.items()} == {
        "student000": (5, True), "student001": (4, True), "student002": (2, False), "student003": (5, True),
        "someone else": (0, False)}


def test_a_file_with_no_student_of_the_class_is_an_error(lab2, tmp_path, capsys):
    from grader.learner.cli import main

    out, _ = class_export(lab2, tmp_path)
    other = tmp_path / "other.csv"
    other.write_text(",".join(HEADER) + "\nzoe,2026-11-30 10:00:00,38.6,a b e,d,m-n,c\n")
    assert main(["report", str(out), "--quiz", str(other)]) == 2
    said = " ".join(capsys.readouterr().out.split())
    assert "none of its 1 students is one of the 5 graded here (its: 'zoe'; here: 'student000'" in said
    empty = tmp_path / "empty.csv"
    empty.write_text(",".join(HEADER) + "\n,2026-11-30 10:00:00,38.6,a b e,d,m-n,c\n")
    code, said = run_cli(capsys, "lab2", "--class", empty, "--out", tmp_path / "gradebook.csv")
    assert code == 2 and "no row of it holds a student's answers (1 rows: no student name)" in said


def test_the_class_reader_needs_no_staff_code():
    """A learner's release has no grader/instructor/: the quiz's class modules still import."""
    import subprocess
    import sys

    script = ("import sys\nclass NoStaff:\n    def find_spec(self, name, path=None, target=None):\n"
              "        if name.startswith('grader.instructor'): raise ModuleNotFoundError(name)\n"
              "sys.meta_path.insert(0, NoStaff())\nimport grader.quiz.classroom, grader.quiz.responses")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
