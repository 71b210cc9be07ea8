"""The judge's end of one child: its pipes, the calls sent down them and the answers read back,
with every size limit applied here and every time limit by grader/judge/clock.py. Nothing the
child says about itself is believed: an answer is plain data or a failure of the submission's,
and what a call did to its tensor arguments' values is read from memory shared with the child
(their shapes, strides and dtype after the call come with its answer, as its value does).
"""
import os
import select
import signal
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from grader.base.kinds import Failure
from grader.judge.cgroup import forget
from grader.judge.clock import Backstop, Limit, SessionMeter
from grader.judge.printed import OUTPUT_LIMIT
from grader.judge.zygote import MESSAGE_LIMIT, Forked, ZygoteGone

if TYPE_CHECKING:
    import torch

FRAMES = 12                  # frames of a traceback read from a child (innermost last)
DRAIN_BYTES = 4 * 2**20      # read from the output pipe at a call's edges: more than a pipe holds
#                              (pipe-max-size, 1 MiB, unless the host's root raised it)


class Call(NamedTuple):
    """A call of student code, as an observer sees it: `timeout`, seconds of its own time (None: the
    lab's for the function); `echo`, its positional arguments come back too, as they were after."""
    function: str
    args: Sequence[Any]
    kwargs: dict
    timeout: float | None = None
    echo: bool = False


