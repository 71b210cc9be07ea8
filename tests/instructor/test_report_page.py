"""The class report page and the learners' feedback, from made-up batch output (tests/synthetic_class.py):
what counts as failed, mistakes grouped by the mistake, hidden checks kept hidden, the sections in
the order an instructor reads them, the hardest checks first and the rest folded, plots whose claims
come from the data, a class that typed in the lesson and is not flagged, a self-contained page whose
links resolve; then the page measured in headless Chromium at 1280 and 390 px, with screenshots."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest
from synthetic_class import lesson_class, make_class

from grader.instructor.page import classdata, feedback, write_report
from grader.instructor.records import BatchRow, BatchSummary
from grader.learner.cli import main
from grader.quiz.model import load_quiz
from grader.readers.manifest import Lab

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"


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
    links = re.findall(r'href="([^#"][^"]*)"', page)
    assert links and all((out / unquote(href)).is_file() for href in links)
    assert all(f'id="{anchor}"' in page for anchor in re.findall(r'href="#([^"]+)"', page))
    assert all(f'href="students/student{i:03d}/feedback.html"' in page for i in range(10))
    assert page.count('<svg class="plot"') >= 5 and 'aria-sort=none' in page and 'aria-labelledby="c' in page


def test_feedback_keeps_hidden_checks_hidden(out):
    write_report(out)
    folder = out / "students" / "student001"                       # the swapped-cos-sin student
    for name in ("feedback.html", "feedback.md"):
        text = (folder / name).read_text()
        assert "rotates pairs" in text and "saw others" in text and "debug: x.shape" in text
        assert "hidden detail" not in text and "secret hint" not in text and "any shape" not in text
        assert "2 hidden check(s): 2 / 4 points" in text and "student006" not in text
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
    assert "loss gap (nats): the class and the reference" in page and "rope accuracy (fraction right): the" in page
    assert page.count('<circle class="mark"') == 8 and "the reference: 0.96, 0.95, 0.95" in page


def test_report_command(out, capsys):
    (out / "report.html").unlink(missing_ok=True)
    assert main(["report", str(out)]) == 0 and (out / "report.html").is_file()
    assert main(["report", str(out / "nowhere")]) == 2
    assert "no batch's summary.json" in capsys.readouterr().out


def test_sections_come_in_the_order_an_instructor_reads_them(out):
    page = write_report(out).read_text()
    order = [page.index(f'<h2 id="{key}">') for key in ("class", "students", "checks", "mistakes", "experiments",
                                                         "similar")]
    assert order == sorted(order) and all(f'href="#{key}"' in page for key in ("class", "students", "similar"))


def test_the_histogram_has_a_bin_for_full_marks(out):
    summary = BatchSummary.model_validate_json((out / "summary.json").read_text())
    full = summary.histogram[-1]
    assert (full.low, full.high, full.students) == (100, 100, 2)      # student000 and student005: all passed
    assert summary.histogram[-2].students == 2 and len(summary.histogram) == 11     # 93%: not full marks


def test_the_hardest_ten_checks_come_first_the_rest_folded(out):
    page = write_report(out).read_text()
    hardest = page[page.index('<h2 id="checks">'):page.index('<h2 id="mistakes">')]
    first = hardest[:hardest.index("<details>")]
    assert first.count("<tr>") == 1 + 10 and "The other 2 checks" in hardest
    assert first.index("rotates pairs") < first.index("cos and sin")      # 67% passed before 100%
    assert "other bases [base 10]" not in first and "other bases [base 10]" in hardest   # variants: folded


def test_experiment_plots_draw_the_claim_and_the_axes_the_data_names(lab2, tmp_path):
    out = tmp_path / "out"
    make_class(lab2, out, 3)
    page = write_report(out).read_text()
    assert "the lab&#x27;s claim: &gt; 1<" in page and "the lab&#x27;s claim: &gt; 0.8<" in page
    assert ">loss gap (nats)<" in page and ">evaluation length (tokens), trained at 24<" in page
    for record in (out / "students").glob("*/graded.json"):
        record.write_text(record.read_text().replace('"above loss gap (nats)":1.0', '"above loss gap (nats)":1.7'))
    assert "the lab&#x27;s claim: &gt; 1.7<" in write_report(out).read_text()    # from the data, not the page


# -- similarity, on a class that typed in the lesson ------------------------------------------------
@pytest.fixture
def lesson(lab2, tmp_path):
    """OUT of twelve who each typed in the lesson's code; learners 3 and 8 share their own invariance.py."""
    out = tmp_path / "out"
    names = make_class(lab2, out, 12, lesson_class(lab2, tmp_path / "typed"))
    (out / "quiz-responses.csv").write_text("student,table-size,order,methods,rope-score,tied\n" + "".join(
        f"{name},{QUIZ_ROWS[i % len(QUIZ_ROWS)]}\n" for i, name in enumerate(names)))
    return out


