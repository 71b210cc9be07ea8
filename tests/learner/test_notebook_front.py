"""grader/notebook.py in-process: a check of the cells a kernel ran (given here as `history`), with
the public checks only; what it says where it cannot grade; the quiz from a cell."""
from pathlib import Path

import pytest

from grader import notebook
from grader.quiz import progress

ROOT = Path(__file__).resolve().parents[2]
POSITIONS = (ROOT / "reference" / "lab2" / "positions.py").read_text()


@pytest.fixture(scope="module", autouse=True)
def warm_zygote():
    yield
    grader = notebook._warm.pop("grader", None)
    if grader is not None:
        grader.close()


def test_a_check_grades_the_cells_as_run_with_public_checks_only(capsys, state):
    wrong = POSITIONS.replace("out1 = x1 * cos - x2 * sin", "out1 = x1 * cos + x2 * sin")
    results = notebook.check("lab2", "positions.py", history=["import torch", wrong, POSITIONS,
                                                             'notebook.check("lab2", "positions.py")'])
    assert results.score == sum(t.max_score for t in results.tests) > 0     # the last definition, as the kernel has it
    assert {t.visibility for t in results.tests} == {"visible"}    # the course's hidden checks never run here
    shown = capsys.readouterr().out
    assert "0 hidden" in shown and "top-level code" not in shown    # the check cell is the notebook's own


def test_a_stub_says_not_implemented_yet_and_a_crash_is_the_childs(capsys, state):
    crash = "import os\ndef rope_frequencies(head_dim, seq_len, base=10000.0, device='cpu'):\n    os._exit(3)\n"
    results = notebook.check("lab2", "positions.py", history=[crash])
    assert results.score == 0 and {t.status for t in results.tests} == {"failed"}
    crashed = [t.output for t in results.tests if t.tags[0] == "rope_frequencies"]
    assert crashed and all("not implemented" not in output for output in crashed)
    assert "not implemented yet" in capsys.readouterr().out                 # apply_rope: its stub


def test_a_check_says_what_it_did_not_run_and_where_in_the_kernels_cells(capsys, state):
    cell = ("import torch\nprint('top level')\ndef rope_frequencies(head_dim, seq_len, base=10000.0, device='cpu'):\n"
            "    raise ValueError('boom')\n")
    results = notebook.check("lab2", "rope_frequencies", history=[cell])
    assert results.score == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "In [1] of the kernel's cells holds top-level code" in shown     # the reader's sentence, from its header
    assert "at In [1], line 4, in rope_frequencies" in shown                    # where, in the kernel's terms


def test_what_cannot_be_graded_gets_one_sentence(capsys):
    assert notebook.check("lab2", "rope_frequencies") is None             # not in a kernel
    assert "outside one, grade files with python grade.py" in capsys.readouterr().out.replace("\n", " ")
    assert notebook.check("lab2", "rope_frequencies", history=[POSITIONS], device="cuda") is None \
        or __import__("torch").cuda.is_available()
    assert notebook.verify(ROOT / "missing.ipynb") is None
    assert "is not on this machine's disk" in capsys.readouterr().out


def test_the_quiz_runs_from_a_cell_and_keeps_what_was_answered(monkeypatch, capsys, state):
    answers = iter(["38.6"])

    def typed(*_):
        try:
            return next(answers)
        except StopIteration:
            raise EOFError from None
    monkeypatch.setattr("builtins.input", typed)
    assert notebook.quiz("lab2") is None                    # stopped at the end of input: nothing lost
    said = capsys.readouterr().out
    assert "Question 1" in said or "1/5" in said or "1 of 5" in said, said[:500]
    assert progress.progress_file("lab2").is_file()


def test_a_hostile_notebook_runs_nothing_outside_the_sandbox(tmp_path, capsys, state):
    """Top-level code that would write a file, a cell that redefines __import__, a function in a
    %%capture cell: verify() grades the saved file, and none of its top-level code ran anywhere."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    marker = tmp_path / "ran"
    cells = [f"open({str(marker)!r}, 'w').write('top level ran')",
             "import builtins\nbuiltins.__import__ = None\n__import__ = print",
             "%%capture\n" + POSITIONS]
    path = tmp_path / "lab2.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), path)
    results = notebook.verify(path, lab="lab2")
    assert not marker.exists()
    positions = [t for t in results.tests if t.tags[0] in ("rope_frequencies", "apply_rope")]
    assert positions and all(t.status == "passed" for t in positions)     # the %%capture cell's functions
    said = capsys.readouterr().out.replace("\n", " ")
    assert "cells 1 and 2 of lab2.ipynb hold top-level code" in " ".join(said.split())


@pytest.mark.slow
def test_the_experiments_run_from_a_cell_with_progress_in_it(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    experiments = (ROOT / "reference" / "lab2" / "experiments.py").read_text()
    assert notebook.check("lab2", experiments=True, history=[POSITIONS, experiments]) == 0
    shown = capfd.readouterr().out
    assert "measure_loss_gap" in shown or "loss" in shown


def test_where_bubblewrap_cannot_start_checks_run_in_a_plain_child_and_say_so(monkeypatch, capsys, state):
    from grader.judge import launchers

    monkeypatch.setattr(launchers, "bubblewrap_works", lambda: False)
    warm = notebook._warm.pop("grader", None)
    try:
        notebook.start("lab2")
        assert "no OS sandbox here: bubblewrap cannot start" in capsys.readouterr().out
        results = notebook.check("lab2", "rope_frequencies", history=[POSITIONS])
        assert results.extra_data["sandbox"] == "process" and results.score == sum(t.max_score for t in results.tests)
        assert "no OS sandbox" in capsys.readouterr().out
    finally:
        plain = notebook._warm.pop("grader", None)
        if plain is not None:
            plain.close()
        if warm is not None:
            notebook._warm["grader"] = warm
