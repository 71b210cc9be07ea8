"""Text the project writes for people, made safe for where it lands: a terminal or a JSON file
(printable, one_line), CSV cells a spreadsheet shows as text (inert, csv_text), and Markdown that
renders as the text it holds. (HTML: html.escape.)"""
import re
from collections.abc import Iterable


def printable(text: str) -> str:
    """Text from student code made safe for a terminal and a JSON file: no control characters."""
    return "".join(c if c.isprintable() or c in "\n\t" else "\N{REPLACEMENT CHARACTER}" for c in text)


def one_line(text: str) -> str:
    """A name from the filesystem (a student's folder, a file) made safe for any output: no
    control character at all, not even a newline that would forge a line of progress output."""
    return "".join(c if c.isprintable() else "\N{REPLACEMENT CHARACTER}" for c in text)


FORMULA = "=+-@\uff1d\uff0b\uff0d\uff20"            # and their full-width forms, which some spreadsheets take
STARTS = re.compile(rf"(^|[;,])(\s*)(?='*[{re.escape(FORMULA)}])")   # a cell, or a part a ; or , begins
MADE_INERT = re.compile(rf"(^|[;,])(\s*)'(?='*[{re.escape(FORMULA)}])")
NEGATIVE = re.compile(r"-[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?")     # a number a spreadsheet reads as one, no formula
QUOTED = re.compile(r'[,;"]|^\s|\s$')
MARKDOWN = re.compile(r"([\\`*_{}\[\]<>#|~!&$@])|(?<=\w)(:)(?=//)|(?<=\bwww)(\.)", re.IGNORECASE)


def inert(text: object) -> str:
    """A CSV cell a spreadsheet shows as text: no control character (a tab or line break is a
    space), and a ' before every part that would start a formula (=, +, -, @), at the start of the
    cell or after a ; or , (where a spreadsheet set to split there would start a cell), also where
    quotes come first ('=1 is ''=1), so that `as_written` can take exactly these off again. A
    negative number (-2.5) is left as it is: a spreadsheet reads it as the number, not a formula."""
    text = printable(str(text)).replace("\n", " ").replace("\t", " ")
    return text if NEGATIVE.fullmatch(text) else STARTS.sub(r"\1\2'", text)


def as_written(cell: str) -> str:
    """The text `inert` made `cell` from, less only what no name's identity holds (control
    characters, tabs and line breaks): identity(as_written(inert(x))) == identity(x)."""
    return MADE_INERT.sub(r"\1\2", cell)


def csv_text(rows: Iterable[Iterable[object]]) -> str:
    """`rows` of cells as CSV (RFC 4180, CRLF): each cell inert, quoted when it holds a , or a ;
    (so that a spreadsheet splitting on either keeps it whole), a quote, or a space at an end."""
    def cell(value: object) -> str:
        text = inert(value)
        return '"' + text.replace('"', '""') + '"' if QUOTED.search(text) else text
    return "".join(",".join(map(cell, row)) + "\r\n" for row in rows)


def markdown(text: object) -> str:
    """`text` as Markdown that renders as itself, within a line that the caller starts: no HTML,
    link, autolink, emphasis, code, math, heading or table of its own (what could make one is
    backslash-escaped)."""
    return MARKDOWN.sub(lambda m: "\\" + m.group(0), one_line(" ".join(str(text).split())))
