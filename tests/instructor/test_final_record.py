"""One record of a student's final grade (grader/instructor/record.py): the late policy given to
`gradebook`, a roster's extension and the instructor's adjustments (`grade.py adjust`) are decided
once into OUT/final.json, and the class page, each feedback page, grades.csv and the Canvas and
Moodle files all show the same final score, through `report` and a regrade too."""
import csv
import io
import json
import re
from html.parser import HTMLParser

import pytest
from lms_checkers import check_canvas, check_moodle
from rich.console import Console

from grader.core.results import Check, LabResults
from grader.instructor import batch
from grader.learner.cli import main
from grader.readers.manifest import find_lab

SCORES = {"ontime": 45, "late": 40, "extended": 30, "adjusted": 35}     # of 50
DUE = "2026-12-01T23:59:00+01:00"
POLICY = ["--due", DUE, "--penalty", "10", "--per", "day", "--cap", "50"]
STAMPS = [["student", "submitted_at"], ["ontime", "2026-12-01T20:00:00+01:00"],
          ["late", "2026-12-03T10:00:00+01:00"],          # 2 started days late: -20% of 50, 40 -> 30
          ["extended", "2026-12-02T20:00:00+01:00"],      # late, but a 48 h extension: 30
          ["adjusted", "2026-12-01T21:00:00+01:00"]]      # on time, +5 by the instructor: 40
ROSTER = [["student", "id", "sis_user_id", "email", "extension"], ["ontime", "1", "S1", "o@uni.edu", ""],
          ["late", "2", "S2", "l@uni.edu", ""], ["extended", "3", "S3", "e@uni.edu", "48"],
          ["Adjusted", "4", "S4", "a@uni.edu", ""]]
FINAL = {"ontime": 45, "late": 30, "extended": 30, "adjusted": 40}


def stand_in(lab, todo, workers, options, done):
    for sub in todo:
        functions, left, checks = list(lab.functions), SCORES[sub.student], []
        for function in functions:
            score, left = min(10, left), left - min(10, left)
            checks.append(Check(name=f"{function} works", test=f"visible/test_x.py::test_{function}", tags=[function],
                                points=10, score=score, status="passed" if score == 10 else "failed",
                                visibility="visible"))
        done(sub, "graded", LabResults(lab=lab.name, title="Lab 2", submission="", device="cpu", sandbox="process",
                                       execution_time=0, checks=checks, done_when=[]).model_dump(mode="json"))
    return 1


def write_csv(path, table):
    with open(path, "w", newline="") as file:
        csv.writer(file).writerows(table)
    return path


def grade(subs, out, **timing):
    return batch.grade_class(find_lab("lab2"), subs, out, Console(file=io.StringIO()),
                             batch.ClassRequest(force=True, timing=batch.TimeFiles(**timing)), stand_in)


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """A batch with the timestamps, an adjustment, then gradebook's late policy for Canvas and Moodle."""
    work = tmp_path_factory.mktemp("record")
    subs = work / "subs"
    for student in SCORES:
        (subs / student).mkdir(parents=True)
        (subs / student / "positions.py").write_text("x = 1\n")
    out = work / "out"
    grade(subs, out, timestamps=write_csv(work / "stamps.csv", STAMPS))
    roster = write_csv(work / "roster.csv", ROSTER)
    assert main(["adjust", str(out), "--student", "ADJUSTED", "--points", "+5", "--reason", "test 3 was wrong"]) == 0
    for fmt, column in (("canvas", "Lab 2 (42)"), ("moodle", "Lab 2")):
        assert main(["gradebook", str(out), "--format", fmt, "--roster", str(roster), "--out", str(work / f"{fmt}.csv"),
                     "--column", column, *POLICY]) == 0
    return work, out, subs


class Table(HTMLParser):
    """The class page's students table: {student: {header: text}}."""

    def __init__(self, page):
        super().__init__()
        self.inside, self.headers, self.rows, self.cell = False, [], [], None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.inside = "students" in (dict(attrs).get("class") or "")
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if self.inside and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None
        elif tag == "table":
            self.inside = False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data

    def by_student(self):
        headers, *rows = self.rows
        return {row[0]: dict(zip(headers, row)) for row in rows}


