"""Grade a class: one folder or .zip per student, graded by warm workers into a gradebook.

`python grade.py batch lab2 SUBMISSIONS --out OUT` writes
    OUT/grades.csv                        one row per student (results.BatchRow), for an LMS gradebook
    OUT/students/<student>/results.json   Gradescope's results.json, as single grading writes it
    OUT/students/<student>/graded.json    the row, the full results and a hash of what was graded
    OUT/summary.json                      where the class struggles (results.BatchSummary)
    OUT/rows.json                         every row with its submission time: what `grade.py gradebook` reads
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

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from grader.errors import SetupError, UsageError
from grader.instructor import gradebook
from grader.instructor.deadlines import submission_times
from grader.instructor.export import read_quiz
from grader.instructor.page import write_report
from grader.judge.launchers import launcher_for
from grader.judge.linux import stop_then_kill
from grader.judge.sandbox import write_files
from grader.judge.zygote import Zygote
from grader.labs import ENGINE, engine_files, find_lab
from grader.results import BatchRow, LabResults, StudentRecord, one_line, printable
from grader.submissions import GRADABLE, class_entries, list_submissions

STUDENTS = "students"                           # OUT/students/<student>/: one folder each


# -- what was graded: hashes --------------------------------------------------------------------------
def lab_fingerprint(lab, select, device, sandbox):
    """A hash of everything a grade depends on besides the student's files: their content and
    names within the lab, never where the course lies (a moved or cloned course regrades no one)."""
    digest = hashlib.sha256(repr((sorted(select), device, sandbox)).encode())
    folders = [lab.folder, lab.handout, lab.reference, *lab.child_modules, *(ENGINE / f for f in engine_files())]
    for role, top in enumerate(folders):
        for path in sorted([] if top is None else [top] if top.is_file() else top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                name = path.relative_to(top).as_posix() if path != top else top.name
                digest.update(f"{role}\0{name}\0{path.stat().st_size}\0".encode() + path.read_bytes())
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
        """One submission's {name: bytes} -> ("graded", LabResults dump) or ("regrade", why: the
        grader failed, not the submission)."""
        from grader.runner import grade

        folder = self.scratch / "submission"
        shutil.rmtree(folder, ignore_errors=True)
        write_files(folder, files)
        try:
            results = grade(self.lab, folder, device=self.options["device"], select=self.options["select"],
                            sandbox=self.options["sandbox"], zygote=self.zygote)
            return "graded", results.model_dump(mode="json")
        except Exception as error:
            return "regrade", f"the grader failed: {type(error).__name__}: {error}"
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
    ("failed", message) when it cannot start. options["grader"]: another class of grader, which
    gets each job's `files` (grade.py mutants: grader/author/mutants.py).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the main process decides what Ctrl-C stops
    try:
        grader = options.get("grader", WarmGrader)(lab_folder, options)
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
                done(job, "regrade" if kind == "died" else kind, data)
    finally:
        for worker in workers:
            worker.quit()
        for worker in workers:
            worker.stop()
    return started


# -- one class ----------------------------------------------------------------------------------------
def grade_class(lab, submissions, out, console, workers=None, force=False, select=(), device="auto",
                sandbox="auto", backend=grade_all, students=(), quiz=None):
    """Grade every submission in `submissions` into `out`; returns the BatchSummary. `students`:
    grade only these (again, changed or not); the others keep the rows they have.

    `backend(lab, todo, workers, options, done)` grades the submissions that need it and returns
    how many workers it ran: the local pool (grade_all) or a Ray cluster (grader/cluster.py).
    `quiz`: the class quiz's gradebook CSV, whose scores grades.csv then carries beside the lab's.

    Ctrl-C: what was graded stays written, grades.csv and summary.json are rewritten (the rest
    pending), and KeyboardInterrupt goes on up.
    """
    started = time.monotonic()
    out = Path(out)
    lab.select(select)
    sandbox_name = launcher_for(sandbox).name          # refuses now if --sandbox required can't be met
    subs = list_submissions(lab, submissions, out)
    unknown = sorted(set(students) - {sub.student for sub in subs})
    if unknown:
        raise UsageError(f"--student {unknown[0]}: no such submission in {submissions}")
    extras = submission_times(lab, subs), class_entries(lab, submissions, out)[1], quiz and read_quiz(quiz)
    out.mkdir(parents=True, exist_ok=True)
    fingerprint = lab_fingerprint(lab, select, device, sandbox_name)
    rows, graded, todo = _sort_out(subs, out, fingerprint, sandbox_name, force, set(students))

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
                                   interrupted, extras)
    write_report(out, lab)                              # OUT/report.html, and each student's feedback
    return summary


def _progress(console):
    columns = [TextColumn("[bold]grading {task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("·"), TimeElapsedColumn(), TextColumn("· ETA"), TimeRemainingColumn()]
    return Progress(*columns, console=console, transient=True)


def _save_answer(lab, out, sub, kind, data, graded, sandbox_name):
    """A backend's answer for one submission, written to the student's folder as it comes (its
    results kept in `graded`); returns the student's row."""
    if kind == "graded":
        results = LabResults.model_validate(data).model_copy(update={"submission": one_line(str(sub.path))})
        if results.faults:      # not a grade: no score, and the next run grades it again
            kind, data = "regrade", "; ".join(dict.fromkeys(c.message for c in results.faults))
    if kind == "graded":
        row = gradebook.row(lab, sub, results)
        graded[sub.student] = results
        gradescope = results.gradescope()
    else:
        row = BatchRow(student=sub.student, status="regrade", detail=printable(data)[:500])
        graded.pop(sub.student, None)
        gradescope = None
    _save(out / STUDENTS / sub.student, StudentRecord(hash=sub.hash, row=row, results=graded.get(sub.student)),
          gradescope)
    return row


