"""What the class page and each learner's feedback say of lateness, as a batch with a late policy
and the instructor's timestamps writes it (OUT/rows.json), and that a name or file name a student
chose is text in every file made for people (Markdown, HTML)."""
import io
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from rich.console import Console

from grader.core.results import Check, LabResults
from grader.core.submissions import folder_name
from grader.instructor import batch
from grader.instructor.deadlines import parse_time
from grader.instructor.page import classdata
from grader.readers.manifest import Deadline, find_lab

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "lab2"
HOSTILE = "<img src=x onerror=alert(1)> *bold* [a](javascript:x) `tick`"


def stand_in(lab, todo, workers, options, done):
    check = Check(name="all", test="visible/test_x.py::test_all", tags=[next(iter(lab.functions))], points=50,
                  score=40, status="failed", visibility="visible", message="expected 1\n     saw </pre><b>")
    for sub in todo:
        done(sub, "graded", LabResults(lab=lab.name, title="Lab *2*", submission="", device="cpu", sandbox="process",
                                       execution_time=0, checks=[check], done_when=[]).model_dump(mode="json"))
    return 1


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    work = tmp_path_factory.mktemp("late")
    subs = work / "subs"
    for name in ("years", "ontime", "nostamp", HOSTILE):
        shutil.copytree(REFERENCE, subs / name)
    with zipfile.ZipFile(subs / "evil.zip", "w") as archive:
        archive.writestr("../<script>x</script>[c](http://y).py", b"x")
    (work / "stamps.csv").write_text(f"student,submitted_at\nyears,2023-01-01T00:00:00Z\nontime,2020-12-01T00:00:00Z\n"
                                     f"\"{HOSTILE}\",2020-12-01T00:00:00Z\n")
    lab = find_lab("lab2")
    lab.manifest = lab.manifest.model_copy(update={"deadline": Deadline(due=parse_time("2021-01-01T00:00Z", "due"),
                                                                        penalty=10, cap=50)})
    batch.grade_class(lab, subs, work / "out", Console(file=io.StringIO()),
                      batch.ClassRequest(timing=batch.TimeFiles(timestamps=work / "stamps.csv")), stand_in)
    return work / "out"


def test_the_page_counts_a_student_years_late_as_late(out):
    klass = classdata.load(out)
    glance = classdata.glance(klass)
    assert (glance["late"], glance["time unknown"]) == (1, 1)
    students = {s.name: s for s in klass.students}
    assert students["years"].late == {"lateness": "730 d 0.0 h late: -50%"}
    assert students["ontime"].late == {} and students["nostamp"].late["lateness"].startswith("time unknown")


def test_each_feedback_says_when_and_what_it_cost(out):
    years = (out / "students" / "years" / "feedback.md").read_text()
    assert "- Submitted: 2023-01-01 00:00+00:00 (from the course's record of submission times)" in years
    assert "- Lateness: 730 d 0.0 h late: -50%" in years and "- Final score: 15 / 50 (after the late penalty)" in years
    assert "- Submitted: time unknown" in (out / "students" / "nostamp" / "feedback.md").read_text()
    assert "Lateness: time unknown" in (out / "students" / "nostamp" / "feedback.html").read_text()


def test_what_a_student_named_is_text_in_markdown_and_html(out):
    folder = out / "students" / folder_name(HOSTILE)          # a name Windows refuses: a folder of its own
    md, html = (folder / "feedback.md").read_text(), (folder / "feedback.html").read_text()
    assert not re.search(r"(?<!\\)(<img|\]\(|\*bold|`tick)", md)
    assert r"\<img src=x onerror=alert(1)\> \*bold\* \[a\](javascript:x) \`tick\`" in md
    assert "<img" not in html and "&lt;img src=x" in html and "</pre><b>" not in html
    evil = (out / "students" / "evil" / "feedback.md").read_text()
    assert not re.search(r"(?<!\\)(<script|\]\()", evil) and r"\<script\>" in evil


def test_a_folder_the_batch_no_longer_has_is_not_on_the_page(out, tmp_path):
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    shutil.copytree(copy / "students" / "ontime", copy / "students" / "gone")
    record = copy / "students" / "gone" / "graded.json"
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, "row": {**data["row"], "student": "gone"}}))
    assert "gone" not in {s.name for s in classdata.load(copy).students}
    assert {s.name for s in classdata.load(out).students} >= {"ontime", "years"}
