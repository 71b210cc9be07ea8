"""What a lab's conftest.py may use of the engine, beyond grader.lab_api.checks (failing well) and
grader.lab_api.provenance (experiments held to their recipe): the lab's trusted modules,
imported in the judge, and trusted work run apart, which starts only once a check will need it, is
shared by every check that asks for it, and is kept across gradings.

    given = trusted_modules([folder, ...])           # given.tasks, given.model: trusted code, here
    selected(request)                                # the student functions this grading checks
    after(first, lambda: student.submit(...))        # a call started once another has returned
    with TrustedWork("runs", folders, "work.py", "train", key=(code digest,), check=replays) as runs:
        runs.start(pos, task, seed)      # from any thread: this value will be needed
        runs.get(pos, task, seed)        # in a fixture or check: the value
        runs.keep(value, pos, task, seed)  # keep this for it instead (with what the checks added)
    build("module:function", *args)    # an argument the child builds itself from its lab's files
    valued_meta(tensor)                # a meta tensor the child gets with these values (played on meta)
    CallFailed                         # what a call of student code raises when it gives no value

`function(modules, *args)` of the trusted file runs in a process of its own (grader/lab_api/apart.py:
spawned, one torch thread, nothing of the judge's state shared, torch's RNG above all), where
`modules.name` imports `name` from the folders. Its value, for `key` + args, is kept for this
process's life and in .grade/ (grader/lab_api/memo.py); read back from a file it is used only once
`check(value, *args)` holds, called in the thread that asks (get), else computed again. Nothing
is started before it is asked for: a grading that needs no work spawns no process.
"""
import contextlib
import threading
from concurrent.futures import Future

from grader.base.kinds import Failure
from grader.judge.channel import CallFailed  # (for labs, too)
from grader.judge.wire import build, valued_meta  # noqa: F401  (for labs: see above)
from grader.lab_api import apart, memo
from grader.lab_api.marks import grade_of
from grader.lab_api.trusted import Reference


def selected(request):
    """The student functions whose checks this grading runs (-k chooses), from a fixture's `request`."""
    return {grade_of(item).function for item in request.session.items}


class After(Future):
    """The Future `after` returns. Asking for its value asks for the first's, then the next's: a
    call held back until a check asks for it (a hidden one, grader/judge/sandbox.py) starts so."""

    def __init__(self, first):
        super().__init__()
        self.first, self.next = first, None
        self.begun = threading.Event()      # the first is done, and the next started if it had a value

    def exception(self, timeout=None):
        if self.first.exception(timeout) is None and self.begun.wait(timeout) and self.next is not None:
            self.next.exception(timeout)
        return super().exception(timeout)

    def result(self, timeout=None):
        self.exception(timeout)
        return super().result(timeout)


def after(future, start):
    """A Future of what start()'s Future gives, start() called once `future` has a value; when
    `future` fails, nothing is started and it fails the same (a student's call after another, say)."""
    out = After(future)

    def begin(done):
        try:
            if done.exception() is not None:
                out.set_exception(done.exception())
                return
            out.next = start()
            apart.then(out.next, lambda value: value, out)
        except BaseException as error:      # handed on, whatever it is
            out.set_exception(error)
        finally:
            out.begun.set()
    future.add_done_callback(begin)
    return out


def trusted_modules(folders):
    """The modules of `folders` (the first folder that has a name wins), imported in the judge once
    per process and apart from sys.modules: `modules.tasks`. Only trusted code: never a submission."""
    return Reference.over(folders)


class TrustedWork:
    """Values of one trusted function, each computed once per args, for a block (a session fixture's
    life): `start` says a value will be needed, `get` returns it, waiting for it if it is under way.
    Work that fails is the grader's fault: `get` raises a grader fault ("not graded", graded again)."""

    def __init__(self, name, folders, module, function, key=(), check=None):
        self.name, self.folders, self.module, self.function = name, list(folders), module, function
        self.key, self.check = tuple(key), check
        self._lock = threading.Lock()
        self._values = {}               # args -> Future of the value, asked for in this block
        self._stack = contextlib.ExitStack()
        self._pool = None               # started with the first work that must be computed
        self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """Drops the work not started and waits for none (what is under way is kept when it ends)."""
        with self._lock:
            self._closed = True
            self._stack.close()

    def start(self, *args):
        """Begin computing the value of `args`, unless it is asked for already or kept (in memory, or a
        file that `get` will read and check). Safe from any thread; does nothing once the block is left."""
        with self._lock:
            if self._closed or args in self._values or memo.held(self.name, self.key + args):
                return
            self._values[args] = memo.compute(self.name, self.key + args, lambda: self._submit(args))

    def get(self, *args):
        """The value of `args`: kept, under way, or computed now. Called in the checks' thread."""
        with self._lock:
            if args not in self._values:
                check = None if self.check is None else lambda value: self.check(value, *args)
                self._values[args] = memo.later(self.name, self.key + args, lambda: self._submit(args), check)
            value = self._values[args]
        try:
            return value.result()
        except Exception as error:
            raise CallFailed(self.name, Failure.GRADER_FAULT, f"the grader's own work ({self.name}{args}) failed: "
                             f"{type(error).__name__}: {error}") from error

    def keep(self, value, *args):
        """Keep `value` for `args` from now on, instead of what was computed (the value with what the
        checks measured of it, say): in memory and in .grade/. Returns it."""
        done = Future()
        done.set_result(memo.keep(self.name, self.key + args, value))
        with self._lock:
            self._values[args] = done
        return value

    def _submit(self, args):
        if self._pool is None:
            self._pool = self._stack.enter_context(apart.pool())
        return apart.submit(self._pool, self.folders, self.module, self.function, *args)
