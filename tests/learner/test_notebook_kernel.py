"""The released lab2.ipynb in a real kernel (nbclient, ipykernel): with its stubs, with the reference
pasted into its stub cells, with a wrong apply_rope; and its install cell, which plans no torch where
torch is present. The experiments' and the quiz's cells (training; a learner's typed answers) are
tried in tests of their own, not here."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.instructor.release import release
from grader.readers.manifest import find_lab

nbclient = pytest.importorskip("nbclient")
ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "lab2"
TIMED = """import time
started = time.monotonic()
second = notebook.check("lab2", "apply_rope")
print("SECOND CHECK", round(time.monotonic() - started, 3), second.score, sum(t.max_score for t in second.tests))"""


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    out = tmp_path_factory.mktemp("handout")
    release(find_lab("lab2"), out)
    return out


def run(handout, notebook, skip=("experiments=True", "notebook.quiz(")):
    """Execute `notebook` in a fresh kernel started in the handout, as a learner runs it top to
    bottom (less the cells of `skip`), after saving it as lab2.ipynb; {cell source: its text out}."""
    notebook.cells = [c for c in notebook.cells if not any(s in c.source for s in skip)]
    nbformat.write(notebook, handout / "lab2.ipynb")
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(handout)}})
    client.execute()
    return {cell.source: "\n".join(_text(o) for o in cell.get("outputs", [])) for cell in notebook.cells
            if cell.cell_type == "code"}


def _text(output):
    if output.get("output_type") == "display_data":         # rich's report: HTML, and text beside it
        assert "text/html" in output.get("data", {})
    if output.get("output_type") == "stream":
        return output.get("text", "")
    if output.get("output_type") == "error":
        return "\n".join(output.get("traceback", []))
    return output.get("data", {}).get("text/plain", "")


def released(handout):
    return nbformat.read(handout / "lab2-released.ipynb", as_version=4) if (handout / "lab2-released.ipynb").exists() \
        else _keep(handout)


def _keep(handout):
    (handout / "lab2-released.ipynb").write_bytes((handout / "lab2.ipynb").read_bytes())
    return nbformat.read(handout / "lab2.ipynb", as_version=4)


def with_reference(notebook, changes=None):
    """The notebook with each stub cell replaced by the reference's function, and each file's
    imports cell by the reference's imports and helpers (`changes`: {old: new} in its code)."""
    functions, helpers = {}, {}
    for file in find_lab("lab2").manifest.student_files:
        source = (REFERENCE / file).read_text()
        for old, new in (changes or {}).items():
            source = source.replace(old, new)
        tree = ast.parse(source)
        for statement in tree.body:
            text = ast.get_source_segment(source, statement)
            if isinstance(statement, ast.FunctionDef) and not statement.name.startswith("_"):
                functions[statement.name] = text
            elif not isinstance(statement, ast.Expr):
                helpers.setdefault(file, []).append(text)
    for cell in notebook.cells:
        name = next((n for n in functions if cell.source.startswith(f"def {n}(")), None)
        if cell.cell_type == "code" and name:
            cell.source = functions[name]
    for cell, after in zip(notebook.cells, notebook.cells[1:]):
        name = next((n for n in functions if after.source.startswith(f"def {n}(")), None)
        if cell.cell_type == "code" and name and cell.source.split("\n")[0].startswith(("import", "from")):
            file = find_lab("lab2").functions[name]
            cell.source = "\n".join(helpers[file])
    return notebook


def check_cell(outputs, function):
    return outputs[f'notebook.check("lab2", "{function}")']


@pytest.mark.slow
def test_the_released_notebook_with_its_stubs_says_not_implemented_yet(handout):
    outputs = run(handout, released(handout))
    assert "not implemented yet" in check_cell(outputs, "rope_frequencies")
    whole = outputs['notebook.check("lab2")']
    assert "0 hidden" in whole and "course's grading adds hidden checks" in whole.replace("\n", " ")


@pytest.mark.slow
def test_the_reference_pasted_into_the_stub_cells_passes_every_public_check(handout, capsys):
    notebook = with_reference(released(handout))
    notebook.cells.append(nbformat.v4.new_code_cell(TIMED))
    outputs = run(handout, notebook)
    for function in find_lab("lab2").functions:
        assert "not implemented" not in check_cell(outputs, function) and "✗" not in check_cell(outputs, function)
    verified = outputs['notebook.verify("lab2.ipynb")']
    assert "✗" not in verified and "lab2.ipynb" in verified
    second = outputs[TIMED]
    with capsys.disabled():          # measured, not asserted: a second check in one kernel (docs/figures.md)
        print(f"\n{second.strip()}")
    seconds, score, top = second.split("SECOND CHECK")[1].split()
    assert float(score) == float(top) > 0 and float(seconds) < 30


@pytest.mark.slow
def test_a_wrong_apply_rope_fails_its_checks_in_the_notebooks_terms(handout):
    wrong = {"out1 = x1 * cos - x2 * sin": "out1 = x1 * cos + x2 * sin"}
    notebook = with_reference(released(handout), wrong)
    outputs = run(handout, notebook, skip=("experiments=True", "notebook.quiz(", 'notebook.check("lab2")',
                                           "measure_loss_gap\")", "extrapolation_runs\")", "verify("))
    assert "✗" in check_cell(outputs, "apply_rope")
    assert "✗" not in check_cell(outputs, "rope_frequencies")


def test_the_install_cell_plans_no_torch_where_torch_is_present(handout):
    requirements = (handout / "requirements-notebook.txt").read_text()
    assert "torch" not in requirements.replace("(Colab's stays)", "").split("\n", 1)[1]
    plan = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--report", "-",
                           "-q", "-r", str(handout / "requirements-notebook.txt")],
                          capture_output=True, text=True, timeout=120)
    assert plan.returncode == 0, plan.stderr
    planned = [item["metadata"]["name"] for item in json.loads(plan.stdout or "{}").get("install", [])]
    assert not [name for name in planned if name.lower().startswith("torch")]


@pytest.mark.slow
@pytest.mark.parametrize("where", ["in the handout", "on colab"])
def test_the_install_cell_is_safe_to_run_twice(handout, tmp_path, where):
    """Run twice in a plain Python: in the handout it finds it; elsewhere (Colab) it fetches the
    handout zip from its link (here a file: URL) once. Nothing new is installed; the lab starts each time."""
    notebook = nbformat.read(handout / "lab2.ipynb", as_version=4)
    install = next(c.source for c in notebook.cells if "HANDOUT =" in c.source)
    offline = install.replace('"-q",', '"-q", "--no-index",')           # nothing to fetch: all is installed
    cwd = handout if where == "in the handout" else tmp_path
    if where == "on colab":
        offline = offline.replace('HANDOUT = ""', f'HANDOUT = "{(handout / "lab2-handout.zip").as_uri()}"')
    script = tmp_path / "install.py"
    script.write_text(offline + "\n" + offline)
    done = subprocess.run([sys.executable, "-I", str(script)], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("checks run in a separate process") == 2
    assert (tmp_path / "lab2-handout" / "grader" / "notebook.py").is_file() == (where == "on colab")
    assert not (handout / "lab2-handout").exists()
