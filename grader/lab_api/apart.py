"""Trusted work in a process of its own, for a lab's checks: a fresh interpreter (spawned, not
forked from the judge and its threads), one torch thread, nothing of the judge's state shared.

Above all, torch's global random number generator: in a thread beside the checks, the judge's
own run of a lab's recipe would be initialised from whatever the checks draw from it meanwhile
(every `torch.manual_seed`, `torch.randn` or `build_model(seed=...)`), and a submission could
time its calls to make it so. Only the lab's trusted modules run there, with its reference;
nothing of pytest or the grader's checks is imported there, only torch.

Work may be asked for from any thread (a callback of a student's call, say): the processes are
started by one thread that lives as long as this process, since a process started here dies
with the thread that started it (PR_SET_PDEATHSIG), and a short-lived thread would take it along.
"""
import contextlib
import importlib
import importlib.util
import io
import multiprocessing
import os
import queue
import signal
import sys
import threading
from concurrent.futures import Future, ProcessPoolExecutor


@contextlib.contextmanager
def pool(workers=1):
    """An executor for `submit`, for a block: it starts its processes with its first task (none if
    nothing is asked). Leaving the block drops the tasks not started and waits for none: one
    running ends on its own (and is kept, when it is a memo's). They die with this process."""
    executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_start,
                                   initargs=(os.getpid(),))
    try:
        yield executor
    finally:
        executor.shutdown(wait=False, cancel_futures=True)


def submit(executor, folders, module, function, *args):
    """A Future of `function(modules, *args)`, the function of the trusted file `module`, run in
    `executor`, where `modules.name` imports module `name` from `folders` (the first that has it,
    as the judge's reference does: the lab's solutions, then its handout). The value comes back as
    torch.save bytes, read with weights_only: tensors and plain data. Callable from any thread."""
    submitted = Future()
    _requests.put((executor, (_run, [str(f) for f in folders], str(module), function, args), submitted))
    _start_starter()
    return then(submitted, _load)


_requests: queue.SimpleQueue = queue.SimpleQueue()     # (executor, what to submit, the Future of its value)
_starter = None                     # the thread that submits them all
_starter_lock = threading.Lock()


def _start_starter():
    global _starter
    with _starter_lock:
        if _starter is None:
            _starter = threading.Thread(target=_submit_all, args=(_requests,), name="apart-starter", daemon=True)
            _starter.start()


def _forget_starter():
    """In a forked child: the starter thread stayed behind in the parent."""
    global _requests, _starter, _starter_lock
    _requests, _starter, _starter_lock = queue.SimpleQueue(), None, threading.Lock()


os.register_at_fork(after_in_child=_forget_starter)


def _submit_all(requests):
    """In the starter thread, for this process's life: each request submitted to its executor, whose
    processes, started here, die with this process and not with the thread that asked."""
    while True:
        executor, call, out = requests.get()
        try:
            then(executor.submit(*call), lambda value: value, out)
        except BaseException as error:      # an executor already shut down, say
            out.set_exception(error)


def then(future, function, out=None):
    """A Future (`out`, or a new one) of function(future's result), or of its exception."""
    out = Future() if out is None else out

    def finish(done):
        try:
            out.set_result(function(done.result()))
        except BaseException as error:      # handed on, whatever it is
            out.set_exception(error)
    future.add_done_callback(finish)
    return out


def _start(parent):
    """In the new process: die with the judge (a judge killed mid-grading leaves no training
    behind) and leave Ctrl-C to it, and one torch thread."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform == "linux":
        from grader.judge.linux import PR_SET_PDEATHSIG, libc

        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)
    os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    import torch

    torch.set_num_threads(1)


class _Modules:
    """`modules.name`: module `name`, imported from the folders _run put first on sys.path."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return importlib.import_module(name)


def _run(folders, module, function, args):
    import torch

    sys.path[:0] = [folder for folder in folders if folder not in sys.path]
    spec = importlib.util.spec_from_file_location(f"apart_{function}", module)
    code = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(code)
    buffer = io.BytesIO()
    torch.save(getattr(code, function)(_Modules(), *args), buffer)
    return buffer.getvalue()


def _load(data):
    import torch

    return torch.load(io.BytesIO(data), weights_only=True)
