"""Text written for people, escaped for where it lands: a CSV cell no spreadsheet runs as a formula
(whether it splits on , or ;), and Markdown that renders as the text it holds."""
import csv
import io

import pytest

from grader.cells import csv_text, inert, markdown


@pytest.mark.parametrize("text, cell", [
    ("=cmd", "'=cmd"), ("+1", "'+1"), ("-2", "'-2"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", " '=1"),
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
