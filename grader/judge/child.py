"""The child side: a zygote that imports torch once, and the forked children that run
student code, one call per request. Nothing here trusts what student code does.

grader/judge/zygote.py starts `python -I child.py SCRATCH CONTROL_FD MODE [UID [--offline]
[PYTHON_PREFIX...]]`, inside bubblewrap when it can. The zygote runs no student code and holds
no student's files: on a control order it forks a child, and the judge hands the child its files
over the child's own request pipe. In bubblewrap the zygote is PID 1 of its namespace, an
unprivileged user with a user namespace of its own, and each child gets fresh mounts (home,
/tmp, /dev/shm), IPC and network before it drops every capability. A plain zygote started as
root gives each child a user of its own with no capability, and, where the kernel allows, fresh
mounts and (--offline) network of its own. The judge trusts none of what a child says.
"""
import gc
import importlib
import importlib.util
import io
import math
import mmap
import os
import random
import resource
import signal
import socket
import sys
import tempfile
import time
import traceback
from pathlib import Path

FILE_BYTES = 64 * 2**20             # the largest file a child may write
PROCESSES = 128                     # processes and threads of the sandbox's own user (root only)


def load(name):
    """A module beside this file, by path: `python -I` puts no folder on sys.path, and inside
    the sandbox there is no grader package, only these files."""
    spec = importlib.util.spec_from_file_location(f"_grader_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


linux = load("linux")
trap = load("trap")


# -- a child: runs student code ------------------------------------------------------------------
def resolve(value, wire, shared, placed=None):
    """Construct the objects the judge asked for with `wire.build` (from handout modules), and the
    tensor arguments it placed in `shared` memory (views of it: what the call does to their values,
    the judge sees for itself), each added to `placed` with where its values were."""
    if isinstance(value, dict) and wire.SHARED in value:
        import torch

        dtype = getattr(torch, value["dtype"])
        count = 1
        for size in value["shape"]:
            count *= size
        tensor = torch.frombuffer(shared, dtype=dtype, count=count, offset=value[wire.SHARED]) \
            if count else torch.empty(0, dtype=dtype)
        tensor = tensor.view(value["shape"]).to(value["device"])
        if placed is not None:
            placed.append((tensor, tensor.data_ptr()))
        return tensor
    if isinstance(value, dict) and wire.BUILD in value:
        module, _, name = value[wire.BUILD].partition(":")
        factory = getattr(importlib.import_module(module), name)
        return factory(*resolve(value["args"], wire, shared), **resolve(value["kwargs"], wire, shared))
    if isinstance(value, dict):
        return {k: resolve(v, wire, shared, placed) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(resolve(v, wire, shared, placed) for v in value)
    return value


def layouts(placed, value):
    """What became of each shared tensor argument, beyond its values (which the judge reads itself):
    its shape, strides and dtype after the call, whether it still lies over the memory it was given,
    and whether the answer holds its memory (x itself, or a view of it)."""
    import torch

    def storage(tensor):
        try:
            return tensor.untyped_storage().data_ptr()
        except Exception:               # a learner's tensor subclass
            return None

    answered = [leaf for leaf in _leaves(value) if isinstance(leaf, torch.Tensor)]
    return [{"shape": list(t.shape), "stride": list(t.stride()), "offset": t.storage_offset(),
             "dtype": str(t.dtype).removeprefix("torch."), "moved": t.data_ptr() != at,
             "returned": storage(t) not in (None, 0) and any(storage(leaf) == storage(t) for leaf in answered)}
            for t, at in placed]


def _leaves(value, depth=0):
    """The items of an answer's nested lists, tuples and dicts."""
    if depth < 4 and isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item, depth + 1)]
    if depth < 4 and isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item, depth + 1)]
    return [value]


