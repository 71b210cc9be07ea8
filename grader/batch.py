"""Grade a class: one folder or .zip per student, graded by warm workers into a gradebook.

`python grade.py batch lab2 SUBMISSIONS --out OUT` writes
    OUT/grades.csv                        one row per student (results.BatchRow), for an LMS gradebook
    OUT/students/<student>/results.json   Gradescope's results.json, as single grading writes it
    OUT/students/<student>/graded.json    the row, the full results and a hash of what was graded
    OUT/summary.json                      where the class struggles (results.BatchSummary)
Students' folders live apart from the gradebook's files, so no student's name can replace them.

Submissions are read as data only, by grader/submissions.py. Student code runs only in the children of each
worker's zygote. A worker imports torch once, keeps one zygote for its life and resets it
between submissions. Each result is written as soon as it comes back, so a rerun (or a run after
Ctrl-C) grades only the students whose files, or the lab, changed since.
"""
import csv
import hashlib
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import statistics
import tempfile
import time
from collections import Counter, deque
from pathlib import Path

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from grader.errors import SetupError
from grader.labs import engine_files, find_lab
from grader.results import (
    BatchRow,
    BatchSummary,
    CheckRate,
    GradescopeResults,
    LabResults,
    Mistake,
    ScoreBin,
    StudentRecord,
    printable,
)
from grader.sandbox import Zygote, launcher_for, write_files
from grader.submissions import GRADABLE, list_submissions

ENGINE = Path(__file__).resolve().parent
INCIDENTS = ("timeout", "crashed", "budget")    # calls that never came back, listed for the class
STUDENTS = "students"                           # OUT/students/<student>/: one folder each


# -- what was graded: hashes --------------------------------------------------------------------------
def lab_fingerprint(lab, select, device, sandbox):
    """A hash of everything a grade depends on besides the student's files."""
    digest = hashlib.sha256(repr((sorted(select), device, sandbox)).encode())
    folders = [lab.folder, lab.handout, lab.reference, *lab.child_modules, *(ENGINE / f for f in engine_files())]
    for top in filter(None, folders):
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(f"{path}\0{path.stat().st_size}\0".encode() + path.read_bytes())
    return digest.hexdigest()


def submission_hash(fingerprint, files):
    digest = hashlib.sha256(fingerprint.encode())
    for name in sorted(files):
        digest.update(f"\0{name}\0{len(files[name])}\0".encode() + files[name])
    return digest.hexdigest()