QUIZ_ROWS = ["38.6,a b e,d,m - n,c", "12,a b,d,m - n,c", "38.6,a b e,a,m - n,c", "38.6,,d,n - m,c"]


def test_the_lesson_typed_in_is_not_similar_copied_code_is_one_cluster(lesson):
    page = write_report(lesson).read_text()
    similar = page[page.index('<h2 id="similar">'):]
    assert similar.count('<div class="cluster">') == 1 and "Cluster 1: 2 students, 1 function(s) alike" in similar
    assert 'href="students/student003/feedback.html"' in similar and "student008" in similar
    assert "apply_rope" not in similar and "rope_frequencies" not in similar
    assert "<table class=\"diff\">" in similar and "largest = max(largest, diff)" in similar


def test_given_code_that_is_not_there_is_named_on_the_page(lab2, lesson):
    missing = Lab(lab2.name, lab2.folder, lab2.manifest.model_copy(update={"given_code": ["given_code/gone.py"]}))
    page = write_report(lesson, lab=missing).read_text()
    assert "the given code not found here: gone.py" in page
    assert "apply_rope" in page[page.index("Matches the reference"):]     # the lesson's code counted as theirs


# -- in a real browser ------------------------------------------------------------------------------
# Opens report.html in an iframe of each width and measures it as shown: what sticks out to the
# right, where the students' table starts, how tall the page is, each plot's axis names and marks.
HARNESS = """<!DOCTYPE html><html><body style="margin:0"><iframe id="f" src="report.html"
style="width:%(width)dpx;height:900px;border:0"></iframe><pre id="result"></pre><script>
window.addEventListener("load", function () {
  var w = document.getElementById("f").contentWindow, d = w.document, out = {plots: [], wide: [], rows: []};
  var inScroll = function (el) { return el.closest(".scroll"); };
  d.querySelectorAll("body *").forEach(function (el) {
    var box = el.getBoundingClientRect();
    if (box.width && (box.right > w.innerWidth + 1 || box.left < -1) && !inScroll(el) && !el.closest("svg"))
      out.wide.push(el.tagName + " " + (el.textContent || "").slice(0, 40));
  });
  d.querySelectorAll(".scroll").forEach(function (el) {
    if (el.getBoundingClientRect().right > w.innerWidth + 1) out.wide.push("scroll box " + el.textContent.slice(0, 40));
  });
  d.querySelectorAll("svg.plot").forEach(function (svg) {
    var box = svg.getBoundingClientRect(), drawn = 0, outside = [];
    svg.querySelectorAll(".mark").forEach(function (m) { var b = m.getBBox(); if (b.width || b.height) drawn++; });
    svg.querySelectorAll("text").forEach(function (t) {
      var b = t.getBoundingClientRect();
      if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1)
        outside.push(t.textContent);
    });
    out.plots.push({title: svg.querySelector("title").textContent, width: box.width, drawn: drawn, outside: outside,
                    axes: Array.prototype.map.call(svg.querySelectorAll("text.axis"), function (t) {
                      return t.textContent; })});
  });
  var students = d.querySelector("table.students"), scroll = students.closest(".scroll");
  out.studentsTop = d.getElementById("students").getBoundingClientRect().top + w.scrollY;
  out.studentsClipped = students.scrollWidth > scroll.clientWidth + 1;
  students.querySelectorAll("tbody tr").forEach(function (r) { out.rows.push(r.getBoundingClientRect().height); });
  out.height = d.documentElement.scrollHeight;
  out.scrollWidth = d.documentElement.scrollWidth;
  var th = students.querySelectorAll("thead th")[2];
  th.querySelector("button").click(); th.querySelector("button").click();
  out.sort = {state: th.getAttribute("aria-sort"), scores: Array.prototype.map.call(students.tBodies[0].rows,
    function (r) { return parseFloat(r.children[2].getAttribute("data-sort")); })};
  document.getElementById("result").textContent = JSON.stringify(out);
});
</script></body></html>"""
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args, timeout=120):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", *args], capture_output=True, text=True, timeout=timeout)


