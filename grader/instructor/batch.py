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
import hashlib
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import tempfile
import time
from collections import deque
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from grader import memo
from grader.errors import SetupError
from grader.instructor import gradebook
from grader.instructor.submissions import GRADABLE, list_submissions
from grader.judge.launchers import launcher_for
from grader.judge.linux import stop_then_kill
from grader.judge.sandbox import write_files
from grader.judge.zygote import Zygote
from grader.labs import ENGINE, engine_files, find_lab
from grader.results import (
    BatchRow,
    LabResults,
    StudentRecord,
)

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
        if self.zygote.cgroup:      # everything the zygote ran, and the group itself
            stop_then_kill(self.zygote.cgroup.pids)
            self.zygote.cgroup.remove()
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
    rows, graded, todo = _sort_out(subs, out, fingerprint, sandbox_name, force)

    def done(sub, kind, data):
        row = _save_answer(lab, out, sub, kind, data, graded, sandbox_name)
        rows[sub.student] = row
        progress.console.print(gradebook.line(row), highlight=False)
        progress.advance(task)

    interrupted, used = False, min(workers or os.cpu_count() or 1, len(todo))   # the backend tells
    try:
        with _progress(console) as progress:
            task = progress.add_task(lab.name, total=len(todo))
            if todo:
                options = {"device": device, "select": list(select), "sandbox": sandbox}
                used = backend(lab, todo, workers, options, done)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        summary = _write_gradebook(lab, out, rows, graded, len(todo), used, time.monotonic() - started,
                                   interrupted)
    return summary


def _progress(console):
    columns = [TextColumn("[bold]grading {task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("·"), TimeElapsedColumn(), TextColumn("· ETA"), TimeRemainingColumn()]
    return Progress(*columns, console=console, transient=True)


def _save_answer(lab, out, sub, kind, data, graded, sandbox_name):
    """A backend's answer for one submission, written to the student's folder as it comes (its
    results kept in `graded`); returns the student's row."""
    if kind == "graded":
        results = LabResults.model_validate(data).model_copy(update={"submission": str(sub.path)})
        row = gradebook.row(lab, sub, results)
        graded[sub.student] = results
        gradescope = results.gradescope()
    else:
        row = BatchRow(student=sub.student, status="error", detail=data)
        gradescope = gradebook.not_graded(data, sandbox_name)
    _save(out / STUDENTS / sub.student, StudentRecord(hash=sub.hash, row=row, results=graded.get(sub.student)),
          gradescope)
    return row


def _write_gradebook(lab, out, rows, graded, graded_now, used, seconds, interrupted):
    """grades.csv and summary.json as the rows stand (those not graded yet are pending); the summary."""
    summary = gradebook.summarize(lab, list(rows.values()), graded, graded_now, used, seconds, interrupted)
    gradebook.write_csv(out / "grades.csv", lab, sorted(rows.values(), key=lambda r: r.student), summary.max_score)
    _write(out / "summary.json", summary.model_dump_json(indent=2))
    return summary


def _sort_out(subs, out, fingerprint, sandbox_name, force):
    """(rows, graded results, submissions to grade): what cannot be graded gets its row now, an
    unchanged submission its earlier grade, the rest waits as "pending"."""
    rows, graded, todo = {}, {}, []
    for sub in subs:
        folder = out / STUDENTS / sub.student
        if sub.status not in GRADABLE:
            rows[sub.student] = BatchRow(student=sub.student, status=sub.status, detail=sub.detail, score=0)
            _save(folder, StudentRecord(hash="", row=rows[sub.student]), gradebook.not_graded(sub.detail, sandbox_name))
            continue
        sub.hash = submission_hash(fingerprint, sub.files)
        record = None if force else _reusable(folder, sub.hash)
        if record:
            rows[sub.student] = record.row.model_copy(update={"reused": True})
            graded[sub.student] = record.results
        else:
            rows[sub.student] = BatchRow(student=sub.student, status="pending", detail="not graded yet")
            todo.append(sub)
    return rows, graded, todo


def _reusable(folder, digest):
    """The record of an unchanged, well-graded submission, or None: a memo its grading used that
    holds something else now (found unsound and computed again) regrades it."""
    try:
        record = StudentRecord.model_validate_json((folder / "graded.json").read_text())
    except (OSError, ValueError):
        return None
    if record.hash != digest or record.results is None or not (folder / "results.json").is_file():
        return None
    if memo.changed(record.results.memos):
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