def page_finals(out):
    return {s: float(row["final"]) for s, row in Table((out / "report.html").read_text()).by_student().items()}


def feedback_final(out, student):
    said = (out / "students" / student / "feedback.md").read_text()
    found = re.search(r"^- Final score: ([0-9.]+) / 50", said, re.M) or \
        re.search(r"^- Score: ([0-9.]+) / 50", said, re.M)
    return float(found.group(1))


def lms_finals(work):
    with open(work / "canvas.csv", newline="") as file:
        canvas = {row[1]: float(row[5]) for row in list(csv.reader(file))[2:]}
    with open(work / "moodle.csv", newline="") as file:
        moodle = {row[0]: float(row[2]) for row in list(csv.reader(file))[1:]}
    ids = {row[0].lower(): (row[1], row[2]) for row in ROSTER[1:]}
    return {s: canvas[ids[s][0]] for s in SCORES}, {s: moodle[ids[s][1]] for s in SCORES}


def grades_csv(out):
    return {row["student"]: row for row in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}


def test_every_surface_shows_the_same_final_score(klass):
    work, out, _ = klass
    canvas, moodle = lms_finals(work)
    assert page_finals(out) == FINAL
    assert {s: feedback_final(out, s) for s in SCORES} == FINAL
    assert canvas == FINAL and moodle == FINAL
    assert {s: float(row["final_score"]) for s, row in grades_csv(out).items()} == FINAL
    check_canvas(work / "canvas.csv", {"42"}, ROSTER)
    check_moodle(work / "moodle.csv", "ID number", ROSTER, "sis_user_id")


def test_report_again_keeps_what_the_gradebook_decided(klass):
    _, out, _ = klass
    assert main(["report", str(out)]) == 0
    assert page_finals(out) == FINAL
    late = (out / "students" / "late" / "feedback.md").read_text()
    assert "- Lateness: 1 d 10.0 h late: -20%" in late and "- Final score: 30 / 50 (after the late penalty)" in late
    page = (out / "report.html").read_text()
    assert re.search(r"<b>1</b>late<", page) and "extension 48 h" in page
    assert "- Extension: 48 h\n- Lateness: on time" in (out / "students" / "extended" / "feedback.md").read_text()
    record = json.loads((out / "final.json").read_text())
    assert (record["decided_by"], record["policy_from"], record["policy"]["penalty"]) == \
        ("grade.py gradebook", "command line", 10.0)


def test_an_adjustment_says_who_what_why_and_when(klass):
    _, out, _ = klass
    said = (out / "students" / "adjusted" / "feedback.md").read_text()
    assert re.search(r"- Adjusted by your instructor: \+5: test 3 was wrong \(\d{4}-\d\d-\d\d\)", said)
    assert "- Final score: 40 / 50 (after your instructor's adjustment)" in said
    assert "adjusted +5: test 3 was wrong" in (out / "report.html").read_text()
    row = grades_csv(out)["adjusted"]
    assert (row["score"], row["final_score"], row["adjustment"], row["adjustments"]) == \
        ("35", "40", "5", "test 3 was wrong: +5")
    [logged] = json.loads((out / "adjustments.json").read_text())
    assert (logged["student"], logged["points"], logged["reason"], logged["source"]) == \
        ("adjusted", 5.0, "test 3 was wrong", "--student")
    assert logged["at"]


def test_a_regrade_keeps_the_adjustments_and_the_policy(klass, capsys, monkeypatch):
    from grader.instructor import workers

    _, out, subs = klass
    monkeypatch.setattr(workers, "grade_all", stand_in)
    assert main(["batch", "lab2", str(subs), "--out", str(out), "--force"]) == 0    # no timestamps: the record's
    said = " ".join(capsys.readouterr().out.split())
    assert "late policy: the one grade.py gradebook was given (due 2026-12-01T23:59:00+01:00, -10% per day)" in said
    assert "adjustments: 1 student(s)' kept" in said
    assert page_finals(out) == FINAL and {s: feedback_final(out, s) for s in SCORES} == FINAL
    assert float(grades_csv(out)["adjusted"]["final_score"]) == 40


