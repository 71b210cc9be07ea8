"""What the kernel gives both sides of the sandbox: namespaces, capabilities, signals and the
process table.

The judge imports this module; inside the sandbox grader/judge/child.py loads it by path (no
grader package there), so it imports nothing of the grader's.
"""
import contextlib
import ctypes
import errno
import os
import platform
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 28, 38, 36
SECURE_ALL_LOCKED = 0x2f            # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED: with their locks
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWNET = 0x20000, 0x08000000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 0x1000, 0x4000, 0x40000
MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": 8, "noatime": 0x400, "nodiratime": 0x800,
               "relatime": 0x200000, "strictatime": 0x1000000}   # a mount's own options, kept when it is made read-only
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
# machine -> (seccomp's name of its system call ABI, clone, unshare, clone3, add_key, setsid);
# add_key, request_key and keyctl follow one another on both
SYSCALLS = {"x86_64": (0xC000003E, 56, 272, 435, 248, 112), "aarch64": (0xC00000B7, 220, 97, 435, 217, 157)}
SOCKET = {"x86_64": 41, "aarch64": 198}
SHARED_IPC = {"x86_64": (29, 64, 68, 240), "aarch64": (194, 190, 186, 180)}   # shmget semget msgget mq_open
IO_URING_SETUP, AF_UNIX = 425, 1    # io_uring's own numbers are the same on both
# OOM scores: the kernel kills the process holding most memory plus score/1000 of all it may give
# (a group's limit): children first, then their zygote, bigger (torch) but no submission's, the judge last
CHILD_OOM_SCORE, ZYGOTE_OOM_SCORE = 1000, 500
libc = ctypes.CDLL(None, use_errno=True)


def checked(result: int, what: str) -> int:
    """A libc call's result, or OSError naming what failed."""
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


def map_root(flags: int) -> None:
    """unshare(flags), a new user namespace among them, in which we are root: uid 0 there is
    who we were, and nobody else."""
    uid, gid = os.getuid(), os.getgid()
    checked(libc.unshare(flags), "unshare")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
    Path("/proc/self/gid_map").write_text(f"0 {gid} 1")


def unprivileged(uid: int) -> None:
    """Inside bubblewrap: become `uid` (when started as root), then root of a user namespace of
    our own, which owns the mounts each child makes and maps to nothing on the host but `uid`."""
    parent = os.getppid()
    if os.getuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    libc.prctl(PR_SET_DUMPABLE, 1)                  # to write our own maps
    map_root(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC)
    libc.prctl(PR_SET_DUMPABLE, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)    # new credentials cleared bubblewrap's; its end is ours
    if os.getppid() != parent:
        os._exit(1)


