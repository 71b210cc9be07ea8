"""The class report page and the learners' feedback, from made-up batch output (tests/synthetic_class.py):
what counts as failed, mistakes grouped by the mistake, hidden checks kept hidden, the quiz and
experiment panels, a self-contained page whose links resolve; then the page in headless Chromium."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest
from synthetic_class import make_class

from grader.cli import main
from grader.instructor.page import classdata, feedback, write_report
from grader.quiz.model import load_quiz
from grader.results import BatchRow, BatchSummary

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = Path(__file__).parent / "submissions"


@pytest.fixture
def out(lab2, tmp_path):
    out = tmp_path / "out"
    make_class(lab2, out, 10, [ROOT / "reference" / "lab2", SUBMISSIONS / "alternative_styles"])
    return out


def test_not_attempted_and_blocked_are_never_failures(lab2, out):
    rates = {r.name: r for r in BatchSummary.model_validate_json((out / "summary.json").read_text()).checks}
    rope = rates["rotates pairs"]           # 8 graded: 2 failed, 2 left the stub, 4 passed
    assert (rope.passed, rope.graded, rope.not_attempted, rope.not_run) == (4, 6, 2, 0)
    extrapolation = rates["RoPE extrapolates"]
    assert (extrapolation.passed, extrapolation.graded, extrapolation.not_run) == (6, 6, 2)
    assert extrapolation.rate == 1.0
    checks, functions = classdata.check_outcomes(classdata.load(out))
    assert dict(functions)["extrapolation_runs"] == {"passed": 6, "not run": 2}
    assert dict(functions)["apply_rope"] == {"passed": 4, "failed": 2, "not attempted": 2}


def test_mistakes_are_grouped_by_the_mistake(out):
    found = {check.mistake_key: sorted(who) for check, _, who in classdata.mistakes(classdata.load(out))}
    assert found["rope-swapped"] == ["student001", "student006"]      # two wordings, one id
    numbered = "is_permutation_invariant: trained at length #, the lab trains at #"
    assert found[numbered] == ["student003", "student008"]             # the same hint with other numbers
    assert len(found) == 2


def test_page_is_self_contained_and_its_links_resolve(out):
    page = write_report(out).read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "<link" not in page
    assert "<script src" not in page and "@import" not in page
    links = re.findall(r'href="([^"]+)"', page)
    assert links and all((out / unquote(href)).is_file() for href in links)
    assert all(f'href="students/student{i:03d}/feedback.html"' in page for i in range(10))
    assert page.count('<svg class="plot"') >= 5 and 'aria-sort=none' in page and "<caption>" in page


def test_feedback_keeps_hidden_checks_hidden(out):
    write_report(out)
    folder = out / "students" / "student001"                       # the swapped-cos-sin student
    for name in ("feedback.html", "feedback.md"):
        text = (folder / name).read_text()
        assert "rotates pairs" in text and "saw others" in text and "debug: x.shape" in text
        assert "hidden detail" not in text and "secret hint" not in text and "any shape" not in text
        assert "hidden check(s): 0 / 2 points" in text and "student006" not in text
    assert not (out / "students" / "student004" / "feedback.md").read_text().count("## ")   # rejected: no checks


RESPONSES = ("student,table-size,order,methods,rope-score,tied\n"
             "student000,38.6,a b e,d,m - n,c\n"
             "student001,12,a b,d,m - n,c\n"
             "student002,12,,d,m - n,c\n")


def test_lateness_the_gradebook_records_is_shown(out):
    class LateRow(BatchRow):            # a lateness field beside BatchRow's own (penalty_percent)
        late_days: float = 0

    klass = classdata.load(out)
    student = klass.students[0]
    student.row = LateRow(**{**student.row.model_dump(), "penalty_percent": 10}, late_days=1.5)
    assert student.late == {"late_days": 1.5, "penalty_percent": 10} and not klass.students[1].late
    assert classdata.glance(klass)["late"] == 1
    said = feedback.markdown(student, "Lab", ["apply_rope"])
    assert "- late days: 1.5\n" in said and "- penalty percent: 10.0\n" in said


def test_quiz_panel(out, lab2):
    quiz = out / "quiz-responses.csv"
    quiz.write_text(RESPONSES)
    klass = classdata.load(out)
    classdata.read_quiz(klass, load_quiz(lab2.quiz), quiz)
    table = {q.id: (right, answered, wrong) for q, right, answered, wrong in classdata.quiz_questions(klass)}
    assert table["table-size"] == (1, 3, [("12", 2)])
    assert table["order"] == (1, 3, [("a, b", 1), ("(no answer)", 1)])
    assert classdata.glance(klass)["lesson complete (lab and quiz)"] == 1     # student000: lab and quiz passed
    page = write_report(out).read_text()                                    # found in OUT
    assert "Lesson test" in page and "12 (2)" in page


def test_experiment_panel_plots_the_class_against_the_reference(out):
    page = write_report(out).read_text()
    assert "loss gap: the class (dots) and the reference" in page and "accuracy rope: the class" in page
    assert page.count("<circle") == 8 and "the reference: 0.96, 0.95, 0.95" in page


def test_report_command(out, capsys):
    (out / "report.html").unlink(missing_ok=True)
    assert main(["report", str(out)]) == 0 and (out / "report.html").is_file()
    assert main(["report", str(out / "nowhere")]) == 2
    assert "no batch's summary.json" in capsys.readouterr().out


# -- in a real browser ------------------------------------------------------------------------------
HARNESS = """<!DOCTYPE html><html><body><iframe id="f" src="report.html" style="width:%dpx;height:900px"></iframe>
<pre id="result"></pre><script>
window.addEventListener("load", function () {
  var d = document.getElementById("f").contentDocument, out = {plots: [], sort: null};
  d.querySelectorAll("svg.plot").forEach(function (svg) {
    var box = svg.getBoundingClientRect(), drawn = 0;
    svg.querySelectorAll(".mark").forEach(function (m) { var b = m.getBBox(); if (b.width || b.height) drawn++; });
    out.plots.push({title: svg.querySelector("title").textContent, width: box.width, height: box.height, drawn: drawn});
  });
  var tables = d.querySelectorAll("table.sortable"), table = tables[tables.length - 1];
  var th = table.querySelectorAll("thead th")[2];
  th.querySelector("button").click(); th.querySelector("button").click();
  out.sort = {state: th.getAttribute("aria-sort"), scores: Array.prototype.map.call(table.tBodies[0].rows,
    function (r) { return parseFloat(r.children[2].getAttribute("data-sort")); })};
  document.getElementById("result").textContent = JSON.stringify(out);
});
</script></body></html>"""


def chromium(*args, timeout=120):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", *args], capture_output=True, text=True, timeout=timeout)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(not CHROMIUM, reason="no Chromium here (.ci/run installs it: apt-get install chromium)")
def test_page_in_headless_chromium(out, tmp_path):
    (out / "quiz-responses.csv").write_text(RESPONSES)
    write_report(out)
    (out / "harness.html").write_text(HARNESS % 1000)
    run = chromium("--allow-file-access-from-files", "--dump-dom", (out / "harness.html").as_uri())
    assert ":CONSOLE" not in run.stderr, run.stderr            # no console message: no script error
    found = json.loads(re.search(r'<pre id="result">(.*?)</pre>', run.stdout, re.S).group(1).replace("&amp;", "&"))
    titles = " | ".join(plot["title"] for plot in found["plots"])
    assert all(t in titles for t in ("Scores", "Students per function", "Outcomes per check", "Answers per question",
                                     "loss gap", "accuracy rope")), titles
    for plot in found["plots"]:
        assert plot["width"] > 100 and plot["height"] > 20 and plot["drawn"] > 0, plot
    assert found["sort"]["state"] == "descending" and found["sort"]["scores"] == sorted(found["sort"]["scores"])[::-1]
    artifacts = Path(os.environ.get("GRADER_ARTIFACTS", tmp_path / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    for name, size in (("report-desktop.png", "1280,4000"), ("report-phone.png", "390,6000")):
        chromium(f"--screenshot={artifacts / name}", f"--window-size={size}", (out / "report.html").as_uri())
        assert (artifacts / name).stat().st_size > 10_000
        print(f"screenshot: {artifacts / name}")
