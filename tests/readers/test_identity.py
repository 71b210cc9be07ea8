"""One identity per student: a name matches in any case, Unicode form or spacing; two submissions of
one student are a collision (listed, neither graded over the other); every grade lands in its own
student's row of the Canvas and Moodle files, and a submission not on the roster in none."""
import csv
import io
import json
import shutil
import unicodedata

import pytest
from lms_checkers import Misread, check_canvas, check_moodle
from rich.console import Console

from grader.core.results import Check, LabResults
from grader.core.submissions import list_submissions
from grader.instructor import batch
from grader.learner.cli import main
from grader.readers.identity import as_read, foreign_letters, identity, look_alikes, shown
from grader.readers.manifest import find_lab

NFC, NFD = unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")
SCORES = {identity(NFC): 40, "ada": 30, "bob": 20, "zed": 10, "lin": 50}
ROSTER = [["student", "name", "id", "sis_user_id", "sis_login_id", "email", "section"],
          [NFC, "Martí, José", "201", "S201", "jose", "jose@uni.edu", "A"],
          ["ada", "Lovelace, Ada", "202", "S202", "ada", "ada@uni.edu", "A"],
          ["bob", "Builder, Bob", "203", "S203", "bob", "bob@uni.edu", "B"],
          ["\u200bLin\u00a0", "Lin, Mei", "204", "S204", "lin", "lin@uni.edu", "B"]]


def stand_in(lab, todo, workers, options, done):
    for sub in todo:
        score = SCORES[identity(sub.student)]
        check = Check(name="all", test="hidden/test_x.py::test_all", tags=[next(iter(lab.functions))], points=50,
                      score=score, status="failed", visibility="hidden")
        done(sub, "graded", LabResults(lab=lab.name, title="t", submission="", device="cpu", sandbox="process",
                                       execution_time=0, checks=[check], done_when=[]).model_dump(mode="json"))
    return 1


def write(path, table):
    with open(path, "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows(table)
    return path


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    work = tmp_path_factory.mktemp("names")
    subs = work / "subs"
    for name in (NFD, "Ada", "ada", "bob", "zed", "LIN"):
        (subs / name).mkdir(parents=True)
        (subs / name / "positions.py").write_text("x = 1\n")
    batch.grade_class(find_lab("lab2"), subs, work / "out", Console(file=io.StringIO()), backend=stand_in)
    return work, write(work / "roster.csv", ROSTER)


def gradebook(work, roster, fmt, *args):
    dest = work / f"{fmt}.csv"
    assert main(["gradebook", str(work / "out"), "--format", fmt, "--roster", str(roster), "--out", str(dest),
                 *args]) == 0
    return dest


def test_the_normal_form():
    assert identity(NFC) == identity(NFD) == identity(" josé ") == identity("JOSÉ")
    assert identity("ali\u200bce") == identity("Alice") and identity("a\u00a0 b") == identity("a b")
    assert identity("Straße") == identity("STRASSE") and identity("ada") != identity("adam")
    assert shown("a\nb\u202ec\x1b") == "a bc\ufffd"
    for name in ("x\u200b", "É\t", "a\x01b", "ǅ", "ﬁ"):
        assert identity(shown(name)) == identity(name)


BLANKS = ["\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\ufe0f", "\U000e0041", "\u180e", "\u00ad"]


@pytest.mark.parametrize("mark", BLANKS)
def test_a_blank_or_default_ignorable_mark_makes_no_new_student(mark):
    for name in (f"Ada{mark}", f"{mark}Ada", f"A{mark}da"):
        assert identity(name) == identity("Ada") and shown(name) == "Ada"


def test_names_that_render_alike_are_found_and_said_apart():
    cyrillic, greek = "\u0410da", "\u0391da"             # А and Α, capital A of Cyrillic and Greek
    assert identity(cyrillic) != identity("Ada")
    assert look_alikes(["Ada", "bob", cyrillic, greek, "ada", "Bob"]) == [["Ada", cyrillic, greek, "ada"]]
    assert look_alikes(["\u041d\u041e\u0412", "hob"]) != []            # НОВ in capitals is HOB in Latin ones
    assert look_alikes(["Ada", "\uff21\uff44\uff41"]) != []              # full-width Ａｄａ
    assert look_alikes(["José", "Jose", "Иван", "Ivan", "Ali", "All"]) == []     # different names stay apart
    assert as_read(cyrillic) == f"'{cyrillic}' (its \u0410 is Cyrillic)" and as_read(NFD) == f"'{NFD}'"


def test_look_alike_submissions_are_one_rejected_row_naming_each(tmp_path):
    cyrillic = "\u0410da"
    for name in ("Ada", cyrillic, "A\u2800da\u3164", "bob"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "positions.py").write_text("x = 1\n")
    found = {sub.student: sub for sub in list_submissions(find_lab("lab2"), tmp_path)}
    assert sorted(found) == ["Ada", "bob"] and found["bob"].status == "incomplete"
    row = found["Ada"]
    assert row.status == "rejected" and len(row.collision) == 3
    assert row.detail.startswith("3 submissions whose names look alike: 'Ada', 'Ada', 'Аda' (its А is Cyrillic)")


def test_a_collision_is_one_row_naming_both_and_folders_are_one_per_student(klass):
    work, _ = klass
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((work / "out" / "grades.csv").read_text()))}
    assert rows["Ada"]["status"] == "rejected" and "'Ada', 'ada'" in rows["Ada"]["detail"] and "ada" not in rows
    folders = [p.name for p in (work / "out" / "students").iterdir()]
    assert len({identity(f.upper()) for f in folders}) == len(folders) == 5