def first_to_go(pid: int | str = "self") -> None:
    """Make process `pid` (ourselves by default) a child's: the first the kernel kills when memory
    runs out (CHILD_OOM_SCORE is above every other score but another child's), before its zygote.
    Set by root with CAP_SYS_RESOURCE it is also the least the process and all it starts may set;
    without, it is the score alone, which a process able to write its own may lower again."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/oom_score_adj").write_text(str(CHILD_OOM_SCORE))


def deaf() -> dict:
    """Ignore every signal a process may send: PID 1 keeps only those it handles, and Python
    handles SIGINT. Faults stay as they are. Returns the handlers Python had, for children."""
    keep = {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD, signal.SIGSEGV, signal.SIGBUS,
            signal.SIGFPE, signal.SIGILL, signal.SIGABRT, signal.SIGTRAP, signal.SIGSYS}
    handlers = {}
    for number in signal.valid_signals() - keep:
        try:
            handler = signal.getsignal(number)
            signal.signal(number, signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            continue
        handlers[number] = handler if handler is not None else signal.SIG_DFL
    return handlers


def fresh_namespaces(folders: Sequence[str], scratch_bytes: int, keep: Sequence[str], owner: int | None = None,
                     network: bool = True) -> bool:
    """New mount, IPC and (`network`) network namespaces, with an empty tmpfs over each of
    `folders`: nothing any other child wrote or kept in the kernel (files, IPC objects) is here,
    nothing made here outlives this child, and no other child can be reached by a socket (an
    abstract unix one, loopback: a fresh network has no device up). `keep`: folders beneath them
    that stay (Python's, in a venv in /tmp). A new user namespace too, in which we are root; or,
    as real root, none, and the tmpfs are `owner`'s. False, and nothing done, where the kernel
    refuses real root these namespaces (a container without CAP_SYS_ADMIN)."""
    flags = CLONE_NEWNS | CLONE_NEWIPC | (CLONE_NEWNET if network else 0)
    if owner is None:
        map_root(CLONE_NEWUSER | flags)
    elif libc.unshare(flags) != 0:
        if ctypes.get_errno() == errno.EPERM:
            return False
        checked(-1, "unshare")
    checked(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    options = f"size={scratch_bytes},mode=0700" + (f",uid={owner},gid={owner}" if owner is not None else "")
    for folder in folders:          # not a link: /var/tmp may be /tmp, covered once
        if os.path.isdir(folder) and os.path.realpath(folder) == folder:
            cover(Path(folder), options, [path for path in keep if Path(path).is_relative_to(folder)])
    return True


def read_only_but(writable: Iterable[str]) -> None:
    """In a mount namespace of our own, as real root: every mount read-only (bound again, so the
    host's stay as they are) but the folders `writable`, each bound on itself if it was no mount,
    and /proc, whose files their modes guard. A child then writes nowhere else: not in a folder
    every user may write that nobody listed (/run/lock, /var/crash), nor in the host's message
    queues (/dev/mqueue), nor in Python's."""
    writable = {os.path.realpath(folder) for folder in writable if os.path.isdir(folder)}
    found = mounts()
    unmounted = writable - {point for point, _, _ in found}
    for folder in unmounted:
        checked(libc.mount(os.fsencode(folder), os.fsencode(folder), None, MS_BIND | MS_REC, None), f"bind {folder}")
    for point, options, kind in mounts() if unmounted else found:
        if "ro" not in options and kind != "proc" and point not in writable:
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY | sum(MOUNT_FLAGS.get(option, 0) for option in options)
            if libc.mount(None, os.fsencode(point), None, flags, None) != 0 and os.path.ismount(point):
                checked(-1, f"make {point} read-only")      # else hidden under a later mount


def mounts() -> list[tuple[str, list[str], str]]:
    """(mount point, its options, its file system's type) of every mount we see."""
    found = []
    for line in Path("/proc/self/mountinfo").read_bytes().splitlines():
        fields = line.split()
        point = re.sub(rb"\\([0-7]{3})", lambda octal: bytes([int(octal[1], 8)]), fields[4])   # \040: blank
        found.append((os.fsdecode(point), fields[5].decode().split(","), fields[fields.index(b"-") + 1].decode()))
    return found


def cover(folder: Path, options: str, keep: Iterable[str]) -> None:
    """An empty tmpfs over `folder`, with the folders `keep` (beneath it) bound back in."""
    kept = {prefix: os.open(prefix, os.O_PATH | os.O_DIRECTORY) for prefix in keep}
    checked(libc.mount(b"tmpfs", bytes(folder), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode()),
            f"mount {folder}")
    for prefix, fd in kept.items():
        os.makedirs(prefix, mode=0o755, exist_ok=True)
        checked(libc.mount(f"/proc/self/fd/{fd}".encode(), prefix.encode(), None, MS_BIND | MS_REC, None),
                f"bind {prefix}")
        os.close(fd)


def hide(folder: str) -> None:
    """An empty, read-only tmpfs over `folder`, in a mount namespace of our own."""
    checked(libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, b"size=4k,mode=0555"),
            f"hide {folder}")


def renumber(namespace: str) -> None:
    """Make the next pids of the PID namespace `namespace` (a /proc/PID/ns file) start at a random
    place, where we may (root of the host): what a number of pids the last student's code took
    (a secret counted out in forks) says, the next one's pids then do not. Needs nsenter: only a
    process of that namespace may set its next pid."""
    if os.geteuid() != 0 or not shutil.which("nsenter"):
        return
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    start = 300 + int.from_bytes(os.urandom(4), "little") % max(1, top - 2300)
    subprocess.run(["nsenter", f"--pid={namespace}", "--", "/bin/sh", "-c",
                    f"echo {start} > /proc/sys/kernel/ns_last_pid"], check=False, timeout=10,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def drop_privileges(become: int | None = None, offline: bool = False) -> None:
    """Lose every capability for good: bounding set, securebits, the sets themselves, and no
    new privileges through exec; no user namespace or key either (seccomp_filter, `offline`
    too). `become`: a uid to take on the way, as root. Checked afterwards: a child that kept any
    does not run."""
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        checked(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop the bounding set")
    checked(libc.prctl(PR_SET_SECUREBITS, SECURE_ALL_LOCKED, 0, 0, 0), "securebits")
    if become is not None:
        os.setgroups([])
        os.setresgid(become, become, become)
        os.setresuid(become, become, become)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)       # _LINUX_CAPABILITY_VERSION_3, this thread
    checked(libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")
    checked(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    seccomp_filter(offline)
    status = Path("/proc/self/status").read_text()
    if any(line.split()[1].strip("0") for line in status.splitlines()
           if line.startswith(("CapPrm", "CapEff", "CapBnd", "CapAmb"))):
        raise OSError("capabilities survived the drop")


def python_for_everyone(prefixes: Sequence[str], traces: Iterable[str] = ()) -> None:
    """As root, for a plain process and its children: a mount namespace of our own in which
    each folder that hides one of Python's `prefixes` from other users (a 0700 /root, say) is
    an empty, traversable tmpfs with the prefixes bound back in, and the course's `traces` in
    them are hidden (launchers.course_traces). Children that lose root can still import, and
    see nothing else of what was hidden. Where no mount namespace may be made, the traces stay:
    children read the course itself there anyway."""
    hidden: dict[Path, list[str]] = {}
    for prefix in prefixes:
        for folder in reversed(Path(prefix).parents):           # from / down
            if not folder.stat().st_mode & 0o001:               # others may not pass through
                hidden.setdefault(folder, []).append(prefix)
                break
    if not hidden and not traces:
        return
    try:
        checked(libc.unshare(CLONE_NEWNS), "unshare")
    except OSError as error:        # a container without CAP_SYS_ADMIN, say
        if not hidden:
            return
        raise OSError(f"Python lives in {', '.join(map(str, hidden))}, which only root may enter, and no "
                      f"mount namespace could show it to the sandbox's user ({error}): install bubblewrap, "
                      "or a Python every user can read") from None
    checked(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    for folder, inside in hidden.items():
        cover(folder, "mode=0755", inside)
    for path in map(os.fsencode, traces):   # an empty read-only folder or file in their place
        if os.path.isdir(path):
            checked(libc.mount(b"tmpfs", path, b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, b"size=4k"), "hide")
        else:
            checked(libc.mount(b"/dev/null", path, None, MS_BIND, None), "hide")
            checked(libc.mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY, None), "hide")


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Filter))]


def seccomp_filter(offline: bool = False) -> None:
    """A seccomp filter, for us and all we start: clone and unshare may not make a user
    namespace (in one, a process holds every capability again, over the kernel code behind most
    local root exploits), clone3 is unavailable (its flags cannot be read: libc falls back to
    clone), the kernel's keyrings are out of reach (a key outlives its maker, and one made
    readable by all is a note every later user can read), no new session may be made (all a
    child starts stays in its session: counted by its clock, killed with it, one autogroup of the
    scheduler however many processes it starts), and no other system call ABI (i386, x32) may be
    used to get round this. `offline`: no socket but unix ones either, and no io_uring, which
    makes sockets of its own (the network of a process that could get no network namespace),
    nor System V IPC or POSIX message queues, whose objects outlive their maker (memory no rlimit
    counts, held past the child's end) and may be opened by other users (the IPC of a process
    that could get no IPC namespace). Needs no_new_privs. Machines not in SYSCALLS go without."""
    if platform.machine() not in SYSCALLS:
        return
    arch, clone, unshare, clone3, add_key, setsid = SYSCALLS[platform.machine()]
    load, equal, at_least, bits, give = 0x20, 0x15, 0x35, 0x45, 0x06     # classic BPF opcodes
    allow, refuse, absent = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
    program = [
        (load, 0, 0, 4), (equal, 1, 0, arch), (give, 0, 0, refuse),   # seccomp_data.arch
        (load, 0, 0, 0), (at_least, 0, 1, 0x40000000), (give, 0, 0, refuse),   # .nr; x32's bit
        (at_least, 0, 2, add_key), (at_least, 1, 0, add_key + 3), (give, 0, 0, refuse),  # keys
        (equal, 0, 1, setsid), (give, 0, 0, refuse),
        (equal, 0, 1, clone3), (give, 0, 0, absent),
        *([*[step for number in (*SHARED_IPC[platform.machine()], IO_URING_SETUP)
             for step in ((equal, 0, 1, number), (give, 0, 0, refuse))], (equal, 0, 4, SOCKET[platform.machine()]),
           (load, 0, 0, 16), (equal, 1, 0, AF_UNIX), (give, 0, 0, refuse), (give, 0, 0, allow)] if offline else []),
        (equal, 1, 0, clone), (equal, 0, 3, unshare),
        (load, 0, 0, 16), (bits, 0, 1, CLONE_NEWUSER), (give, 0, 0, refuse),  # .args[0], low half
        (give, 0, 0, allow)]
    filters = (_Filter * len(program))(*program)  # type: ignore[misc]   # tuples, read as structures
    checked(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(_Program(len(program), filters)), 0, 0),
            "seccomp")