def _write_gradebook(lab, out, rows, graded, graded_now, used, seconds, interrupted, extras):
    """grades.csv, rows.json, summary.json as the rows stand (the rest pending), with submission times."""
    times, ignored, quiz = extras
    rows = {s: row.model_copy(update=times.get(s, {})) for s, row in sorted(rows.items())}
    summary = gradebook.summarize(lab, list(rows.values()), graded, graded_now, used, seconds, interrupted)
    summary.ignored = ignored
    gradebook.write_csv(out / "grades.csv", lab, list(rows.values()), summary.max_score, quiz)
    _write(out / "rows.json", gradebook.ROWS.dump_json(list(rows.values()), indent=2).decode())
    _write(out / "summary.json", summary.model_dump_json(indent=2))
    return summary


def _sort_out(subs, out, fingerprint, sandbox_name, force, only=frozenset()):
    """(rows, graded results, submissions to grade): what cannot be graded gets its row now, an
    unchanged submission its earlier grade, the rest waits as "pending". With `only`, the other
    students keep the row they have (pending if none) and only those named are graded."""
    rows, graded, todo = {}, {}, []
    for sub in subs:
        folder = out / STUDENTS / sub.student
        if only and sub.student not in only:
            record = _recorded(folder)
            rows[sub.student] = record.row.model_copy(update={"reused": True}) if record else \
                BatchRow(student=sub.student, status="pending", detail="not graded yet")
            if record and record.results:
                graded[sub.student] = record.results
            continue
        if sub.status not in GRADABLE:
            rows[sub.student] = BatchRow(student=sub.student, status=sub.status, detail=sub.detail, score=0)
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
    """The record of an unchanged, well-graded submission, or None (a "regrade" row has no results)."""
    record = _recorded(folder)
    if record is None or record.hash != digest or record.results is None or not (folder / "results.json").is_file():
        return None
    return record


def _write(path, text):
    """Write atomically: a reader (or an interrupted run) sees the old file or the new one."""
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


def _save(folder, record, gradescope):
    """The student's results.json (none for a row to regrade: no score is given) and record."""
    folder.mkdir(parents=True, exist_ok=True)
    if gradescope is None:
        (folder / "results.json").unlink(missing_ok=True)
    else:
        _write(folder / "results.json", gradescope.model_dump_json(indent=2))
    _write(folder / "graded.json", record.model_dump_json(indent=2))     # last: it marks the grade done


