"""The batch's local workers: processes that each keep one warm grader (grader/core/warm.py: torch, the
lab, a zygote) for their life and grade submission after submission. A worker that dies loses only
the submission it was grading, which becomes a row to regrade. grader/instructor/cluster.py keeps
the same WarmGrader in Ray actors."""
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from grader.base import collector
from grader.base.errors import SetupError
from grader.base.kinds import Answer
from grader.core.request import Device, Request, SandboxKind, Selection
from grader.judge.linux import PR_SET_PDEATHSIG, libc, stop_then_kill
from grader.judge.sandbox import write_files
from grader.readers.manifest import find_lab


@dataclass(frozen=True)
class Plan:
    """What a batch asks of every grading but the lab and the submission: the device, the selection
    and the sandbox."""
    device: Device = Device.AUTO
    selection: Selection = field(default_factory=Selection)
    sandbox: SandboxKind = SandboxKind.AUTO


class WarmGrader:
    """A warm grader (grader.core.warm.Grader) and the lab, to grade submission after submission: the
    body of a local worker process here and of a Ray actor (grader/cluster.py)."""

    def __init__(self, lab_folder, plan: Plan):
        from grader.core.warm import Grader

        os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.grader = Grader(plan.sandbox)         # first: its zygote imports torch while we do
        import torch

        torch.set_num_threads(1)
        self.lab, self.plan = find_lab(lab_folder), plan
        self.scratch = Path(tempfile.mkdtemp(prefix="grade-batch-"))

    def grade(self, files):
        """One submission's {name: bytes} -> ("graded", LabResults dump) or ("regrade", why: the
        grader failed, not the submission)."""
        return self.answer(self.request(files))

    def request(self, files, **changes):
        """The plan's Request for these files, laid out afresh in this worker's folder."""
        folder = self.scratch / "submission"
        shutil.rmtree(folder, ignore_errors=True)
        write_files(folder, files)
        fields = {"device": self.plan.device, "selection": self.plan.selection, "sandbox": self.plan.sandbox,
                  "laid_out": True}
        return Request(self.lab, folder, **{**fields, **changes})

    def answer(self, request):
        """runner.grade's answer to `request`, as a pair for the pipe."""
        try:
            return Answer.GRADED, self.grader.grade(request).model_dump(mode="json")
        except Exception as error:
            return Answer.REGRADE, f"the grader failed: {type(error).__name__}: {error}"

    def close(self):
        self.grader.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def abandon(self):
        """From a signal handler: kill the zygote and remove the files, waiting for nothing."""
        zygote = self.grader.zygote
        try:
            os.killpg(zygote.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if zygote.cgroup:           # everything the zygote ran, and the group itself
            stop_then_kill(zygote.cgroup.pids)
            zygote.cgroup.remove()
        shutil.rmtree(zygote.scratch, ignore_errors=True)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _work(lab_folder, plan, grader_class, conn):
    """A grading process: one `grader_class` (a WarmGrader) for life.

    Receives a job's `files` per submission (None: stop); answers with the grader's pair;
    ("failed", message) when it cannot start.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the main process decides what Ctrl-C stops
    if sys.platform == "linux":                     # and dies with it, killed or not
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    collector.pause()                               # until its first grading's checks are collected
    try:
        grader = grader_class(lab_folder, plan)
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
    def __init__(self, context, lab, plan, grader_class):
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_work, args=(str(lab.folder), plan, grader_class, theirs),
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


def grade_all(lab, todo, count, plan, done, grader_class=WarmGrader):
    """Grade each Submission in `todo` on `count` local workers (None: one per core), each keeping
    a `grader_class` for its life; done(submission, kind, data) per answer. Returns how many
    workers it started."""
    context = multiprocessing.get_context("spawn")
    queue = deque(todo)
    workers = [Worker(context, lab, plan, grader_class) for _ in range(min(count or os.cpu_count() or 1, len(queue)))]
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
                        workers.append(Worker(context, lab, plan, grader_class))
                done(job, Answer.REGRADE if kind == Answer.DIED else kind, data)
    finally:
        for worker in workers:
            worker.quit()
        for worker in workers:
            worker.stop()
    return started