def seed_from(request, wire, shared):
    """Seed torch's and Python's generators from the call itself (its function and the bytes of its
    arguments): the same call meets the same luck in every grading, whatever ran before it, and
    calls that differ (a question asked again, its layer masked anew) meet fresh luck each, so a
    random strategy shows as random."""
    import hashlib

    import torch

    digest = hashlib.sha256(repr((request["module"], request["function"])).encode())

    def walk(value):
        if isinstance(value, torch.Tensor):
            digest.update(repr((str(value.dtype), tuple(value.shape), value.device.type)).encode())
            try:
                if value.device.type != "meta":
                    digest.update(value.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy())
            except (RuntimeError, TypeError):    # a layout with no plain bytes: its shape and dtype say enough
                pass
        elif isinstance(value, dict):
            for key in sorted(value, key=repr):
                digest.update(repr(key).encode())
                walk(value[key])
            if wire.SHARED in value:        # a tensor in shared memory: its bytes are there
                size = getattr(torch, value["dtype"]).itemsize * math.prod(value["shape"])
                digest.update(shared[value[wire.SHARED]:value[wire.SHARED] + size])
        elif isinstance(value, (list, tuple)):
            digest.update(b"[")
            for item in value:
                walk(item)
        else:
            digest.update(repr(value).encode())

    walk([request["args"], request["kwargs"]])
    seed = int.from_bytes(digest.digest()[:8], "little")
    random.seed(seed)
    seed_torch(seed)


def describe(error, workdir):
    """The error as the learner should see it: type, message, and where in their files."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)      # not "<frozen importlib...>"
              if Path(f.filename).is_absolute() and Path(f.filename).resolve().parent == workdir]
    where = [f"{Path(f.filename).name} line {f.lineno}, in {f.name}" for f in frames[-12:]]
    if isinstance(error, SyntaxError) and error.filename and Path(error.filename).is_absolute():
        where.append(f"{Path(error.filename).name} line {error.lineno}: {(error.text or '').strip()[:200]}")
    innermost = frames[-1].name if frames else None
    return {"type": type(error).__name__, "message": str(error)[:1000], "where": where,
            "not_implemented": innermost if isinstance(error, NotImplementedError) else None}


def flush():
    """Push what student code printed into the output pipe, before the answer; survive whatever
    it did to sys.stdout and sys.stderr."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass


def unbuffered_output(output_fd):
    """stdout and stderr written through to the output pipe `output_fd` as each print comes
    (python -u): what a call prints reaches the judge during that call, not with a later call's flush."""
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        stream = io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def take_files(setup, workdir):
    """Lay out the files the judge sent; the trap of the lab's forbidden calls over them."""
    for name, data in setup["files"].items():
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return trap.trap(setup.get("forbid", {}), workdir, setup.get("student", []), setup.get("trusted", {}))


class Ends(tuple):
    """A child's ends of its channel (a tuple: frozen, and no import here): requests read from
    `read_fd`, answers written to `write_fd`, tensor arguments placed by the judge in `shared`."""
    read_fd = property(lambda self: self[0])
    write_fd = property(lambda self: self[1])
    shared = property(lambda self: self[2])


