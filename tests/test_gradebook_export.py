"""The LMS gradebook (grade.py gradebook): a class of 12 batch-graded by the real batch with a
stand-in grader (the scores are the test's), then exported to Canvas, Moodle and a plain CSV
with a roster, a late policy, an extension and the class quiz. Every cell is checked."""
import csv
import io
import json
import os
import zipfile
from datetime import datetime, timezone

import pytest
from rich.console import Console

from grader.cli import main
from grader.instructor import batch
from grader.labs import find_lab
from grader.results import BatchSummary, Check, LabResults

POINTS = 10                                     # per student function: lab 2 has 5, so 50 in all
SCORES = {"alice": 50, "bob": 40, "carol": 40, "dave": 45, "grace": 30, "heidi": 35, "ivan": 20,
          "=cmd": 10, "kim": 50, "leo": 25}
DUE = "2026-12-01T23:59:00+01:00"
LATE = ["--due", DUE, "--grace", "15", "--penalty", "10", "--per", "day", "--cap", "50", "--after-cap", "zero"]


def results_for(lab, student):
    """What a grading of `student` returns: POINTS per function, SCORES[student] in all."""
    left, checks = SCORES[student], []
    for function in lab.functions:
        score, left = min(POINTS, left), left - min(POINTS, left)
        checks.append(Check(name=f"{function} works", test=f"hidden/test_x.py::test_{function}", tags=[function],
                            points=POINTS, score=score, status="passed" if score == POINTS else "failed",
                            visibility="hidden"))
    return LabResults(lab=lab.name, title=lab.manifest.title, submission="", device="cpu", sandbox="process",
                      execution_time=0.5, checks=checks, done_when=[]).model_dump(mode="json")


def stand_in(lab, todo, workers, options, done):
    for sub in todo:
        done(sub, "graded", results_for(lab, sub.student))
    return 1


