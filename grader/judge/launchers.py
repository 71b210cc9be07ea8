"""How the zygote is started: in bubblewrap when it works here, else as a plain process.

A launcher gives the command line of a zygote (grader/judge/child.py), says what it is named
in reports ("bubblewrap" or "process") and whether its children have a user of their own, and
lists what its children get (`facts`: their user, mounts and network, for results and logs).
"""
import csv
import functools
import importlib.util
import json
import os
import platform
import resource
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

from grader.base.errors import SetupError
from grader.base.root import ROOT
from grader.judge.linux import CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, SYSCALLS

CHILD = Path(__file__).with_name("child.py")
# all the sandbox sees of us
IN_SANDBOX = [CHILD, *(CHILD.with_name(n) for n in ("wire.py", "linux.py", "trap.py", "meaning.py", "meta_device.py"))]
HOME = "/home/student"       # where children work inside bubblewrap
SCRATCH_BYTES = 256 * 2**20  # what sandboxed children may write, in their home and in /tmp
SANDBOX_UID_BASE = 1_000_000  # as root, the sandbox runs as this + a number drawn below SANDBOX_UIDS
SANDBOX_UIDS = 2**30
ENV = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "PYTHONHASHSEED": "0", "LANG": "C.UTF-8"}


# -- launchers: how the zygote is started ---------------------------------------------------------
class ProcessLauncher:
    """The zygote as a plain process (no OS sandbox): the fallback everywhere. It protects the
    judge's memory, kills every process a child starts, and gives children no socket but unix
    ones (seccomp), but does not hide the host's files. As root its children become a user of
    their own (`sandbox_uid`), who can signal neither the judge nor the
    zygote, with fresh mounts where the kernel gives root a mount namespace, and a network
    namespace of each child's own where it gives one (no unix socket named in the abstract of
    the host's or of another child's); a container without CAP_SYS_ADMIN gives neither.
    Otherwise they are the judge's user and could stop it."""

    name = "process"

    def __init__(self):
        self.own_user = os.getuid() == 0
        self.offline = self.own_user and namespace_works(CLONE_NEWNET)     # the zygote's, each child's

    def argv(self, scratch, control_fd):
        own = [str(sandbox_uid()), *["--offline"] * self.offline, *python_prefixes(),
               "--hide", *course_traces()] if self.own_user else []
        return [sys.executable, "-I", str(CHILD), str(scratch), str(control_fd), "plain", *own]

    def facts(self):
        mounts = self.own_user and namespace_works(CLONE_NEWNS | CLONE_NEWIPC)
        network = "none: a namespace of each child's own" if self.offline else \
            "none but unix sockets (seccomp)" if platform.machine() in SYSCALLS else "the host's"
        return {"sandbox": self.name, "user": "own" if self.own_user else "the judge's",
                "mounts": "own" if mounts else "the host's", "network": network}


class BubblewrapLauncher:
    """The zygote in bubblewrap: read-only system, Python and /proc/sys, no network, its own PID
    namespace with the zygote as PID 1, no capabilities but those it needs to lose its user.
    As root, the zygote becomes a user of its own (`sandbox_uid`) before
    anything else; either way it then makes a user namespace of its own, and each child gets
    fresh mounts and network and drops every capability (grader/judge/child.py). Children get the handout and
    submission files down their own pipe and see nothing of the grader, the reference or the
    host: only Python's own folders are bound, and those must not hold the course."""

    name = "bubblewrap"

    def __init__(self):
        self.own_user = os.getuid() == 0

    def argv(self, scratch, control_fd):
        binds = []
        for path in ["/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/sys", *python_prefixes()]:
            if Path(path).exists():         # parents made traversable: the zygote is no root
                for parent in reversed(Path(path).parents[:-1]):
                    binds += ["--perms", "0755", "--dir", str(parent)]
                binds += ["--ro-bind", path, path]
        if any(ROOT.is_relative_to(p) for p in python_prefixes()):
            raise SetupError(f"Python's environment {sys.prefix} holds the course folder {ROOT}: the sandbox "
                           "could not hide the reference and the checks. Make the venv in a subfolder (.venv)")
        for path in course_traces():        # read-only: nothing written there reaches the next student
            binds += ["--tmpfs", path, "--remount-ro", path] if Path(path).is_dir() else \
                ["--ro-bind", "/dev/null", path]
        if Path("/sys/fs/cgroup").is_dir():     # the host's control groups: every grader's name (its
            #                                   judge's pid) and what each uses, another student's too
            binds += ["--tmpfs", "/sys/fs/cgroup", "--remount-ro", "/sys/fs/cgroup"]
        for device in sorted(Path("/dev").glob("nvidia*")):              # CUDA grading
            binds += ["--dev-bind", str(device), str(device)]
        # As root no user namespace here: the zygote leaves root for a user of its own and makes
        # one itself. Otherwise bubblewrap makes one, and drops every capability by itself.
        caps = ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] \
            if self.own_user else []
        return ["bwrap", "--die-with-parent", "--new-session", "--as-pid-1", *caps,
                "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev",
                "--size", str(SCRATCH_BYTES), "--tmpfs", "/tmp",          # first: Python may live
                "--size", str(SCRATCH_BYTES), "--tmpfs", HOME, *binds,    # under /tmp, or a home
                "--perms", "0755", "--dir", "/grader",
                *[arg for path in IN_SANDBOX for arg in ("--ro-bind", str(path), f"/grader/{path.name}")],
                *[arg for path in compiled(IN_SANDBOX[1:]) for arg in
                  ("--ro-bind", str(path), f"/grader/__pycache__/{path.name}")],
                "--remount-ro", "/dev", "--remount-ro", "/",
                "--chdir", HOME, "--setenv", "HOME", HOME,
                python_executable(), "-I", "/grader/child.py", HOME, str(control_fd), "sandboxed",
                str(sandbox_uid() if self.own_user else os.getuid()), *python_prefixes()]

    def facts(self):
        return {"sandbox": self.name, "user": "own", "mounts": "own", "network": "none"}