def serve(workdir, ends, wire, limit, calls):
    read_fd, write_fd, shared = ends.read_fd, ends.write_fd, ends.shared
    while True:
        try:
            request = wire.recv(read_fd)
        except EOFError:
            return
        answer, placed = {"id": request["id"]}, []
        try:
            args = resolve(wire.sanitize(request["args"]), wire, shared, placed)
            kwargs = resolve(wire.sanitize(request["kwargs"]), wire, shared)
            function = getattr(importlib.import_module(request["module"]), request["function"])
            seed_from(request, wire, shared)
            def again(request=request, function=function, args=args, kwargs=kwargs):
                seed_from(request, wire, shared)
                return calls.call(request["function"], function, meta_device.real(args), meta_device.real(kwargs))
            try:
                with meta_device.played(args, kwargs) as (played, played_kwargs):    # the meta device, on the CPU
                    value = calls.call(request["function"], function, played, played_kwargs)
                    data = answered({**answer, "layouts": layouts(placed, value)} if placed else answer,
                                    value, wire, limit)
            except meta_device.Mixed:       # refused by the played device: the real one may answer (vmap)
                if placed or not meta_device.asks_for_meta([args, kwargs]):
                    raise
                data = on_real_meta(again, answer, wire, limit)
                if data is None:
                    raise
            else:
                if played is not args and not placed and meta_device.lost(value):     # (echoed arguments: once)
                    data = on_real_meta(again, answer, wire, limit) or data
        except (wire.WireError, wire.GraderFault) as error:     # not data, or not carried: the judge says
            data = wire.frame_parts({**answer, "ok": False, "error": {
                "type": type(error).__name__, "message": str(error), "where": [], "not_implemented": None}})
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: report, don't die
            data = wire.frame_parts({**answer, "ok": False, "error": describe(error, workdir)})
        finally:
            flush()
        wire.write_all(write_fd, data)


def on_real_meta(again, answer, wire, limit):
    """The frame of the call made `again` on the real meta device, where the played one answered off
    it (meta_device.lost) or refused an op as mixed (meta_device.Mixed): the real device's answer
    where it gives one (TorchScript, whose ops the played device never sees; torch.func.vmap, whose
    batched tensors it cannot mark); None where it raises, as it does for a tensor made elsewhere and
    written into or mixed in: the played answer or refusal, which says where that tensor is, stands."""
    try:
        return answered(answer, again(), wire, limit)
    except BaseException:       # SystemExit too: the played answer stands, as for any other raise
        return None


def answered(answer, value, wire, limit):
    """The frame of a returned value. Encoding it runs the learner's objects' code (a dataclass's,
    a tensor subclass's), and what that raises is theirs; framing the plain tree it made is ours."""
    tree = wire.encode(value, limit)
    try:
        return wire.frame_parts({**answer, "ok": True, "value": tree})
    except (wire.WireError, MemoryError):       # a tree too large for the learner's own memory limit
        raise
    except Exception as error:
        raise wire.GraderFault(f"{type(error).__name__}: {error}") from None


meta_device = None                  # meta_device.py, once torch is imported
seed_torch = None                   # a fork's way to seed torch: on the CPU, its generator alone
order_signals: dict = {}            # the signal handlers Python had, before the zygote ignored them
plain_uid: int | None = None        # a plain process's children's own user, when started as root
python_prefixes: list[str] = []     # the judge's launchers.python_prefixes(): Python's own folders
offline = False                     # as root, plain: the kernel gives us network namespaces
OPEN_TO_ALL = ["/tmp", "/var/tmp", "/dev/shm"]      # where every user may write: a child's own
left_in: list[str] = []             # as root, plain: where children may leave files that outlive them