def submit(folder, student, created_at=None):
    (folder / student).mkdir()
    for name in ("positions.py", "invariance.py", "experiments.py"):
        (folder / student / name).write_text("x = 1\n")
    if created_at:                              # Gradescope's export of a submission
        (folder / student / "submission_metadata.json").write_text(json.dumps({"created_at": created_at}))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(batch out folder, work folder, terminal output) for a class of 12 entries."""
    work = tmp_path_factory.mktemp("class")
    subs = work / "subs"
    subs.mkdir()
    on_time = "2026-12-01T20:00:00+01:00"
    for student in ("alice", "dave", "heidi", "ivan", "=cmd", "kim", "leo"):
        submit(subs, student, on_time)
    submit(subs, "carol", "2026-12-03T10:00:00+01:00")          # 1 d 10 h late: 2 days, -20%
    (subs / "dave" / "submission_metadata.json").write_text(json.dumps({"created_at": "2026-12-02T20:00:00+01:00"}))
    submit(subs, "grace", "2026-12-09T10:00:00+01:00")          # 8 days late: past the 50% cap, 0
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:     # the zip's entries: on time in any zone
        for name in ("positions.py", "invariance.py", "experiments.py"):
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 11, 28, 12, 0, 0)), "x = 1\n")
    (subs / "erin.zip").write_bytes(b"not a zip")                # rejected
    (subs / "frank").mkdir()                                    # empty
    (subs / "README.txt").write_text("the class folder's notes")  # not a student
    leo_time = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc).timestamp()
    for name in os.listdir(subs / "leo"):                       # leo: only the files' times, on time
        os.utime(subs / "leo" / name, (leo_time, leo_time))
    (subs / "leo" / "submission_metadata.json").unlink()
    out = work / "out"
    terminal = io.StringIO()
    summary = batch.grade_class(find_lab("lab2"), subs, out, Console(file=terminal, width=200), backend=stand_in,
                                quiz=write_csv(work / "quiz.csv", QUIZ))
    return out, work, summary, terminal.getvalue()


ROSTER = [["student", "name", "id", "sis_user_id", "sis_login_id", "email", "section", "extension"],
          ["alice", "Liddell, Alice", "101", "S101", "alice", "alice@uni.edu", "A", ""],
          ["bob", "Builder, Bob", "102", "S102", "bob", "bob@uni.edu", "A", ""],
          ["carol", "Danvers, Carol", "103", "S103", "carol", "carol@uni.edu", "B", ""],
          ["dave", "Grohl, Dave", "104", "S104", "dave", "dave@uni.edu", "B", "48"],
          ["erin", "Brockovich, Erin", "105", "S105", "erin", "erin@uni.edu", "A", ""],
          ["frank", "Zappa, Frank", "106", "S106", "frank", "frank@uni.edu", "A", ""],
          ["grace", "Hopper, Grace", "107", "S107", "grace", "grace@uni.edu", "B", ""],
          ["heidi", "Klum, Heidi", "108", "S108", "heidi", "heidi@uni.edu", "B", ""],
          ["judy", "Hopps, Judy", "110", "S110", "judy", "judy@uni.edu", "A", ""],
          ["kim", "Kardashian, Kim", "111", "S111", "kim", "kim@uni.edu", "A", ""],
          ["leo", "Tolstoy, Leo", "112", "S112", "leo", "leo@uni.edu", "B", ""]]
QUIZ = [["student", "score", "max", "passed", "status"], ["alice", "5", "5", "yes", "graded"],
        ["bob", "2", "5", "no", "graded"], ["kim", "4", "5", "yes", "graded"], ["judy", "3", "5", "yes", "graded"]]


def write_csv(path, table):
    with open(path, "w", newline="") as file:
        csv.writer(file).writerows(table)
    return path


def export(work, fmt, *args):
    roster = write_csv(work / "roster.csv", ROSTER)
    dest = work / f"{fmt}.csv"
    assert main(["gradebook", str(work / "out"), "--format", fmt, "--roster", str(roster), "--out", str(dest),
                 *LATE, *args]) == 0
    with open(dest, newline="") as file:
        return list(csv.reader(file))


def test_the_batch_lists_stray_files_and_keeps_unscored_rows_out_of_the_statistics(graded):
    out, _, summary, terminal = graded
    assert summary.ignored == ["README.txt"] and "README.txt" not in {r["student"] for r in rows_json(out)}
    assert summary.students == 12 and summary.counted == 10
    assert summary.mean_percent == pytest.approx(100 * sum(SCORES.values()) / 10 / 50)
    assert BatchSummary.model_validate_json((out / "summary.json").read_text()).ignored == ["README.txt"]
    times = {r["student"]: r["time_source"] for r in rows_json(out)}
    assert times == {**dict.fromkeys(SCORES, "gradescope"), "bob": "zip", "leo": "files", "erin": "", "frank": ""}


def test_grades_csv_carries_the_quiz_and_the_lesson(graded):
    out = graded[0]
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    lesson = [(rows[s]["quiz_score"], rows[s]["quiz_max"], rows[s]["lesson_complete"])
              for s in ("alice", "bob", "carol")]
    assert lesson == [("5", "5", "yes"), ("2", "5", "no"), ("", "", "")]
    assert "'=cmd" in rows and "=cmd" not in rows and "judy" not in rows      # inert; no submission, no row


def rows_json(out):
    return json.loads((out / "rows.json").read_text())


def test_canvas_every_cell(graded):
    _, work, _, _ = graded
    write_csv(work / "quiz.csv", QUIZ)
    table = export(work, "canvas", "--column", "Lab 2 (4242)", "--quiz", str(work / "quiz.csv"),
                   "--quiz-column", "Lab 2 quiz (4243)")
    assert table == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 2 (4242)", "Lab 2 quiz (4243)",
         "Lab 2 (4242) lesson complete"],
        ["Points Possible", "", "", "", "", "50", "5", "1"],
        ["Liddell, Alice", "101", "S101", "alice", "A", "50", "5", "1"],
        ["Builder, Bob", "102", "S102", "bob", "A", "40", "2", "0"],
        ["Danvers, Carol", "103", "S103", "carol", "B", "30", "", ""],      # 2 days late: -20% of 50
        ["Grohl, Dave", "104", "S104", "dave", "B", "45", "", ""],          # late, but a 48 h extension
        ["Brockovich, Erin", "105", "S105", "erin", "A", "0", "", ""],      # rejected zip
        ["Zappa, Frank", "106", "S106", "frank", "A", "0", "", ""],         # empty
        ["Hopper, Grace", "107", "S107", "grace", "B", "0", "", ""],        # past the cap: 0
        ["Klum, Heidi", "108", "S108", "heidi", "B", "35", "", ""],
        ["Hopps, Judy", "110", "S110", "judy", "A", "0", "3", ""],          # missing: zero by default
        ["Kardashian, Kim", "111", "S111", "kim", "A", "50", "4", "1"],
        ["Tolstoy, Leo", "112", "S112", "leo", "B", "25", "", ""],
        ["'=cmd", "", "", "", "", "10", "", ""],                            # not on the roster: kept, inert
        ["ivan", "", "", "", "", "20", "", ""],
    ]


def test_moodle_every_cell_in_percent_with_missing_blank(graded):
    _, work, _, _ = graded
    table = export(work, "moodle", "--scale", "percent", "--missing", "blank", "--column", "Lab 2")
    assert table == [
        ["ID number", "Email address", "Lab 2", "Feedback"],
        ["S101", "alice@uni.edu", "100", ""],
        ["S102", "bob@uni.edu", "80", ""],
        ["S103", "carol@uni.edu", "60", "1 d 10.0 h late: -20%"],
        ["S104", "dave@uni.edu", "90", ""],
        ["S105", "erin@uni.edu", "0", "rejected: erin.zip is not a readable zip (File is not a zip file)"],
        ["S106", "frank@uni.edu", "0", "empty: none of positions.py, invariance.py, experiments.py found "
                                       "(expected at the top of the submission, or in one folder inside it)"],
        ["S107", "grace@uni.edu", "0", "7 d 10.0 h late: score 0 past the cap"],
        ["S108", "heidi@uni.edu", "70", ""],
        ["S110", "judy@uni.edu", "", "no submission"],
        ["S111", "kim@uni.edu", "100", ""],
        ["S112", "leo@uni.edu", "50", ""],
        ["", "", "20", "not on the roster"],
        ["", "", "40", "not on the roster"],
    ]


def test_plain_csv_shows_raw_lateness_penalty_final_and_the_lesson(graded):
    _, work, _, _ = graded
    write_csv(work / "quiz.csv", QUIZ)
    table = export(work, "csv", "--quiz", str(work / "quiz.csv"))
    header, rows = table[0], {row[0]: dict(zip(table[0], row)) for row in table[1:]}
    assert header[:6] == ["student", "id", "sis_user_id", "email", "section", "status"]
    carol = rows["carol"]
    assert (carol["raw_score"], carol["late_by_hours"], carol["penalty_percent"], carol["final_score"],
            carol["time_source"], carol["submitted_at"]) == ("40", "34.02", "20", "30", "gradescope",
                                                             "2026-12-03T10:00:00+01:00")
    assert rows["alice"]["lesson_complete"] == "yes" and rows["bob"]["lesson_complete"] == "no"
    assert rows["judy"]["lesson_complete"] == "" and rows["judy"]["status"] == "missing"
    assert rows["erin"]["raw_score"] == "" and rows["erin"]["status"] == "rejected"
    assert rows["ivan"]["note"] == "not on the roster"


def test_a_timestamps_file_overrides_file_times_but_not_gradescope(graded):
    _, work, _, _ = graded
    stamps = write_csv(work / "stamps.csv", [["student", "submitted_at"], ["leo", "2026-12-04T00:30:00+01:00"],
                                             ["alice", "2026-12-30T00:00:00+01:00"]])
    table = export(work, "csv", "--timestamps", str(stamps))
    rows = {row[0]: dict(zip(table[0], row)) for row in table[1:]}
    assert (rows["leo"]["time_source"], rows["leo"]["penalty_percent"], rows["leo"]["final_score"]) == \
        ("timestamps", "30", "10")
    assert (rows["alice"]["time_source"], rows["alice"]["final_score"]) == ("gradescope", "50")


def test_a_deadline_in_lab_yaml_applies_without_options(graded, tmp_path):
    out, work, _, _ = graded
    lab = find_lab("lab2")
    manifest = (lab.folder / "lab.yaml").read_text()
    copy = tmp_path / "lab2"
    copy.mkdir()
    for name in ("stubs",):
        os.symlink(lab.folder / name, copy / name)
    (copy / "lab.yaml").write_text(manifest.replace("../../../", f"{lab.folder.parent.parent.parent}/")
                                   + f"deadline: {{due: '{DUE}', penalty: 5, per: day}}\n")
    dest = tmp_path / "g.csv"
    assert main(["gradebook", str(out), "--lab", str(copy), "--out", str(dest)]) == 0
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(dest.read_text()))}
    assert (rows["carol"]["penalty_percent"], rows["carol"]["final_score"]) == ("10", "35")
    assert (rows["grace"]["penalty_percent"], rows["grace"]["final_score"]) == ("40", "10")


def test_canvas_and_moodle_need_a_roster(graded, capsys):
    out, work, _, _ = graded
    assert main(["gradebook", str(out), "--format", "canvas", "--out", str(work / "x.csv")]) == 2
    assert "give --roster FILE" in capsys.readouterr().out
