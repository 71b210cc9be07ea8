"""Hand-in: `grade.py pack` writes the zip to upload, holding exactly the student files and read
back by the course's reader; a batch finds a student's files in folders and zips nested as LMS
downloads nest them; a class folder that holds no class is one sentence, exit 2."""
import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest
from rich.console import Console

from grader.core.submissions import read_submission
from grader.instructor import batch
from grader.learner.cli import main
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "lab2"
FILES = ["experiments.py", "invariance.py", "positions.py"]


@pytest.fixture(scope="module")
def lab():
    return find_lab("lab2")


def zipped(files, top=""):
    """A zip's bytes holding `files` ({name: bytes}) under the folder `top`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(top + name, data)
    return buffer.getvalue()


def reference():
    return {name: (REFERENCE / name).read_bytes() for name in FILES}


def put(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("layout", ["zip two folders deep", "zip in a zip", "folder in a zip in a folder",
                                    "files three folders deep"])
def test_a_students_files_are_found_as_lms_downloads_nest_them(lab, tmp_path, layout):
    student = tmp_path / "ada"
    if layout == "zip two folders deep":
        put(student / "Submission attempt 1" / "files" / "ada_lab2.zip", zipped(reference()))
    elif layout == "zip in a zip":
        put(student / "outer.zip", zipped({"inner.zip": zipped(reference(), "lab2/")}, "download/"))
    elif layout == "folder in a zip in a folder":
        put(student / "attempt" / "lab2.zip", zipped(reference(), "my work/lab2/"))
    else:
        for name, data in reference().items():
            put(student / "a" / "b" / "c" / name, data)
    put(student / "__MACOSX" / "._positions.py", b"\0\0")               # junk the LMS or a Mac adds
    put(student / "comments.txt", b"see attached")
    files, status, detail = read_submission(lab, student)
    assert (files, status, detail) == (reference(), "graded", "")


@pytest.mark.parametrize("layout, said", [
    ({"a/positions.py": b"x = 1\n", "b/positions.py": b"y = 2\n"},
     "the lab's files are in 2 folders ('a/', 'b/'): a submission holds one student's files; keep one"),
    ({"one.zip": zipped({"positions.py": b"x = 1\n"}), "two.zip": zipped({"positions.py": b"y = 2\n"})},
     "2 archives that may hold them ('one.zip', 'two.zip'): a submission holds one student's files; keep one"),
])
def test_two_students_files_in_one_submission_are_refused(lab, tmp_path, layout, said):
    for name, data in layout.items():
        put(tmp_path / "ada" / name, data)
    files, status, detail = read_submission(lab, tmp_path / "ada")
    assert (files, status) == ({}, "rejected") and said in detail


def test_the_shallowest_files_count_and_archives_nest_only_so_deep(lab, tmp_path):
    put(tmp_path / "ada" / "positions.py", b"x = 1\n")
    put(tmp_path / "ada" / "old" / "positions.py", b"old = 1\n")
    put(tmp_path / "ada" / "backup.zip", zipped({"positions.py": b"zipped = 1\n"}))
    assert read_submission(lab, tmp_path / "ada")[0] == {"positions.py": b"x = 1\n"}
    data = zipped({"positions.py": b"x = 1\n"})
    for depth in range(6):
        data = zipped({f"level{depth}.zip": data})
    put(tmp_path / "deep" / "s.zip", data)
    files, status, detail = read_submission(lab, tmp_path / "deep")
    assert status == "rejected" and detail.startswith("archives nested more than 4 deep")


def test_a_file_that_is_a_link_is_refused_at_any_depth(lab, tmp_path):
    (tmp_path / "ada" / "a" / "b").mkdir(parents=True)
    (tmp_path / "ada" / "a" / "b" / "positions.py").symlink_to(REFERENCE / "positions.py")
    assert read_submission(lab, tmp_path / "ada") == ({}, "rejected",
                                                      "positions.py is a symbolic link; submit the file itself")


@pytest.mark.parametrize("make, said", [
    (lambda folder: None, "holds no submission: expected one folder or .zip per student"),
    (lambda folder: put(folder / "readme.txt", b"hi"), "holds no submission (it holds only readme.txt)"),
    (lambda folder: shutil.copytree(REFERENCE, folder, dirs_exist_ok=True),
     "holds positions.py, invariance.py, experiments.py itself: it is one student's submission"),
    (lambda folder: [shutil.copytree(REFERENCE, folder / "class" / name) for name in ("ada", "bob")],
     "holds only 'class', which holds the submissions of several students: give"),
])
def test_a_folder_that_is_no_class_is_a_sentence_and_exit_2(tmp_path, capsys, make, said):
    (tmp_path / "subs").mkdir()
    make(tmp_path / "subs")
    assert main(["batch", "lab2", str(tmp_path / "subs"), "--out", str(tmp_path / "out")]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert said in out and out.startswith("error: SUBMISSIONS") and not (tmp_path / "out").exists()


# -- pack ------------------------------------------------------------------------------------------------
def test_pack_writes_exactly_the_student_files(lab, tmp_path, capsys):
    folder = tmp_path / "mine"
    shutil.copytree(REFERENCE, folder)
    put(folder / "notes.txt", b"mine")
    put(folder / "plots" / "x.png", b"png")
    dest = tmp_path / "hand-in.zip"
    assert main(["pack", "lab2", "--submission", str(folder), "--out", str(dest)]) == 0
    with zipfile.ZipFile(dest) as archive:
        assert sorted(archive.namelist()) == FILES
        assert {name: archive.read(name) for name in FILES} == reference()
    assert "Upload this file" in capsys.readouterr().out


def test_pack_says_what_will_be_graded_as_the_stub_and_refuses_nothing_to_hand_in(tmp_path, capsys):
    put(tmp_path / "mine" / "positions.py", (REFERENCE / "positions.py").read_bytes())
    assert main(["pack", "lab2", "--submission", str(tmp_path / "mine"), "--out", str(tmp_path / "a.zip")]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "not submitted, graded as the stubs: invariance.py, experiments.py" in said
    (tmp_path / "none").mkdir()
    assert main(["pack", "lab2", "--submission", str(tmp_path / "none"), "--out", str(tmp_path / "b.zip")]) == 2
    assert "holds none of positions.py, invariance.py, experiments.py: nothing to hand in" in capsys.readouterr().out
    assert main(["pack", "lab2", "--out", str(tmp_path / "c.txt")]) == 2
    assert not (tmp_path / "b.zip").exists() and not (tmp_path / "c.txt").exists()


@pytest.mark.slow
def test_a_packed_zip_grades_in_a_batch_as_its_folder_does(lab, tmp_path):
    """pack, then the zip as a learner's upload nests in an LMS download, graded by batch: the same
    score as single grading of the folder (the grade is a function of the files the reader gives)."""
    from grader.core.request import Request, Selection
    from grader.core.runner import grade
    from grader.instructor.workers import Plan

    put(tmp_path / "mine" / "positions.py", (REFERENCE / "positions.py").read_bytes())
    put(tmp_path / "mine" / "invariance.py", (ROOT / "tests" / "submissions" / "mean_not_sum" /
                                              "invariance.py").read_bytes())
    assert main(["pack", "lab2", "--submission", str(tmp_path / "mine"), "--out", str(tmp_path / "p.zip")]) == 0
    put(tmp_path / "class" / "ada" / "Submission 1" / "p.zip", (tmp_path / "p.zip").read_bytes())
    select = ["positions.py", "invariance.py"]
    asked = batch.ClassRequest(Plan(selection=Selection(tuple(select))), workers=1)
    summary = batch.grade_class(lab, tmp_path / "class", tmp_path / "out", Console(file=io.StringIO()), asked)
    row = json.loads((tmp_path / "out" / "rows.json").read_text())[0]
    single = grade(Request(find_lab("lab2"), tmp_path / "mine", selection=Selection(tuple(select))))
    assert summary.statuses.get("incomplete") == 1 and row["score"] == single.score > 0
    assert row["score"] < single.max_score


def test_a_file_below_the_others_is_named_where_it_is_not_called_unsubmitted(lab, tmp_path):
    """positions.py at the top and invariance.py one folder down: the shallowest folder counts,
    and the detail once said invariance.py was "not submitted"."""
    put(tmp_path / "ada" / "positions.py", b"x = 1\n")
    put(tmp_path / "ada" / "sub" / "invariance.py", b"y = 1\n")
    files, status, detail = read_submission(lab, tmp_path / "ada")
    assert (sorted(files), status) == (["positions.py"], "incomplete")
    assert detail == ("invariance.py is in 'sub/', not beside positions.py: graded as the stub (keep the lab's files "
                      "in one folder); not submitted, graded as the stubs: experiments.py")


def test_pack_says_where_a_file_below_the_others_is(tmp_path, capsys):
    put(tmp_path / "mine" / "positions.py", (REFERENCE / "positions.py").read_bytes())
    put(tmp_path / "mine" / "backup" / "invariance.py", (REFERENCE / "invariance.py").read_bytes())
    assert main(["pack", "lab2", "--submission", str(tmp_path / "mine"), "--out", str(tmp_path / "a.zip")]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "invariance.py is in 'backup/', not beside positions.py: graded as the stub" in said
