"""What the kernel gives both sides of the sandbox: namespaces, capabilities, signals and the
process table.

The judge imports this module; inside the sandbox grader/judge/child.py loads it by path (no
grader package there), so it imports nothing of the grader's.
"""
import ctypes
import os
import signal
from pathlib import Path

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 28, 38, 36
SECURE_ALL_LOCKED = 0x2f            # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED: with their locks
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x20000, 0x08000000, 0x10000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 0x4000, 0x40000
libc = ctypes.CDLL(None, use_errno=True)


def checked(result, what):
    """A libc call's result, or OSError naming what failed."""
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


def map_root(flags):
    """unshare(flags), a new user namespace among them, in which we are root: uid 0 there is
    who we were, and nobody else."""
    uid, gid = os.getuid(), os.getgid()
    checked(libc.unshare(flags), "unshare")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
    Path("/proc/self/gid_map").write_text(f"0 {gid} 1")


def unprivileged(uid):
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


def deaf():
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


def fresh_namespaces(home, scratch_bytes):
    """New user, mount and IPC namespaces, with empty tmpfs over home, /tmp and /dev/shm: nothing
    any other child wrote or kept in the kernel (files, IPC objects, keyrings) is here, and
    nothing made here outlives this child."""
    map_root(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC)
    checked(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    for folder in (home, "/tmp", "/dev/shm"):
        if os.path.isdir(folder):
            checked(libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                               f"size={scratch_bytes},mode=0700".encode()), f"mount {folder}")


def drop_privileges():
    """Lose every capability for good: bounding set, securebits, the sets themselves, and no
    new privileges through exec. Checked afterwards: a child that kept any does not run."""
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        checked(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop the bounding set")
    checked(libc.prctl(PR_SET_SECUREBITS, SECURE_ALL_LOCKED, 0, 0, 0), "securebits")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)       # _LINUX_CAPABILITY_VERSION_3, this thread
    checked(libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")
    checked(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    status = Path("/proc/self/status").read_text()
    if any(line.split()[1].strip("0") for line in status.splitlines()
           if line.startswith(("CapPrm", "CapEff", "CapBnd", "CapAmb"))):
        raise OSError("capabilities survived the drop")


def processes():
    """{pid: (parent pid, session id, state letter)} of every process, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            found[int(entry.name)] = (int(fields[1]), int(fields[3]), fields[0])
        except (OSError, ValueError, IndexError):
            pass
    return found


def below(roots, table):
    """`roots` and every process below them in a processes() table."""
    found, frontier = list(roots), set(roots)
    while frontier:
        frontier = {pid for pid, (parent, _, _) in table.items() if parent in frontier}
        found += frontier
    return found


def descendants(root):
    """PIDs of every process below `root`."""
    return below([root], processes())[1:]


def stop_then_kill(find, rounds=200):
    """SIGSTOP what find() returns, with its process group, until it returns nothing new, then
    SIGKILL it all: a process that forks and exits as fast as it can is frozen before it gets
    away. Returns the pids."""
    stopped = set()
    for _ in range(rounds):
        new = set(find()) - stopped
        if not new:
            break
        signal_all(new, signal.SIGSTOP)
        stopped |= new
    signal_all(stopped, signal.SIGKILL)
    return stopped


def signal_all(pids, number):
    """Send `number` to each process and to its process group, whatever is gone already."""
    for pid in pids:
        for send, target in ((os.kill, pid), (os.killpg, None)):
            try:
                send(pid if target else os.getpgid(pid), number)
            except (ProcessLookupError, PermissionError):
                pass
