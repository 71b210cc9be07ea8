"""Grade a class: one folder or .zip per student, graded by warm workers into a gradebook.

`python grade.py batch lab2 SUBMISSIONS --out OUT` writes
    OUT/grades.csv                        one row per student (records.BatchRow), for an LMS gradebook
    OUT/students/<student>/results.json   Gradescope's results.json, as single grading writes it
                                          (<student>: submissions.folder_name, one folder each on any disk)
    OUT/students/<student>/graded.json    the row, the full results and a hash of what was graded
    OUT/summary.json                      where the class struggles (records.BatchSummary)
    OUT/rows.json                         every row with its submission time: what `grade.py gradebook` reads
Students' folders live apart from the gradebook's files, so no student's name can replace them.

Submissions are read as data only, by grader/core/submissions.py. Student code runs only in the children of each
worker's zygote. A worker imports torch once, keeps one zygote for its life and resets it
between submissions. Each result is written as soon as it comes back, so a rerun (or a run after
Ctrl-C) grades only the students whose files, or the lab, changed since.
"""
import hashlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from grader.base.errors import UsageError
from grader.base.files import write_atomic
from grader.base.kinds import Answer
from grader.base.text import one_line, printable
from grader.core.results import LabResults
from grader.core.submissions import GRADABLE, Submission, class_entries, folder_name, list_submissions
from grader.instructor import deadlines, gradebook, record
from grader.instructor.page import write_report
from grader.instructor.records import BatchRow, StudentRecord
from grader.instructor.roster import read_quiz, read_roster
from grader.instructor.workers import Plan, grade_all
from grader.judge.launchers import launcher_for
from grader.readers.identity import identity
from grader.readers.manifest import ENGINE, Lab, engine_files

STUDENTS = "students"                           # OUT/students/<student>/: one folder each
# grade_class's backend(lab, todo, workers, options, done): the local pool or a Ray cluster; how many it ran
Backend = Callable[[Lab, list[Submission], int | None, dict[str, Any], Callable[[Submission, Answer, Any], None]],
                   int]