def compiled(sources):
    """The compiled forms of the modules the zygote loads beside its script, where Python keeps
    them (up to date or not: Python checks them against their source): bound beside the
    sources, the zygote reads them rather than compiling every module again, each grading."""
    found = []
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        if cached.is_file():
            found.append(cached)
    return found


def sandbox_uid():
    """As root, the user the sandbox runs as, the same for this judge process's life (what its
    children leave is found by it): drawn at random, and one that runs no process anywhere on
    the machine. Never made of the judge's pid: judges in containers of one host (each its own
    PID namespace) have the same pids, and the kernel counts a user's processes, pipes and
    signals across the whole host, so one student's crowd of processes left another's code
    unable to start one."""
    return _drawn_uid(os.getpid())


@functools.cache
def _drawn_uid(pid):
    for _ in range(8):
        uid = SANDBOX_UID_BASE + secrets.randbelow(SANDBOX_UIDS)
        if _runs_nothing(uid):
            return uid
    raise SetupError("no user of its own for the sandbox: every user drawn runs processes here, or none "
                     "could be taken or start a process")


def _runs_nothing(uid):
    """Whether no process of `uid` runs on this machine, in any container: one of that user's,
    allowed two processes of its user, can start a second. (The limit is set between fork and
    exec by a C function on arguments made beforehand: nothing there takes a lock.)"""
    two_processes = functools.partial(resource.setrlimit, resource.RLIMIT_NPROC, (2, 2))
    try:
        probe = subprocess.run(["/bin/sh", "-c", "/bin/true; /bin/true"], user=uid, group=uid, extra_groups=[],
                               preexec_fn=two_processes, cwd="/", env={}, capture_output=True)
    except (OSError, subprocess.SubprocessError):     # no such user may be had here (a user namespace's root)
        return False
    return probe.returncode == 0


def python_executable():
    """This Python as a path the sandbox can run: its folder resolved (`../../.venv/bin/python`
    passes through folders the sandbox does not have), the file kept (a venv's python is a link)."""
    return str(Path(sys.executable).parent.resolve() / Path(sys.executable).name)


def python_prefixes():
    """Folders the Python running the grader lives in (a venv, and the Python it was made from)."""
    return sorted({str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


@functools.cache
def course_traces():
    """What Python's folders hold of the course itself, hidden from children: the metadata of a
    package installed from the course folder (METADATA holds the whole README, direct_url.json
    names the folder) and every file it put beside the packages (an editable install's .pth and
    finder, which names the course's folders, and the finder's compiled copy)."""
    traces = []
    for site in sorted({Path(p) for p in sys.path if Path(p).name in ("site-packages", "dist-packages")}):
        for info in sorted(site.glob("*.dist-info")):
            if _from_course(info):
                traces += _installed(site, info)
    return [str(path) for path in traces]


def _from_course(info):
    try:
        url = json.loads((info / "direct_url.json").read_text())["url"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return url == ROOT.as_uri() or url.startswith(ROOT.as_uri() + "/")


def _installed(site, info):
    """The dist-info folder and what its RECORD put in `site`: each top-level file or folder (a
    compiled file alone, not all of __pycache__), and the compiled copies of top-level modules."""
    try:
        rows = list(csv.reader((info / "RECORD").read_text().splitlines()))
    except OSError:
        rows = []
    found = {info}
    for parts in (Path(row[0]).parts for row in rows if row and not row[0].startswith("..")):
        found.add(site.joinpath(*parts[:2] if parts[0] == "__pycache__" else parts[:1]))
    found |= {c for p in found if p.suffix == ".py" for c in site.glob(f"__pycache__/{p.stem}.*.pyc")}
    return sorted(p for p in found if p.exists())


@functools.cache
def bubblewrap_works():
    """Whether bwrap is installed and can make its namespaces here (it cannot in some containers)."""
    if not shutil.which("bwrap"):
        return False
    # the zygote makes a user namespace of its own inside: that must be allowed too
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc",
                            "--dev", "/dev", "unshare", "--user", "--map-root-user", "true"], capture_output=True)
    return probe.returncode == 0


@functools.cache
def namespace_works(flags):
    """Whether the kernel lets us make the namespaces `flags` (CLONE_NEW*), tried in a process of
    its own: root in a container without CAP_SYS_ADMIN, or under a seccomp profile like Docker's
    default, may make none."""
    probe = subprocess.run([sys.executable, "-I", "-c", "import ctypes, sys; "
                            f"sys.exit(ctypes.CDLL(None).unshare({flags}) != 0)"], capture_output=True)
    return probe.returncode == 0


def launcher_for(mode):
    """The launcher for --sandbox MODE: "auto" (bubblewrap when it works, else a plain process),
    "required" (bubblewrap or refuse) or "process"."""
    if mode != "process" and bubblewrap_works():
        return BubblewrapLauncher()
    if mode == "required":
        raise SetupError("--sandbox required: bubblewrap is not installed or cannot run here "
                       "(Debian/Ubuntu: apt install bubblewrap)")
    return ProcessLauncher()
