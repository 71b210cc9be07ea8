"""Grade a class on a Ray cluster: `python grade.py batch LAB SUBMISSIONS --out OUT --ray [ADDRESS]`.

The backend that grader/batch.py's grade_class calls instead of its local pool; everything else
(reading submissions, hashes, the gradebook, the summary) is the batch's own. Each worker is a
Ray actor holding one workers.WarmGrader (torch, the lab, a zygote in bubblewrap where the node
has it) for its life. Submissions travel to it as the bytes the driver read; results come back
as data: nodes share no filesystem, only the same course folder installed on each. An actor
grades one submission at a time, so one that dies (or whose node dies) loses only that one,
which is graded again by another actor; a submission whose worker dies twice is a row saying so.

Without ADDRESS a Ray instance is started on this machine for the batch, bound to 127.0.0.1,
with every core; `auto` or `ray://HOST:PORT` joins a running cluster.
"""
import contextlib
import hashlib
import io
import logging
import os
import signal
import time
from collections import deque
from pathlib import Path

from grader.base.kinds import Answer
from grader.base.root import ROOT
from grader.instructor.workers import WarmGrader
from grader.readers.manifest import ENGINE, LabError, engine_files, find_lab

LOCAL = "local"                 # --ray without an address
INSTALL = "pip install -e '.[cluster]'"
ATTEMPTS = 2                    # graders a submission may lose before its row says so
WAIT_SECONDS = 1.0              # the driver wakes this often: Ctrl-C never waits on Ray
STORE_BYTES = 256 * 2**20       # a local instance's object store: submissions and results are small


def load_ray(address):
    """Ray, imported for `address`; a LabError saying how to install it when it is not."""
    if address == LOCAL:        # announcing 127.0.0.1, a local instance listens there only;
        os.environ.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")  # no reports
    try:
        import ray
    except ImportError:
        raise LabError(f"--ray needs Ray, an optional extra: {INSTALL}") from None
    return ray


def course_digest(lab):
    """A hash of the engine and the lab's files by their place in the course folder: the driver
    and every node must agree on it, wherever the course lies on each."""
    digest = hashlib.sha256()
    for name in engine_files():
        digest.update(f"grader/{name}\0".encode() + (ENGINE / name).read_bytes())
    for top in filter(None, [lab.folder, lab.handout, lab.reference, *lab.child_modules]):
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(f"{path.relative_to(top.parent)}\0{path.stat().st_size}\0".encode()
                              + path.read_bytes())
    return digest.hexdigest()


def _lab_place(lab):
    """The lab as a node finds it: its folder relative to the course folder, where it is in one."""
    return str(lab.folder.relative_to(ROOT)) if lab.folder.is_relative_to(ROOT) else str(lab.folder)


class GradingActor:
    """A warm grader on some node of the cluster (a Ray actor: see grade_all). The driver closes
    it when done; Ray ends it with SIGTERM when the driver is gone: its zygote and files go too."""

    def __init__(self, lab_place, plan, digest):
        import ray

        self.node = ray.util.get_node_ip_address()
        self.failure, self.grader = None, None
        signal.signal(signal.SIGINT, signal.SIG_IGN)    # the driver decides what Ctrl-C stops
        signal.signal(signal.SIGTERM, self._stop)
        try:
            lab = find_lab(ROOT / lab_place)
            if course_digest(lab) != digest:
                raise LabError(f"its course folder {ROOT} differs from the driver's: install the same "
                               "version of the course on every node")
            self.grader = WarmGrader(ROOT / lab_place, plan)
        except Exception as error:
            self.failure = f"{type(error).__name__}: {error}"

    def grade(self, files):
        """WarmGrader.grade's pair, or ("failed", why) when this actor could not start."""
        if self.failure:
            return Answer.FAILED, f"on node {self.node}: {self.failure}"
        return self.grader.grade(files)

    def pid(self):
        return os.getpid()

    def close(self):
        if self.grader:
            self.grader.close()
            self.grader = None

    def _stop(self, *_):
        if self.grader:
            self.grader.abandon()
        os._exit(143)


def grade_all(lab, todo, count, plan, done, address=LOCAL):
    """workers.grade_all's twin on Ray: grade `todo` on `count` actors (None: one per CPU of the
    cluster); done(submission, kind, data) per answer. Returns how many actors it started."""
    ray = load_ray(address)
    _start_ray(ray, address)
    actors = _Actors(ray, lab, plan, todo, done)
    try:
        count = actors.start(count)
        while actors.queue or actors.flying:
            actors.dispatch()
            ready, _ = ray.wait(list(actors.flying), num_returns=1, timeout=WAIT_SECONDS)
            for ref in ready:
                actors.collect(ref)
        return count
    finally:
        actors.close(local=address == LOCAL)