def become_child(order, fds, home):
    """In a fresh fork: take the pipes, get fresh mounts, lose privileges, take the files the
    judge sends down the request pipe, limit ourselves, then serve."""
    scratch, wire, sandboxed = home.scratch, home.wire, home.sandboxed
    read_fd, write_fd, output_fd, shared_fd = fds
    shared = mmap.mmap(shared_fd, 0)
    os.close(shared_fd)
    for number, handler in order_signals.items():       # as Python had them, not as the zygote
        signal.signal(number, handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
    linux.libc.prctl(linux.PR_SET_DUMPABLE, 1)      # ours to map our own user namespace
    linux.first_to_go()                             # out of memory, the kernel kills us, not the zygote
    linux.libc.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()
    unbuffered_output(output_fd)
    if sandboxed:
        linux.fresh_namespaces([str(scratch), *OPEN_TO_ALL], order["scratch_bytes"], python_prefixes)
        linux.hide("/proc/1")       # the zygote: its times add up what the children it reaped used
        linux.drop_privileges()
        workdir = Path(scratch, "work")
        workdir.mkdir()
    else:
        workdir = Path(tempfile.mkdtemp(dir=scratch))
        if plain_uid is not None:       # as root: a user of its own, who cannot reach the judge
            os.chmod(scratch, 0o711)
            os.chown(workdir, plain_uid, plain_uid)
            if linux.fresh_namespaces(OPEN_TO_ALL, order["scratch_bytes"], [*python_prefixes, str(scratch)],
                                      owner=plain_uid, network=offline):
                linux.read_only_but([*OPEN_TO_ALL, str(scratch)])     # and nowhere else
            linux.drop_privileges(become=plain_uid, offline=True)
            linux.libc.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)     # new credentials cleared it
        else:
            linux.checked(linux.libc.prctl(linux.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
            linux.seccomp_filter(offline=True)
    workdir = workdir.resolve()
    setup = wire.recv(read_fd)                          # the files: never seen by the zygote
    limit, calls = setup["answer_bytes"], take_files(setup, workdir)
    del setup
    os.chdir(workdir)
    sys.path.insert(0, str(workdir))
    if not order["device"].startswith("cuda"):      # CUDA maps far more address space than it uses
        resource.setrlimit(resource.RLIMIT_AS, (order["memory_mb"] * 2**20,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (order["cpu_seconds"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES,) * 2)
    if order["own_user"]:                           # a user of our own: count only our processes
        resource.setrlimit(resource.RLIMIT_NPROC, (PROCESSES,) * 2)
    global seed_torch               # torch.manual_seed seeds every device, and where CUDA is not
    torch = sys.modules["torch"]    # started queues its seed with a stack trace, each call:
    seed_torch = torch.manual_seed if order["device"].startswith("cuda") else torch.default_generator.manual_seed
    random.seed(0)                  # the same submission meets the same luck every grading
    seed_torch(0)                   # (and each call its own: seed_from)
    serve(workdir, Ends((read_fd, write_fd, shared)), wire, limit, calls)
    os._exit(0)


# -- the zygote: forks children, never runs student code -----------------------------------------
class Home(tuple):
    """What the zygote has for its life (a tuple: frozen, and no import here): its `scratch`
    folder, its `control` socket to the judge, the `wire` module, and whether it is `sandboxed`."""
    scratch = property(lambda self: self[0])
    control = property(lambda self: self[1])
    wire = property(lambda self: self[2])
    sandboxed = property(lambda self: self[3])


def zygote(home):
    control, wire = home.control, home.wire
    children = {}                   # pid -> exit status once reaped, else None
    while True:
        try:
            order, fds = wire.recv_with_fds(control)
        except EOFError:
            return
        try:
            reply = obey(order, fds, children, home)
        except Exception as error:  # a bad order is answered, never the zygote's end
            reply = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
        wire.send_with_fds(control, reply)


def obey(order, fds, children, home):
    op = order["op"]
    if op == "fork":
        pid = os.fork()
        if pid == 0:
            home.control.close()
            try:
                become_child(order, fds, home)
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
    if op == "reset":               # between submissions: no process of the last one survives
        kill_everything(home.sandboxed)
        children.clear()
        if not home.sandboxed:      # sandboxed children's files lived in their own mounts
            wipe(home.scratch)
        return {"ok": True}
    raise ValueError(f"unknown order {op!r}")


def kill_everything(sandboxed, rounds=5):
    """Kill every process but ourselves: in the sandbox, all of our PID namespace; in a plain
    process, all our descendants (orphans come back to us: we are their subreaper)."""
    for _ in range(rounds):
        if sandboxed:               # PID 1 of our namespace: kill(-1) reaches all of it
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            linux.stop_then_kill(lambda: linux.descendants(os.getpid()))
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:      # reap; a fork racing the kill is caught next round
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    signal.sigtimedwait([signal.SIGCHLD], 0.02)
            except ChildProcessError:
                return


def wipe(folder):
    """Empty `folder`, and what our children's own user left where every user may write (in a
    container they had no mounts of their own)."""
    linux.remove(*Path(folder).iterdir(), *(linux.owned(plain_uid, left_in) if plain_uid else ()))


def mounts_of_their_own():
    """Whether our children will get mounts of their own (tried in a fork: the kernel gives root a
    mount namespace where it has CAP_SYS_ADMIN, as bubblewrap's children and fresh_namespaces need)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0 if linux.libc.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWIPC) == 0 else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def writable_by_all(top="/", depth=4):
    """OPEN_TO_ALL and every folder every user may write `depth` levels below `top` at most (not
    in /proc or /sys, no link followed): /run/lock, /var/crash, /var/lib/php/sessions. With no mounts
    of its own, a child of a user of its own can write there, and what it leaves is the next's."""
    found = [folder for folder in OPEN_TO_ALL if os.path.isdir(folder)]
    todo = [(top, 0)]
    while todo:
        folder, level = todo.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if not entry.is_dir(follow_symlinks=False) or entry.path in ("/proc", "/sys"):
                        continue
                    if entry.stat(follow_symlinks=False).st_mode & 0o002:
                        found.append(entry.path)        # what is below it, owned() searches
                    elif level + 1 < depth:
                        todo.append((entry.path, level + 1))
        except OSError:
            pass
    return list(dict.fromkeys(found))


def kill_child(children, pid):
    """Kill a child and what is left of its session, even once the child has ended (what it left is
    on no call's clock). A reaped pid may be another's now: the child is killed only while it runs;
    its session's pid is not reused while the session has members; only our descendants are searched."""
    if pid not in children:
        return
    if children[pid] is None:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def left():
        table = linux.processes()
        return [p for p in linux.below([os.getpid()], table)[1:] if table[p][1] == pid and table[p][2] != "Z"]

    linux.stop_then_kill(left)


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
    global plain_uid, offline, meta_device
    scratch, control_fd, sandboxed = Path(argv[0]), int(argv[1]), argv[2] == "sandboxed"
    rest = argv[4:]                 # as root, plain: --offline (no network), Python's folders, and
    offline = "--offline" in rest   # after --hide the course's traces in them
    rest = [arg for arg in rest if arg != "--offline"]
    at = rest.index("--hide") if "--hide" in rest else len(rest)
    python_prefixes[:], hidden = rest[:at], rest[at + 1:]
    if sandboxed:
        linux.unprivileged(int(argv[3]))
    else:                           # orphans of our children come back to us, to be killed
        linux.libc.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        plain_uid = int(argv[3]) if len(argv) > 3 else None
        try:
            if plain_uid is not None:
                linux.python_for_everyone(python_prefixes, hidden)
                left_in[:] = OPEN_TO_ALL if mounts_of_their_own() else writable_by_all()
            if offline:             # a network namespace of ours, with no device up: the judge said so
                linux.checked(linux.libc.unshare(linux.CLONE_NEWNET), "no network")
        except OSError as error:    # said once, plainly: the judge quotes a starting zygote
            sys.exit(f"the sandbox could not start: {error}")
    sys.dont_write_bytecode = True
    gc.disable()                    # no collections of torch's import (as grader/base/collector.py)
    wire = load("wire")
    import torch  # the point of the zygote: imported once, shared by every fork

    torch.set_num_threads(1)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(scratch)    # where torch.compile would write, if used
    meta_device = load("meta_device")   # played on the CPU: torch's meta kernels are not loaded at all
    linux.libc.prctl(linux.PR_SET_DUMPABLE, 0)      # children cannot trace or read the zygote
    order_signals.update(linux.deaf())
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
    control = socket.socket(fileno=control_fd)
    gc.freeze()                     # what the zygote holds is never scanned, by it or by a fork
    gc.enable()
    wire.send_with_fds(control, {"ready": True})
    zygote(Home((scratch, control, wire, sandboxed)))


if __name__ == "__main__":
    main(sys.argv[1:])
