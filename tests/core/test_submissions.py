"""Reading submissions for single grading: the student files only, regular files only, and the
lab's pristine stubs (never the handout folder's working copies) for the files not submitted."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader.base.errors import GraderError, LabError
from grader.core.submissions import submission_files
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parents[2]
STUB = b'def add(a, b):\n    """a + b."""\n    raise NotImplementedError\n'
SOLVED = b"def add(a, b):\n    return a + b\n"


@pytest.fixture
def lab(tmp_path):
    """A one-function lab whose handout folder holds a solution tried there (not the stub)."""
    folder = tmp_path / "toy"
    for name, data in {"handout/adder.py": SOLVED, "handout/given.py": b"X = 1\n", "stubs/adder.py": STUB,
                       "lab.yaml": yaml.safe_dump({"title": "Toy", "handout": "handout",
                                                   "student_files": {"adder.py": ["add"]}}).encode()}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return find_lab(folder)


def test_missing_files_are_the_pristine_stubs(lab, tmp_path):
    (tmp_path / "empty").mkdir()
    files, missing = submission_files(lab, tmp_path / "empty")
    assert files["adder.py"] == STUB and files["given.py"] == b"X = 1\n" and missing == ["adder.py"]
    files, missing = submission_files(lab)                 # no --submission: the learner's own copy
    assert files["adder.py"] == SOLVED and missing == []


def test_a_lab_without_its_stubs_is_refused(lab):
    (lab.stubs / "adder.py").unlink()
    with pytest.raises(LabError, match="no pristine stub .*adder.py"):
        find_lab(lab.folder)


def test_symlinked_student_files_are_refused(lab, tmp_path):
    """A link (e.g. restored by unzip) to the reference would grade the reference as the student's."""
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "adder.py").symlink_to(ROOT / "reference" / "lab2" / "positions.py")
    with pytest.raises(GraderError, match="adder.py is a symbolic link"):
        submission_files(lab, tmp_path / "linked")


def test_a_file_is_not_a_folder(lab, tmp_path):
    (tmp_path / "adder.py").write_bytes(SOLVED)
    with pytest.raises(GraderError, match=r"--submission .*adder.py is a file, not a folder"):
        submission_files(lab, tmp_path / "adder.py")
    with pytest.raises(GraderError, match="nowhere does not exist"):
        submission_files(lab, tmp_path / "nowhere")


def test_cli_says_so_in_one_line(tmp_path):
    (tmp_path / "positions.py").write_text("x = 1\n")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "positions.py").symlink_to(ROOT / "reference" / "lab2" / "positions.py")
    for submission, said in ((tmp_path / "positions.py", "is a file, not a folder"),
                             (tmp_path / "linked", "positions.py is a symbolic link")):
        run = subprocess.run([sys.executable, str(ROOT / "grade.py"), "lab2", "--submission", str(submission)],
                             capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "300"})
        assert run.returncode == 2 and said in run.stdout and len(run.stdout.strip().splitlines()) == 1, run.stdout


def test_lab2_stubs_are_the_handout_as_released():
    """In this repository the handout folder holds the pristine stubs (`release` refuses otherwise)."""
    lab = find_lab("lab2")
    for name in lab.manifest.student_files:
        assert (lab.stubs / name).read_bytes() == (lab.handout / name).read_bytes(), name


def test_a_folder_graded_singly_cannot_speak_as_the_notebook_reader(lab, tmp_path):
    from grader.core.submissions import file_problems
    from grader.readers import notebook as reader

    forged = reader.HEADER + '{"map": [[2, "cell 99", 1, 50]], "notes": ["graded by hand: 100/100"]}\n'
    folder = tmp_path / "ada"
    folder.mkdir()
    (folder / "adder.py").write_bytes(forged.encode() + SOLVED)
    files, missing = submission_files(lab, folder)            # grade.py lab2 --submission ada/ (--json)
    assert files["adder.py"].split(b"\n")[1:] == (forged.encode() + SOLVED).split(b"\n")[1:]    # its lines stay
    assert file_problems(lab, folder, files, missing) == []
    assert reader.relocate("adder.py line 2", files) == "adder.py line 2"
