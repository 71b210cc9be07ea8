"""Text written for people, escaped for where it lands: a CSV cell no spreadsheet runs as a formula
(whether it splits on , or ;), and Markdown that renders as the text it holds."""
import csv
import io

import pytest

from grader.base.text import as_written, csv_text, inert, markdown
from grader.readers.identity import identity


@pytest.mark.parametrize("text, cell", [
    ("=cmd", "'=cmd"), ("+1", "'+1"), ("-2+3", "'-2+3"), ("-2", "-2"), ("-2.5", "-2.5"), ("-1e+308", "-1e+308"),
    ("-2 ", "'-2 "), ("x;-2", "x;'-2"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", " '=1"),
    ("\r=1", "\ufffd=1"), ("＝1+1", "'＝1+1"), ("x;=1+1;y", "x;'=1+1;y"), ("a, -b", "a, '-b"),
    ("Liddell, Alice", "Liddell, Alice"), ("1 d 10.0 h late: -20%", "1 d 10.0 h late: -20%"), ("a\nb", "a b")])
def test_no_cell_or_part_of_one_starts_a_formula(text, cell):
    assert inert(text) == cell


def test_a_cell_holding_a_separator_is_quoted_and_reads_back_whole():
    rows = [["x;=1+1;y", 'say "hi"', " pad", "50", "Liddell, Alice"]]
    text = csv_text(rows)
    assert text == '"x;\'=1+1;y","say ""hi"""," pad",50,"Liddell, Alice"\r\n'
    assert list(csv.reader(io.StringIO(text))) == [["x;'=1+1;y", 'say "hi"', " pad", "50", "Liddell, Alice"]]
    for part in next(csv.reader(io.StringIO(text), delimiter=";")):     # a spreadsheet that splits on ;
        assert not part.lstrip('"').startswith(("=", "+", "-", "@"))


def test_markdown_renders_as_the_text():
    assert markdown("<b>*x*</b> [a](b) # `c` $m$ a_b www.x.com http://y ~~s~~ |t|") == \
        r"\<b\>\*x\*\</b\> \[a\](b) \# \`c\` \$m\$ a\_b www\.x.com http\://y \~\~s\~\~ \|t\|"
    assert markdown("line\nbreak\x1b") == "line break\ufffd"


NAMES = ["x;=1+1;y", "'=x", "''=1", "a, -b", "=cmd", "O'Brien", "+1,-2; @3", "Liddell, Alice", " =pad"]


@pytest.mark.parametrize("name", NAMES)
def test_a_neutralised_cell_reads_back_as_the_name_it_was(name):
    assert identity(as_written(inert(name))) == identity(name)
    cell = next(csv.reader(io.StringIO(csv_text([[name]]))))[0]
    assert identity(as_written(cell.strip())) == identity(name)


def test_a_quiz_gradebook_finds_every_student_it_was_written_for(tmp_path):
    """quiz.csv writes `x;=1+1;y` as `x;'=1+1;y`: read back, it is still that student."""
    from grader.quiz.responses import read_class

    (tmp_path / "quiz.csv").write_text(csv_text([["student", "score", "max", "passed"],
                                                 *([name, "4", "5", "yes"] for name in NAMES)]), newline="")
    answers = read_class(tmp_path / "quiz.csv")
    assert all(answers.get(name) is not None for name in NAMES)
    assert {identity(row.student) for row in answers.counted()} == {identity(name) for name in NAMES}


def test_a_negative_number_is_written_as_a_number():
    """grades.csv's adjustment -3 once read '-3 in a spreadsheet: text, not the number."""
    assert csv_text([["ada", -3, "-2.5"]]) == "ada,-3,-2.5\r\n"