def measure(out, width):
    (out / "harness.html").write_text(HARNESS % {"width": width})
    run = chromium("--allow-file-access-from-files", f"--window-size={width + 20},1000", "--dump-dom",
                   (out / "harness.html").as_uri())
    assert ":CONSOLE" not in run.stderr, run.stderr            # no console message: no script error
    return json.loads(re.search(r'<pre id="result">(.*?)</pre>', run.stdout, re.S).group(1).replace("&amp;", "&"))


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM, reason="no Chromium here (.ci/run installs it: apt-get install chromium)")
def test_page_in_headless_chromium_at_a_desk_and_on_a_phone(lesson, tmp_path):
    write_report(lesson)
    artifacts = Path(os.environ.get("GRADER_ARTIFACTS", tmp_path / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    for width, name in ((1280, "report-1280.png"), (390, "report-390.png")):
        found = measure(lesson, width)
        assert not found["wide"] and found["scrollWidth"] <= width, (width, found["wide"])
        assert len(found["plots"]) >= 5
        for plot in found["plots"]:
            assert plot["width"] > 200 and plot["drawn"] > 0 and not plot["outside"], (width, plot)
            assert len(plot["axes"]) == 2 and all(plot["axes"]), (width, plot)     # both axes named
        assert max(found["rows"]) < (48 if width == 1280 else 64), (width, found["rows"])    # no blank rows
        assert found["sort"]["state"] == "descending"
        assert found["sort"]["scores"] == sorted(found["sort"]["scores"], reverse=True)
        if width == 1280:
            assert found["studentsTop"] < 2000 and not found["studentsClipped"], found
            assert found["height"] < 4 * 1000, found["height"]          # about four screens, unfolded
        chromium(f"--screenshot={artifacts / name}", f"--window-size={width},{found['height']}",
                 (lesson / "report.html").as_uri())
        assert (artifacts / name).stat().st_size > 10_000
        print(f"screenshot: {artifacts / name} ({width} x {found['height']} px)")


def test_a_learner_is_told_a_regrade_without_the_graders_reasons():
    """A grading the grader could not finish is a row to regrade whose detail is its faults' words,
    for the instructor: those of any check, a hidden one's or one fed the course's seed (the judge's
    own runs name their seed). A learner's feedback says only that it will be graded again."""
    fault = "not graded: the grader's own work (lab2-recipe('learned', 'lookback', 5, 'cpu')) failed: killed"
    row = BatchRow(student="ada", status="regrade", detail=fault)
    student = classdata.Student(name="ada", row=row, results=None)
    for page in (feedback.html(student, "Lab", ["apply_rope"]), feedback.markdown(student, "Lab", ["apply_rope"])):
        assert "lab2-recipe" not in page and "Status: regrade (the grader could not grade it" in page


def test_a_long_hint_shows_once_and_is_referred_to_after():
    from grader.core.results import Check, LabResults

    hint = "hint: the angle of position p is p times the frequency, not p plus it; " * 2
    checks = [Check(name=f"angles {i}", test=f"visible/t.py::test_{i}", tags=["f"], points=1, score=0,
                    status="failed", visibility="visible", hint=hint, message=f"expected 1, saw {i}\n{hint}")
              for i in range(5)]
    results = LabResults(lab="l", title="L", submission="", device="cpu", sandbox="process", execution_time=0,
                         checks=checks, done_when=[])
    student = classdata.Student("ada", BatchRow(student="ada", status="graded", score=0, max_score=5), results)
    for text in (feedback.markdown(student, "L", ["f"]), feedback.html(student, "L", ["f"])):
        assert text.count("not p plus it") == 2 and text.count("the same hint as for") == 4       # once: the hint
        assert all(f"saw {i}" in text for i in range(5))                                          # each its own


def test_two_charts_never_share_a_title():
    from grader.instructor.page.report import _titles

    words = [["loss", "gap", "dots", "a::1"], ["loss", "gap", "curves", "a::1"], ["loss", "acc", "dots", "b::2"],
             ["loss", "acc", "dots", "c::3"], ["rope", "acc", "dots", "d::4"]]
    titles = _titles(words)
    assert titles == ["loss: gap: dots", "loss: gap: curves", "loss: acc: dots: b::2", "loss: acc: dots: c::3",
                      "rope"]
    assert _titles([["a", "x"], ["b", "x"]]) == ["a", "b"]
