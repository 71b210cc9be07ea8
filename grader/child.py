"""The child side: a zygote that imports torch once, and the forked children that run
student code, one call per request. Nothing here trusts what student code does.

grader/sandbox.py starts `python -I child.py SCRATCH CONTROL_FD` (inside bubblewrap when it
can). The zygote never runs student code: on a control request it forks a child that writes
the submission's files into a fresh folder under SCRATCH, limits itself, and answers calls
with plain data only (grader/wire.py). The judge trusts none of what a child says.
"""
import ctypes
import importlib
import importlib.util
import os
import random
import resource
import shutil
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
FILE_BYTES = 64 * 2**20         # the largest file a child may write


def load_wire():
    spec = importlib.util.spec_from_file_location("_grader_wire", Path(__file__).with_name("wire.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- a child: runs student code ------------------------------------------------------------------
def resolve(value, wire):
    """Construct the objects the judge asked for with `wire.build` (from handout modules)."""
    if isinstance(value, dict) and wire.BUILD in value:
        module, _, name = value[wire.BUILD].partition(":")
        factory = getattr(importlib.import_module(module), name)
        return factory(*resolve(value["args"], wire), **resolve(value["kwargs"], wire))
    if isinstance(value, dict):
        return {k: resolve(v, wire) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(resolve(v, wire) for v in value)
    return value


def echo(argument, wire):
    """An argument as it is after the call, or None for objects that are not plain data."""
    try:
        return wire.encode(argument)
    except wire.WireError:
        return None


def describe(error, workdir):
    """The error as the learner should see it: type, message, and where in their files."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)      # not "<frozen importlib...>"
              if Path(f.filename).is_absolute() and Path(f.filename).resolve().parent == workdir]
    where = [f"{Path(f.filename).name} line {f.lineno}, in {f.name}" for f in frames[-3:]]
    if isinstance(error, SyntaxError) and error.filename and Path(error.filename).is_absolute():
        where.append(f"{Path(error.filename).name} line {error.lineno}: {(error.text or '').strip()[:200]}")
    innermost = frames[-1].name if frames else None
    return {
        "type": type(error).__name__,
        "message": str(error)[:1000],
        "where": where,
        "not_implemented": innermost if isinstance(error, NotImplementedError) else None,
    }


def flush():
    """Push what student code printed into the output pipe, before the answer; survive whatever
    it did to sys.stdout and sys.stderr."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass


def serve(workdir, read_fd, write_fd, wire):
    while True:
        try:
            request = wire.recv(read_fd)
        except EOFError:
            return
        answer = {"id": request["id"]}
        try:
            args = resolve(wire.sanitize(request["args"]), wire)
            kwargs = resolve(wire.sanitize(request["kwargs"]), wire)
            function = getattr(importlib.import_module(request["module"]), request["function"])
            value = function(*args, **kwargs)
            answer.update(ok=True, value=wire.encode(value))
            if request["echo"]:
                answer["args"] = [echo(a, wire) for a in args]
        except wire.WireError as error:
            answer.update(ok=False, error={"type": "WireError", "message": str(error), "where": [],
                                           "not_implemented": None})
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: report, don't die
            answer.update(ok=False, error=describe(error, workdir))
        finally:
            flush()
        wire.send(write_fd, answer)


def become_child(order, fds, scratch, wire):
    """In a fresh fork: take the pipes, lay out the files, limit ourselves, then serve."""
    read_fd, write_fd, output_fd = fds
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    libc.prctl(PR_SET_DUMPABLE, 1)
    os.setsid()
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)
    workdir = Path(scratch, order["name"]).resolve()
    for name, data in order["files"].items():
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    os.chdir(workdir)
    sys.path.insert(0, str(workdir))
    if not order["device"].startswith("cuda"):      # CUDA maps far more address space than it uses
        resource.setrlimit(resource.RLIMIT_AS, (order["memory_mb"] * 2**20,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (order["cpu_seconds"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES,) * 2)
    random.seed(0)                  # the same submission meets the same luck every grading
    sys.modules["torch"].manual_seed(0)
    serve(workdir, read_fd, write_fd, wire)
    os._exit(0)


# -- the zygote: forks children, never runs student code -----------------------------------------
def zygote(scratch, control, wire, sandboxed):
    children = {}                   # pid -> exit status once reaped, else None
    while True:
        try:
            order, fds = wire.recv_with_fds(control)
        except EOFError:
            return
        try:
            reply = obey(order, fds, children, scratch, control, wire, sandboxed)
        except Exception as error:  # a bad order is answered, never the zygote's end
            reply = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
        wire.send_with_fds(control, reply)


def obey(order, fds, children, scratch, control, wire, sandboxed):
    op = order["op"]
    if op == "fork":
        pid = os.fork()
        if pid == 0:
            control.close()
            try:
                become_child(order, fds, scratch, wire)
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        children[pid] = None
        return {"pid": pid}
    if op == "status":              # wait up to `timeout` s for a child to end; its wait status
        return {"status": reap(children, order["pid"], order["timeout"])}
    if op == "kill":
        kill_child(children, order["pid"])
        return {"status": reap(children, order["pid"], 5.0)}
    if op == "reset":               # between submissions: nothing of the last one survives
        for pid in children:
            kill_child(children, pid)
        if sandboxed:               # our own PID namespace: stray daemons die too
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in list(children):
            reap(children, pid, 5.0)
        children.clear()
        for entry in Path(scratch).iterdir():
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink()
        return {"ok": True}
    raise ValueError(f"unknown order {op!r}")


def kill_child(children, pid):
    """Kill a child that still runs, with its session; a reaped pid may belong to another now."""
    if pid not in children or children[pid] is not None:
        return
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def reap(children, pid, timeout):
    """The wait status of child `pid`, waiting at most `timeout` s; None while it runs."""
    deadline = time.monotonic() + timeout
    while pid in children and children[pid] is None:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            break
        if done:
            children[pid] = status
        elif time.monotonic() >= deadline:
            break
        else:
            signal.sigtimedwait([signal.SIGCHLD], 0.05)
    return children.get(pid)


def main(argv):
    scratch, control_fd, sandboxed = Path(argv[0]), int(argv[1]), argv[2] == "sandboxed"
    sys.dont_write_bytecode = True
    wire = load_wire()
    import torch                    # the point of the zygote: imported once, shared by every fork

    torch.set_num_threads(1)
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0)     # children cannot trace or read the zygote
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
    control = socket.socket(fileno=control_fd)
    wire.send_with_fds(control, {"ready": True})
    zygote(scratch, control, wire, sandboxed)


if __name__ == "__main__":
    main(sys.argv[1:])