class CallFailed(Exception):
    """A call of student code that did not return a value: how, as a grader.base.kinds.Failure (given as
    one or as its string). Failure.GRADER_FAULT: the grader could not run or read the call (a
    wall-time backstop, an answer the wire could not carry); nothing is charged to the submission
    and it is graded again.
    """

    def __init__(self, function: str, kind: Failure | str, message: str, where: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.function, self.kind, self.message = function, Failure(kind), message
        self.where = list(where)
        self.given = ""             # the file given with the lab where it was raised, if not the learner's



class Echo(tuple):
    """A call's (value, its positional arguments as they were afterwards), and `returned`: the
    indices of the arguments whose memory the value holds (x itself, or a view of it)."""

    def __new__(cls, value, after, returned=frozenset()):
        echo = super().__new__(cls, (value, after))
        echo.returned = frozenset(returned)
        return echo


class Child:
    """One forked child: request and answer pipes, and its output, kept up to a limit."""

    def __init__(self, zygote, forked: Forked, answer_bytes=0):
        """`forked`: the child as its zygote handed it over (its pids, our ends of its pipes, its
        shared memory and control groups)."""
        self.zygote, self.pid, self._shared = zygote, forked.pid, forked.shared
        self.host_pid = forked.host_pid or forked.pid      # its pid here, for reading its use of time
        self.groups = forked.groups         # its own control groups, if any (Cgroup.account)
        self.meter = SessionMeter(self.host_pid, self.groups[0] if self.groups else None)
        self.answer_bytes = answer_bytes    # bytes of tensors an answer may carry (the lab's answer_mb)
        self._request, self._answer = forked.request_fd, forked.answer_fd
        self._output_fd: int | None = forked.output_fd
        os.set_blocking(forked.request_fd, False)
        os.set_blocking(forked.output_fd, False)
        self._output, self._dropped = bytearray(), 0
        self.output_limit = OUTPUT_LIMIT
        self.believe_faults = True          # a fault the child reports, or its zygote's end, is the
        #                                     grader's (see Sandbox)
        self._next_id = 0
        self.alive = True
        self._fds = threading.RLock()      # a call's thread and a closing sandbox may both use them

    def _pump_output(self, most=2**20):
        """Read what the child printed so far, at most `most` bytes so that the caller's deadline
        is seen; keep output_limit bytes, count the rest."""
        with self._fds:
            for _ in range(-(-most // (1 << 16))):
                if self._output_fd is None:
                    return
                try:
                    chunk = os.read(self._output_fd, 1 << 16)
                except BlockingIOError:
                    return
                if not chunk:
                    os.close(self._output_fd)
                    self._output_fd = None
                    return
                room = max(0, self.output_limit - len(self._output))
                self._output += chunk[:room]
                self._dropped += len(chunk) - min(room, len(chunk))

    def take_output(self) -> tuple[bytes, int]:
        """What the child printed since the last take, as kept: (bytes, how many more were cut)."""
        self._pump_output()
        taken = bytes(self._output), self._dropped
        self._output, self._dropped = bytearray(), 0
        return taken

    def _drain(self):
        """Read all the output pipe holds now. The child writes what a call printed before its
        answer, so once the answer is in, all of it is here (in the pipe, or read): the judge
        sees the end of a call's output for itself, whatever the child says."""
        self._pump_output(DRAIN_BYTES)

    def _waiter(self, limit):
        """Block until `fd` is readable, draining output meanwhile, until `limit` ends the call."""
        def wait(fd):
            while True:
                watched = [fd] + ([self._output_fd] if self._output_fd is not None else [])
                readable = select.select(watched, [], [], limit.wait())[0]
                if self._output_fd in readable:
                    self._pump_output()
                if fd in readable:
                    return
        return wait

    def send(self, data: bytes, limit: Limit) -> None:
        """Write a request until `limit` ends the call: a child may stop reading its pipe."""
        view = memoryview(data)
        while view:
            if select.select([], [self._request], [], limit.wait())[1]:
                view = view[os.write(self._request, view):]

    def call(self, module: str, call: Call, limit: Limit, device: "str | torch.device | None") -> Any:
        """Run module.function(*args, **kwargs) of `call` in the child (its `timeout` is the judge's,
        in `limit`); its value, with tensors on `device`.

        With the call's `echo`, the value is an Echo (returned value, the positional arguments after the call):
        tensor arguments go in memory shared with the child and their values are read back here, so
        what the call did to them is seen, not reported; other arguments come back as None.
        """
        from grader.judge import wire

        function, args, kwargs, echo = call.function, call.args, call.kwargs, call.echo
        self._next_id += 1
        self._drain()                   # printed since the last answer, during no call: nobody's
        self._output, self._dropped = bytearray(), 0
        args, placed = (self._place(args) if echo else (list(args), []))
        request = {"id": self._next_id, "module": module, "function": function,
                   "args": wire.encode(args), "kwargs": wire.encode(kwargs)}
        try:
            data = wire.frame(request)
            limit.clock.start()         # the call's time: from its request's sending to its answer's
            self.send(data, limit)      # last byte; the judge's encoding and parsing are not in it
            answer = wire.recv(self._answer, self._waiter(limit), self.answer_bytes + wire.SLACK,
                               received=limit.clock.stop)
            self._drain()
        except TimeoutError:
            self.kill()
            raise CallFailed(function, Failure.TIMEOUT, "no answer in time") from None
        except Backstop:
            self.kill()
            raise CallFailed(function, Failure.GRADER_FAULT, f"the machine was too busy: no answer after "
                             f"{limit.clock.wall():.0f} s, of which your code was charged only "
                             f"{limit.clock.charged():.1f} s") from None
        except (EOFError, OSError):
            raise CallFailed(function, *self._ended()) from None
        except wire.WireError as error:
            self.kill()
            raise CallFailed(function, Failure.BAD_ANSWER, f"its answer was not plain data: {error}") from None
        try:
            answer = wire.sanitize(answer, device)
            if type(answer) is not dict:
                raise wire.WireError("an answer that is not a record")
            if answer["id"] != self._next_id:
                raise wire.WireError("an answer to another call")
            if answer["ok"] is True:
                if not echo:
                    return answer["value"]
                tensors = len([where for where in placed if where])
                layouts = answer.get("layouts") or [None] * tensors
                if type(layouts) is not list or len(layouts) != tensors:
                    raise wire.WireError("the layouts of another call's arguments")
                return self._read_back(answer["value"], placed, iter(layouts))
            raise self._failure(function, answer["error"])
        except CallFailed:
            raise
        except Exception as error:      # any field of the wrong kind: a tensor for an id, say
            self.kill()
            raise CallFailed(function, Failure.BAD_ANSWER,
                             f"its answer was malformed ({type(error).__name__})") from None

    def _failure(self, function, error):
        """The CallFailed a child's error record stands for."""
        from grader.judge import wire

        if type(error) is not dict:
            raise wire.WireError("an error that is not a record")
        kind, text = str(error["type"])[:100], str(error["message"])[:MESSAGE_LIMIT]
        if error["not_implemented"]:
            return CallFailed(function, Failure.NOT_IMPLEMENTED, str(error["not_implemented"])[:100])
        if kind == "WireError":
            return CallFailed(function, Failure.BAD_ANSWER, f"returned {text}")
        if kind == "GraderFault":       # the child's word: believed for one more try, not for ever
            return CallFailed(function, Failure.GRADER_FAULT if self.believe_faults else Failure.BAD_ANSWER,
                              f"the grader could not carry its answer ({text})")
        if kind == "ForbiddenCall":     # grader/judge/trap.py: a call the lab forbids
            return CallFailed(function, Failure.FORBIDDEN, text)
        where = [str(w)[:200] for w in error["where"][-FRAMES:]]
        return CallFailed(function, Failure.RAISED, f"{kind}: {text}" if text else kind, where)

    def _place(self, args):
        """Tensor arguments into the shared memory: (arguments with markers, where each went)."""
        import torch

        from grader.judge import wire

        placed, offset, marked = [], 0, []
        for value in args:
            if not isinstance(value, torch.Tensor):
                placed.append(None)
                marked.append(value)
                continue
            data = wire.raw_bytes(value)
            if offset + len(data) > wire.SHARED_BYTES:
                raise ValueError("arguments too large to share with the child")
            self._shared[offset:offset + len(data)] = data
            placed.append((offset, len(data), value.dtype, tuple(value.shape), value.device))
            marked.append({wire.SHARED: offset, "dtype": str(value.dtype).removeprefix("torch."),
                           "shape": list(value.shape), "device": str(value.device)})
            offset += -(-len(data) // 64) * 64
        return marked, placed

    def _read_back(self, value, placed, layouts):
        """An Echo: the value, the shared tensor arguments as they are now (None for the others) and
        those the value holds. An argument whose shape, strides or dtype the call changed, or that
        it pointed at other memory, comes back as the call left it: its values read through its new
        layout where it still lies over the memory it was given, else NaN (values not seen)."""
        import torch

        after, returned = [], set()
        for index, where in enumerate(placed):
            if where is None:
                after.append(None)
                continue
            offset, size, dtype, shape, device = where
            raw = torch.frombuffer(bytearray(self._shared[offset:offset + size]) or bytearray(1), dtype=torch.uint8)
            layout = next(layouts)
            now = raw[:size].view(dtype).reshape(shape)
            if layout is not None:
                returned.update([index] if layout["returned"] is True else [])
                now = relaid(raw[:size], now, layout)
            after.append(now.to(device))
        return Echo(value, after, returned)

    def _ended(self):
        """(kind, why) the child is gone, from its wait status (the zygote is its parent): it
        crashed, or its zygote is gone, the grader's fault when believed (see ZygoteGone)."""
        try:
            status = self.zygote.ask({"op": "status", "pid": self.pid, "timeout": 2.0})["status"]
        except ZygoteGone as gone:
            self.close()
            return Failure.GRADER_FAULT if self.believe_faults else Failure.CRASHED, \
                f"the sandbox was stopped while your code ran ({gone})"
        self.kill()
        if status is None:
            return Failure.CRASHED, "the process running your code closed its channel to the grader"
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            hint = " (out of memory?)" if os.WTERMSIG(status) == signal.SIGKILL else ""
            return Failure.CRASHED, f"the process running your code was killed by {name}{hint}"
        return Failure.CRASHED, f"the process running your code exited with status " \
            f"{os.waitstatus_to_exitcode(status)} (sys.exit / os._exit?)"

    def kill(self) -> None:
        """Kill the child and everything in its session; idempotent."""
        if self.alive:
            try:
                self.zygote.ask({"op": "kill", "pid": self.pid})
            except ZygoteGone:
                pass
        self.close()

    def close(self) -> None:
        """Close its pipes and memory, once: a closed number may be reused by any other file."""
        with self._fds:
            self.alive = False
            for folder in self.groups:
                forget(folder)
            self._drain()
            if not self._shared.closed:
                self._shared.close()
            for fd in (self._request, self._answer, self._output_fd):
                if fd is not None and fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self._request = self._answer = -1
            self._output_fd = None


def relaid(raw, now, layout):
    """The argument `now` (its values, in the layout it was given; `raw` its bytes) as the call
    left it, by the child's `layout` of it: `now` itself when that is the same."""
    import torch

    from grader.judge import wire

    try:
        shape, stride = tuple(int(n) for n in layout["shape"]), tuple(int(n) for n in layout["stride"])
        offset, dtype, moved = int(layout["offset"]), getattr(torch, str(layout["dtype"])), layout["moved"]
        if not isinstance(dtype, torch.dtype) or len(shape) != len(stride) or len(shape) > 64 \
                or min(shape, default=0) < 0 or offset < 0 or type(moved) is not bool:
            raise ValueError
    except (KeyError, TypeError, ValueError, AttributeError):
        raise wire.WireError("an argument's layout that is not one") from None
    if (shape, stride, offset, dtype, moved) == (tuple(now.shape), now.stride(), 0, now.dtype, False):
        return now
    count = 1
    for n in shape:
        count *= n
    end = (offset + sum((n - 1) * s for n, s in zip(shape, stride)) + 1) * dtype.itemsize if count else 0
    if not moved and min(stride, default=0) >= 0 and raw.numel() % dtype.itemsize == 0 and end <= raw.numel():
        return raw.view(dtype).as_strided(shape, stride, offset)
    if count > 2**26:
        raise wire.WireError("an argument left larger than the judge reads back")
    unseen = float("nan") if dtype.is_floating_point or dtype.is_complex else 0    # its values are elsewhere
    return torch.full(shape, unseen, dtype=dtype)
