"""`grade.py gradebook`: a batch's rows (OUT/rows.json), a roster, the late policy and the class
quiz into the CSV an LMS imports.

Each format is a module of grader/instructor/lms/ (csv, canvas, moodle, blackboard), which says
how its LMS reads the file.

Students match in one normal form (grader.readers.identity). An LMS file holds only rows of the roster,
each with the roster's identifier: an LMS cannot match any other row (Moodle applies a row without
one to the student of the row before). Submissions not on the roster go to FILE.unmatched.csv
and the terminal. Every cell is inert (grader.base.text).
"""
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from grader.base.errors import GraderError, UsageError
from grader.base.files import write_atomic
from grader.base.kinds import Timing
from grader.base.text import csv_text
from grader.instructor import deadlines, lms, record
from grader.instructor.lms import LmsFormat
from grader.instructor.lms.common import Columns, Kind, Line, Scale
from grader.instructor.records import BatchRow
from grader.instructor.roster import Quiz, RosterEntry, read_quiz, read_roster
from grader.readers.identity import as_read, how_alike, identity, look_alikes

if TYPE_CHECKING:
    from grader.instructor.records import BatchSummary
    from grader.readers.manifest import Deadline, Lab

Missing = Literal["zero", "blank"]

NOT_SCORED = {"pending": "not graded yet: rerun the batch",
              "regrade": "the grader could not grade it: rerun the batch"}


# -- one gradebook -----------------------------------------------------------------------------------------
def _by_identity(rows):
    """{identity: row}; rows of one student (a batch graded before names were compared in one
    form) become one rejected row listing them, graded over neither."""
    groups = {}
    for row in rows:
        groups.setdefault(identity(row.student), []).append(row)
    merged = {}
    for key, same in groups.items():
        names = [name for row in same for name in (row.collision or [row.student])]
        merged[key] = same[0] if len(same) == 1 else BatchRow(
            student=same[0].student, status="rejected", score=0, collision=names,
            detail=f"{len(names)} submissions for one student: {', '.join(map(repr, names))}; keep one")
    return merged


def build(rows: Iterable[BatchRow], roster: dict[str, RosterEntry] | None, quiz: dict[str, Quiz],
          max_score: float | None, missing: Missing = "zero") -> list[Line]:
    """The gradebook's Lines of decided rows (the class's FinalRecord's): roster order first, then
    submissions not on the roster, then quiz takers who are in neither."""
    by_key = _by_identity(rows)
    keys = list(roster or by_key) + [k for k in by_key if roster and k not in roster]
    keys += [k for k in quiz if k not in keys]
    alike: dict[str, str] = {}      # names of the roster, submissions and quiz that only look alike: {each: other}
    for group in look_alikes([*(e.student for e in (roster or {}).values()), *(r.student for r in by_key.values()),
                              *quiz]):
        for name in group:
            alike.setdefault(identity(name), next(other for other in group if identity(other) != identity(name)))
    lines = []
    for key in keys:
        entry, row = (roster or {}).get(key), by_key.get(key)
        name = row.student if row else entry.student if entry else key
        line = Line(name, entry, row, quiz.get(key))
        if roster is not None and entry is None:
            line.notes.append("not on the roster" + (f", whose {as_read(alike[key])} looks like it" if key in alike
                                                     else ""))
        if entry and row and entry.student != row.student:
            line.matched = f"roster {as_read(entry.student)} is submission {as_read(row.student)} " \
                           f"({how_alike(entry.student, row.student)})"
        line.alike = alike.get(key, "")
        _score(line, missing)
        lines.append(line)
    return lines


def _score(line, missing):
    row = line.row
    if row is None:
        line.final = 0.0 if missing == "zero" else None
        line.notes.append("no submission" + (f", and {as_read(line.alike)} looks like it" if line.alike else ""))
        return
    line.final = row.final_score
    line.notes += [n for n in (row.timing if row.timing_kind != Timing.ON_TIME else "",
                               NOT_SCORED.get(row.status, "") or (f"{row.status}: {row.detail}" if row.status
                                                                   in ("empty", "rejected") else ""),
                               *(f"adjusted {said}" for said in record.in_words(row))) if n]


