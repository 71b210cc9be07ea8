"""The one reader of instructors' CSV files (grader/readers/csvfile.py): what Excel and forms write, in
each encoding and separator, reads alike; a bad row or file is one sentence naming its line and
column, never an internal error; rosters and timestamps files go through it."""
import csv
import io

import pytest
from rich.console import Console
from test_deadlines import stand_in

from grader.base.errors import QuizError, UsageError
from grader.instructor import batch
from grader.instructor.roster import read_roster
from grader.learner.cli import main
from grader.readers.csvfile import read_table
from grader.readers.manifest import find_lab

ROWS = [["Student", "ID", "Extension"], ["José Müller", "201", "48"], ["Liddell, Alice", "202", ""]]
ENCODINGS = ["utf-8", "utf-8-sig", "cp1252", "utf-16", "utf-16-le", "utf-16-be"]


def text(separator, rows=ROWS):
    quote = (lambda cell: f'"{cell}"' if separator in cell else cell)
    return "\r\n".join(separator.join(map(quote, row)) for row in rows) + "\r\n"


@pytest.mark.parametrize("separator", [",", ";", "\t"])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_encoding_and_separator_of_excel_and_forms_reads_alike(tmp_path, encoding, separator):
    data = text(separator).encode(encoding)
    if encoding == "utf-16":
        assert data[:2] in (b"\xff\xfe", b"\xfe\xff")
    (tmp_path / "r.csv").write_bytes(data)
    table = read_table(tmp_path / "r.csv", ["student", "id"], "--roster")
    assert table.columns == ["student", "id", "extension"]
    assert [(row.line, row.cells["student"], row.cells["extension"]) for row in table.rows] == \
        [(2, "José Müller", "48"), (3, "Liddell, Alice", "")]
    roster = read_roster(tmp_path / "r.csv")
    assert roster["josé müller"].extension == 48 and roster["liddell, alice"].id == "202"


def test_excel_s_sep_line_and_blank_lines(tmp_path):
    (tmp_path / "r.csv").write_text("sep=;\nstudent;id\n\nada;1,5\n")
    table = read_table(tmp_path / "r.csv", ["student"])
    assert [(row.line, row.cells) for row in table.rows] == [(4, {"student": "ada", "id": "1,5"})]


@pytest.mark.parametrize("content, said", [
    ("student,id,email\nada,1\n", "r.csv line 2: 2 cells where the header has 3: none for column 'email'"),
    ("student,id\nLiddell, Alice,7\n", "r.csv line 2: 3 cells where the header has 2: an extra cell '7' after "
                                       "column 'id' (a cell holding a comma needs quotes around it)"),
    ('student,id\n"multi\nline",1\nbob\n', "r.csv line 4: 1 cell where the header has 2: none for column 'id'"),
    ("name,id\nada,1\n", "r.csv: no column 'student'; expected a header line with student (it has 'name', 'id')"),
    ("", "r.csv is empty; expected a header line with student"),
    ("student,Student\nada,ada\n", "r.csv line 1: two columns are named 'student'"),
    ('student\n"a"b\n', "r.csv line 2: not CSV"),
    ("sep=|\nstudent|id\nada|1|2\n", "r.csv line 3: 3 cells where the header has 2: an extra cell '2' after column "
                                     "'id' (a cell holding a '|' needs quotes around it)"),
])
def test_a_bad_row_or_header_is_a_sentence_naming_line_and_column(tmp_path, content, said):
    (tmp_path / "r.csv").write_text(content)
    with pytest.raises(UsageError) as error:
        read_table(tmp_path / "r.csv", ["student"], "--roster")
    assert said in str(error.value)


def test_trailing_empty_cells_are_no_extra_cell(tmp_path):
    (tmp_path / "r.csv").write_text("student,id\nada,1,,\n")
    assert read_table(tmp_path / "r.csv", ["student"]).rows[0].cells == {"student": "ada", "id": "1"}


def test_a_file_that_is_no_text_is_a_sentence_in_the_caller_s_kind(tmp_path):
    (tmp_path / "q.csv").write_bytes(b"\xff\xfes\x00t\x00u")          # UTF-16 cut in the middle of a character
    with pytest.raises(QuizError, match="q.csv: not text in UTF-8, UTF-16 or cp1252"):
        read_table(tmp_path / "q.csv", (), "--quiz", QuizError)
    (tmp_path / "r.xlsx").write_bytes(b"PK\x03\x04\x14\x00" + bytes(range(256)))
    with pytest.raises(UsageError, match="r.xlsx is a spreadsheet workbook, not CSV: save it as CSV"):
        read_table(tmp_path / "r.xlsx", ["student"], "--roster")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    work = tmp_path_factory.mktemp("class")
    (work / "subs" / "José").mkdir(parents=True)
    (work / "subs" / "José" / "positions.py").write_text("x = 1\n")
    batch.grade_class(find_lab("lab2"), work / "subs", work / "out", Console(file=io.StringIO()), backend=stand_in)
    return work


