"""`grade.py LAB ...` answered by this checkout's warm grader (grade.py serve LAB) with the least a
client can do: no pydantic, rich, torch or lab read here. The arguments go as typed, with the
folder they were typed in and what rich needs to know of this screen; the server reads them as
grade.py does (grader.learner.arguments.plain_grading), grades, finishes (--json, lesson progress) and
writes the report for this screen; this prints it. Progress comes as it goes, as grade.py shows it.

Anything else (no server, another command, --watch, a server that refuses or goes) is answered
None: grade.py then runs as ever, and a refusing or stale server is dealt with there
(grader/learner/serve.py: WarmClient). The server checks who asks (SO_PEERCRED), as for any client.
"""
import json
import os
import shutil
import socket
import struct
import sys
import time

from grader.base.root import ROOT, lab_folder
from grader.learner.runtime import any_listening, socket_for

ANSWER_SECONDS = 10.0       # to be taken and answered between frames (serve.ANSWER_SECONDS)
SAID_BYTES = 64 * 2**20     # the most a frame may weigh (serve.SAID_BYTES)
RICH = ("TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "TTY_COMPATIBLE",
        "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES")     # what rich reads of the environment


def answer(argv: list[str]) -> int | None:
    """grade.py's exit status once a warm grader graded `argv`, or None where none did."""
    if not argv or argv[0].startswith("-"):
        return None
    folder = lab_folder(argv[0])
    if not (folder / "lab.yaml").is_file() or not any_listening():     # a grading's, as cli's looks
        return None
    try:
        conn = socket.socket(socket.AF_UNIX)
        conn.settimeout(ANSWER_SECONDS)
        conn.connect(str(socket_for(folder)))
    except OSError:
        return None
    with conn:
        try:
            return _graded(conn, argv, folder)
        except (OSError, EOFError, ValueError):
            return None


def _graded(conn, argv, folder):
    terminal = sys.stdout.isatty()
    width = min(max(shutil.get_terminal_size().columns, 10), 1000)
    screen = {"terminal": terminal, "width": width if terminal else None,
              "environ": {name: os.environ[name] for name in RICH if name in os.environ}}
    _send(conn, {"op": "argv", "checkout": str(ROOT), "lab": str(folder.resolve()), "argv": list(argv),
                 "cwd": os.getcwd(), "screen": screen})
    conn.settimeout(None)           # a check may take minutes between two progress frames
    shown = _Progress(terminal)
    while not (said := _receive(conn)).get("done"):
        if said.get("progress"):
            shown.update(*said["progress"])
    shown.clear()
    if said.get("text") is None or type(said.get("status")) is not int:
        return None                 # refused: grade.py runs as ever
    sys.stdout.write(said["text"])
    sys.stdout.flush()
    return said["status"]


class _Progress:
    """grade.py's progress (grader.learner.report.progress): on a terminal one line that goes when
    the report comes; elsewhere a line on stderr as each function's checks start."""

    def __init__(self, terminal):
        self.terminal, self.started, self.seen, self.drawn = terminal, time.monotonic(), set(), False

    def update(self, done, total, function):
        took = time.monotonic() - self.started
        if not self.terminal and not self.seen:     # once the server grades (it may refuse first)
            print("grading: starting the sandbox, then the checks", file=sys.stderr, flush=True)
        if self.terminal:
            sys.stdout.write(f"\r\x1b[2K checking {function} {done}/{total} {took:.0f}s")
            sys.stdout.flush()
            self.drawn = True
        elif function not in self.seen:
            self.seen.add(function)
            print(f"checking {function} ({done}/{total} checks done, {took:.1f} s)", file=sys.stderr, flush=True)

    def clear(self):
        if self.drawn:
            sys.stdout.write("\r\x1b[2K")


def _send(conn, value):
    data = json.dumps(value).encode()
    conn.sendall(struct.pack(">I", len(data)) + data)


def _receive(conn):
    size = struct.unpack(">I", _exactly(conn, 4))[0]
    if size > SAID_BYTES:
        raise EOFError(f"a frame of {size} bytes")
    said = json.loads(_exactly(conn, size))
    if type(said) is not dict:
        raise ValueError("a frame that is not a record")
    return said


def _exactly(conn, size):
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("the server closed")
        data += chunk
    return data