# -- writing ------------------------------------------------------------------------------------------------
def write(path: Path, fmt: LmsFormat, lines: Sequence[Line], max_score: float | None, scale: Scale = "points",
          columns: Mapping[Kind, str | None] | None = None) -> list[Line]:
    """The gradebook in `fmt` at `path`, and for an LMS the lines it cannot match at
    FILE.unmatched.csv; written atomically. `columns`: {"lab", "quiz", "lesson": title or None (left
    out)}. Returns the unmatched Lines."""
    chosen: Columns = {kind: title for kind, title in (columns or {"lab": "lab"}).items() if title}
    unmatched = [line for line in lines if line.entry is None] if fmt.needs_roster else []
    table = fmt.table([line for line in lines if line.entry or not fmt.needs_roster], max_score, scale, chosen)
    write_atomic(path, fmt.text(table))
    if fmt.needs_roster:
        write_atomic(unmatched_path(path), csv_text(lms.unmatched(unmatched, max_score)))
    return unmatched


def strays_in_words(stamps, rows):
    """The names of a timestamps file ({identity: time}) that match no row, each as people read it,
    and with the submission whose name it looks like, where one does (grader.readers.identity.look_alikes)."""
    names = [row.student for row in rows]
    found = []
    for key in sorted(set(stamps or {}) - {identity(name) for name in names}):
        alike = next((group for group in look_alikes([key, *names]) if key in group), [])
        found.append(as_read(key) + "".join(f", which looks like {as_read(other)}" for other in alike[1:2]))
    return found


def unmatched_path(path):
    return path.with_name(path.stem + ".unmatched.csv")


def follow(out: Path, lab: "Lab | None", decided: record.FinalRecord, quiz: str | os.PathLike | None = None) -> None:
    """grades.csv, the class page and each feedback page made again from the record just decided."""
    from grader.instructor.gradebook import write_grades
    from grader.instructor.page import write_report

    if lab is not None:
        write_grades(out, lab, decided)
        write_report(out, lab, quiz if lab.quiz else None)


def record_quiz(out, lab, quiz):
    """The class quiz given to `report`: its marks into the record and grades.csv, as the page shows them."""
    from grader.instructor.gradebook import write_grades
    from grader.instructor.records import BatchSummary

    decided = record.load(out)
    if decided is None:
        return
    lab = lab or _batch_lab(BatchSummary.model_validate_json((out / "summary.json").read_text(encoding="utf-8")))
    marks = read_quiz(quiz, lab, [row.student for row in decided.rows])
    decided = decided.model_copy(update={"quiz": {key: record.QuizMark(score=q.score, max=q.max, passed=q.passed)
                                                  for key, q in marks.items()}})
    record.save(out, decided)
    write_grades(out, lab, decided)


# -- the command ------------------------------------------------------------------------------------------
def _batch_lab(summary):
    """The lab a batch graded, where this course has it (its quiz grades a form's responses)."""
    from grader.readers.manifest import find_lab

    try:
        return find_lab(summary.lab)
    except GraderError:
        return None


def load_batch(out: Path) -> tuple["BatchSummary", list[BatchRow]]:
    """(BatchSummary, [BatchRow]) of a batch's output folder."""
    from grader.instructor.gradebook import ROWS
    from grader.instructor.records import BatchSummary

    for name in ("summary.json", "rows.json"):
        if not (out / name).is_file():
            raise UsageError(f"{out} holds no {name}: expected the --out folder of grade.py batch (a batch "
                             "graded before rows.json existed writes it when run again)")
    try:
        return (BatchSummary.model_validate_json((out / "summary.json").read_text(encoding="utf-8")),
                ROWS.validate_json((out / "rows.json").read_text(encoding="utf-8")))
    except (ValueError, OSError) as error:
        raise UsageError(f"{out}: summary.json or rows.json cannot be read ({type(error).__name__})") from None