@pytest.mark.parametrize("encoding", ["cp1252", "utf-16"])
def test_rosters_and_timestamps_in_excel_s_encodings_reach_the_gradebook(graded, capsys, encoding):
    """Once a crash ("the grader itself failed: UnicodeDecodeError"): now read, or one sentence."""
    (graded / "t.csv").write_bytes("student;submitted_at\r\nJosé;2026-12-01T10:00:00+01:00\r\n".encode(encoding))
    (graded / "r.csv").write_bytes("student,id\r\nJosé,201\r\n".encode(encoding))
    args = ["gradebook", str(graded / "out"), "--roster", str(graded / "r.csv"), "--out", str(graded / "g.csv")]
    assert main([*args, "--timestamps", str(graded / "t.csv")]) == 0
    rows = list(csv.DictReader(open(graded / "g.csv", encoding="utf-8")))
    assert [(row["student"], row["id"], row["submitted_at"][:16]) for row in rows] == \
        [("José", "201", "2026-12-01T10:00")]
    (graded / "r.csv").write_bytes("student,id\r\nJosé,201,9\r\n".encode(encoding))
    assert main(args) == 2
    said = " ".join(capsys.readouterr().out.split())
    assert "r.csv line 2: 3 cells where the header has 2: an extra cell '9' after column 'id'" in said


NEUTRALISED = ["=1+1", "x;=1+1;y", "@x", "-x", "+1", "'=x", " =pad"]


def test_a_name_a_spreadsheet_made_inert_is_the_same_student_in_every_instructor_file(tmp_path):
    """grades.csv writes `=1+1` as `'=1+1`; an instructor who builds the roster, the timestamps or
    the adjustments from it names the same students, in every file the one reader reads."""
    from grader.base.text import csv_text
    from grader.instructor.deadlines import read_timestamps
    from grader.readers.identity import identity

    (tmp_path / "r.csv").write_text(csv_text([["student", "id"], *([name, "1"] for name in NEUTRALISED)]),
                                    newline="")
    assert set(read_roster(tmp_path / "r.csv")) == {identity(name) for name in NEUTRALISED}
    (tmp_path / "t.csv").write_text(csv_text([["student", "submitted_at"],
                                              *([name, "2026-12-01T10:00:00+01:00"] for name in NEUTRALISED)]),
                                    newline="")
    assert set(read_timestamps(tmp_path / "t.csv")) == {identity(name) for name in NEUTRALISED}
    assert [row.cells["id"] for row in read_table(tmp_path / "r.csv", ["student"]).rows] == ["1"] * len(NEUTRALISED)


def test_a_roster_made_from_grades_csv_matches_every_submission(tmp_path, capsys):
    subs = tmp_path / "subs"
    for name in NEUTRALISED[:4]:
        (subs / name).mkdir(parents=True)
        (subs / name / "positions.py").write_text("x = 1\n")
    out = tmp_path / "out"
    batch.grade_class(find_lab("lab2"), subs, out, Console(file=io.StringIO()), backend=stand_in)
    graded = list(csv.reader(io.StringIO((out / "grades.csv").read_text(encoding="utf-8"))))[1:]
    assert {row[0] for row in graded} == {"'=1+1", "x;'=1+1;y", "'@x", "'-x"}    # as a spreadsheet shows them
    roster = tmp_path / "roster.csv"
    roster.write_text("student,sis_user_id\r\n" + "".join(f'"{row[0]}",S{i}\r\n' for i, row in enumerate(graded)))
    adjust = tmp_path / "adjust.csv"
    adjust.write_text("student,points,reason\r\n" + "".join(f'"{row[0]}",1,regrade\r\n' for row in graded))
    assert main(["adjust", str(out), "--file", str(adjust)]) == 0
    assert main(["gradebook", str(out), "--roster", str(roster), "--out", str(tmp_path / "g.csv")]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "not on the roster" not in said and "no submission" not in said, said
    rows = list(csv.DictReader(open(tmp_path / "g.csv", encoding="utf-8")))
    assert len(rows) == 4 and all(row["sis_user_id"] and row["adjustment"] == "1" for row in rows)


@pytest.mark.parametrize("data", [
    "sep=\t\r\nstudent\tid\r\nada\t1,5\r\n".encode("utf-16"),           # Excel's "Unicode text" with its hint
    b'"sep=;"\r\nstudent;id\r\nada;1,5\r\n',                              # the hint, quoted by a CSV writer
    b"\r\n\r\nstudent,id\r\nada,\"1,5\"\r\n",                             # blank lines above the header
    b" \t\r\nsep=;\r\n\r\nstudent;id\r\nada;1,5\r\n",
    b"\r\rsep=;\rstudent;id\rada;1,5\r",                                 # a classic Mac's line ends
    b",,\r\nstudent,id\r\nada,\"1,5\"\r\n"])                            # an empty row above the header
def test_the_header_is_found_after_a_separator_hint_or_blank_lines(tmp_path, data):
    (tmp_path / "r.csv").write_bytes(data)
    assert [row.cells for row in read_table(tmp_path / "r.csv", ["student"]).rows] == [{"student": "ada", "id": "1,5"}]


def test_a_file_whose_header_is_no_cell_is_a_sentence_for_every_reader(tmp_path):
    """A header row of no cells (a blank first line with a classic Mac's line ends) once ended in
    IndexError for a reader that names no column (the quiz's)."""
    (tmp_path / "q.csv").write_bytes(b"\r,,\r")
    with pytest.raises(QuizError, match="q.csv is empty; expected a header line"):
        read_table(tmp_path / "q.csv", (), "--quiz", QuizError)
