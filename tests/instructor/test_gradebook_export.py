"""The LMS gradebook (grade.py gradebook): a class of 12 batch-graded by the real batch with a
stand-in grader (the scores are the test's) and the instructor's timestamps file, then exported
to Canvas, Moodle and a plain CSV with a roster, a late policy, an extension and the class quiz.
Every cell is checked, and each LMS file by an independent checker of its importer's rules."""
import csv
import io
import json
import os
import zipfile

import pytest
from lms_checkers import Misread, check_blackboard, check_canvas, check_moodle
from rich.console import Console

from grader.core.results import Check, LabResults
from grader.instructor import batch
from grader.instructor.records import BatchSummary
from grader.learner.cli import main
from grader.readers.manifest import find_lab

POINTS = 10                                     # per student function: lab 2 has 5, so 50 in all
SCORES = {"alice": 50, "bob": 40, "carol": 40, "dave": 45, "grace": 30, "heidi": 35, "ivan": 20,
          "=cmd": 10, "kim": 50, "leo": 25}
DUE = "2026-12-01T23:59:00+01:00"
LATE = ["--due", DUE, "--grace", "15", "--penalty", "10", "--per", "day", "--cap", "50", "--after-cap", "zero"]
ON_TIME = "2026-12-01T20:00:00+01:00"
STAMPS = [["student", "submitted_at"], *([s, ON_TIME] for s in ("alice", "heidi", "ivan", "=cmd", "kim")),
          ["carol", "2026-12-03T10:00:00+01:00"],           # 1 d 10 h late: 2 days, -20%
          ["dave", "2026-12-02T20:00:00+01:00"],            # late, but a 48 h extension
          ["grace", "2026-12-09T10:00:00+01:00"],           # 8 days late: past the 50% cap, 0
          ["leo", "2026-12-04T00:30:00+01:00"]]             # 3 days late, whatever leo's folder claims
BACKDATED = json.dumps({"created_at": "2026-11-01T00:00:00+01:00"})   # a student's own "Gradescope" file


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


