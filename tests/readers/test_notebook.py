"""grader/readers/notebook.py: a notebook read as the lab's student files, never run; and the
containers that hold one (submissions.py): a notebook, a folder or zip of one, Canvas's names."""
import ast
import json
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader.core.submissions import list_submissions, notebook_student, read_submission, submission_files
from grader.readers import notebook as reader
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "lab2"


@pytest.fixture(scope="module")
def lab():
    return find_lab("lab2")


def notebook(*sources, outputs=()):
    cells = [new_markdown_cell("# Lab 2")] + [new_code_cell(s, outputs=list(outputs)) for s in sources]
    return nbformat.writes(new_notebook(cells=cells)).encode()


def reference_cells():
    return [(REFERENCE / name).read_text() for name in ("positions.py", "invariance.py", "experiments.py")]


def functions(source):
    return {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


def test_the_reference_as_cells_gives_each_file_its_functions_and_what_they_need(lab):
    found = reader.extract(lab, notebook("import torch\n%matplotlib inline\n!pip install nothing", *reference_cells(),
                                         "for step in range(10):\n    print(step)\nmodel = build_model(Config())"))
    assert set(found.files) == set(lab.manifest.student_files)
    for name, names in lab.manifest.student_files.items():
        source = found.files[name].decode()
        assert set(names) <= functions(source) <= set(names) | {"_run"}     # with its helper
        assert "print(step)" not in source and "%matplotlib" not in source
        compile(source, name, "exec")
    assert "from tasks import TRAIN_LEN, evaluate, train" in found.files["experiments.py"].decode()
    assert any("cell 6 of notebook.ipynb holds top-level code" in n for n in found.notes)


def test_the_last_definition_wins_and_a_missing_function_keeps_its_stub(lab):
    first = "import torch\ndef apply_rope(x, cos, sin):\n    return 1\n"
    second = "def apply_rope(x, cos, sin):\n    return 2\n"
    source = reader.extract(lab, notebook(first, second)).files["positions.py"].decode()
    assert "return 2" in source and "return 1" not in source
    assert "raise NotImplementedError" in source and "def rope_frequencies(" in source     # its stub


def test_constants_are_kept_and_computed_values_are_not(lab):
    cell = ("import math\nBASE = 10000.0\nHALF = BASE / 2\nscale = math.sqrt(2)\n"
            "def rope_frequencies(head_dim, seq_len, base=BASE, device='cpu'):\n    return HALF * scale\n")
    found = reader.extract(lab, notebook(cell))
    source = found.files["positions.py"].decode()
    assert "BASE = 10000.0" in source and "HALF = BASE / 2" in source and "scale =" not in source
    assert any("scale is defined only by an assignment of a computed value at the top level (cell 2, line 4)" in n
               for n in found.notes)


def test_a_local_name_is_not_taken_for_a_dropped_global(lab):
    cell = "model = make()\ndef is_permutation_invariant(attn, x, atol=1e-5):\n    model = attn\n    return model\n"
    assert not any("model is defined only" in n for n in reader.extract(lab, notebook(cell)).notes)


def test_cell_magics_python_bodies_are_read_and_others_are_not(lab):
    hidden = "%%capture\ndef apply_rope(x, cos, sin):\n    return 'captured'\n"
    shell = "%%writefile positions.py\ndef rope_frequencies(head_dim, seq_len, base=1.0, device='cpu'):\n    pass\n"
    found = reader.extract(lab, notebook(hidden, shell))
    source = found.files["positions.py"].decode()
    assert "return 'captured'" in source                                    # %%capture: Python, kept
    assert "base=1.0" not in source                                          # %%writefile: not Python
    assert any("cell 3 is a %%writefile cell" in n and "rope_frequencies" in n for n in found.notes)


def test_top_level_code_and_a_redefined_import_never_reach_a_file(lab):
    attack = ("import builtins, os\nos.system('touch /tmp/pwned')\nbuiltins.__import__ = print\n"
              "__import__ = print\ntorch.allclose = lambda *a, **k: True\n"
              "def is_permutation_invariant(attn, x, atol=1e-5):\n    return True\n")
    found = reader.extract(lab, notebook(attack))
    source = found.files["invariance.py"].decode()
    assert "os.system" not in source and "__import__" not in source and "allclose" not in source
    assert "import builtins" not in source                # not used by the function: not imported
    assert any("cell 2 of notebook.ipynb holds top-level code" in n for n in found.notes)


def test_a_function_only_a_loop_defines_stays_a_stub_and_says_so(lab):
    found = reader.extract(lab, notebook("if True:\n    def apply_rope(x, cos, sin):\n        return x\n"))
    assert found.files == {}
    assert any("apply_rope is defined inside an if block (cell 2, line 1)" in n for n in found.notes)


def test_a_cell_that_is_not_python_breaks_its_file_as_a_py_would_with_the_cell_and_line(lab, tmp_path):
    path = tmp_path / "work.ipynb"
    path.write_bytes(notebook("import torch", "def apply_rope(x, cos, sin):\n    return (x\n"))
    files, status, detail = read_submission(lab, path)
    assert status == "broken_code" and "cell 3, line 2" in detail, detail


def test_a_cell_that_does_not_parse_does_not_undo_an_earlier_definition(lab, tmp_path):
    path = tmp_path / "work.ipynb"      # as in a kernel: the cell with the error defines nothing
    path.write_bytes(notebook(reference_cells()[0], "def apply_rope(x, cos, sin):\n    return (x\n"))
    files, status, detail = read_submission(lab, path)
    assert status == "incomplete" and "cell 3 does not parse, so a kernel runs none of it: apply_rope is graded " \
        "as cell 2 defines it (line 12)" in detail, detail
    assert "return (x" not in files["positions.py"].decode()


def test_tracebacks_and_messages_are_said_in_cells_and_lines(lab):
    files = reader.extract(lab, notebook("import torch", "\n\ndef apply_rope(x, cos, sin):\n    return x\n")).files
    line = files["positions.py"].decode().split("\n").index("    return x") + 1
    assert reader.relocate(f"positions.py line {line}, in apply_rope", files) == "cell 3, line 4, in apply_rope"
    assert reader.relocate(f'File "/tmp/w/positions.py", line {line}', files) == "cell 3, line 4"
    assert reader.relocate("invariance.py line 3", files) == "invariance.py line 3"     # not from the notebook
    huge = "positions.py line " + "9" * 5000       # a student's message: no number past int()'s 4300 digits
    assert reader.relocate(huge, files) == huge


@pytest.mark.parametrize("data, said", [
    (b"{not json", "not valid JSON (line 1, column 2)"),
    (b'{"cells": 3}', "has no list of cells"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
    (json.dumps({"cells": [{"cell_type": "code", "source": "x"}] * 100_000, "nbformat": 4, "nbformat_minor": 5,
                 "metadata": {}}).encode(), "has 100000 cells; a notebook may have at most 5000"),
    (json.dumps({"nbformat": 3, "worksheets": [{"cells": 5}]}).encode(), "has no list of cells"),
    (notebook("def apply_rope(x, cos, sin):\n    return 1\n").replace(b"return 1", b'return \\"\\ud800\\"'),
     "cell 2's source is not text (it holds a lone surrogate"),
])
def test_a_notebook_that_cannot_be_read_gets_one_sentence(lab, data, said):
    with pytest.raises(reader.NotebookError, match=said.replace("(", r"\(").replace(")", r"\)")):
        reader.extract(lab, data, "work.ipynb")


def test_a_200_mb_output_is_refused_by_its_size_before_it_is_read(lab, tmp_path):
    path = tmp_path / "big.ipynb"
    with open(path, "w") as file:                 # a valid notebook, its one output 200 MB of text
        file.write('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", '
                   '"metadata": {}, "execution_count": 1, "source": "x = 1", "outputs": [{"output_type": '
                   '"stream", "name": "stdout", "text": "')
        for _ in range(200):
            file.write("a" * 2**20)
        file.write('"}]}]}')
    files, status, detail = read_submission(lab, path)
    assert status == "rejected" and "big.ipynb is 200.0 MiB; a notebook may have at most 32 MiB" in detail
    assert "clear its outputs" in detail


def test_outputs_change_nothing_extracted_so_the_resume_cache_keeps_its_grade(lab, tmp_path):
    one, two = tmp_path / "one.ipynb", tmp_path / "two.ipynb"
    one.write_bytes(notebook(*reference_cells()))
    two.write_bytes(notebook(*reference_cells(), outputs=[new_output("stream", name="stdout", text="loss 0.1\n")]))
    assert read_submission(lab, one) == read_submission(lab, two)


def test_a_folder_or_zip_holding_one_notebook_is_one_student(lab, tmp_path):
    data = notebook(*reference_cells())
    folder = tmp_path / "class"
    (folder / "ada" / "work").mkdir(parents=True)
    (folder / "ada" / "work" / "lab2.ipynb").write_bytes(data)
    (folder / "ada" / "work" / ".ipynb_checkpoints").mkdir()
    (folder / "ada" / "work" / ".ipynb_checkpoints" / "lab2-checkpoint.ipynb").write_bytes(b"old")
    with zipfile.ZipFile(folder / "grace.zip", "w") as archive:
        archive.writestr("lab2/lab2.ipynb", data)
    (folder / "linus_1234_56789_lab2.ipynb").write_bytes(data)
    (folder / "margaret_late_1235_56790_lab2-1.ipynb").write_bytes(data)
    subs = {sub.student: sub for sub in list_submissions(lab, folder)}
    assert set(subs) == {"ada", "grace", "linus", "margaret"}
    assert all(sub.status == "graded" and set(sub.files) == set(lab.manifest.student_files)
               for sub in subs.values()), [(s.student, s.status, s.detail) for s in subs.values()]


def test_two_notebooks_in_one_folder_are_not_guessed_between(lab, tmp_path):
    (tmp_path / "a.ipynb").write_bytes(notebook(*reference_cells()))
    (tmp_path / "b.ipynb").write_bytes(notebook(*reference_cells()))
    files, status, detail = read_submission(lab, tmp_path)
    assert status == "rejected" and "holds 2 notebooks (a.ipynb, b.ipynb) and no student file: keep one" in detail


def test_canvas_names_give_the_student():
    assert notebook_student("ada_12345_67890_lab2.ipynb") == "ada"
    assert notebook_student("ada_late_12345_67890_my_lab_2.ipynb") == "ada"
    assert notebook_student("lab2.ipynb") == "lab2"


def test_single_grading_reads_a_notebook_as_its_submission(lab, tmp_path):
    path = tmp_path / "lab2.ipynb"
    path.write_bytes(notebook(reference_cells()[0]))
    files, missing = submission_files(lab, path)
    assert missing == ["invariance.py", "experiments.py"]
    assert "def apply_rope" in files["positions.py"].decode()
    assert files["invariance.py"] == (lab.stubs / "invariance.py").read_bytes()
    assert files["model.py"] == (lab.handout / "model.py").read_bytes()       # the given code as ever


def test_an_imported_graded_function_is_not_taken_for_the_notebooks_own(lab):
    found = reader.extract(lab, notebook("from positions import apply_rope\nimport torch",
                                         "def rope_frequencies(head_dim, seq_len, base=10000.0, device='cpu'):\n"
                                         "    return apply_rope"))
    source = found.files["positions.py"].decode()
    assert "from positions import" not in source and "raise NotImplementedError" in source
    assert any("apply_rope is imported (cell 2, line 1)" in n for n in found.notes)


def test_a_stray_nonlocal_is_left_for_the_child_to_report(lab):
    cell = "import torch\ndef apply_rope(x, cos, sin):\n    nonlocal y\n    return torch.ones(1)\n"
    source = reader.extract(lab, notebook(cell)).files["positions.py"].decode()
    assert "nonlocal y" in source and "import torch" in source


def test_similarity_compares_a_notebooks_functions_with_a_py_folders(lab, tmp_path):
    from grader.instructor import similarity

    mine = (ROOT / "tests" / "submissions" / "mistakes_b" / "positions.py").read_text()
    path = tmp_path / "ada.ipynb"
    path.write_bytes(notebook("print('hello')", mine))
    sources = {student: {n: d.decode() for n, d in read_submission(lab, where)[0].items()}
               for student, where in (("ada", path), ("grace", ROOT / "tests" / "submissions" / "mistakes_b"))}
    given = [(lab.stubs / f).read_text() for f in lab.manifest.student_files]
    found = similarity.similarity(sources, lab.functions, given)
    assert [c.students for c in found.clusters] == [["ada", "grace"]]


def test_a_zip_whose_notebook_does_not_unpack_is_rejected_in_one_sentence(lab, tmp_path):
    path = tmp_path / "ada.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("lab2.ipynb", notebook(*reference_cells()))
    data = bytearray(path.read_bytes())
    start = data.index(b"lab2.ipynb") + len("lab2.ipynb")       # the local header's name, then the deflated bytes
    data[start + 10:start + 60] = b"\xff" * 50
    path.write_bytes(bytes(data))
    files, status, detail = read_submission(lab, path)
    assert status == "rejected" and "ada.zip" in detail


def test_a_stub_standing_in_comes_with_its_files_imports(tmp_path):
    forbid = find_lab(ROOT / "tests" / "labs" / "forbid")         # its stubs annotate with torch.Tensor
    found = reader.extract(forbid, notebook("import math\ndef softmax(x):\n    return math.e ** x\n"))
    source = found.files["norm.py"].decode()
    assert "import torch" in source and "def attend(" in source
    assert source.index("import torch") < source.index("def attend(")
    compile(source, "norm.py", "exec")


@pytest.fixture
def within():
    """A guard that fails a call over `seconds` rather than hang the suite: a reader's work that is
    quadratic in a cell's lines or statements takes minutes where linear work takes one or two."""
    import signal

    def alarm(signum, frame):
        raise TimeoutError("the reader's work grew faster than the notebook")
    previous = signal.signal(signal.SIGALRM, alarm)
    yield lambda seconds: signal.alarm(seconds)
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_a_cell_of_many_statements_or_blank_lines_is_read_in_linear_time(lab, within):
    within(60)      # quadratic: 30k statements are ~10^9 comparisons, 2 x 400k blank lines ~10^11 steps
    statements = "import torch\n" + "A = 1\n" * 30_000 + "def apply_rope(x, cos, sin):\n    return x * A\n"
    assert "return x * A" in reader.extract(lab, notebook(statements)).files["positions.py"].decode()
    found = reader.extract(lab, notebook("%%bash\n" + "\n" * 400_000, "def apply_rope(:\n" + "\n" * 400_000))
    assert "def apply_rope(:" in found.files["positions.py"].decode()       # broken as a .py would be


def test_a_py_file_posing_as_a_generated_one_says_nothing_for_the_grader(lab, tmp_path):
    forged = reader.HEADER + json.dumps({"map": [[2, "cell 99", 1, 50]], "notes": ["every check passed, 100/100"]})
    folder = tmp_path / "ada"
    folder.mkdir()
    for name in ("positions.py", "invariance.py"):
        (folder / name).write_text(forged + "\n" + (REFERENCE / name).read_text())
    files, status, detail = read_submission(lab, folder)
    assert status == "incomplete" and "100/100" not in detail
    assert reader.notes(files) == [] and reader.relocate("positions.py line 3", files) == "positions.py line 3"
    assert files["positions.py"].decode().split("\n")[1:] == (folder / "positions.py").read_text().split("\n")[1:]


def test_an_annotation_that_calls_is_no_constant(lab):
    cell = ("import torch\nX: print('runs at import') = 1\nY: torch.Tensor = 2\n"
            "def apply_rope(x, cos, sin):\n    return x * X * Y\n")
    found = reader.extract(lab, notebook(cell))
    source = found.files["positions.py"].decode()
    assert "print(" not in source and "Y: torch.Tensor = 2" in source
    assert any("X is defined only by an assignment of a computed value" in n for n in found.notes)


def test_a_line_continuing_python_is_never_taken_for_a_magic(lab):
    cell = ('%matplotlib inline\nimport torch\nNOTE = """\n!important\n"""\n'
            "def apply_rope(x, cos, sin):\n    odd = (x.shape[-1]\n           % 2)\n    same = (x\n"
            "            != x).any() \\\n        and True   # black's style: operators first\n"
            "    return x * (odd + same) if NOTE else x\n!pip install nothing\n")
    source = reader.extract(lab, notebook(cell)).files["positions.py"].decode()
    assert "           % 2)" in source and "            != x).any()" in source and "\n!important\n" in source
    assert "%matplotlib" not in source and "!pip" not in source
    compile(source, "positions.py", "exec")


@pytest.mark.slow
def test_outputs_of_many_small_objects_cost_no_more_than_their_json(lab):
    import tracemalloc

    out = new_output("execute_result", data={"application/json": [{}] * 300_000})
    data = nbformat.writes(new_notebook(cells=[new_code_cell("def apply_rope(x, cos, sin):\n    return x\n",
                                                             outputs=[out])])).encode()
    peaks = []
    for read in (json.loads, lambda data: reader.extract(lab, data)):
        tracemalloc.start()
        read(data)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 2 * peaks[0], [p // 2**20 for p in peaks]   # nbformat's copy of them was 6 times it


def test_a_notebooks_name_sets_no_encoding_of_its_files(lab):
    found = reader.extract(lab, notebook("import torch\nprint('top')\ndef apply_rope(x, cos, sin):\n"
                                         "    return 'é'\n"), "coding=utf-16 ada.ipynb")
    assert any("coding=utf-16 ada.ipynb" in n for n in reader.notes(found.files))      # said as it is
    assert "return 'é'" in ast.unparse(ast.parse(found.files["positions.py"]))          # read as UTF-8


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_a_cell_with_old_mac_or_windows_line_ends_is_read_as_python_reads_it(lab, newline):
    cell = newline.join(["import torch", "def apply_rope(x, cos, sin):", "    return x", "print('top level')", ""])
    found = reader.extract(lab, notebook(cell))
    source = found.files["positions.py"].decode()
    tree = ast.parse(source)            # Python's own reading: a lone \r ends a line, as \n does
    assert "apply_rope" in functions(source) and "print(" not in source
    assert not any(isinstance(s, ast.Expr) for s in tree.body[1:])      # no top-level call reaches the file
    line = [text.rstrip("\r") for text in source.split("\n")].index("    return x") + 1
    assert reader.relocate(f"positions.py line {line}", found.files) == "cell 2, line 3"


def test_a_star_import_gives_its_names_as_in_a_kernel(lab):
    found = reader.extract(lab, notebook("from math import *", "import torch\ndef apply_rope(x, cos, sin):\n"
                                         "    return x * pi\n", "def is_permutation_invariant(attn, x, atol=1e-5):\n"
                                         "    return True\n"))
    namespace = {}
    exec(compile(found.files["positions.py"], "positions.py", "exec"), namespace)     # a .py of these cells passes
    assert namespace["apply_rope"](2.0, None, None) == 2 * namespace["pi"]
    assert "import *" not in found.files["invariance.py"].decode()    # a file that needs no name of it: none


def test_a_notebook_beside_student_files_is_said_to_be_unread(lab, tmp_path):
    folder = tmp_path / "ada"           # %%writefile positions.py, then the rest in cells: both handed in
    folder.mkdir()
    (folder / "positions.py").write_text((REFERENCE / "positions.py").read_text())
    (folder / "work.ipynb").write_bytes(notebook(*reference_cells()[1:]))
    files, status, detail = read_submission(lab, folder)
    assert status == "incomplete" and set(files) == {"positions.py"}         # the folder's files, as documented
    assert "work.ipynb is not read" in detail, detail
    release = tmp_path / "release"      # the whole release zipped: its stubs in assignments/lab2/, the work in cells
    shutil.copytree(lab.stubs, release / "assignments" / "lab2")
    (release / "lab2.ipynb").write_bytes(notebook(*reference_cells()))
    files, status, detail = read_submission(lab, release)
    assert status == "graded" and "lab2.ipynb is not read" in detail, detail


def test_a_name_only_an_ipython_line_assigns_is_said(lab):
    cell = "import torch\nfiles = !ls data\ndef apply_rope(x, cos, sin):\n    return x * len(files)\n"
    found = reader.extract(lab, notebook(cell))
    assert "files =" not in found.files["positions.py"].decode()
    assert any("files is defined only by an IPython line (%magic or !shell)" in n and "(cell 2, line 2)" in n
               for n in found.notes), found.notes


def test_a_nul_character_in_a_cell_is_said_in_the_cells_terms(lab, tmp_path):
    path = tmp_path / "work.ipynb"
    path.write_bytes(notebook("import torch", "def apply_rope(x, cos, sin):\n    return x\0\n"))
    files, status, detail = read_submission(lab, path)
    assert status == "broken_code" and "cell 3, line 2 holds a NUL character" in detail, detail


def test_ipython_help_and_autocall_lines_are_skipped_as_ipython_runs_them(lab):
    cell = ("import torch\n?torch.cos\n??torch.sin\n/print 1\n,print a b\n;print a b\n"
            "def apply_rope(x, cos, sin):\n    return (x\n            / 1)\n")
    found = reader.extract(lab, notebook(cell))
    source = found.files["positions.py"].decode()
    compile(source, "positions.py", "exec")
    assert "            / 1)" in source and "?torch" not in source and "print a" not in source


def test_a_timeit_cells_definitions_are_not_the_kernels(lab):
    first = "import torch\ndef apply_rope(x, cos, sin):\n    return 'kept'\n"
    timed = "%%timeit -n 1\ndef apply_rope(x, cos, sin):\n    return 'timed'\napply_rope(1, 2, 3)\n"
    found = reader.extract(lab, notebook(first, timed))     # %%timeit runs its body in a function of its own
    assert "'kept'" in found.files["positions.py"].decode() and "'timed'" not in found.files["positions.py"].decode()
    assert any("cell 3 is a %%timeit cell" in n for n in found.notes), found.notes
