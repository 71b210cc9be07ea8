"""The judge's side of the boundary: children, and calls of student code with limits.

Student code runs only in children (grader/judge/child.py), forked by a zygote
(grader/judge/zygote.py): one for the checks of a submission, one more for each call run apart
(`submit`). The judge sends each child the submission's files down the child's own pipe. A call
sends plain data, waits until it has been charged its time limit (and never past the
submission's time budget), and reads back plain data through grader/judge/wire.py, with every
size limit applied here. Time is charged as grader/judge/clock.py measures it, the
submission's own work, so a busy machine changes no grade; wall time is only a backstop, and a
call stopped by it is the grader's fault ("grader_fault": not graded, regraded), never the
submission's. A child that hangs, dies, floods its output or answers garbage is killed and
replaced; the judge carries on.

Every call is made for a check (`serve`), and what it printed is kept for that check alone.
Checks of one visibility (a "room": visible, hidden, ...) share a main child; checks of another
never do, and the children of two rooms never live at once: a room's first call after another's
kills every child and what they left (zygote.reset), so nothing a call learns in a hidden check
(its arguments, the course's seed) reaches the answers or the output of a visible one, neither
through memory or files nor through anything two live processes share (a socket, /proc).
"""
import contextlib
import functools
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from grader.base.errors import SetupError
from grader.base.kinds import Failure
from grader.judge.channel import Call, CallFailed, Child
from grader.judge.clock import SLEEP, Backstop, CallClock, Limit, WallClock
from grader.judge.printed import Printed
from grader.judge.zygote import ZygoteGone

FILES_TIMEOUT = 60.0         # wall seconds for a new child to take its files (no student code runs yet)
HIDDEN = "hidden"            # the room whose output no learner sees: any call's output may go there


class Serving(NamedTuple):
    """The check calls are made for now, its room (its visibility), and the thread checks run on."""
    check: Any
    room: str | None
    thread: threading.Thread


class Submitted(Future):
    """A call run apart: its value, and what it printed, which goes to the first check that asks
    for the value (on the thread that checks run on) in the call's room, or in the hidden one.
    Asking for the value starts a call held back (`start`: a hidden one, not started yet)."""

    def __init__(self, sandbox, room):
        super().__init__()
        self._sandbox, self.room = sandbox, room
        self.printed = None         # (bytes, cut) once the call has ended
        self.start = None           # while held back: what starts it

    def result(self, timeout=None):
        self._sandbox._asked(self)
        try:
            return super().result(timeout)
        finally:
            self._sandbox._hand_over(self)

    def exception(self, timeout=None):
        self._sandbox._asked(self)
        try:
            return super().exception(timeout)
        finally:
            self._sandbox._hand_over(self)


def learner_frames(where, mine):
    """A traceback's frames ("file line N, in f", innermost last) cut to those in the learner's
    files `mine`, then the frame where the error surfaced when that is a file given with the lab,
    named as such: (frames, that file or "")."""
    files = [entry.split(" line ")[0] for entry in where]
    kept = [entry for entry, file in zip(where, files) if file in mine][-3:]
    given = files[-1] if files and files[-1] not in mine else ""
    return kept + ([f"{where[-1]} (given with the lab)"] if given else []), given


def write_files(folder, files):
    """Lay out {relative path: bytes} under `folder`."""
    for name, data in files.items():
        (Path(folder) / name).parent.mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_bytes(data)


