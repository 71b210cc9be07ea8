"""The one reader of the CSV files an instructor gives: rosters, timestamps, a class's quiz
answers and grade adjustments are read alike, whichever program wrote them.

- Encodings: UTF-8 with or without its BOM (Excel's "CSV UTF-8", Google Sheets), UTF-16 LE or BE
  with its BOM (Excel's "Unicode text", Microsoft Forms), or without one, and cp1252 (Excel's
  plain "CSV" on Windows); Latin-1 where cp1252 has no character.
- Separators: comma, semicolon (Excel where a comma is the decimal mark) or tab, as the header
  line has them, or as Excel's first line `sep=;` names (quoted or not, a tab too).
- Columns are named by the header in any case and spacing; each row has one cell per column: a
  missing or extra cell is refused in a sentence naming the line and column, as is a file that
  cannot be read at all. Blank lines are left out.
- A name (the `student` column) is read as it was before a spreadsheet made it inert
  (grader.base.text.as_written): `'=1+1`, copied from grades.csv into a roster, is the student `=1+1`.
"""
import codecs
import csv
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.base.errors import GraderError, UsageError
from grader.base.text import as_written
from grader.readers.identity import identity, shown

SEPARATORS = {",": "comma", ";": "semicolon", "\t": "tab"}
WORKBOOKS = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0")           # .xlsx and .ods are zips; .xls is OLE2
LINE_END = re.compile(r"\r\n|\r|\n")
SEP_LINE = re.compile(r'"?sep=([^"])"?', re.IGNORECASE)            # Excel's first line naming the separator
NAMES = ("student",)                                       # columns of names: inert marks taken off


@dataclass(frozen=True)
class Row:
    line: int                       # where the row starts in the file (the header is line 1)
    cells: dict[str, str]           # {column: the cell, trimmed}, every column of the header


@dataclass(frozen=True)
class Table:
    where: str                      # "--roster roster.csv": how sentences name the file
    columns: list[str]              # the header's columns, each as `column` writes it
    rows: list[Row]
    separator: str

    def at(self, line: int | None, column: str) -> str:
        """'--roster r.csv line 3, column extension' (or, with no line, '--roster r.csv, column
        extension'): where a sentence about a cell, or a column, points."""
        return f"{self.where}{f' line {line}' if line else ''}, column {column}"


def column(name: str) -> str:
    """A header's name as compared: any case, spacing or invisible mark."""
    return identity(name)


def read_table(path: str | os.PathLike, columns: Sequence[str] = (), option: str = "",
               error: type[GraderError] = UsageError) -> Table:
    """The Table of the CSV file at `path`, whose header must name each of `columns`; `option`
    (e.g. "--roster") starts each sentence, and `error` is the GraderError it is raised as."""
    where = f"{option} {path}".strip()
    try:
        data = Path(path).read_bytes()
    except OSError as why:
        raise error(f"{where} cannot be read ({why.strerror or type(why).__name__})") from None
    text = decode(data, where, error)
    separator, skipped = None, 0
    while text:                             # blank lines and Excel's hint line (sep=;) above the header
        first, *rest = LINE_END.split(text, maxsplit=1)
        hint = SEP_LINE.fullmatch(first) if separator is None else None
        if first.strip() and not hint:
            break
        separator, text, skipped = hint.group(1) if hint else separator, "".join(rest), skipped + 1
    separator = separator or sniff(text)
    csv.field_size_limit(2**31 - 1)             # a form's export may hold a very long answer
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True)
    records, line = [], 1
    try:
        for cells in reader:
            records.append((line + skipped, cells))
            line = reader.line_num + 1
    except csv.Error as why:
        raise error(f"{where} line {reader.line_num + skipped}: not CSV ({why})") from None
    while records and not any(cell.strip() for cell in records[0][1]):     # a row of empty cells above the header
        records.pop(0)
    if not records:
        raise error(f"{where} is empty; expected a header line" + (f" with {', '.join(columns)}" if columns else ""))
    header = [column(cell) for cell in records[0][1]]
    _check_header(header, records[0][1], columns, where, error)
    rows = [_row(header, number, cells, where, separator, error) for number, cells in records[1:]
            if any(cell.strip() for cell in cells)]
    return Table(where=where, columns=header, rows=rows, separator=separator)


def decode(data: bytes, where: str, error: type[GraderError] = UsageError) -> str:
    """The text of a file in whichever encoding a spreadsheet or a form wrote it."""
    sample = data[:400]
    if data.startswith(WORKBOOKS):
        raise error(f"{where} is a spreadsheet workbook, not CSV: save it as CSV (in Excel: Save As, CSV UTF-8)")
    if data.startswith(codecs.BOM_UTF8):
        encodings = ["utf-8-sig"]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encodings = ["utf-16"]
    elif sample[1::2].count(0) > len(sample) // 4:          # UTF-16 without its BOM: ASCII's high bytes
        encodings = ["utf-16-le"]
    elif sample[0::2].count(0) > len(sample) // 4:
        encodings = ["utf-16-be"]
    else:
        encodings = ["utf-8", "cp1252", "latin-1"]
    for encoding in encodings:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise error(f"{where}: not text in UTF-8, UTF-16 or cp1252; save it again as CSV (UTF-8)")


def sniff(text: str) -> str:
    """The separator of the header line (comma, tab or semicolon), counting none inside quotes."""
    counts, quoted = dict.fromkeys(SEPARATORS, 0), False
    for char in LINE_END.split(text, maxsplit=1)[0]:
        quoted ^= char == '"'
        if not quoted and char in counts:
            counts[char] += 1
    return max(counts, key=lambda separator: counts[separator])


def _check_header(header, raw, columns, where, error):
    named = [name for name in header if name]
    twice = next((name for name in named if named.count(name) > 1), None)
    if twice:
        raise error(f"{where} line 1: two columns are named {twice!r}; keep one")
    missing = [name for name in columns if column(name) not in header]
    if missing:
        got = ", ".join(repr(shown(cell)) for cell in raw if cell.strip()) or "nothing"
        raise error(f"{where}: no column {missing[0]!r}; expected a header line with {', '.join(columns)} "
                    f"(it has {got[:300]})")


def _row(header, line, cells, where, separator, error):
    if len(cells) < len(header):
        lacking = header[len(cells)] or f"number {len(cells) + 1}"
        raise error(f"{where} line {line}: {_cells(len(cells))} where the header has {len(header)}: none for column "
                    f"{lacking!r}")
    extra = [cell for cell in cells[len(header):] if cell.strip()]
    if extra:
        raise error(f"{where} line {line}: {_cells(len(cells))} where the header has {len(header)}: an extra cell "
                    f"{shown(extra[0])[:60]!r} after column {header[-1]!r} (a cell holding a "
                    f"{SEPARATORS.get(separator, repr(separator))} needs quotes around it)")
    return Row(line=line, cells={name: as_written(cell.strip()) if name in NAMES else cell.strip()
                                 for name, cell in zip(header, cells) if name})


def _cells(count):
    return f"{count} cell" + ("" if count == 1 else "s")