# -- workers ------------------------------------------------------------------------------------------
class WarmGrader:
    """torch, the lab and one zygote, kept warm to grade submission after submission: the body of
    a local worker process here and of a Ray actor (grader/cluster.py)."""

    def __init__(self, lab_folder, options):
        os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.zygote = Zygote(launcher_for(options["sandbox"]))   # first: it imports torch while we do
        import torch

        torch.set_num_threads(1)
        self.lab, self.options = find_lab(lab_folder), options
        self.scratch = Path(tempfile.mkdtemp(prefix="grade-batch-"))

    def grade(self, files):
        """One submission's {name: bytes} -> ("graded", LabResults dump) or ("error", message)."""
        from grader.runner import grade

        folder = self.scratch / "submission"
        shutil.rmtree(folder, ignore_errors=True)
        write_files(folder, files)
        try:
            results = grade(self.lab, folder, device=self.options["device"], select=self.options["select"],
                            sandbox=self.options["sandbox"], zygote=self.zygote)
            return "graded", results.model_dump(mode="json")
        except Exception as error:
            return "error", f"the grader failed: {type(error).__name__}: {error}"
        finally:
            self.zygote.reset()

    def close(self):
        self.zygote.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def abandon(self):
        """From a signal handler: kill the zygote and remove the files, waiting for nothing."""
        try:
            os.killpg(self.zygote.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(self.zygote.scratch, ignore_errors=True)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _work(lab_folder, options, conn):
    """A grading process: one WarmGrader for life.

    Receives {name: bytes} per submission (None: stop); answers with WarmGrader.grade's pair;
    ("failed", message) when it cannot start.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the main process decides what Ctrl-C stops
    try:
        grader = WarmGrader(lab_folder, options)
    except Exception as error:
        conn.send(("failed", f"{type(error).__name__}: {error}"))
        return

    def stop(*_):                   # SIGTERM from the main process: leave nothing behind
        grader.abandon()
        os._exit(143)

    signal.signal(signal.SIGTERM, stop)
    try:
        while (files := conn.recv()) is not None:
            conn.send(grader.grade(files))
    except (EOFError, OSError):
        pass                        # the main process is gone
    finally:
        grader.close()


class Worker:
    def __init__(self, context, lab, options):
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_work, args=(str(lab.folder), options, theirs),
                                       daemon=True, name="grade-worker")
        self.process.start()
        theirs.close()
        self.job = None             # the Submission being graded

    def give(self, job):
        self.job = job
        try:
            self.conn.send(job.files)
        except OSError:
            pass                    # it died: the main loop sees its pipe close

    def answer(self):
        """(kind, data) when it has answered or died, else None."""
        if self.conn.poll():
            try:
                return self.conn.recv()
            except (EOFError, OSError):
                pass
        elif self.process.is_alive():
            return None
        self.process.join(1)
        return "died", (f"the grading process stopped unexpectedly (exit status {self.process.exitcode}); "
                        "run the batch again to grade this one")

    def quit(self):
        """Ask an idle worker to finish (its zygote closes); a busy one is terminated by stop()."""
        if self.job is None and self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass

    def stop(self):
        self.process.join(10 if self.job is None else 0)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def grade_all(lab, todo, count, options, done):
    """Grade each Submission in `todo` on `count` local workers (None: one per core);
    done(submission, kind, data) per answer. Returns how many workers it started."""
    context = multiprocessing.get_context("spawn")
    queue = deque(todo)
    workers = [Worker(context, lab, options) for _ in range(min(count or os.cpu_count() or 1, len(queue)))]
    started = len(workers)
    try:
        while queue or any(w.job for w in workers):
            for worker in workers:
                if worker.job is None and queue:
                    worker.give(queue.popleft())
            busy = [w for w in workers if w.job]
            multiprocessing.connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
            for worker in busy:
                answer = worker.answer()
                if answer is None:
                    continue
                kind, data = answer
                if kind == "failed":
                    raise SetupError(f"a grading worker could not start: {data}")
                job, worker.job = worker.job, None
                if kind == "died":
                    workers.remove(worker)
                    worker.stop()
                    if queue:
                        workers.append(Worker(context, lab, options))
                done(job, "error" if kind == "died" else kind, data)
    finally:
        for worker in workers:
            worker.quit()
        for worker in workers:
            worker.stop()
    return started


# -- one class ----------------------------------------------------------------------------------------
def grade_class(lab, submissions, out, console, workers=None, force=False, select=(), device="auto",
                sandbox="auto", backend=grade_all):
    """Grade every submission in `submissions` into `out`; returns the BatchSummary.

    `backend(lab, todo, workers, options, done)` grades the submissions that need it and returns
    how many workers it ran: the local pool (grade_all) or a Ray cluster (grader/cluster.py).

    Ctrl-C: what was graded stays written, grades.csv and summary.json are rewritten (the rest
    pending), and KeyboardInterrupt goes on up.
    """
    started = time.monotonic()
    out = Path(out)
    lab.select(select)
    sandbox_name = launcher_for(sandbox).name          # refuses now if --sandbox required can't be met
    subs = list_submissions(lab, submissions, out)
    out.mkdir(parents=True, exist_ok=True)
    fingerprint = lab_fingerprint(lab, select, device, sandbox_name)
    rows, graded, todo = {}, {}, []
    for sub in subs:
        folder = out / STUDENTS / sub.student
        if sub.status not in GRADABLE:
            rows[sub.student] = BatchRow(student=sub.student, status=sub.status, detail=sub.detail, score=0)
            _save(folder, StudentRecord(hash="", row=rows[sub.student]), not_graded(sub.detail, sandbox_name))
            continue
        sub.hash = submission_hash(fingerprint, sub.files)
        record = None if force else _reusable(folder, sub.hash)
        if record:
            rows[sub.student] = record.row.model_copy(update={"reused": True})
            graded[sub.student] = record.results
        else:
            rows[sub.student] = BatchRow(student=sub.student, status="pending", detail="not graded yet")
            todo.append(sub)

    def done(sub, kind, data):
        if kind == "graded":
            results = LabResults.model_validate(data).model_copy(update={"submission": str(sub.path)})
            row = _row(lab, sub, results)
            graded[sub.student] = results
            gradescope = results.gradescope()
        else:
            row = BatchRow(student=sub.student, status="error", detail=data)
            gradescope = not_graded(data, sandbox_name)
        _save(out / STUDENTS / sub.student, StudentRecord(hash=sub.hash, row=row, results=graded.get(sub.student)),
              gradescope)
        rows[sub.student] = row
        progress.console.print(_line(row), highlight=False)
        progress.advance(task)

    columns = [TextColumn("[bold]grading {task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("·"), TimeElapsedColumn(), TextColumn("· ETA"), TimeRemainingColumn()]
    interrupted, used = False, min(workers or os.cpu_count() or 1, len(todo))   # the backend tells
    try:
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task(lab.name, total=len(todo))
            if todo:
                options = {"device": device, "select": list(select), "sandbox": sandbox}
                used = backend(lab, todo, workers, options, done)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        summary = summarize(lab, list(rows.values()), graded, len(todo), used,
                            time.monotonic() - started, interrupted)
        write_csv(out / "grades.csv", lab, sorted(rows.values(), key=lambda r: r.student))
        _write(out / "summary.json", summary.model_dump_json(indent=2))
    return summary


def _row(lab, sub, results):
    incidents = dict.fromkeys(c.message.splitlines()[0][:160] for c in results.checks
                              if c.failure in INCIDENTS)
    return BatchRow(student=sub.student, status=sub.status, detail=sub.detail, score=results.score,
                    max_score=results.max_score, passed=results.all_passed,
                    functions={f: score for f, (score, _) in results.by_function(lab.functions).items()},
                    incidents=list(incidents), seconds=round(results.execution_time, 2))


def _line(row):
    mark = {"graded": "[green]✓[/]", "incomplete": "[yellow]✓[/]", "error": "[red]![/]"}.get(row.status, "[red]✗[/]")
    score = f"{row.score:g}/{row.max_score:g}" if row.score is not None else "-"
    note = "; ".join(filter(None, [row.detail, *row.incidents]))
    return f"{mark} {escape(printable(row.student))}  [bold]{score}[/]  " \
           f"[dim]{row.status} {row.seconds:.1f} s {escape(printable(note))}[/]"


def not_graded(why, sandbox_name):
    """Gradescope's results.json for a submission that could not be graded: 0 points, and why."""
    return GradescopeResults(score=0, execution_time=0, output=f"Not graded: {why}", sandbox=sandbox_name,
                             tests=[])


def _reusable(folder, digest):
    """The record of an unchanged, well-graded submission, or None."""
    try:
        record = StudentRecord.model_validate_json((folder / "graded.json").read_text())
    except (OSError, ValueError):
        return None
    if record.hash != digest or record.results is None or not (folder / "results.json").is_file():
        return None
    return record


def _write(path, text):
    """Write atomically: a reader (or an interrupted run) sees the old file or the new one."""
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


def _save(folder, record, gradescope):
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / "results.json", gradescope.model_dump_json(indent=2))
    _write(folder / "graded.json", record.model_dump_json(indent=2))     # last: it marks the grade done


