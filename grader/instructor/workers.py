"""The batch's local workers: processes that each keep one warm grader (torch, the lab, a zygote)
for their life and grade submission after submission. A worker that dies loses only the
submission it was grading, which becomes a row to regrade. grader/instructor/cluster.py keeps the
same WarmGrader in Ray actors."""
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
from collections import deque
from pathlib import Path

from grader.errors import SetupError
from grader.judge.launchers import launcher_for
from grader.judge.linux import PR_SET_PDEATHSIG, libc, stop_then_kill
from grader.judge.sandbox import write_files
from grader.judge.zygote import Zygote
from grader.kinds import Answer
from grader.manifest import find_lab


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
        from grader.core.runner import grade

        folder = self.scratch / "submission"
        shutil.rmtree(folder, ignore_errors=True)
        write_files(folder, files)
        try:
            results = grade(self.lab, folder, device=self.options["device"], select=self.options["select"],
                            sandbox=self.options["sandbox"], zygote=self.zygote)
            return Answer.GRADED, results.model_dump(mode="json")
        except Exception as error:
            return Answer.REGRADE, f"the grader failed: {type(error).__name__}: {error}"
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
    if sys.platform == "linux":                     # and dies with it, killed or not
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    try:
        grader = options.get("grader", WarmGrader)(lab_folder, options)
    except Exception as error:
        conn.send((Answer.FAILED, f"{type(error).__name__}: {error}"))
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
                                       name="grade-worker")     # not a daemon: a lab's checks may start
        #                                                         processes of their own (grader/lab_api/apart.py)
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
        return Answer.DIED, (f"the grading process stopped unexpectedly (exit status {self.process.exitcode}); "
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
                if kind == Answer.FAILED:
                    raise SetupError(f"a grading worker could not start: {data}")
                job, worker.job = worker.job, None
                if kind == Answer.DIED:
                    workers.remove(worker)
                    worker.stop()
                    if queue:
                        workers.append(Worker(context, lab, options))
                done(job, Answer.REGRADE if kind == Answer.DIED else kind, data)
    finally:
        for worker in workers:
            worker.quit()
        for worker in workers:
            worker.stop()
    return started
