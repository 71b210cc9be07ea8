"""OUT/students/<folder>: one folder per student, inside OUT/students/, whatever the name: a name
that shows as . or .. (a zero-width mark before it), one too long for a disk once its control
characters are shown, one Windows cannot make, and the page still lists and links every student."""
import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from test_deadlines import stand_in

from grader.core.submissions import disk_name, folder_name
from grader.instructor import batch
from grader.readers.manifest import find_lab

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "lab2"
ODD = ["\u200b..", "\u200b.", "\u200b__init", "\x01" * 200, "é" * 120, "CON", "nul.txt", "a:b", "ada.", "x?",
       "CONIN$", "conout$.txt", "Con .txt", "lpt\u00b9"]
RESERVED = ("CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "LPT\u00b9")


@pytest.mark.parametrize("name", ODD)
def test_a_folder_name_is_one_folder_of_its_own_on_every_disk(name):
    folder = folder_name(name)
    assert folder not in (".", "..") and "/" not in folder and "\\" not in folder and ":" not in folder
    assert len(folder.encode()) <= 255 and folder == folder.rstrip(". ")
    assert folder.split(".")[0].rstrip(" ").upper() not in RESERVED
    assert folder_name("ada") == "ada" and folder_name("José ✓") == "José ✓"      # a plain name is kept
    assert disk_name(folder) != disk_name("ada")


def test_odd_names_each_get_a_folder_inside_students_and_a_row_on_the_page(tmp_path):
    subs = tmp_path / "subs"
    for name in [*ODD, "ada"]:
        shutil.copytree(REFERENCE, subs / name)
    out = tmp_path / "out"
    batch.grade_class(find_lab("lab2"), subs, out, Console(file=io.StringIO()), backend=stand_in)
    assert sorted(p.name for p in out.iterdir()) == ["final.json", "grades.csv", "report.html", "rows.json", "students",
                                                    "summary.json"]
    rows = json.loads((out / "rows.json").read_text())
    folders = {json.loads((f / "graded.json").read_text())["row"]["student"]: f for f in (out / "students").iterdir()}
    assert set(folders) == {row["student"] for row in rows}            # every row has a folder of its own
    assert all((f / "feedback.html").is_file() for f in folders.values())
    page = (out / "report.html").read_text()
    assert page.count('href="students/') >= len(rows)
