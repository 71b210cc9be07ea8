"""Which ways two children alive at the same time can still talk: `python benchmarks/sibling_channels.py`.

A call run apart with hidden inputs (as lab 2's experiments run at the course's seed) tells the
input on every channel it can; the visible checks' child, called meanwhile, listens on each. A
line per sandbox and channel says whether the input got through. tests/judge/test_rooms.py holds the
channels that are closed (sockets); those that get through are what stays open, listed here so
that the claim can be checked. Only a child that never runs beside a visible one closes them all.
"""
import tempfile
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from grader.judge.launchers import bubblewrap_works, launcher_for
from grader.judge.sandbox import Sandbox
from grader.judge.zygote import Zygote
from grader.readers.manifest import find_lab

SECRET = 40961
CHILD = r'''import ctypes, fcntl, glob, os, signal, socket, struct, threading, time

SHARED = os.__file__            # a file both children see: Python's own, read-only
LOCK = "hhqqi"                  # struct flock: type, whence, start, len, pid


def tell(secret, seconds):
    told = []
    for address, kind in (("\0sibling", socket.AF_UNIX), (("127.0.0.1", 47614), socket.AF_INET)):
        try:
            listener = socket.socket(kind)
            listener.bind(address)
            listener.listen()
            threading.Thread(target=lambda s=listener: s.accept()[0].sendall(str(secret).encode()),
                             daemon=True).start()
            told.append(kind.name)
        except OSError:
            pass
    ctypes.CDLL(None).prctl(15, f"S{secret}".encode(), 0, 0, 0)            # PR_SET_NAME: /proc/PID/comm
    told.append("comm")
    held = open(SHARED, "rb")
    fcntl.fcntl(held, fcntl.F_SETLK, struct.pack(LOCK, fcntl.F_RDLCK, 0, secret, 1, 0))
    told.append("lock")
    with open("/tmp/sibling", "w") as note:
        note.write(str(secret))
    end = time.monotonic() + seconds
    while time.monotonic() < end:           # a signal to the listener, the secret as its value
        for path in glob.glob("/proc/[0-9]*/comm"):
            try:
                if open(path).read().strip() == "listener":
                    ctypes.CDLL(None).sigqueue(int(path.split("/")[2]), signal.SIGRTMIN, ctypes.c_void_p(secret))
            except OSError:
                pass
        time.sleep(0.2)
    return told


def _connect(address, kind):
    try:
        with socket.socket(kind) as connection:
            connection.settimeout(0.5)
            connection.connect(address)
            return connection.recv(100).decode()
    except OSError:
        return ""


def _comm():
    for path in glob.glob("/proc/[0-9]*/task/*/comm"):
        try:
            name = open(path).read().strip()
        except OSError:
            continue
        if name.startswith("S") and name[1:].isdigit():
            return name[1:]
    return ""


def _lock():
    with open(SHARED, "rb") as probe:
        kind, _, start, _, _ = struct.unpack(LOCK, fcntl.fcntl(probe, fcntl.F_GETLK,
                                                               struct.pack(LOCK, fcntl.F_WRLCK, 0, 0, 0, 0)))
    return str(start) if kind != fcntl.F_UNLCK else ""


def _note():
    try:
        return open("/tmp/sibling").read()
    except OSError:
        return ""


def listen(seconds):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
    ctypes.CDLL(None).prctl(15, b"listener", 0, 0, 0)
    heard, end = {}, time.monotonic() + seconds
    ways = {"abstract unix socket": lambda: _connect("\0sibling", socket.AF_UNIX),
            "loopback": lambda: _connect(("127.0.0.1", 47614), socket.AF_INET),
            "/proc/PID/comm": _comm, "fcntl lock on a shared file": _lock, "/tmp": _note}
    while time.monotonic() < end and len(heard) < len(ways) + 1:
        for way, hear in ways.items():
            heard[way] = heard.get(way) or hear()
        if signal.sigtimedwait([signal.SIGRTMIN], 0):
            heard["a signal from it (sigqueue's value can hold the input)"] = "a signal"
        time.sleep(0.1)
    return heard
'''


def lab_in(folder):
    stub = "def tell(*args):\n    raise NotImplementedError\n\n\ndef listen(*args):\n    raise NotImplementedError\n"
    manifest = {"title": "Siblings", "handout": "handout", "student_files": {"siblings.py": ["tell", "listen"]}}
    for name, text in {"lab.yaml": yaml.safe_dump(manifest), "handout/siblings.py": stub,
                       "stubs/siblings.py": stub, "public/.keep": ""}.items():
        (Path(folder) / name).parent.mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_text(text)
    return find_lab(folder)


def heard_in(lab, mode):
    zygote = Zygote(launcher_for(mode))
    box = Sandbox(lab, {"siblings.py": CHILD.encode()}, zygote)
    try:
        telling = box.submit("tell", [SECRET, 4.0], timeout=20, hidden=True)
        box.serve("a visible check", "visible")
        heard = box.call("listen", [3.5], timeout=20)
        telling.result(30)
        return heard
    finally:
        box.close()
        zygote.close()


def main():
    console = Console()
    table = Table(title=f"a hidden input ({SECRET}) told by a child run apart, heard by the visible checks' child")
    table.add_column("sandbox")
    table.add_column("channel")
    table.add_column("heard")
    with tempfile.TemporaryDirectory() as folder:
        lab = lab_in(folder)
        for mode in (["required"] if bubblewrap_works() else []) + ["process"]:
            for way, what in heard_in(lab, mode).items():
                table.add_row(launcher_for(mode).name, way, f"[red]{what}[/]" if what else "[green]nothing[/]")
    console.print(table)


if __name__ == "__main__":
    main()
