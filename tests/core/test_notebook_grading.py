""".ipynb forms of the project's submissions grade exactly as their .py folders: singly, in a
batch, through the Gradescope bundle (tests/instructor/test_gradescope_container.py's harness, slow tier).
Each notebook is made here from its folder: a magic and a shell line first, each file a cell,
then a cell of top-level training, plotting and printing, which grading never runs."""
import csv
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.core.request import Device, Selection
from grader.instructor.batch import ClassRequest, grade_class
from grader.instructor.workers import Plan, grade_all

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = ROOT / "tests" / "submissions"
PARTS = ["positions", "invariance"]     # the experiments' trainings are graded in the slow tier
TOP_LEVEL = """for step in range(1000):                 # never run by grading
    print("step", step)
model = build_model(Config(pos="rope"), seed=0)
train(model, "lookback", seed=0)
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
print(rope_frequencies(8, 4))
"""
# Top-level code the .py form runs at import and its notebook form never does: their grades differ
# by design (the notebook's functions are graded, without what the statements did)
RUNS_AT_IMPORT = {"crash_exit": "sys.exit at import: its .py file never imports; the notebook's functions are graded",
                  "hundred_spinners": "100 processes at import: minutes of a 2-core machine; the attack is the .py's"}


def as_notebook(folder, path):
    """The notebook form of a submission folder, written to `path`."""
    cells = [new_markdown_cell("# Lab 2, my work"), new_code_cell("%matplotlib inline\n!nvidia-smi\nimport torch")]
    for file in sorted(Path(folder).glob("*.py")):
        cells += [new_markdown_cell(f"## {file.name}"), new_code_cell(file.read_text())]
    cells.append(new_code_cell(TOP_LEVEL))
    nbformat.write(new_notebook(cells=cells), path)
    return path


def scores(results):
    return {(c.test, c.name): (c.score, c.points) for c in results.checks}


def same_grade(grade_lab2, name, tmp_path, parts=PARTS):
    folder = ROOT / "reference" / "lab2" if name == "reference" else SUBMISSIONS / name
    as_py = grade_lab2(folder, parts)
    as_notebook_ = grade_lab2(as_notebook(folder, tmp_path / f"{name}.ipynb"), parts)
    assert scores(as_notebook_) == scores(as_py), name
    assert as_notebook_.score == as_py.score
    return as_py, as_notebook_


@pytest.mark.parametrize("name", ["reference", "mistakes_a", "syntax_error"])
def test_a_notebook_scores_what_its_py_folder_scores(grade_lab2, name, tmp_path):
    as_py, as_notebook_ = same_grade(grade_lab2, name, tmp_path)
    if name == "syntax_error":           # said in the notebook's own terms
        assert any("cell 4, line 6" in p for p in as_notebook_.problems), as_notebook_.problems
    assert any("top-level code" in p for p in as_notebook_.problems)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.name for p in SUBMISSIONS.iterdir() if p.is_dir()
                                        and p.name not in RUNS_AT_IMPORT))
def test_every_submission_as_a_notebook_scores_what_its_py_folder_scores(grade_lab2, name, tmp_path):
    same_grade(grade_lab2, name, tmp_path, parts=())


POSITIONS_ON_CPU = ClassRequest(Plan(Device.CPU, Selection(("positions",))), workers=1)


@pytest.mark.slow
def test_a_class_of_notebooks_grades_as_the_class_of_folders(lab2, tmp_path, capsys):
    from rich.console import Console

    names = ["reference", "mistakes_b", "syntax_error"]          # graded on positions.py: a class in seconds
    folders, notebooks = tmp_path / "folders", tmp_path / "notebooks"
    notebooks.mkdir()
    for number, name in enumerate(names):
        source = ROOT / "reference" / "lab2" if name == "reference" else SUBMISSIONS / name
        (folders / name).mkdir(parents=True)
        for file in source.glob("*.py"):
            (folders / name / file.name).write_bytes(file.read_bytes())
        as_notebook(source, notebooks / f"{name}_{1000 + number}_{2000 + number}_lab2.ipynb")   # Canvas's names
    console = Console(file=open(tmp_path / "log", "w"))
    rows = {}
    for kind, folder in (("py", folders), ("ipynb", notebooks)):
        grade_class(lab2, folder, tmp_path / f"out-{kind}", console, POSITIONS_ON_CPU, backend=grade_all)
        with open(tmp_path / f"out-{kind}" / "grades.csv") as file:
            rows[kind] = [(r["student"], r["status"], r["score"], r["max_score"]) for r in csv.DictReader(file)]
    assert rows["ipynb"] == rows["py"]
    again = grade_class(lab2, notebooks, tmp_path / "out-ipynb", console, POSITIONS_ON_CPU)
    assert again.graded_now == 0              # unchanged notebooks: the resume cache keeps every grade


def test_forbid_reads_a_notebooks_functions_and_says_the_cell_and_line(zygote, tmp_path):
    from grader.core.request import Device, Request, Selection
    from grader.core.runner import grade
    from grader.readers.manifest import find_lab

    lab = find_lab(ROOT / "tests" / "labs" / "forbid")
    cells = [new_code_cell("import torch"),
             new_code_cell("def softmax(x):\n    return torch.softmax(x, -1)\nprint(softmax(torch.ones(2)))")]
    path = tmp_path / "norm.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    zygote.reset()
    results = grade(Request(lab, path, Device.CPU, Selection(("softmax",))), zygote)
    [check] = results.checks
    assert check.status == "failed" and "cell 2, line 2 uses torch.softmax" in check.message, check.message