def test_every_roster_grade_lands_in_its_own_row(klass):
    work, roster = klass
    dest = gradebook(work, roster, "canvas", "--column", "Lab 2 (77)")
    grades = check_canvas(dest, {"77"}, ROSTER)
    assert grades == {NFC: {"77": "40"}, "ada": {"77": None}, "bob": {"77": "20"}, "\u200bLin\u00a0": {"77": "50"}}
    unmatched = list(csv.reader(open(work / "canvas.unmatched.csv", newline="")))
    assert [row[0] for row in unmatched[1:]] == ["zed"] and unmatched[1][2] == "10"
    dest = gradebook(work, roster, "moodle", "--scale", "percent")
    assert check_moodle(dest, "ID number", ROSTER, "sis_user_id") == {
        NFC: {"lab2": "80"}, "ada": {"lab2": ""}, "bob": {"lab2": "40"}, "\u200bLin\u00a0": {"lab2": "100"}}
    moodle = {row[0]: row for row in csv.reader(open(dest, newline="", encoding="utf-8"))}
    assert "2 submissions for one student: 'Ada', 'ada'" in moodle["S202"][-1]


def test_the_terminal_says_which_roster_name_matched_which_submission(klass, capsys):
    work, roster = klass
    assert main(["gradebook", str(work / "out"), "--out", str(work / "plain.csv"), "--roster", str(roster)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    match = f"roster '{NFC}' is submission '{NFD}' (one name, its letters encoded in another Unicode form)"
    assert match in said and "'Ada', 'ada'" in said and "\\x" not in said and "\\u" not in said
    rows = {row["student"]: row for row in csv.DictReader(open(work / "plain.csv", newline="", encoding="utf-8"))}
    assert rows[NFD]["id"] == "201" and rows["zed"]["note"] == "not on the roster"
    assert match in rows[NFD]["note"]                   # in the CSV as on screen: as people read it


def test_a_roster_listing_one_student_twice_is_refused(klass, capsys):
    work, _ = klass
    roster = write(work / "twice.csv", ROSTER + [[NFD, "x", "299", "", "", "", ""]])
    assert main(["gradebook", str(work / "out"), "--out", str(work / "x.csv"), "--roster", str(roster)]) == 2
    assert "is listed twice (line 2 too" in capsys.readouterr().out


@pytest.mark.parametrize("edit, said", [
    ((2, 2, ""), None),                                           # no ID: SIS User ID still finds José
    ((2, 2, "abc"), "column id: 'abc' is not a Canvas user id"),
    ((3, 2, "201"), "roster lines 2 and 4 have the same id '201'"),
    ((2, 2, "\u0662\u0660\u0661"), "is not a Canvas user id"),    # digits, but not the 0-9 Canvas reads
    ((2, 3, "-S201"), "column sis_user_id: '-S201' would be written as"),   # a cell made inert: not the id
])
def test_canvas_ids(klass, capsys, edit, said):
    work, _ = klass
    table = [list(row) for row in ROSTER]
    table[edit[0]][edit[1]] = edit[2]
    roster = write(work / "ids.csv", table)
    code = main(["gradebook", str(work / "out"), "--format", "canvas", "--column", "Lab (1)", "--out",
                 str(work / "ids-out.csv"), "--roster", str(roster)])
    if said is None:
        assert code == 0 and check_canvas(work / "ids-out.csv", {"1"}, table)[NFC] == {"1": "40"}
    else:
        assert code == 2 and said in " ".join(capsys.readouterr().out.split())


def test_moodle_needs_an_identifier_in_every_row(klass, capsys):
    work, _ = klass
    table = [list(row) for row in ROSTER]
    table[2][3] = ""                                              # ada: no ID number; email for all
    roster = write(work / "m.csv", table)
    assert main(["gradebook", str(work / "out"), "--format", "moodle", "--scale", "percent", "--out",
                 str(work / "m-out.csv"), "--roster", str(roster)]) == 0
    assert next(csv.reader(open(work / "m-out.csv")))[:2] == ["Email address", "lab2"]
    check_moodle(work / "m-out.csv", "Email address", table, "email")
    table[3][5] = ""                                              # bob: no email either way
    write(work / "m.csv", table)
    assert main(["gradebook", str(work / "out"), "--format", "moodle", "--out", str(work / "m-out.csv"),
                 "--roster", str(roster)]) == 2
    assert "fill sis_user_id or email for all" in capsys.readouterr().out


def test_moodle_maps_users_by_an_identifier_written_as_the_roster_has_it(klass):
    """An ID number a spreadsheet would read as a formula is written made inert ('@17), which is no
    Moodle user: the file maps users by the e-mail instead."""
    work, _ = klass
    table = [list(row) for row in ROSTER]
    table[3][3] = "@17"
    roster = write(work / "m-17.csv", table)
    dest = gradebook(work, roster, "moodle", "--scale", "percent")
    assert next(csv.reader(open(dest)))[0] == "Email address"
    assert check_moodle(dest, "Email address", table, "email")["bob"] == {"lab2": "40"}


@pytest.mark.parametrize("text, why", [
    ("Student,ID,SIS User ID,SIS Login ID,Section,Lab 2 (4242) lesson complete\r\nPoints Possible,,,,,1\r\n"
     "Ada,202,S202,ada,A,1\r\n", "is a new assignment"),
    ("Student,ID,SIS User ID,SIS Login ID,Section,Lab (1)\r\nPoints Possible,,,,,50\r\nzed,,,,,10\r\n",
     "matched by name"),
    ("Student,ID,SIS User ID,SIS Login ID,Section,Lab (1)\r\nPoints Possible,,,,,50\r\nx;=1+1;y,202,S202,,A,1\r\n",
     None),
    ('Student,ID,SIS User ID,SIS Login ID,Section,Lab (1)\r\nPoints Possible,,,,,50\r\nA"da,202,,,A,1\r\n', "quote"),
])
def test_the_canvas_checker_catches_what_canvas_would_misread(tmp_path, text, why):
    (tmp_path / "c.csv").write_text(text, newline="")
    if why is None:
        check_canvas(tmp_path / "c.csv", {"1"}, ROSTER)
        return
    with pytest.raises(Misread, match=why):
        check_canvas(tmp_path / "c.csv", {"1", "4242"}, ROSTER)


def test_the_moodle_checker_catches_a_row_without_its_user(tmp_path):
    (tmp_path / "m.csv").write_text("ID number,Email address,Lab,Feedback\r\nS202,ada@uni.edu,30,\r\n,,10,\r\n")
    with pytest.raises(Misread, match="student of the row before"):
        check_moodle(tmp_path / "m.csv", "ID number", ROSTER, "sis_user_id")
    (tmp_path / "m.csv").write_text("ID number,Lab,Feedback\r\nS202,130,\r\n")
    with pytest.raises(Misread, match="from 0 to 100"):
        check_moodle(tmp_path / "m.csv", "ID number", ROSTER, "sis_user_id")


def test_rows_of_one_student_from_an_older_batch_are_merged_and_stray_timestamps_named(klass, tmp_path, capsys):
    work, roster = klass
    out = tmp_path / "old"
    shutil.copytree(work / "out", out)
    rows = json.loads((out / "rows.json").read_text())
    rows = [r for r in rows if r["student"] != "Ada"]
    rows += [{**rows[0], "student": "Ada", "collision": [], "status": "graded", "score": 30},
             {**rows[0], "student": "ada", "collision": [], "status": "graded", "score": 31}]
    (out / "rows.json").write_text(json.dumps(rows))
    stamps = write(tmp_path / "s.csv", [["student", "submitted_at"], ["Bob Builder", "2026-12-01T10:00:00Z"]])
    assert main(["gradebook", str(out), "--format", "canvas", "--column", "Lab (1)", "--out", str(tmp_path / "c.csv"),
                 "--roster", str(roster), "--timestamps", str(stamps)]) == 0
    assert check_canvas(tmp_path / "c.csv", {"1"}, ROSTER)["ada"] == {"1": None}
    said = " ".join(capsys.readouterr().out.split())
    assert "1 name(s) match no submission: 'bob builder'" in said and "2 submissions for one student" in said


def test_a_name_canvas_would_read_as_its_points_row_is_written_otherwise(klass, tmp_path):
    work, _ = klass
    table = [list(row) for row in ROSTER]
    table[3][1] = "Points Possible, Bob"
    roster = write(tmp_path / "r.csv", table)
    assert main(["gradebook", str(work / "out"), "--format", "canvas", "--column", "Lab (1)", "--out",
                 str(tmp_path / "c.csv"), "--roster", str(roster)]) == 0
    assert check_canvas(tmp_path / "c.csv", {"1"}, table)["bob"] == {"1": "20"}
    text = (tmp_path / "c.csv").read_text().replace("Points_Possible, Bob", "Points Possible, Bob")
    (tmp_path / "c.csv").write_text(text, newline="")
    with pytest.raises(Misread, match="read as the points"):
        check_canvas(tmp_path / "c.csv", {"1"}, table)


def test_look_alike_rows_of_a_quiz_export_are_noted(tmp_path):
    from grader.quiz.responses import read_class

    (tmp_path / "quiz.csv").write_text("student,score,max,passed\nAda,5,5,yes\n\u0410da,0,5,no\nbob,3,5,yes\n")
    answers = read_class(tmp_path / "quiz.csv")
    assert answers.get("Ada").notes == ["'Ada' looks like row 3's 'Аda' (its А is Cyrillic): one student, or two "
                                        "to tell apart?"]
    assert answers.get("\u0410da").notes[0].startswith("'Аda' (its А is Cyrillic) looks like row 2's 'Ada'")
    assert answers.get("bob").notes == []


@pytest.mark.parametrize("name, fake", [
    ("Bob", "B\u0585b"), ("sue", "s\u057de"), ("Ann", "A\u0578\u0578"),        # Armenian օ, ս, ո
    ("Ada", "\u13aada"), ("Dan", "\u13a0an"),                                  # Cherokee Ꭺ, Ꭰ
    ("Ada", "\ua4eeda"), ("Tom", "\ua4d4om"),                                  # Lisu ꓮ, ꓔ
    ("ada", "\u0251da"), ("Amy", "Am\u04af"), ("Ivy", "\u04c0vy"), ("jan", "\u03f3an")])   # ɑ, ү, Ӏ, ϳ
def test_letters_of_more_scripts_that_pass_for_latin_ones_are_a_collision(name, fake):
    assert identity(name) != identity(fake) and look_alikes([name, fake]) == [[name, fake]]
    assert "is " in foreign_letters(fake)


def test_a_timestamps_name_that_matches_no_submission_is_said_as_read_and_whom_it_looks_like(klass, tmp_path, capsys):
    """A stray name was printed with Python's escapes ('\\u0410da'), and a look-alike of a
    submission's name said nothing of it; batch said nothing of strays at all."""
    work, roster = klass
    stamps = write(tmp_path / "s.csv", [["student", "submitted_at"], ["\u0410da", "2026-12-01T10:00:00Z"],
                                        ["bob", "2026-12-01T10:00:00Z"]])
    assert main(["gradebook", str(work / "out"), "--out", str(tmp_path / "g.csv"), "--timestamps", str(stamps)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "1 name(s) match no submission: 'аda' (its а is Cyrillic), which looks like 'Ada'" in said, said
    assert "\\u" not in said


def test_batch_names_the_timestamps_that_match_no_submission(klass, tmp_path, capsys, monkeypatch):
    from grader.instructor import workers

    monkeypatch.setattr(workers, "grade_all", stand_in)
    work, _ = klass
    stamps = write(tmp_path / "s.csv", [["student", "submitted_at"], ["b\u043eb", "2026-12-01T10:00:00Z"],
                                        ["zed", "2026-12-01T10:00:00Z"]])
    assert main(["batch", "lab2", str(work / "subs"), "--out", str(tmp_path / "out"), "--timestamps", str(stamps)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "timestamps: 1 name(s) match no submission: 'bоb' (its о is Cyrillic), which looks like 'bob'" in said


def test_a_roster_name_that_only_looks_like_a_submission_s_is_said_so(klass, tmp_path, capsys):
    """The roster's 'Аda' (a Cyrillic А) is not the submission 'Ada': both lines said only 'no
    submission' and 'not on the roster'."""
    work, _ = klass
    roster = write(tmp_path / "r.csv", [["student", "id"], ["b\u043eb", "1"], ["zed", "2"]])
    assert main(["gradebook", str(work / "out"), "--out", str(tmp_path / "g.csv"), "--roster", str(roster)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "bob: not on the roster, whose 'bоb' (its о is Cyrillic) looks like it" in said, said
    assert "bоb: no submission, and 'bob' looks like it" in said


def test_a_quiz_name_that_only_looks_like_a_submission_s_is_said_so(klass, tmp_path, capsys):
    work, _ = klass
    quiz = write(tmp_path / "q.csv", [["student", "score", "max", "passed"], ["b\u043eb", "5", "5", "yes"],
                                      ["zed", "4", "5", "yes"]])
    assert main(["gradebook", str(work / "out"), "--out", str(tmp_path / "g.csv"), "--quiz", str(quiz)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "bоb: no submission, and 'bob' looks like it" in said, said
