"""The probe lab's student module (tests/judge/test_isolation.py): what a hostile submission can try.
It runs only inside the sandbox, sent as a submission; the tests judge what it returns."""
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time


def look(needle_start="", needle_end=""):
    """What a student sees: files in its writable places, other processes, a needle in memory."""
    seen = {}
    for folder in (os.path.expanduser("~"), "/tmp", "/dev/shm"):
        try:
            seen[folder] = sorted(os.listdir(folder))
        except OSError as error:
            seen[folder] = [type(error).__name__]
    seen["processes"] = sorted(open(f"/proc/{p}/cmdline", "rb").read().decode(errors="replace")
                               for p in os.listdir("/proc") if p.isdigit() and _readable(p))
    seen["found"] = _in_memory(needle_start, needle_end) if needle_start else False
    return seen

def _readable(pid):
    try:
        open(f"/proc/{pid}/cmdline", "rb").read()
        return True
    except OSError:
        return False

def _in_memory(start, end):
    """Whether start+end lies anywhere in our readable memory (never built here as one string)."""
    start, end = start.encode(), end.encode()
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("r") or len(fields) > 5 and fields[5].startswith("/"):
                continue
            low, high = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(low)
                data = mem.read(high - low)
            except (OSError, ValueError, OverflowError):
                continue
            at = data.find(start)
            while at >= 0:
                if data[at + len(start):at + len(start) + len(end)] == end:
                    return True
                at = data.find(start, at + 1)
    return False

def peek(path):
    """A file's text, a folder's listing, or the error that stopped us."""
    try:
        if os.path.isdir(path):
            return sorted(os.listdir(path))
        with open(path, "rb") as file:
            return file.read().decode(errors="replace")
    except OSError as error:
        return type(error).__name__

def beside_packages(needle):
    """Files beside Python's installed packages (at the top, compiled, package metadata) that hold `needle`."""
    import sysconfig
    site = sysconfig.get_paths()["purelib"]
    found = []
    for top in os.listdir(site):
        inside = [os.path.join(top, name) for name in peek(os.path.join(site, top))] \
            if top == "__pycache__" or top.endswith("-info") else [top]
        found += [path for path in inside if needle in peek(os.path.join(site, path))]
    return found

def versions():
    """torch imported, and its installed metadata read."""
    import importlib.metadata

    import torch
    return torch.__version__, importlib.metadata.version("torch")

def plant():
    """Leave what a reset cannot delete, and a daemon to plant it again."""
    home = os.path.expanduser("~")
    for folder in (home, "/tmp", "/dev/shm"):
        try:
            os.makedirs(f"{folder}/planted/locked", exist_ok=True)
            open(f"{folder}/planted/locked/note", "w").write("from the last student")
            os.chmod(f"{folder}/planted/locked", 0o500)
            os.chmod(f"{folder}/planted", 0o500)
            open(f"{folder}/planted-file", "w").write("x" * 1000)
        except OSError:
            pass
    subprocess.Popen(["/bin/sh", "-c", "sleep 300; true  # isolation-daemon"],    # runs as any user
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)          # (no new session: refused)
    return True

def act(what):
    """Try something against the host or the grader; say what happened."""
    try:
        if what == "sysctl":
            path = "/proc/sys/kernel/core_pattern"
            value = open(path).read()
            open(path, "w").write(value)            # the same value: harmless if it works
        elif what == "stop zygote":
            os.kill(os.getppid(), signal.SIGSTOP)
            os.kill(1, signal.SIGSTOP)
        elif what == "interrupt zygote":
            for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
                os.kill(os.getppid(), number)
        elif what == "kill zygote":
            os.kill(os.getppid(), signal.SIGKILL)
        elif what == "zygote output":
            for fd in (1, 2):
                open(f"/proc/{os.getppid()}/fd/{fd}", "w").write("GRADER SAYS: full marks\n")
        elif what == "oom score":               # whom the kernel kills first: could we go after the zygote?
            score = open("/proc/self/oom_score_adj").read().strip()
            try:
                open("/proc/self/oom_score_adj", "w").write("999")
                return [score, "lowered"]
            except OSError as error:
                return [score, type(error).__name__]
        elif what == "user":
            return os.getuid()
        elif what == "crowd":                   # as many processes as our user may have, left running
            started = 0
            with contextlib.suppress(OSError):
                while started < 1000:
                    subprocess.Popen(["/bin/sh", "-c", "sleep 60; true  # isolation-daemon"])
                    started += 1
            return started
        elif what == "start":
            subprocess.run(["/bin/true"], check=True)
        elif what == "capabilities":
            return [line for line in open("/proc/self/status") if line.startswith("Cap")]
        elif what == "new session":             # a scheduler's autogroup of its own, out of the clock's sight
            pid = os.fork()
            if pid == 0:
                try:
                    os.setsid()
                    os._exit(0)
                except OSError:
                    os._exit(1)
            return "refused: setsid" if os.waitpid(pid, 0)[1] else "done"
        elif what == "user namespace":          # in one of its own, a process has every capability
            import ctypes
            if ctypes.CDLL(None, use_errno=True).unshare(0x10000000 | 0x40000000) != 0:    # user | net
                return f"refused: {os.strerror(ctypes.get_errno())}"
            return [line for line in open("/proc/self/status") if line.startswith("CapEff")]
        else:
            return "unknown"
        return "done"
    except OSError as error:
        return f"refused: {type(error).__name__}"