# -- the class: gradebook and summary -------------------------------------------------------------------
def _number(value, digits=None):
    return "" if value is None else f"{round(value, digits):g}" if digits is not None else f"{value:g}"


def write_csv(path, lab, rows):
    """The gradebook: one row per student; per-function points after the totals."""
    functions = list(lab.functions)
    part = path.with_name(path.name + ".part")
    with open(part, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["student", "status", "score", "max_score", "percent", "passed", *functions,
                         "incidents", "detail", "seconds"])
        for row in rows:
            known = row.score is not None
            writer.writerow([inert(row.student), row.status, _number(row.score), _number(row.max_score),
                             _number(row.percent, 1), ("yes" if row.passed else "no") if known else "",
                             *(_number(row.functions.get(f)) for f in functions),
                             inert("; ".join(row.incidents)), inert(row.detail), f"{row.seconds:.1f}"])
    os.replace(part, path)


def inert(text):
    """A CSV cell a spreadsheet shows as text: no formula (=, +, -, @), no control characters."""
    text = printable(text).replace("\n", " ").replace("\t", " ")
    return "'" + text if text.lstrip().startswith(("=", "+", "-", "@")) else text


def summarize(lab, rows, graded, graded_now, workers, seconds, interrupted=False):
    """The class summary; rows not graded by the grader count as 0 out of the lab's points."""
    results = [r for r in graded.values() if r is not None]
    top = results[0].max_score if results else None
    functions = {f: points for f, (_, points) in results[0].by_function(lab.functions).items()} if results else {}
    for row in rows:
        if row.score is not None and row.max_score is None:
            row.max_score = top
    percents = [row.percent for row in rows if row.percent is not None]
    histogram = [ScoreBin(low=10 * i, high=10 * (i + 1), students=0) for i in range(10)]
    for percent in percents:
        histogram[min(int(percent // 10), 9)].students += 1
    rates, mistakes = {}, {}
    for student, result in sorted(graded.items()):
        for check in result.checks if result else ():
            rate = rates.setdefault(check.test, CheckRate(name=check.name, test=check.test,
                                                          function=check.function, passed=0, graded=0))
            rate.graded += 1
            rate.passed += check.status == "passed"
            if check.status == "failed" and check.hint:
                students = mistakes.setdefault((check.hint, check.function), [])
                if student not in students:
                    students.append(student)
    return BatchSummary(
        lab=lab.name, title=lab.manifest.title, students=len(rows),
        statuses=dict(Counter(row.status for row in rows)), graded_now=graded_now, max_score=top,
        functions=functions, mean_percent=statistics.fmean(percents) if percents else None,
        median_percent=statistics.median(percents) if percents else None, histogram=histogram,
        checks=sorted(rates.values(), key=lambda r: (r.rate, r.name)),
        mistakes=sorted((Mistake(hint=h, function=f, students=s) for (h, f), s in mistakes.items()),
                        key=lambda m: -len(m.students)),
        problems=sorted((row for row in rows if row.status not in ("graded", "incomplete") or row.incidents),
                        key=lambda r: r.student),
        workers=workers, seconds=seconds, interrupted=interrupted)