def _start_ray(ray, address):
    """A local instance for the batch, or the running cluster at `address`, joined."""
    try:
        if address == LOCAL:
            ray.init(num_cpus=os.cpu_count(), include_dashboard=False, object_store_memory=STORE_BYTES,
                     logging_level=logging.ERROR, log_to_driver=False)
        else:
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise LabError(f"--ray {address}: cannot start or join Ray ({error})") from None


class _Actors:
    """The actors of one batch and the submissions still to grade: each idle actor is given the
    next one; a submission whose actor died goes back to the queue (ATTEMPTS at most)."""

    def __init__(self, ray, lab, plan, todo, done):
        self.ray, self.lab, self.plan, self.done = ray, lab, plan, done
        self.actor_class = ray.remote(num_cpus=1, max_restarts=0)(GradingActor)
        self.queue, self.lost, self.idle, self.pids = deque(todo), {}, [], {}
        self.flying = {}                    # ObjectRef of a grade() call -> (actor, submission)
        self.digest = None

    def start(self, count):
        """Start `count` actors (None: one per CPU), no more than the cluster's CPUs or the
        submissions; returns how many."""
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        count = min(count or cpus, cpus, len(self.queue))
        self.digest = course_digest(self.lab)
        self.idle = [self._new_actor() for _ in range(count)]
        return count

    def _new_actor(self):
        actor = self.actor_class.remote(_lab_place(self.lab), self.plan, self.digest)
        self.pids[actor] = actor.pid.remote()
        return actor

    def dispatch(self):
        while self.queue and self.idle:
            actor, job = self.idle.pop(), self.queue.popleft()
            self.flying[actor.grade.remote(job.files)] = actor, job

    def collect(self, ref):
        """One finished grade() call: its answer goes to done(), its actor back to the idle."""
        actor, job = self.flying.pop(ref)
        try:
            kind, data = self.ray.get(ref, timeout=WAIT_SECONDS)
        except self.ray.exceptions.RayError as error:   # the actor or its node is gone, and
            self._lose(actor, job, error)                # only `job` with it
            return
        if kind == Answer.FAILED:
            raise LabError(f"a grading worker could not start {data}")
        self.idle.append(actor)
        self.done(job, kind, data)

    def _lose(self, actor, job, error):
        """`job`'s actor died: grade it again, or give up on it after ATTEMPTS; a new actor
        takes the dead one's place while there is work left."""
        self.ray.kill(actor)
        self.lost[job.student] = self.lost.get(job.student, 0) + 1
        if self.lost[job.student] < ATTEMPTS:
            self.queue.appendleft(job)
        else:
            self.done(job, Answer.REGRADE, f"its grading worker died {ATTEMPTS} times "
                                    f"({type(error).__name__}); run the batch again to grade this one")
        if self.queue:
            self.idle.append(self._new_actor())

    def close(self, local):
        """Close the idle actors and leave Ray. Actors still busy (Ctrl-C) on a `local` instance
        are ended here first (see _end_busy), quietly: Ray would call those ends "unexpected
        system errors"."""
        ray = self.ray
        if self.idle:
            ray.wait([actor.close.remote() for actor in self.idle], num_returns=len(self.idle), timeout=30)
        if local and self.flying:
            with contextlib.redirect_stdout(io.StringIO()):
                _end_busy(ray, [self.pids[actor] for actor, _ in self.flying.values()])
                ray.shutdown()
        else:
            ray.shutdown()          # Ray ends every actor left with SIGTERM


def _end_busy(ray, pid_refs):
    """SIGTERM this machine's busy actors and wait (10 s at most) for each to abandon its
    submission: a local instance's raylet stops with the driver, too soon for that."""
    known, _ = ray.wait(pid_refs, num_returns=len(pid_refs), timeout=0)
    pids = []
    for ref in known:
        try:
            pids.append(ray.get(ref))
            os.kill(pids[-1], signal.SIGTERM)
        except (ray.exceptions.RayError, ProcessLookupError):
            pass                    # it died before it could say, or since
    deadline = time.monotonic() + 10
    while any(map(_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)


def _running(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False