def remove(*paths: str | os.PathLike) -> None:
    """Remove files and folders whatever a child left in them: Python's rmtree where it can (no
    process started: most gradings leave a few files), else GNU chmod and rm, for modes that
    forbid it and any depth (they walk iteratively; rmtree recurses, and dies past ~1000)."""
    left = []
    for path in paths:
        try:
            shutil.rmtree(path)
        except (OSError, RecursionError):
            if os.path.lexists(path):
                left.append(path)
    if left:
        subprocess.run(["/bin/chmod", "-R", "u+rwX", "--", *map(str, left)], capture_output=True)
        subprocess.run(["/bin/rm", "-rf", "--", *map(str, left)], capture_output=True)


def owned(uid: int, folders: Iterable[str]) -> list[str]:
    """What `uid` owns in `folders` and in the folders there every user may write (/tmp/.X11-unix):
    the only places a user of its own can have written outside its own folders."""
    found, todo = [], [os.path.realpath(folder) for folder in folders if os.path.isdir(folder)]
    for folder in dict.fromkeys(todo):
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if info.st_uid == uid:
                    found.append(entry.path)
                elif entry.is_dir(follow_symlinks=False) and info.st_mode & 0o002:
                    found += owned(uid, [entry.path])
    return found


def processes() -> dict[int, tuple[int, int, str]]:
    """{pid: (parent pid, session id, state letter)} of every process, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            found[int(entry.name)] = (int(fields[1]), int(fields[3]), fields[0])
        except (OSError, ValueError, IndexError):
            pass
    return found


def below(roots: Iterable[int], table: dict[int, tuple[int, int, str]]) -> list[int]:
    """`roots` and every process below them in a processes() table."""
    found, frontier = list(roots), set(roots)
    while frontier:
        frontier = {pid for pid, (parent, _, _) in table.items() if parent in frontier}
        found += frontier
    return found


def descendants(root: int) -> list[int]:
    """PIDs of every process below `root`."""
    return below([root], processes())[1:]


def stop_then_kill(find: Callable[[], Iterable[int]], rounds: int = 200) -> set[int]:
    """SIGSTOP what find() returns, with its process group, until it returns nothing new, then
    SIGKILL it all: a process that forks and exits as fast as it can is frozen before it gets
    away. Returns the pids."""
    stopped: set[int] = set()
    for _ in range(rounds):
        new = set(find()) - stopped
        if not new:
            break
        signal_all(new, signal.SIGSTOP)
        stopped |= new
    signal_all(stopped, signal.SIGKILL)
    return stopped


def signal_all(pids: Iterable[int], number: int) -> None:
    """Send `number` to each process and to its process group, whatever is gone already."""
    for pid in pids:
        for send, target in ((os.kill, pid), (os.killpg, None)):
            try:
                send(pid if target else os.getpgid(pid), number)
            except (ProcessLookupError, PermissionError):
                pass