def slow(seconds):
    time.sleep(seconds)
    return seconds

def shout(size, how):
    if how == "raise":
        raise ValueError("x" * size)
    return "y" * size

libc = ctypes.CDLL(None, use_errno=True)
SYS_ADD_KEY, SYS_REQUEST_KEY, SYS_KEYCTL, KEYCTL_READ, KEY_SPEC_USER_KEYRING = 248, 249, 250, 11, -4

def keyring_put(note):
    """A note in the kernel's user keyring: no file, no process, no IPC object."""
    data = note.encode()
    return libc.syscall(SYS_ADD_KEY, b"user", b"isolation-note", data, len(data), KEY_SPEC_USER_KEYRING) > 0

def keyring_get():
    key = libc.syscall(SYS_REQUEST_KEY, b"user", b"isolation-note", None, 0)
    if key <= 0:
        return None
    buffer = ctypes.create_string_buffer(200)
    return buffer.raw[:libc.syscall(SYS_KEYCTL, KEYCTL_READ, key, buffer, 200)].decode()

def crafted_answer(items):
    """A frame, valid on its face, whose JSON tree is a list of `items` numbers for the judge to read."""
    _answer_raw(b"[" + b"0," * (items - 1) + b"0]")

def raw_answer(tree, blob_hex=""):
    """Answer this call with a hand-made frame: `tree` is its JSON tree ({id}: this call's id),
    `blob_hex` the bytes its records point into."""
    _answer_raw(tree.replace("{id}", str(_serving()["request"]["id"])).encode(), bytes.fromhex(blob_hex))

def _serving():
    frame = sys._getframe()
    while "write_fd" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals

def _answer_raw(tree, blob=b""):
    import struct
    body = struct.pack("<Q", len(tree)) + tree + blob
    os.write(_serving()["write_fd"], struct.pack("<Q", len(body)) + body)
    time.sleep(60)

def hopper(address, seconds):
    """A daemon that is never the same process for more than a moment, beating to `address` (an
    abstract unix socket the test listens on: no file both sides could see)."""
    if os.fork():
        return True
    os.closerange(3, 1024)          # not our channels to the judge
    try:
        os.setsid()
    except PermissionError:         # refused to children: it stays in the child's session
        pass
    beat = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    beat.setblocking(False)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            beat.sendto(b"beat", "\0" + address)
        except OSError:             # a full queue: the next beat
            pass
        time.sleep(0.01)
        if os.fork():
            os._exit(0)             # the parent goes, the child carries on under a new pid
    os._exit(0)

def unseen(cpu_seconds):
    """Work done by processes the kernel reaps (SIGCHLD ignored: no parent waits for them, and
    their CPU time is added to no process's), one after another, until they used `cpu_seconds`
    of CPU, as they say. Returns that."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    read, write = os.pipe()
    used = 0.0
    while used < cpu_seconds:
        if os.fork() == 0:
            while time.process_time() < 0.1:
                pass
            os.write(write, b"%.3f," % time.process_time())
            os._exit(0)
        used += float(os.read(read, 64).decode().strip(","))
    return used

def orphan(seconds):
    """A busy process left behind in another process group of our session, then this child's
    end (os._exit): the process is no call's any more."""
    if os.fork() == 0:
        os.closerange(3, 1024)      # not our channels to the judge: the call ends with us
        os.setpgid(0, 0)
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        os.execv("/bin/sh", ["/bin/sh", "-c", f"end=$(($(date +%s) + {int(seconds)})); "
                 "while [ $(date +%s) -lt $end ]; do :; done  # isolation-daemon"])
    time.sleep(0.2)
    os._exit(3)

def behind(seconds):
    """Our main thread, runnable all along at the lowest priority on the CPU an orphan spins on,
    for `seconds` of wall time. Returns the CPU seconds it got."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    os.nice(19)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return time.process_time()

def forks(count):
    """Start `count` processes that end at once: the pids they took. A number the next student
    could read off the pids it gets (the hidden inputs, say) if the count of pids went on."""
    taken = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        taken.append(pid)
    return [os.getpid(), *taken, int(open("/proc/loadavg").read().split()[-1])]

def hog(seconds):
    """Busy on the first CPU we may use, for `seconds` of wall time."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return time.process_time()
