"""A notebook uploaded to Gradescope grades as the .py files of the same work do, in the bundle as
Gradescope runs it (tests/instructor/test_gradescope_container.py's container harness)."""
import os
import platform

import pytest
from test_gradescope_container import ROOT, autograder, files_of, run_autograder  # noqa: F401 (a fixture)
from test_notebook_grading import as_notebook

pytestmark = [pytest.mark.skipif(os.getuid() != 0, reason="Gradescope runs its autograder as root"),
              pytest.mark.skipif(platform.machine() != "x86_64", reason="tests/container.py's filter is x86_64's"),
              pytest.mark.slow]


@pytest.mark.parametrize("name", ["reference", "mistakes_a"])
def test_an_uploaded_notebook_scores_what_its_py_files_score(autograder, name, tmp_path):  # noqa: F811
    folder = ROOT / "reference" / "lab2" if name == "reference" else ROOT / "tests" / "submissions" / name
    as_py, _ = run_autograder(autograder, files_of(folder))
    notebook = as_notebook(folder, tmp_path / "lab2.ipynb")
    as_ipynb, _ = run_autograder(autograder, {"lab2.ipynb": notebook.read_bytes()})
    assert as_ipynb.score == as_py.score
    assert [(t.name, t.score) for t in as_ipynb.tests] == [(t.name, t.score) for t in as_py.tests]