# -- what was graded: hashes --------------------------------------------------------------------------
def lab_fingerprint(lab: Lab, select: Iterable[str], device: str, sandbox: str) -> str:
    """A hash of everything a grade depends on besides the student's files: their content and
    names within the lab, never where the course lies (a moved or cloned course regrades no one)."""
    digest = hashlib.sha256(repr((sorted(select), str(device), str(sandbox))).encode())
    folders = [lab.folder, lab.handout, lab.reference, *lab.child_modules, *(ENGINE / f for f in engine_files())]
    for role, top in enumerate(folders):
        for path in sorted([] if top is None else [top] if top.is_file() else top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                name = path.relative_to(top).as_posix() if path != top else top.name
                digest.update(f"{role}\0{name}\0{path.stat().st_size}\0".encode() + path.read_bytes())
    return digest.hexdigest()


def submission_hash(fingerprint: str, files: dict[str, bytes]) -> str:
    digest = hashlib.sha256(fingerprint.encode())
    for name in sorted(files):
        digest.update(f"\0{name}\0{len(files[name])}\0".encode() + files[name])
    return digest.hexdigest()


# -- one class ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimeFiles:
    """What the lab's late policy (lab.yaml's deadline) is applied with: `timestamps` (CSV: the only
    source of submission times; without it every time is unknown, a submission's own dates being
    the student's word), `roster` (CSV: extensions), `assume` ("on time" / "late": what an unknown
    time counts as; None: no mark until it is known)."""
    timestamps: Path | None = None
    roster: Path | None = None
    assume: str | None = None


@dataclass(frozen=True)
class ClassRequest:
    """One batch: what each grading asks (workers.Plan), `workers` (None: one per core), `force`
    (grade again the unchanged), `students` (grade only these, again; the others keep the rows they
    have), `quiz` (the class quiz: a form's responses, or the gradebook of grade.py quiz --class,
    whose scores grades.csv carries beside the lab's, and the page shows) and the TimeFiles."""
    plan: Plan = field(default_factory=Plan)
    workers: int | None = None
    force: bool = False
    students: tuple[str, ...] = ()
    quiz: Path | None = None
    timing: TimeFiles = field(default_factory=TimeFiles)


@dataclass
class ClassRun:
    """One batch as it goes: where it writes, the rows so far and the results graded (a student's
    None: no grade kept), and what its late policy and quiz are given: `timing` (_timing), the
    entries it `ignored`, the class quiz's rows."""
    lab: Lab
    out: Path
    timing: tuple
    ignored: list
    quiz: dict | None
    rows: dict[str, BatchRow] = field(default_factory=dict)
    graded: dict[str, LabResults | None] = field(default_factory=dict)


def grade_class(lab, submissions, out, console, request=None, backend=grade_all):
    """Grade every submission in `submissions` into `out` as `request` (a ClassRequest) asks;
    returns the BatchSummary.

    `backend(lab, todo, workers, plan, done)` grades the submissions that need it and returns
    how many workers it ran: the local pool (grade_all) or a Ray cluster (grader/cluster.py).

    Ctrl-C: what was graded stays written, grades.csv and summary.json are rewritten (the rest
    pending), and KeyboardInterrupt goes on up.
    """
    started = time.monotonic()
    request = request or ClassRequest()
    plan, quiz, out = request.plan, request.quiz, Path(out)
    lab.select(plan.selection.only)
    sandbox_name = launcher_for(plan.sandbox).name      # refuses now if --sandbox required can't be met
    subs = list_submissions(lab, submissions, out)
    students = _named(subs, request.students, submissions)
    quiz_rows = quiz and read_quiz(quiz, lab, [sub.student for sub in subs])   # a file no student is in: refused
    run = ClassRun(lab, out, _timing(request.timing), class_entries(lab, submissions, out)[1],
                   quiz_rows)
    out.mkdir(parents=True, exist_ok=True)
    fingerprint = lab_fingerprint(lab, plan.selection.only, plan.device, sandbox_name)
    run.rows, run.graded, todo = _sort_out(subs, out, fingerprint, sandbox_name, request.force, students)

    def done(sub: Submission, kind: Answer | str, data: Any) -> None:
        row = _save_answer(run, sub, kind, data)
        run.rows[sub.student] = row
        progress.console.print(gradebook.line(row), highlight=False)
        progress.advance(task)

    interrupted, used = False, min(request.workers or os.cpu_count() or 1, len(todo))   # the backend tells
    try:
        with _progress(console) as progress:
            task = progress.add_task(lab.name, total=len(todo))
            if todo:
                used = backend(lab, todo, request.workers, plan, done)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        summary = _write_gradebook(run, gradebook.Tally(len(todo), used, time.monotonic() - started, interrupted))
    write_report(out, lab, quiz)                        # OUT/report.html, and each student's feedback
    return summary


def _named(subs, students, submissions):
    """The submissions' names for the --student names given (in any case or Unicode form)."""
    named = {identity(s): s for s in students}
    found = {sub.student for sub in subs if identity(sub.student) in named}
    unknown = sorted(set(named) - {identity(s) for s in found})
    if unknown:
        raise UsageError(f"--student {named[unknown[0]]}: no such submission in {submissions}")
    return found


def _progress(console):
    columns = [TextColumn("[bold]grading {task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("·"), TimeElapsedColumn(), TextColumn("· ETA"), TimeRemainingColumn()]
    return Progress(*columns, console=console, transient=True)


def _save_answer(run: ClassRun, sub: Submission, kind: Answer | str, data: Any) -> BatchRow:
    """A backend's answer for one submission, written to the student's folder as it comes (its
    results kept in `run.graded`); returns the student's row."""
    lab, out, graded = run.lab, run.out, run.graded
    kind = Answer(kind)
    if kind == Answer.GRADED:
        results = LabResults.model_validate(data).model_copy(update={"submission": one_line(str(sub.path))})
        if results.faults:      # not a grade: no score, and the next run grades it again
            kind, data = Answer.REGRADE, "; ".join(dict.fromkeys(c.message for c in results.faults))
    if kind == Answer.GRADED:
        row = gradebook.row(lab, sub, results)
        graded[sub.student] = results
        gradescope = results.gradescope()
    else:
        row = BatchRow(student=sub.student, status="regrade", detail=printable(data)[:500])
        graded.pop(sub.student, None)
        gradescope = None
    record = StudentRecord(hash=sub.hash, row=row, results=graded.get(sub.student))
    _save(out / STUDENTS / folder_name(sub.student), record, gradescope)
    return row


def _timing(timing):
    """({identity: time} or None, {identity: extension} or None, assume) from the batch's TimeFiles;
    None where the option was not given (the record's earlier decision stands)."""
    stamps, roster = timing.timestamps, timing.roster
    extensions = {key: entry.extension for key, entry in read_roster(roster).items()} if roster else None
    return deadlines.read_timestamps(stamps) if stamps else None, extensions, timing.assume


def _decided(lab, out, rows, max_score, timing, quiz):
    """The class's FinalRecord (grader/instructor/record.py): lab.yaml's late policy, or the one a
    gradebook gave on its command line before (kept through a regrade, as are the adjustments),
    with this batch's times and extensions where given, else those the record had."""
    stamps, extensions, assume = timing
    earlier = record.load(out)
    policy, origin = lab.manifest.deadline, "lab.yaml"
    if earlier and earlier.policy_from == "command line":
        policy, origin = earlier.deadline(), "command line"
    kept = {identity(r.student): r for r in earlier.rows} if earlier else {}
    if stamps is None and kept:
        stamps = {key: r.submitted_at for key, r in kept.items() if r.time_source == "timestamps" and r.submitted_at}
    if extensions is None and kept:
        extensions = {key: r.extension for key, r in kept.items() if r.extension}
    marks = {key: record.QuizMark(score=q.score, max=q.max, passed=q.passed) for key, q in quiz.items()} \
        if quiz is not None else None
    given = record.Given("grade.py batch", max_score, times=stamps, extensions=extensions or {},
                         adjustments=tuple(record.read_adjustments(out)), quiz=marks, earlier=earlier)
    return record.decide(rows.values(), record.Policy(policy, origin, assume if assume or not earlier else
                                                      earlier.assume), given)


def _write_gradebook(run: ClassRun, tally: gradebook.Tally):
    """grades.csv, rows.json, final.json, summary.json as the rows stand (the rest pending)."""
    lab, out, graded = run.lab, run.out, run.graded
    top = next((result.max_score for result in graded.values() if result is not None), None)
    decided = _decided(lab, out, run.rows, top, run.timing, run.quiz)
    summary = gradebook.summarize(lab, decided.rows, graded, tally)
    summary.ignored, summary.timing = run.ignored, deadlines.tally(decided.rows)
    record.save(out, decided)
    gradebook.write_grades(out, lab, decided)
    write_atomic(out / "rows.json", gradebook.ROWS.dump_json(decided.rows, indent=2).decode())
    write_atomic(out / "summary.json", summary.model_dump_json(indent=2))
    return summary


def _sort_out(subs, out, fingerprint, sandbox_name, force, only=frozenset()):
    """(rows, graded results, submissions to grade): what cannot be graded gets its row now, an
    unchanged submission its earlier grade, the rest waits as "pending". With `only`, the other
    students keep the row they have (pending if none) and only those named are graded."""
    rows, graded, todo = {}, {}, []
    for sub in subs:
        folder = out / STUDENTS / folder_name(sub.student)
        if only and sub.student not in only:
            record = _recorded(folder)
            rows[sub.student] = record.row.model_copy(update={"reused": True}) if record else \
                BatchRow(student=sub.student, status="pending", detail="not graded yet")
            if record and record.results:
                graded[sub.student] = record.results
            continue
        if sub.status not in GRADABLE:
            rows[sub.student] = BatchRow(student=sub.student, status=sub.status, detail=sub.detail, score=0,
                                         collision=list(sub.collision))
            _save(folder, StudentRecord(hash="", row=rows[sub.student]), gradebook.not_graded(sub.detail, sandbox_name))
            continue
        sub.hash = submission_hash(fingerprint, sub.files)
        record = None if force or only else _reusable(folder, sub.hash)
        if record:
            rows[sub.student] = record.row.model_copy(update={"reused": True})
            graded[sub.student] = record.results
        else:
            rows[sub.student] = BatchRow(student=sub.student, status="pending", detail="not graded yet")
            todo.append(sub)
    return rows, graded, todo


def _recorded(folder):
    """The student's record from an earlier run, or None."""
    try:
        return StudentRecord.model_validate_json((folder / "graded.json").read_text())
    except (OSError, ValueError):
        return None


def _reusable(folder, digest):
    """The record of an unchanged, well-graded submission, or None: a "regrade" row has no results,
    and a memo its grading used that holds something else now (found unsound and computed again)
    regrades it."""
    record = _recorded(folder)
    if record is None or record.hash != digest or record.results is None or not (folder / "results.json").is_file():
        return None
    if record.results.memos:
        # grader.lab_api imports torch: the batch's own process needs it only here, and its
        # workers start sooner without it
        from grader.lab_api import memo

        if memo.changed(record.results.memos):
            return None
    return record




def _save(folder, record, gradescope):
    """The student's results.json (none for a row to regrade: no score is given) and record."""
    folder.mkdir(parents=True, exist_ok=True)
    if gradescope is None:
        (folder / "results.json").unlink(missing_ok=True)
    else:
        write_atomic(folder / "results.json", gradescope.model_dump_json(indent=2))
    write_atomic(folder / "graded.json", record.model_dump_json(indent=2))     # last: it marks the grade done