def test_adjustments_from_a_file_and_each_bad_line_in_a_sentence(klass, tmp_path, capsys):
    _, out, _ = klass
    good = tmp_path / "adj.csv"
    good.write_text("student,points,reason\nLATE,2.5,regrade request\n\nontime,-1,copied a line\n")
    copy = tmp_path / "out"
    import shutil

    shutil.copytree(out, copy)
    assert main(["adjust", str(copy), "--file", str(good)]) == 0
    finals = page_finals(copy)
    assert (finals["late"], finals["ontime"]) == (32.5, 44)
    capsys.readouterr()
    for text, said in [("student,points,reason\nnobody,1,x\n", f"--file {tmp_path / 'bad.csv'} line 2: 'nobody' "
                        "is no student of this batch"),
                       ("student,points,reason\nlate,1,ok\nlate,lots,x\n", "line 3: points 'lots': expected a number"),
                       ("student,points,reason\nlate,1,\n", "line 2: give the reason"),
                       ("student,points\nlate,1\n", "no column 'reason'")]:
        (tmp_path / "bad.csv").write_text(text)
        assert main(["adjust", str(copy), "--file", str(tmp_path / "bad.csv")]) == 2
        shown = " ".join(capsys.readouterr().out.split())
        assert said in shown and "Traceback" not in shown, shown
    assert len(json.loads((copy / "adjustments.json").read_text())) == 3      # nothing of a bad file recorded
    assert main(["adjust", str(copy), "--student", "late", "--points", "nan", "--reason", "x"]) == 2
    assert main(["adjust", str(copy), "--student", "late", "--points", "1"]) == 2
    assert "missing --reason" in " ".join(capsys.readouterr().out.split())


