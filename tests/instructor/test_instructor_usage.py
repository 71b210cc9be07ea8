"""Every path argument of batch, export, release and gradebook: a mistake is one sentence and exit
status 2, never a traceback (IsADirectoryError, FileExistsError) or "please report it"."""
import pytest

from grader.instructor.records import BatchSummary
from grader.learner.cli import main


@pytest.fixture
def places(tmp_path):
    """A file, a folder, a class folder and a batch's output folder (no student in it)."""
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "class").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    summary = BatchSummary(lab="lab2", title="t", students=0, statuses={}, graded_now=0, max_score=None,
                           functions={}, mean_percent=None, median_percent=None, histogram=[], checks=[],
                           mistakes=[], problems=[], workers=0, seconds=0)
    (out / "summary.json").write_text(summary.model_dump_json())
    (out / "rows.json").write_text("[]")
    (tmp_path / "Roster.csv").write_text("student\n")
    return tmp_path


G = "gradebook {t}/out --out {t}/g.csv"         # a gradebook command that would work, to add to
CASES = {
    "batch: no class folder": ("batch lab2 {t}/nowhere --out {t}/o", "SUBMISSIONS {t}/nowhere does not exist"),
    "batch: a file as the class folder": ("batch lab2 {t}/file.txt --out {t}/o",
                                          "SUBMISSIONS {t}/file.txt is a file; expected the class folder"),
    "batch: a file as --out": ("batch lab2 {t}/class --out {t}/file.txt", "--out {t}/file.txt is a file"),
    "batch: a folder as --timestamps": ("batch lab2 {t}/class --out {t}/o --timestamps {t}/folder",
                                        "--timestamps {t}/folder is a folder; expected a file"),
    "batch: no --roster file": ("batch lab2 {t}/class --out {t}/o --roster {t}/roster.csv",
                                "--roster {t}/roster.csv does not exist; 'Roster.csv' does"),
    "export: a folder as the bundle": ("export lab2 --gradescope {t}/folder",
                                       "--gradescope {t}/folder is a folder; expected a file to write"),
    "export: no such folder": ("export lab2 --gradescope {t}/no/b.zip", "the folder {t}/no does not exist"),
    "export: not a zip": ("export lab2 --gradescope {t}/b.tar", "expected a .zip path"),
    "release: a file as --out": ("release lab2 --out {t}/file.txt", "--out {t}/file.txt is a file"),
    "gradebook: no batch folder": ("gradebook {t}/nowhere --out {t}/g.csv", "OUT {t}/nowhere does not exist"),
    "gradebook: a file as the batch": ("gradebook {t}/file.txt --out {t}/g.csv", "OUT {t}/file.txt is a file"),
    "gradebook: not a batch's folder": ("gradebook {t}/folder --out {t}/g.csv",
                                        "{t}/folder holds no summary.json: expected the --out folder of grade.py"),
    "gradebook: a folder as --roster": (G + " --roster {t}/folder", "--roster {t}/folder is a folder; expected a file"),
    "gradebook: --roster in another case": (G + " --roster {t}/roster.csv", "--roster {t}/roster.csv does not exist; "
                                            "'Roster.csv' does (names are case-sensitive)"),
    "gradebook: no --quiz file": (G + " --quiz {t}/q.csv", "--quiz {t}/q.csv does not exist"),
    "gradebook: a folder as --timestamps": (G + " --timestamps {t}/folder", "--timestamps {t}/folder is a folder"),
    "gradebook: a folder as --out": ("gradebook {t}/out --out {t}/folder",
                                     "--out {t}/folder is a folder; expected a file to write"),
    "gradebook: a due time without a zone": (G + " --due 2026-12-01T10:00",
                                             "--due: '2026-12-01T10:00' has no time zone"),
    "gradebook: a roster without a student column": (G + " --roster {t}/file.txt",
                                                     "--roster {t}/file.txt: no column 'student'"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_path_is_a_sentence_with_exit_status_2(places, capsys, case):
    argv, message = CASES[case]
    code = main([arg.format(t=places) for arg in argv.split()])
    said = " ".join(capsys.readouterr().out.split())
    assert code == 2 and said.startswith("error: ") and message.format(t=places) in said, said
    assert "please report it" not in said and not (places / "g.csv").exists()