# -- one submission's calls -----------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """How a sandbox grades, fixed when it is built. `device`: where tensors go. `show_all`: keep all
    that calls print, not only their first lines. `believe_faults`: a grader fault a child reports is
    believed (on a first try only, or a submission could fake one and stay ungraded for ever).
    `observers`: callables on_answer(call, answer) -> answer that see every call's Call and its
    answer (the value, or the CallFailed it raises) and may replace it: grade.py mutants' record
    of calls, a test's simulated grader fault. `budget`: seconds for all the submission's calls
    (None: the lab's). `after_hidden`: a try after one whose hidden calls ran: its visible checks
    come after those on the same machine, and could tell what they saw through anything the kernel
    keeps (a count of processes started, a time), so their words are kept from the learner."""
    device: str = "cpu"
    show_all: bool = False
    believe_faults: bool = True
    observers: tuple = ()
    budget: float | None = None
    after_hidden: bool = False


class Sandbox:
    """The children grading one submission: a main child reused call after call, and one child
    of its own for each call run apart. A child that fails is replaced by a fresh fork. Every
    call ends once it has been charged its limit or what is left of the submission's time budget
    (`budget` seconds charged to all its calls), whatever it asks for. Wall time only backs these
    up, `backstop` times over (lab.yaml): past it the grader was at fault, not the submission.

    `settings` (Settings): how it grades, given when it is built."""

    def __init__(self, lab, files, zygote, settings=None):
        settings = settings or Settings()
        self.lab, self.files, self.zygote, self.settings = lab, files, zygote, settings
        self.device = settings.device   # where tensors go
        self.budget = settings.budget or lab.manifest.time_budget
        self.spent = 0.0            # seconds charged to the calls that have ended
        self.started = None         # when the first child was up: the zygote's start is ours
        self.printed = Printed(settings.show_all)   # what calls printed, until their check takes it
        self.inputs_seen = settings.after_hidden    # a value of a call on hidden inputs (or
        #                                             anything after one) went to a check not hidden
        self.hidden_ran = False     # a call of the hidden room ran
        self.serving = Serving(None, None, threading.current_thread())
        self.observers = list(settings.observers)
        self._main = {}             # room -> the child that serves its checks
        self._held = []             # hidden calls not started yet (submit)
        self._children = []
        self._lock = threading.Lock()
        self._turn = threading.Condition()      # one room's calls at a time
        self._room, self._running = None, 0     # the room whose children live, its calls running

    @functools.cached_property
    def watched(self):
        """{name the child is asked to call: the names it must not use}: each student function with
        rules, and its model call (lab.yaml's model_calls), which runs it as the lab's own code does."""
        rules = self.lab.forbidden
        calls = {function: self.lab.model_call(function) for function in rules}
        return {**rules, **{call: rules[function] for function, call in calls.items() if call}}

    @functools.cached_property
    def trusted(self):
        """{given file: its top-level names whose own code makes a forbidden call}: where the child
        trusts given code with one (grader.core.forbid.trusted)."""
        from grader.core import forbid

        return forbid.trusted(self.lab.forbidden, self.files, self.lab.manifest.student_files)

    def _spawn(self, function, replace=None, main=True):
        """A child for `function`'s calls with the submission's files (or `replace`d): a room's `main`
        child may be one forked ahead, a submitted call's is forked anew."""
        self._left(function)
        from grader.judge import wire

        try:
            forked = self.zygote.fork(self.device, self.lab.manifest.memory_mb, ahead=main)
        except ZygoteGone as gone:      # no student code ran in this child: the grader's fault
            if gone.never_started:
                raise SetupError(str(gone)) from None
            fault = Failure.GRADER_FAULT if self.settings.believe_faults else Failure.CRASHED
            raise CallFailed(function, fault, str(gone)) from None
        child = Child(self.zygote, forked, answer_bytes=self.lab.manifest.answer_mb * 2**20)
        child.output_limit, child.believe_faults = self.printed.limit, self.settings.believe_faults
        try:
            setup = {"files": {**self.files, **(replace or {})}, "answer_bytes": child.answer_bytes,
                     "forbid": self.watched, "student": [*self.lab.manifest.student_files],
                     "trusted": self.trusted}
            child.send(wire.frame(setup), Limit(WallClock(), float("inf"), FILES_TIMEOUT))
        except Backstop:
            child.kill()
            raise CallFailed(function, Failure.GRADER_FAULT, "a new child did not take its files in time") from None
        with self._lock:
            self._children.append(child)
            if self.started is None:
                self.started = time.monotonic()
        return child

    def _left(self, function):
        """Seconds of the budget left to charge; CallFailed("budget") when none are, and
        CallFailed("grader_fault") once the submission's wall-time backstop is past."""
        backstop = self.lab.manifest.backstop * self.budget
        if self.started is not None and time.monotonic() - self.started > backstop:
            raise CallFailed(function, Failure.GRADER_FAULT, f"the machine was too busy: the submission was "
                             f"not graded within {backstop:g} s")
        left = self.budget - self.spent
        if left <= 0:
            raise CallFailed(function, Failure.BUDGET, f"the submission's time budget of {self.budget:g} s "
                             "ran out: the remaining checks were not run")
        return left

    def serve(self, check, room=None):
        """Make the calls that follow on this thread for `check` (any key), in the main child of
        `room` (its visibility): what they print is kept for `check` alone. The hidden room starts
        the hidden calls held back."""
        self.serving = Serving(check, room, threading.current_thread())
        if room == HIDDEN:
            self._release()

    def call(self, function: str, args: Sequence[Any] = (), kwargs: dict | None = None,
             timeout: float | None = None, echo: bool = False) -> Any:
        """Call a student function in the main child of the room being served."""
        check, room, _ = self.serving
        with self._ours(function), self._in(room):
            main = self._main.get(room)
            if main is None or not main.alive:
                main = self._main[room] = self._spawn(function)
            keep = lambda data, cut: self.printed.keep(check, data, cut)
            return self._call(main, Call(function, args, kwargs or {}, timeout, echo), keep)

    @contextlib.contextmanager
    def _ours(self, function):
        """What the judge's own side of a call raises (a bug, the machine refusing it) is no answer of
        the submission's, whose check would fail on it: a grader fault (where faults are believed)."""
        try:
            yield
        except (CallFailed, SetupError):
            raise
        except Exception as error:
            fault = Failure.GRADER_FAULT if self.settings.believe_faults else Failure.CRASHED
            raise CallFailed(function, fault, f"the grader failed: {type(error).__name__}: {error}") from error

    @contextlib.contextmanager
    def _in(self, room):
        """Run a call of `room` once no other room's runs; the first after another's kills every
        child first, and all they left."""
        with self._turn:
            while self._room != room and self._running:
                self._turn.wait()
            if self._room != room:
                if self._room is not None:
                    self.close(afresh=room != HIDDEN)
                    self._main.clear()      # the new room's main child, forked while its first check sets up
                    self.zygote.prepare_soon(self.device, self.lab.manifest.memory_mb)
                self._room = room
                self.hidden_ran = self.hidden_ran or room == HIDDEN
            self._running += 1
        try:
            yield
        finally:
            with self._turn:
                self._running -= 1
                self._turn.notify_all()

    def submit(self, function: str, args: Sequence[Any] = (), kwargs: dict | None = None,
               timeout: float | None = None, replace: dict[str, bytes] | None = None,
               hidden: bool = False) -> Future:
        """Start a call in a child of its own (run in parallel); returns a Future. `replace`: files
        that child gets instead of the submission's (the lab's own, to grade a function on its own).
        `hidden`: its inputs are hidden (a seed only the course's grading uses): what it prints
        goes to no check but a hidden one, whatever room it was made in. Made for a check that is
        not hidden, it starts only once a check asks for its value (or another's on hidden inputs:
        the hidden room begins, and every call held back starts together) or the hidden room comes: the
        visible calls that would wait for it meanwhile could time it (a clock, a child replaced),
        and its time is taken from the budget of none of them."""
        future = Submitted(self, HIDDEN if hidden else self.serving.room)

        def keep(data, cut):
            future.printed = data, cut

        def run():
            try:
                with self._ours(function), self._in(future.room):
                    child = self._spawn(function, replace, main=False)
                    try:
                        value = self._call(child, Call(function, args, kwargs or {}, timeout), keep)
                    finally:
                        child.kill()        # before the answer is out: the sandbox may close it next
                future.set_result(value)
            except BaseException as error:
                future.set_exception(error)

        future.start = threading.Thread(target=run, daemon=True).start
        with self._lock:
            self._held.append(future)
        if not hidden or self.serving.room == HIDDEN or self.inputs_seen:
            self._release([future])
        return future

    def _asked(self, future):
        """A check asks for a submitted call's value: start it if it is held back. Asked for a call
        on hidden inputs, the hidden room begins: every call held back starts, together."""
        if threading.current_thread() is self.serving.thread:
            self._release(None if future.room == HIDDEN else [future])

    def _release(self, futures=None):
        """Start the held-back hidden calls `futures` (all by default)."""
        with self._lock:
            starting = [f for f in self._held if futures is None or f in futures]
            self._held = [f for f in self._held if f not in starting]
        for future in starting:
            future.start()
            future.start = None

    def _hand_over(self, future):
        """Give what a submitted call printed to the check now asking for its value, once. A value
        of the hidden room asked for in another may hold hidden inputs, and so may all that the
        checks from here on make of it (kept in fixtures): `inputs_seen` says so from then on. Only
        the checks' thread asks for a check: a done callback elsewhere is plumbing, no check."""
        check, room, thread = self.serving
        if threading.current_thread() is not thread:
            return
        if future.room == HIDDEN and room != HIDDEN and not self.inputs_seen:
            with self._lock:
                self.inputs_seen = True     # nothing a check says from now on is shown: none waits
            self._release()
        if room in (future.room, HIDDEN) and future.printed:
            printed, future.printed = future.printed, None
            self.printed.keep(check, *printed)

    def _call(self, child, call, keep):
        """The answer of one Call, as the observers leave it: a value, or a CallFailed raised."""
        try:
            answer = self._answer(child, call, keep)
        except CallFailed as failure:
            answer = failure
        for observe in self.observers:
            answer = observe(call, answer)
        if isinstance(answer, CallFailed):
            raise answer
        return answer

    def _answer(self, child, call, keep):
        function = call.function
        module = self.lab.module_of(function)
        manifest = self.lab.manifest
        timeout = call.timeout or manifest.timeouts.get(function, manifest.call_timeout)
        left = self._left(function)
        clock = CallClock(child.meter)
        limit = Limit(clock, timeout, manifest.backstop * timeout, left)
        try:
            return child.call(module, call, limit, self.device)
        except CallFailed as failure:
            if failure.kind == Failure.RAISED:
                failure.where, failure.given = learner_frames(failure.where, self.lab.manifest.student_files)
            if failure.kind == Failure.TIMEOUT and left < timeout:
                self._charge(clock)
                self._left(function)            # raises: the budget ended the call
            if failure.kind == Failure.TIMEOUT:
                failure.message = f"no answer within {timeout:g} s of CPU time, or {timeout * SLEEP:g} s of its own " \
                                  "time (an endless loop?)"
            raise
        finally:
            self._charge(clock)
            keep(*child.take_output())

    def _charge(self, clock):
        """Add a call's charged time to the submission's, once."""
        if not clock.billed:
            clock.billed = True
            charged = clock.charged()
            with self._lock:
                self.spent += charged

    def close(self, reset=True, afresh=True):
        """Kill every child and all they left, at once (the zygote's reset: one order, where a kill
        of each would be one each), then close their pipes and memory. Without `reset`, the
        grading's last close where the zygote's end comes next, and kills them all. Not `afresh`,
        the next pids go on from these (into the hidden room: what visible code could
        count out there was the hidden code's own to know)."""
        with self._lock:
            children, self._children = self._children, []
        if reset:
            self.zygote.reset(afresh)
        for child in children:
            child.close()
