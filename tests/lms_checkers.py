"""Independent checkers of the files grade.py gradebook writes for an LMS, written from how each
importer reads a file (read in their sources, not copied from them), and sharing no code with the
exporter: a file that passes here is one the LMS reads as meant.

Canvas, its gradebook importer (GradebookImporter, Assignment.title_and_id):
  - Ruby's CSV: a quote only around a whole field; ; or , chosen by which splits the first 3
    lines into the same, larger number of fields; lines of only ; , and spaces skipped
  - the header: "Student" in the first column, "ID" in the second; then SIS Login ID, or SIS User
    ID and SIS Login ID (then Integration ID, Root Account); the last student column holds "Section"
  - columns whose title holds "Current Score", "Final Grade"... are not assignments; an assignment
    column is "Title (id)", else Canvas makes a new assignment of it
  - a row whose first cell holds "Points Possible" gives the points; a row of only blanks, "Muted"
    or "Manual Posting" is skipped
  - each other row is a student found by ID (a number), else SIS User ID, else SIS Login ID, else
    by name (which these checks count as not found); numbers with commas are rewritten
Moodle, "Import grades from CSV" (grade/import/csv, csv_import_reader):
  - fgetcsv with the chosen separator (comma); the content trimmed, empty lines skipped; every row
    as many fields as the header, whose names the mapping form lists (so distinct and not blank)
  - one column mapped to the user: a blank cell leaves the row to the student of the row before,
    an unknown value stops the import
  - a grade: '' or '-' for none, else a number, at most 100 (gradepointmax, by default)
Blackboard Learn, the Grade Center's upload ("Working Offline", its instructors' help):
  - a header row, then one record a line; comma-separated data inside a quote character
  - a student found by the Username column: the upload fails on a row without one, and a user
    not enrolled in the course is not processed; name columns are never changed
  - a column found by its column id, written as the download writes it, "Title [Total Pts: N
    Score] |ID"; a column without an id is added as a new text column of 0 points; Total and
    Weighted Total are not processed
  - a grade: a number, or blank
"""
import re

CANVAS_NOT_ASSIGNMENTS = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|"
                                    "Final Grade|Override Score|Override Grade|Override Status")
TITLE_AND_ID = re.compile(r"\A(.*)\s\(([0-9]+)\)\Z")       # Ruby's \d: 0-9 only
PLAIN_NUMBER = re.compile(r"\A[0-9]+(\.[0-9]+)?\Z")


class Misread(AssertionError):
    """What the LMS would do with the file, where it is not what was meant."""


def parse_line(line, sep):
    """Fields of one line as Ruby's CSV reads it, strictly: Misread on a stray quote."""
    fields, i, n = [], 0, len(line)
    while True:
        if i < n and line[i] == '"':
            value, i = [], i + 1
            while True:
                j = line.find('"', i)
                if j < 0:
                    raise Misread(f"unclosed quoted field: {line!r}")
                value.append(line[i:j])
                if line.startswith('""', j):
                    value.append('"')
                    i = j + 2
                    continue
                i = j + 1
                break
            fields.append("".join(value))
            if i < n and line[i] != sep:
                raise Misread(f"text after a closing quote: {line!r}")
        else:
            j = line.find(sep, i)
            j = n if j < 0 else j
            if '"' in line[i:j]:
                raise Misread(f"a quote inside an unquoted field: {line!r}")
            fields.append(line[i:j] or None)          # Ruby: an unquoted empty field is nil
            i = j
        if i >= n:
            return fields
        i += 1


def _lines(path):
    text = path.read_bytes().decode("utf-8-sig")
    if "\r" in text.replace("\r\n", ""):
        raise Misread("a lone carriage return")
    return [line for line in text.split("\r\n" if "\r\n" in text else "\n")]


def canvas_separator(lines):
    counts = {}
    for sep in (";", ","):
        try:
            sizes = [len(parse_line(line, sep)) for line in lines[:3]]
            counts[sep] = sizes[0] if len(set(sizes)) == 1 else 0
        except Misread:
            counts[sep] = 0
    return ";" if counts[";"] > counts[","] else ","


