"""Gradescope shows students their total by default: the hidden checks are one visible line with
their points and no detail (Gradescope hides the total while any test is hidden); lab.yaml's
score_visibility keeps them hidden and the total as it says, and `export` says which is in force."""
from grader.core.results import Check, LabResults
from grader.instructor.gradescope import students_total, total_in_words


def graded():
    checks = [Check(name=f"check {i}", test=f"t.py::{i}", tags=["f"], points=2, score=score, status=status,
                    visibility=level, message="expected 3, saw 4", hint="secret inputs")
              for i, (level, score, status) in enumerate([("visible", 1, "failed"), ("hidden", 2, "passed"),
                                                          ("hidden", 0, "failed")])]
    return LabResults(lab="lab", title="A lab", submission="s", device="cpu", sandbox="process",
                      execution_time=1, checks=checks, done_when=[])


def test_by_default_the_hidden_checks_are_one_visible_line_and_the_total_shows():
    report = students_total(graded(), None)
    assert report.output.splitlines()[0] == "A lab: 3/6 points" and report.visibility == "visible"
    assert [t.visibility for t in report.tests] == ["visible", "visible"]
    line = report.tests[-1]
    assert (line.name, line.score, line.max_score, line.status) == ("2 hidden checks", 2, 4, "failed")
    assert "secret" not in line.output and "expected" not in line.output
    assert report.score == 3 and [t.number for t in report.tests] == ["1", "2"]


def test_score_visibility_keeps_the_total_and_each_hidden_check_as_lab_yaml_says():
    report = students_total(graded(), "after_due_date")
    assert report.visibility == "after_due_date" and [t.visibility for t in report.tests].count("hidden") == 2
    assert "after due date" in total_in_words("after_due_date") and "see their total" in total_in_words(None)


def test_export_says_which_is_in_force(tmp_path, capsys, monkeypatch):
    from grader.instructor import gradescope
    from grader.learner.cli import main

    monkeypatch.setattr(gradescope, "export_gradescope", lambda lab, path, sandbox: ["setup.sh"])
    assert main(["export", "lab2", "--gradescope", str(tmp_path / "a.zip")]) == 0
    assert "total: students see their total" in " ".join(capsys.readouterr().out.split())