def submit(folder, student):
    (folder / student).mkdir()
    for name in ("positions.py", "invariance.py", "experiments.py"):
        (folder / student / name).write_text("x = 1\n")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(batch out folder, work folder, summary, terminal output) for a class of 12 entries."""
    work = tmp_path_factory.mktemp("class")
    subs = work / "subs"
    subs.mkdir()
    for student in ("alice", "carol", "dave", "grace", "heidi", "ivan", "=cmd", "kim", "leo"):
        submit(subs, student)
    (subs / "leo" / "submission_metadata.json").write_text(BACKDATED)
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:     # bob: no timestamp, an old zip date
        for name in ("positions.py", "invariance.py", "experiments.py"):
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 11, 28, 12, 0, 0)), "x = 1\n")
    (subs / "erin.zip").write_bytes(b"not a zip")                # rejected
    (subs / "frank").mkdir()                                    # empty
    (subs / "README.txt").write_text("the class folder's notes")  # not a student
    out = work / "out"
    terminal = io.StringIO()
    asked = batch.ClassRequest(quiz=write_csv(work / "quiz.csv", QUIZ),
                               timing=batch.TimeFiles(timestamps=write_csv(work / "stamps.csv", STAMPS)))
    summary = batch.grade_class(find_lab("lab2"), subs, out, Console(file=terminal, width=200), asked, stand_in)
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
CANVAS_COLUMNS = ["--column", "Lab 2 (4242)", "--quiz-column", "Lab 2 quiz (4243)", "--lesson-column",
                  "Lab 2 lesson complete (4244)"]


def write_csv(path, table):
    with open(path, "w", newline="") as file:
        csv.writer(file).writerows(table)
    return path


def read_csv(path):
    with open(path, newline="") as file:
        return list(csv.reader(file))


def export(work, fmt, *args):
    roster = write_csv(work / "roster.csv", ROSTER)
    dest = work / f"{fmt}.csv"
    assert main(["gradebook", str(work / "out"), "--format", fmt, "--roster", str(roster), "--out", str(dest),
                 *LATE, *args]) == 0
    return read_csv(dest)


def rows_json(out):
    return {r["student"]: r for r in json.loads((out / "rows.json").read_text())}


def test_the_batch_lists_stray_files_and_keeps_unscored_rows_out_of_the_statistics(graded):
    out, _, summary, terminal = graded
    assert summary.ignored == ["README.txt"] and "README.txt" not in rows_json(out)
    assert summary.students == 12 and summary.counted == 10
    assert summary.mean_percent == pytest.approx(100 * sum(SCORES.values()) / 10 / 50)
    assert BatchSummary.model_validate_json((out / "summary.json").read_text()).ignored == ["README.txt"]
    times = {s: (r["time_source"], r["submitted_at"]) for s, r in rows_json(out).items()}
    assert times["leo"] == ("timestamps", "2026-12-04T00:30:00+01:00")      # not the folder's own file
    assert times["bob"] == ("unknown", None) and times["frank"] == ("unknown", None)    # not the zip's dates


def test_grades_csv_carries_the_quiz_and_the_lesson(graded):
    out = graded[0]
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    lesson = [(rows[s]["quiz_score"], rows[s]["quiz_max"], rows[s]["lesson_complete"])
              for s in ("alice", "bob", "carol")]
    assert lesson == [("5", "5", "yes"), ("2", "5", "no"), ("", "", "")]
    assert "'=cmd" in rows and "=cmd" not in rows and "judy" not in rows      # inert; no submission, no row


def test_canvas_every_cell(graded):
    _, work, _, _ = graded
    table = export(work, "canvas", *CANVAS_COLUMNS, "--quiz", str(work / "quiz.csv"), "--assume-on-time")
    assert table == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 2 (4242)", "Lab 2 quiz (4243)",
         "Lab 2 lesson complete (4244)"],
        ["Points Possible", "", "", "", "", "50", "5", "1"],
        ["Liddell, Alice", "101", "S101", "alice", "A", "50", "5", "1"],
        ["Builder, Bob", "102", "S102", "bob", "A", "40", "2", "0"],        # time unknown: assumed on time
        ["Danvers, Carol", "103", "S103", "carol", "B", "30", "", ""],      # 2 days late: -20% of 50
        ["Grohl, Dave", "104", "S104", "dave", "B", "45", "", ""],          # late, but a 48 h extension
        ["Brockovich, Erin", "105", "S105", "erin", "A", "0", "", ""],      # rejected zip
        ["Zappa, Frank", "106", "S106", "frank", "A", "0", "", ""],         # empty
        ["Hopper, Grace", "107", "S107", "grace", "B", "0", "", ""],        # past the cap: 0
        ["Klum, Heidi", "108", "S108", "heidi", "B", "35", "", ""],
        ["Hopps, Judy", "110", "S110", "judy", "A", "0", "3", ""],          # missing: zero by default
        ["Kardashian, Kim", "111", "S111", "kim", "A", "50", "4", "1"],
        ["Tolstoy, Leo", "112", "S112", "leo", "B", "10", "", ""],          # 3 days late: -30% of 50
    ]
    check_canvas(work / "canvas.csv", {"4242", "4243", "4244"}, ROSTER)
    unmatched = {row[0]: row for row in read_csv(work / "canvas.unmatched.csv")[1:]}
    assert set(unmatched) == {"'=cmd", "ivan"} and unmatched["ivan"][2] == "20"


def test_blackboard_every_cell(graded):
    _, work, _, _ = graded
    table = export(work, "blackboard", "--column", "Lab 2 |7001", "--quiz-column", "Lab 2 quiz |7002",
                   "--quiz", str(work / "quiz.csv"), "--assume-on-time")
    assert table == [
        ["Username", "Lab 2 [Total Pts: 50 Score] |7001", "Lab 2 quiz [Total Pts: 5 Score] |7002"],
        ["alice", "50", "5"], ["bob", "40", "2"], ["carol", "30", ""], ["dave", "45", ""], ["erin", "0", ""],
        ["frank", "0", ""], ["grace", "0", ""], ["heidi", "35", ""], ["judy", "0", "3"], ["kim", "50", "4"],
        ["leo", "10", ""]]
    graded_as = check_blackboard(work / "blackboard.csv", {"7001", "7002"}, ROSTER)
    assert graded_as["carol"] == {"7001": "30", "7002": ""} and graded_as["judy"] == {"7001": "0", "7002": "3"}
    unmatched = {row[0] for row in read_csv(work / "blackboard.unmatched.csv")[1:]}
    assert unmatched == {"'=cmd", "ivan"}


def test_the_blackboard_checker_refuses_what_blackboard_would_misread(tmp_path):
    """The checker's own positive and negative controls: a column without its id, a row without a
    Username, a user not enrolled, a value outside quotes."""
    roster = [["student", "sis_login_id"], ["ann", "ann1"]]
    good = '"Username","Lab [Total Pts: 10 Score] |5"\r\n"ann1","7"\r\n'
    for text, said in [(good, None), (good.replace(" |5", ""), "new text column"),
                       (good.replace('"ann1"', '""'), "without a Username"),
                       (good.replace("ann1", "bob"), "not enrolled"), (good.replace('"7"', "7"), "outside quotes")]:
        (tmp_path / "b.csv").write_text(text, newline="")
        if said is None:
            assert check_blackboard(tmp_path / "b.csv", {"5"}, roster) == {"ann": {"5": "7"}}
        else:
            with pytest.raises(Misread, match=said):
                check_blackboard(tmp_path / "b.csv", {"5"}, roster)


def test_blackboard_refuses_a_column_without_its_id_and_a_student_without_a_username(graded, capsys, tmp_path):
    out, work, _, _ = graded
    roster = write_csv(tmp_path / "roster.csv", [*ROSTER[:2], [*ROSTER[2][:4], "", *ROSTER[2][5:]]])
    for column, said in [("Lab 2", "give --column 'NAME |ID'"), ("Lab 2 |7001", "no sis_login_id, the Blackboard "
                                                                                 "Username")]:
        assert main(["gradebook", str(out), "--format", "blackboard", "--roster", str(roster), "--out",
                     str(tmp_path / "b.csv"), "--column", column]) == 2
        assert said in " ".join(capsys.readouterr().out.split())


def test_moodle_every_cell_in_percent_with_missing_blank(graded):
    _, work, _, _ = graded
    table = export(work, "moodle", "--scale", "percent", "--missing", "blank", "--column", "Lab 2")
    unknown = "time unknown: no mark until it is known (the instructor gives --timestamps, or --assume-on-time " \
              "or --assume-late)"
    assert table == [
        ["ID number", "Email address", "Lab 2", "Feedback"],
        ["S101", "alice@uni.edu", "100", ""],
        ["S102", "bob@uni.edu", "", unknown],                           # neither penalty nor credit
        ["S103", "carol@uni.edu", "60", "1 d 10.0 h late: -20%"],
        ["S104", "dave@uni.edu", "90", ""],
        ["S105", "erin@uni.edu", "0", "rejected: erin.zip is not a readable zip (File is not a zip file)"],
        ["S106", "frank@uni.edu", "0", "empty: none of positions.py, invariance.py, experiments.py found "
                                       "(in the submission, its folders or the zips inside it)"],
        ["S107", "grace@uni.edu", "0", "7 d 10.0 h late: score 0 past the cap"],
        ["S108", "heidi@uni.edu", "70", ""],
        ["S110", "judy@uni.edu", "", "no submission"],
        ["S111", "kim@uni.edu", "100", ""],
        ["S112", "leo@uni.edu", "20", "2 d 0.5 h late: -30%"],
    ]
    check_moodle(work / "moodle.csv", "ID number", ROSTER, "sis_user_id")


def test_plain_csv_shows_raw_lateness_penalty_final_and_the_lesson(graded):
    _, work, _, _ = graded
    table = export(work, "csv", "--quiz", str(work / "quiz.csv"))
    header, rows = table[0], {row[0]: dict(zip(table[0], row)) for row in table[1:]}
    assert header[:6] == ["student", "id", "sis_user_id", "email", "section", "status"]
    carol = rows["carol"]
    assert (carol["raw_score"], carol["late_by_hours"], carol["penalty_percent"], carol["final_score"],
            carol["time_source"], carol["submitted_at"]) == ("40", "34.02", "20", "30", "timestamps",
                                                             "2026-12-03T10:00:00+01:00")
    assert (rows["bob"]["time_source"], rows["bob"]["final_score"], rows["bob"]["raw_score"]) == ("unknown", "", "40")
    assert rows["alice"]["lesson_complete"] == "yes" and rows["bob"]["lesson_complete"] == "no"
    assert rows["judy"]["lesson_complete"] == "" and rows["judy"]["status"] == "missing"
    assert rows["erin"]["raw_score"] == "" and rows["erin"]["status"] == "rejected"
    assert rows["ivan"]["note"] == "not on the roster"


def test_a_timestamps_file_is_then_the_only_source(graded):
    _, work, _, _ = graded
    stamps = write_csv(work / "stamps2.csv", [["student", "submitted_at"], ["bob", "2026-12-04T00:30:00+01:00"],
                                              ["alice", "2026-12-30T00:00:00+01:00"]])
    table = export(work, "csv", "--timestamps", str(stamps))
    rows = {row[0]: dict(zip(table[0], row)) for row in table[1:]}
    assert (rows["bob"]["time_source"], rows["bob"]["penalty_percent"], rows["bob"]["final_score"]) == \
        ("timestamps", "30", "25")
    assert (rows["alice"]["time_source"], rows["alice"]["final_score"]) == ("timestamps", "0")     # 29 days: 0
    assert (rows["carol"]["time_source"], rows["carol"]["final_score"]) == ("unknown", "")      # not in it


def test_assume_late_charges_the_cap(graded):
    _, work, _, _ = graded
    table = export(work, "csv", "--assume-late")
    rows = {row[0]: dict(zip(table[0], row)) for row in table[1:]}
    assert (rows["bob"]["penalty_percent"], rows["bob"]["final_score"]) == ("50", "15")
    assert rows["bob"]["note"] == "time unknown, assumed late: -50% (the late policy's cap)"


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


@pytest.mark.parametrize("args, said", [
    ([], "give --roster FILE"),
    (["--roster", "{r}"], "--format canvas: give --column 'NAME (ID)'"),
    (["--roster", "{r}", "--column", "Lab 2 (4242) lesson complete"], "give --column 'NAME (ID)'"),
    (["--roster", "{r}", "--column", "Lab 2 (4242)", "--quiz", "{q}", "--quiz-column", "Lab 2 quiz"],
     "--quiz-column 'Lab 2 quiz': expected 'NAME (ID)'"),
    (["--roster", "{r}", "--column", "Final Score (4242)"], "Canvas reads a column so named as its own"),
    (["--roster", "{r}", "--column", "Lab 2 (\u0664\u0662)"], "give --column 'NAME (ID)'"),   # not Canvas's 0-9
])
def test_canvas_refuses_a_file_it_would_misread(graded, capsys, args, said):
    out, work, _, _ = graded
    roster = write_csv(work / "roster.csv", ROSTER)
    argv = [a.format(r=roster, q=work / "quiz.csv") for a in args]
    assert main(["gradebook", str(out), "--format", "canvas", "--out", str(work / "x.csv"), *argv]) == 2
    assert said in " ".join(capsys.readouterr().out.split())


def test_moodle_feedback_is_text_in_the_html_moodle_shows_it_as():
    from grader.instructor.lms import FORMATS
    from grader.instructor.lms.common import Line
    from grader.instructor.records import BatchRow
    from grader.instructor.roster import RosterEntry

    row = BatchRow(student="a", status="rejected", score=0, detail="unsafe path in the zip: '<img src=x>'")
    line = Line("a", RosterEntry(student="a", sis_user_id="S1", line=2), row, final=0.0,
                notes=["rejected: " + row.detail, "=1+1"])
    feedback = FORMATS["moodle"].table([line], 50, "points", {"lab": "Lab"})[1][-1]
    assert feedback == "rejected: unsafe path in the zip: '&lt;img src=x&gt;'; =1+1"     # csv_text makes it inert


@pytest.mark.slow
def test_end_to_end_a_real_grading_through_both_commands(tmp_path):
    """grade.py batch (a real grading of the reference, -k invariance) with the timestamps and the
    roster's extension, then grade.py gradebook for Canvas: the one test here that grades."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    subs = tmp_path / "subs"
    shutil.copytree(root / "reference" / "lab2", subs / "Jose\u0301")
    stamps = write_csv(tmp_path / "stamps.csv", [["student", "submitted_at"], ["JOSÉ", "2026-12-02T23:00:00+01:00"]])
    roster = write_csv(tmp_path / "roster.csv", [["student", "id", "section", "extension"], ["José", "7", "A", "24"]])
    run = subprocess.run([sys.executable, str(root / "grade.py"), "batch", "lab2", str(subs), "--out",
                          str(tmp_path / "out"), "-k", "invariance", "--timestamps", str(stamps),
                          "--roster", str(roster)],
                         capture_output=True, text=True, timeout=600, cwd=root)
    assert run.returncode == 0, run.stdout + run.stderr
    row = json.loads((tmp_path / "out" / "rows.json").read_text())[0]
    assert (row["time_source"], row["submitted_at"]) == ("timestamps", "2026-12-02T23:00:00+01:00")
    dest = tmp_path / "canvas.csv"
    assert main(["gradebook", str(tmp_path / "out"), "--format", "canvas", "--roster", str(roster), "--out", str(dest),
                 "--column", "Lab 2 (9)", "--due", DUE, "--penalty", "10"]) == 0     # 23 h late, 24 h extension
    assert check_canvas(dest, {"9"}, [["student", "id"], ["José", "7"]]) == {"José": {"9": f"{row['score']:g}"}}