def _student_columns(header):
    if not (len(header) > 3 and "Student" in (header[0] or "") and "ID" in (header[1] or "")):
        raise Misread(f"Canvas: invalid header row {header}")
    count = 3
    if re.search(r"SIS\s+Login\s+ID", header[2] or ""):
        count += 1
    elif re.search(r"SIS\s+User\s+ID", header[2] or "") and re.search(r"SIS\s+Login\s+ID", header[3] or ""):
        extra = 1 if re.search(r"Integration\s+ID", header[4] or "") else 0
        count += 2 + extra + (1 if re.search(r"Root\s+Account", header[3 + 1 + extra] or "") else 0)
    if "Section" not in (header[count - 1] or ""):
        raise Misread(f"Canvas: the last student column {header[count - 1]!r} is not Section")
    return count


def check_canvas(path, assignment_ids, roster):
    """The Canvas file at `path` assigns each grade to the roster student and assignment meant.
    `roster`: the roster CSV's table. Returns {roster student: {assignment id: grade}}."""
    lines = [line for line in _lines(path) if line != ""]
    if canvas_separator(lines) != ",":
        raise Misread("Canvas would split this file on ;")
    rows = [parse_line(line, ",") for line in lines if not re.fullmatch(r"[;, ]+", line)]
    header, students = rows[0], _student_columns(rows[0])
    columns = {}
    for index, title in enumerate(header[students:], students):
        if CANVAS_NOT_ASSIGNMENTS.search(title or ""):
            continue
        found = TITLE_AND_ID.match(title or "")
        if not found or found.group(2) not in assignment_ids:
            raise Misread(f"Canvas: column {title!r} is a new assignment, not one of {sorted(assignment_ids)}")
        columns[index] = found.group(2)
    if len(set(columns.values())) != len(columns):
        raise Misread("Canvas: two columns for one assignment")
    keys = roster[0]
    people = [dict(zip(keys, row)) for row in roster[1:]]
    grades, seen_points = {}, False
    for row in rows[1:]:
        if "Points Possible" in (row[0] or ""):
            if seen_points or grades:
                raise Misread(f"Canvas: {row[0]!r} is read as the points, not a student")
            seen_points = all(PLAIN_NUMBER.match(row[i] or "") for i in columns)
            continue
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", cell, re.I) for cell in row if cell is not None):
            continue
        person = _canvas_student(row, header, people)
        if person["student"] in grades:
            raise Misread(f"Canvas: two rows for {person['student']!r}")
        for index in columns:
            cell = row[index] if index < len(row) else None
            if cell not in (None, "", "EX") and not PLAIN_NUMBER.match(cell):
                raise Misread(f"Canvas: grade {cell!r} is not a number")
        grades[person["student"]] = {columns[i]: row[i] if i < len(row) else None for i in columns}
    if not seen_points:
        raise Misread("Canvas: no Points Possible row with a number per assignment")
    return grades


def _canvas_student(row, header, people):
    by = {"ID": "id", "SIS User ID": "sis_user_id", "SIS Login ID": "sis_login_id"}
    cells = {field: row[header.index(title)] for title, field in by.items() if title in header}
    given = {field: value for field, value in cells.items() if value}
    if given.get("id") and not re.fullmatch("[0-9]+", given["id"]):
        raise Misread(f"Canvas: ID {given['id']!r} is not a user id")
    for field in ("id", "sis_user_id", "sis_login_id"):            # the importer's order
        if field in given:
            matches = [p for p in people if p.get(field) == given[field]]
            if len(matches) != 1:
                raise Misread(f"Canvas: {field} {given[field]!r} matches {len(matches)} roster students")
            if any(matches[0].get(f) and matches[0][f] != v for f, v in given.items()):
                raise Misread(f"Canvas: the row's ids name two students: {given}")
            return matches[0]
    raise Misread(f"Canvas: a row with no ID, SIS User ID or SIS Login ID ({row[0]!r}) is matched by name, or not")