def test_no_deadline_no_late_tile(tmp_path):
    subs = tmp_path / "subs"
    (subs / "ontime").mkdir(parents=True)
    (subs / "ontime" / "positions.py").write_text("x = 1\n")
    grade(subs, tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text()
    assert "</b>late<" not in page and "<th" in page and ">final<" not in page


def test_batch_says_who_the_roster_matched_and_the_quiz_s_duplicate_rows(tmp_path, capsys, monkeypatch):
    from grader.instructor import workers

    monkeypatch.setattr(workers, "grade_all", stand_in)
    subs = tmp_path / "subs"
    for student in ("ontime", "late", "stray"):
        (subs / student).mkdir(parents=True)
        (subs / student / "positions.py").write_text("x = 1\n")
    SCORES["stray"] = 10
    quiz = write_csv(tmp_path / "quiz.csv", [["student", "score", "max", "passed", "status"],
                                             ["ontime", "1", "5", "no", "graded"], ["late", "2", "5", "no", "graded"],
                                             ["ontime", "5", "5", "yes", "graded"]])
    try:
        assert main(["batch", "lab2", str(subs), "--out", str(tmp_path / "out"), "--roster",
                     str(write_csv(tmp_path / "roster.csv", ROSTER)), "--quiz", str(quiz)]) == 0
    finally:
        del SCORES["stray"]
    said = " ".join(capsys.readouterr().out.split())
    assert "roster: 4 students, 2 with a submission, 1 with an extension; not on it: stray" in said
    assert "quiz: 2 students' rows counted, 1 duplicate row(s) left out (ontime: row 4 counts (the last))" in said


def test_the_plain_gradebook_carries_the_adjustment(klass, tmp_path):
    work, out, _ = klass
    dest = tmp_path / "plain.csv"
    assert main(["gradebook", str(out), "--out", str(dest), "--roster", str(work / "roster.csv"), *POLICY]) == 0
    rows = {row["student"]: row for row in csv.DictReader(dest.open())}
    assert (rows["adjusted"]["raw_score"], rows["adjusted"]["adjustment"], rows["adjusted"]["final_score"]) == \
        ("35", "5", "40")
    assert "adjusted +5: test 3 was wrong" in rows["adjusted"]["note"]
    assert {s: float(rows[s]["final_score"]) for s in SCORES} == FINAL


def test_a_gradebook_without_the_policy_says_it_gives_way(klass, tmp_path, capsys):
    import shutil

    _, out, _ = klass
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    assert main(["gradebook", str(copy), "--out", str(tmp_path / "plain.csv")]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "the late policy given before (due 2026-12-01T23:59:00+01:00, -10% per day) gives way to lab.yaml's (none)" \
        in said
    assert page_finals(copy)["late"] == 40                  # what the record now says, everywhere


def test_the_class_quiz_stays_on_the_page_and_feedback_through_adjust_report_and_a_regrade(tmp_path, monkeypatch):
    """grades.csv keeps the quiz's marks in the record; the page and the feedback once lost them at
    the next command not given --quiz again (adjust, report, gradebook, batch)."""
    from grader.base.text import csv_text
    from grader.instructor import workers

    monkeypatch.setattr(workers, "grade_all", stand_in)
    subs = tmp_path / "subs"
    for student in ("ontime", "late"):
        (subs / student).mkdir(parents=True)
        (subs / student / "positions.py").write_text("x = 1\n")
    answers = tmp_path / "responses.csv"
    answers.write_text(csv_text([["student", "table-size", "order", "methods", "rope-score", "tied"],
                                 *([name, "38.597376", "a;b;e", "d", "m - n", "c"] for name in ("ontime", "late"))]),
                       newline="")
    out = tmp_path / "out"

    def shown():
        page, said = (out / "report.html").read_text(), (out / "students" / "late" / "feedback.md").read_text()
        return ">quiz<" in page, "- Lesson test: 5/5, passed" in said, grades_csv(out)["late"]["quiz_score"]

    assert main(["batch", "lab2", str(subs), "--out", str(out), "--quiz", str(answers)]) == 0
    assert shown() == (True, True, "5")
    answers.unlink()                                # the instructor's file moved on
    for command in (["adjust", str(out), "--student", "late", "--points", "1", "--reason", "x"], ["report", str(out)],
                    ["gradebook", str(out), "--out", str(tmp_path / "g.csv")], ["batch", "lab2", str(subs), "--out",
                                                                                 str(out), "--force"]):
        assert main(command) == 0
        assert shown() == (True, True, "5"), command


def test_an_empty_submission_given_points_shows_them_on_every_surface(tmp_path):
    """Rejected and empty rows have no points of their own (no max_score): their feedback once showed
    no score at all while the page and the LMS gave the adjustment."""
    subs = tmp_path / "subs"
    (subs / "ontime").mkdir(parents=True)
    (subs / "ontime" / "positions.py").write_text("x = 1\n")
    (subs / "blank").mkdir()
    (subs / "blank" / "notes.txt").write_text("sorry\n")
    out = tmp_path / "out"
    grade(subs, out)
    assert main(["adjust", str(out), "--student", "blank", "--points", "5", "--reason", "sent by mail"]) == 0
    roster = write_csv(tmp_path / "roster.csv", [["student", "id"], ["ontime", "1"], ["blank", "2"]])
    assert main(["gradebook", str(out), "--format", "canvas", "--roster", str(roster), "--column", "Lab 2 (42)",
                 "--out", str(tmp_path / "canvas.csv")]) == 0
    canvas = {row[1]: row[5] for row in list(csv.reader(open(tmp_path / "canvas.csv")))[2:]}
    assert (page_finals(out)["blank"], feedback_final(out, "blank"), float(grades_csv(out)["blank"]["final_score"]),
            float(canvas["2"])) == (5, 5, 5, 5)


@pytest.mark.parametrize("points, said", [
    ("1e308", "points '1e308': more than the lab's 50 points"), ("-51", "points '-51': more than the lab's 50"),
    ("1_0", "points '1_0': expected a number of points"), ("0x10", "expected a number of points"),
    ("5,5", "expected a number of points"), ("inf", "expected a number of points")])
def test_points_no_lab_could_give_are_refused(klass, tmp_path, capsys, points, said):
    """+1e308 once went in as an adjustment (clamped to 50), and two such as inf: none can be undone
    by a later adjustment, and no instructor means one."""
    import shutil

    _, out, _ = klass
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    capsys.readouterr()
    assert main(["adjust", str(copy), "--student", "late", f"--points={points}",
                 "--reason", "typo"]) == 2
    assert said in " ".join(capsys.readouterr().out.split())
    assert len(json.loads((copy / "adjustments.json").read_text())) == 1


def test_a_look_alike_name_is_no_student_and_the_sentence_says_whom_it_looks_like(klass, capsys):
    _, out, _ = klass
    assert main(["adjust", str(out), "--student", "\u043ente", "--points", "1", "--reason", "x"]) == 2   # Cyrillic о
    assert main(["adjust", str(out), "--student", "l\u0430te", "--points", "1", "--reason", "x"]) == 2   # Cyrillic а
    said = " ".join(capsys.readouterr().out.split())
    assert "'lаte' (its а is Cyrillic) is no student of this batch; it looks like 'late'" in said


def test_report_given_another_quiz_records_it_for_grades_csv_too(tmp_path, monkeypatch):
    """report --quiz B after batch --quiz A showed B's marks on the page, A's in grades.csv."""
    from grader.base.text import csv_text
    from grader.instructor import workers

    monkeypatch.setattr(workers, "grade_all", stand_in)
    subs = tmp_path / "subs"
    for student in ("ontime", "late"):
        (subs / student).mkdir(parents=True)
        (subs / student / "positions.py").write_text("x = 1\n")
    header = ["student", "table-size", "order", "methods", "rope-score", "tied"]
    right, wrong = (tmp_path / "a.csv", ["38.597376", "a;b;e", "d", "m - n", "c"]), \
        (tmp_path / "b.csv", ["1", "a", "a", "x", "a"])
    for path, answers in (right, wrong):
        path.write_text(csv_text([header, *([name, *answers] for name in ("ontime", "late"))]), newline="")
    out = tmp_path / "out"
    assert main(["batch", "lab2", str(subs), "--out", str(out), "--quiz", str(right[0])]) == 0
    assert main(["report", str(out), "--quiz", str(wrong[0])]) == 0
    page = Table((out / "report.html").read_text()).by_student()
    assert page["late"]["quiz"] == "0/5" and grades_csv(out)["late"]["quiz_score"] == "0"
    assert json.loads((out / "final.json").read_text())["quiz"]["late"]["score"] == 0


def test_a_gradebook_not_given_the_quiz_takes_the_record_s(tmp_path, monkeypatch):
    """batch --quiz kept the quiz's marks in the record and grades.csv; a gradebook not given
    --quiz again wrote its quiz columns blank."""
    from grader.base.text import csv_text
    from grader.instructor import workers

    monkeypatch.setattr(workers, "grade_all", stand_in)
    subs = tmp_path / "subs"
    for student in ("ontime", "late"):
        (subs / student).mkdir(parents=True)
        (subs / student / "positions.py").write_text("x = 1\n")
    answers = tmp_path / "a.csv"
    answers.write_text(csv_text([["student", "table-size", "order", "methods", "rope-score", "tied"],
                                 *([name, "38.597376", "a;b;e", "d", "m - n", "c"] for name in ("ontime", "late"))]),
                       newline="")
    out = tmp_path / "out"
    assert main(["batch", "lab2", str(subs), "--out", str(out), "--quiz", str(answers)]) == 0
    assert main(["gradebook", str(out), "--out", str(tmp_path / "plain.csv")]) == 0
    plain = {row["student"]: row for row in csv.DictReader(open(tmp_path / "plain.csv"))}
    assert plain["late"]["quiz_score"] == grades_csv(out)["late"]["quiz_score"] == "5"
    roster = write_csv(tmp_path / "roster.csv", [["student", "id"], ["ontime", "1"], ["late", "2"]])
    assert main(["gradebook", str(out), "--format", "canvas", "--roster", str(roster), "--column", "Lab 2 (42)",
                 "--quiz-column", "Quiz (43)", "--out", str(tmp_path / "canvas.csv")]) == 0
    assert list(csv.reader(open(tmp_path / "canvas.csv")))[2][5:] == ["45", "5"]         # ontime


def test_the_terminal_says_what_an_assumed_time_cost_and_a_huge_grace_is_a_sentence(tmp_path, capsys):
    """--assume-late gave every unknown time the cap, yet the terminal said they had 'no mark until
    their time is known'; --grace inf ended in 'the grader itself failed: OverflowError'."""
    subs = tmp_path / "subs"
    for student in ("ontime", "late"):
        (subs / student).mkdir(parents=True)
        (subs / student / "positions.py").write_text("x = 1\n")
    grade(subs, tmp_path / "out")
    capsys.readouterr()
    args = ["gradebook", str(tmp_path / "out"), "--out", str(tmp_path / "g.csv"), *POLICY]
    assert main([*args, "--assume-late"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "late policy: 2 assumed late" in said and "no mark" not in said, said
    assert main(args) == 0
    assert "2 time unknown; 2 with no mark until their time is known" in " ".join(capsys.readouterr().out.split())
    stamps = write_csv(tmp_path / "s.csv", STAMPS[:3])
    for grace in ("inf", "1e300"):
        assert main([*args, "--timestamps", str(stamps), "--grace", grace]) == 2
        said = " ".join(capsys.readouterr().out.split())
        assert "late policy: grace_minutes: Input should be less than or equal to 527040" in said, said


def test_adjust_records_nothing_where_it_cannot_write_the_page_again(klass, tmp_path, capsys):
    """An OUT whose lab cannot be told (no summary.json) recorded the adjustment, then failed: run
    again once fixed, the student got the points twice."""
    import shutil

    _, out, _ = klass
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / "rows.json").unlink()
    before = (copy / "adjustments.json").read_text()
    assert main(["adjust", str(copy), "--student", "late", "--points", "1", "--reason", "x"]) == 2
    assert (copy / "adjustments.json").read_text() == before


def test_a_gradebook_refused_for_its_roster_decides_nothing(tmp_path, capsys):
    """A Canvas roster refused (an id not digits) once left the new late policy in the record, the
    page and the feedback, though the command failed."""
    subs = tmp_path / "subs"
    (subs / "late").mkdir(parents=True)
    (subs / "late" / "positions.py").write_text("x = 1\n")
    out = tmp_path / "out"
    grade(subs, out)
    before = json.loads((out / "final.json").read_text())
    roster = write_csv(tmp_path / "r.csv", [["student", "id"], ["late", "abc"]])
    assert main(["gradebook", str(out), "--format", "canvas", "--roster", str(roster), "--column", "Lab 2 (42)",
                 "--out", str(tmp_path / "c.csv"), *POLICY]) == 2
    after = json.loads((out / "final.json").read_text())
    assert (after["policy"], after["decided_by"]) == (before["policy"], before["decided_by"]) == \
        (None, "grade.py batch")


def test_an_adjustment_whose_student_has_no_submission_now_is_said(tmp_path, capsys):
    """A regrade without a student's submission (their folder renamed or taken out) left their
    adjustment in adjustments.json but in no grade, and no command said so."""
    import shutil

    from grader.instructor.commands import show_lists

    subs = tmp_path / "subs"
    for student in ("ontime", "late"):
        (subs / student).mkdir(parents=True)
        (subs / student / "positions.py").write_text("x = 1\n")
    out = tmp_path / "out"
    grade(subs, out)
    assert main(["adjust", str(out), "--student", "late", "--points", "2", "--reason", "test 3"]) == 0
    shutil.rmtree(subs / "late")
    grade(subs, out)
    console = Console(file=io.StringIO(), width=300)
    show_lists(find_lab("lab2"), out, None, None, console)
    said = console.file.getvalue()
    assert "adjustments of 1 student(s) with no submission now, in no grade: 'late' (+2: test 3" in said, said
    assert main(["gradebook", str(out), "--out", str(tmp_path / "g.csv")]) == 0
    assert "with no submission now, in no grade: 'late'" in " ".join(capsys.readouterr().out.split())