def policy(lab: "Lab | None", overrides: dict[str, Any]) -> "Deadline | None":
    """lab.yaml's deadline with the command line's `overrides` (fields of labs.Deadline) over it."""
    from pydantic import ValidationError

    from grader.readers.manifest import Deadline

    base = lab.manifest.deadline if lab else None
    if not overrides:
        return base
    data = {**(base.model_dump() if base else {}), **overrides}
    if "due" not in data:
        raise UsageError("a late policy needs a due time: give --due, or a deadline in lab.yaml")
    try:
        return Deadline.model_validate(data)
    except ValidationError as error:
        problem = error.errors()[0]
        raise UsageError(f"late policy: {'.'.join(map(str, problem['loc']))}: {problem['msg']}") from None


@dataclass(frozen=True)
class GradebookRequest:
    """What the instructor asked `grade.py gradebook` for, its paths already checked: the batch's
    folder `out`, the file `dest` in `fmt`, the lab whose deadline applies, the class's files, the
    command line's late policy (`overrides`: fields of labs.Deadline over lab.yaml's) and how the
    file shows its grades (`columns`: {"lab", "quiz", "lesson": title}, those not named defaulted)."""
    out: Path
    fmt: LmsFormat
    dest: Path
    lab: "Lab | None" = None
    roster: Path | None = None
    quiz: Path | None = None
    timestamps: Path | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    scale: Scale = "points"
    columns: Mapping[Kind, str | None] = field(default_factory=dict)
    missing: Missing = "zero"
    assume: record.Assume = None


def gradebook(asked: GradebookRequest) -> tuple[list[Line], list[Line], list[str]]:
    """Read, decide, build and write one gradebook: the late policy given here is decided once
    into the class's record (OUT/final.json), and grades.csv, the page and the feedback follow
    it. Returns (Lines, unmatched Lines, the timestamps file's names that match no submission, in
    words: strays_in_words)."""
    out, fmt, lab, quiz = asked.out, asked.fmt, asked.lab, asked.quiz
    summary, rows = load_batch(out)
    deadline = policy(lab, dict(asked.overrides))
    stamps = deadlines.read_timestamps(asked.timestamps) if asked.timestamps else None
    entries = read_roster(asked.roster) if asked.roster else None
    quiz_rows = read_quiz(quiz, lab or _batch_lab(summary), [*(row.student for row in rows),
                                                             *(e.student for e in (entries or {}).values())]) \
        if quiz else {}
    marks = {key: record.QuizMark(score=q.score, max=q.max, passed=q.passed) for key, q in quiz_rows.items()}
    extensions = {key: entry.extension for key, entry in entries.items()} if entries is not None else None
    chosen = record.Policy(deadline, "command line" if asked.overrides else "lab.yaml", asked.assume)
    decided = record.decide(rows, chosen, record.Given(
        "grade.py gradebook", summary.max_score, times=stamps, extensions=extensions,
        adjustments=tuple(record.read_adjustments(out)), quiz=marks if quiz else None, earlier=record.load(out)))
    kept: dict[str, Any] = quiz_rows or dict(decided.quiz)      # not given again: the quiz the record keeps
    lines = build(decided.rows, entries, kept, summary.max_score, asked.missing)
    strays = strays_in_words(stamps, rows)
    given = asked.columns
    titles: dict[Kind, str | None] = {"lab": summary.lab, **given}
    if not fmt.column_ids:
        titles = {"quiz": f"{titles['lab']} quiz", "lesson": f"{titles['lab']} lesson complete", **titles}
    if not quiz and not ({"quiz", "lesson"} & set(given) and kept):   # the record's, where a column is named
        titles["quiz"] = titles["lesson"] = None
    # first: a refused file decides nothing
    unmatched = write(asked.dest, fmt, lines, summary.max_score, asked.scale, titles)
    record.save(out, decided)
    follow(out, lab or _batch_lab(summary), decided, quiz)
    return lines, unmatched, strays