def check_moodle(path, id_column, roster, roster_field):
    """The Moodle file at `path`, its user mapped by `id_column` (the roster's `roster_field`),
    assigns each grade to the roster student meant. Returns {roster student: {column: grade}}."""
    text = path.read_bytes().decode("utf-8-sig").strip()
    rows = [parse_line(line, ",") for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    header = [cell or "" for cell in rows[0]]
    if any(not name.strip() for name in header) or len(set(header)) != len(header):
        raise Misread(f"Moodle: the mapping form needs distinct, named columns: {header}")
    if id_column not in header:
        raise Misread(f"Moodle: no column {id_column!r} to map the user from")
    people = {p[roster_field]: p for p in (dict(zip(roster[0], r)) for r in roster[1:]) if p.get(roster_field)}
    grade_columns = [i for i, name in enumerate(header) if name not in (id_column, "Feedback", "Email address",
                                                                         "ID number")]
    grades = {}
    for row in rows[1:]:
        if len(row) != len(header):
            raise Misread(f"Moodle: {len(row)} fields, the header has {len(header)}: {row}")
        key = (row[header.index(id_column)] or "").strip()
        if not key:
            raise Misread(f"Moodle: a row with no {id_column} gives its grades to the student of the row before")
        if key not in people:
            raise Misread(f"Moodle: {id_column} {key!r} is no user: the whole import stops")
        student = people[key]["student"]
        if student in grades:
            raise Misread(f"Moodle: two rows for {student!r}")
        for i in grade_columns:
            value = (row[i] or "").strip()
            if value not in ("", "-") and not (PLAIN_NUMBER.match(value) and float(value) <= 100):
                raise Misread(f"Moodle: grade {value!r} is not a number from 0 to 100")
        grades[student] = {header[i]: (row[i] or "").strip() for i in grade_columns}
    return grades


BLACKBOARD_COLUMN = re.compile(r"\A(.+) \[Total Pts: ([0-9]+(?:\.[0-9]+)?)(?: [A-Za-z/ ]+)?\] \|([0-9]+)\Z")
BLACKBOARD_NOT_GRADES = {"Last Name", "First Name", "Username", "Student ID", "Last Access", "Availability",
                         "Total", "Weighted Total"}


def check_blackboard(path, column_ids, roster):
    """The Blackboard file at `path` gives each grade to the roster student (found by sis_login_id,
    the Username) and the Grade Center column meant. Returns {roster student: {column id: grade}}."""
    lines = [line for line in _lines(path) if line != ""]
    for line in lines:
        if not line.startswith('"') or not line.endswith('"') or len(parse_line(line, ",")) != \
                len(line.split('","')):
            raise Misread(f"Blackboard: a comma-separated value outside quotes: {line!r}")
    rows = [parse_line(line, ",") for line in lines]
    header = rows[0]
    if "Username" not in header:
        raise Misread(f"Blackboard: no Username column in {header}")
    columns = {}
    for index, title in enumerate(header):
        if title in BLACKBOARD_NOT_GRADES:
            continue
        found = BLACKBOARD_COLUMN.match(title or "")
        if not found or found.group(3) not in column_ids:
            raise Misread(f"Blackboard: column {title!r} is a new text column, not one of {sorted(column_ids)}")
        columns[index] = found.group(3)
    if len(set(columns.values())) != len(columns):
        raise Misread("Blackboard: two columns for one Grade Center column")
    people = {p["sis_login_id"]: p for p in (dict(zip(roster[0], r)) for r in roster[1:]) if p.get("sis_login_id")}
    grades = {}
    for row in rows[1:]:
        if len(row) != len(header):
            raise Misread(f"Blackboard: {len(row)} values, the header has {len(header)}: {row}")
        username = row[header.index("Username")] or ""
        if not username:
            raise Misread("Blackboard: a row without a Username fails the upload")
        if username not in people:
            raise Misread(f"Blackboard: {username!r} is not enrolled: the row is not processed")
        student = people[username]["student"]
        if student in grades:
            raise Misread(f"Blackboard: two rows for {student!r}")
        for index in columns:
            if row[index] and not PLAIN_NUMBER.match(row[index]):
                raise Misread(f"Blackboard: grade {row[index]!r} is not a number")
        grades[student] = {columns[i]: row[i] or "" for i in columns}
    return grades
