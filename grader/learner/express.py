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
import socket
import struct
import sys
import time

from grader.base.root import ROOT, lab_folder
from grader.learner.runtime import any_listening, exactly, socket_for

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
    shown = _Progress(_terminal())
    with conn:
        try:
            return _graded(conn, argv, folder, shown)
        except (OSError, EOFError, ValueError):
            shown.clear()
            if shown.started:       # what it showed is shown again: say why
                print("the warm grader stopped answering: grading without it", file=sys.stderr, flush=True)
            return None
        except KeyboardInterrupt:   # as grade.py says it; the server stops the grading as it finds us gone
            shown.clear()
            print("interrupted", flush=True)
            return 130


def _graded(conn, argv, folder, shown):
    environ = {name: os.environ[name] for name in RICH if name in os.environ}
    screen = {"terminal": sys.stdout.isatty(), "width": _width(), "environ": environ}
    _send(conn, {"op": "argv", "checkout": str(ROOT), "lab": str(folder.resolve()), "argv": list(argv),
                 "cwd": os.getcwd(), "screen": screen})
    said = _receive(conn)           # taken (or refused) within ANSWER_SECONDS: a server stopped is not waited for
    conn.settimeout(None)           # then a check may take minutes between two progress frames
    while not said.get("done"):
        if said.get("progress"):
            shown.update(*said["progress"])
        said = _receive(conn)
    if said.get("text") is None or type(said.get("status")) is not int:
        return None                 # refused: grade.py runs as ever
    shown.clear()
    try:
        sys.stdout.write(said["text"])
        sys.stdout.flush()
    except BrokenPipeError:         # its reader went (| head): the grading stands, as a cold one's does, and
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())     # is not made again (nor is
    return said["status"]                                                   # Python's flush at exit said)


def _width():
    """The width rich finds for grade.py's report: the first of stdin, stdout and stderr that is a
    terminal's (None: none is, or it says 0 columns, as a new pseudo-terminal does: rich takes 80;
    COLUMNS goes with the variables)."""
    for stream in range(3):
        try:
            columns = os.get_terminal_size(stream).columns
        except OSError:
            continue
        return min(max(columns, 10), 1000) if columns else None
    return None


def _terminal():
    """Whether rich takes grade.py's stdout for a terminal (its progress is drawn there, else on stderr)."""
    compatible, force = os.environ.get("TTY_COMPATIBLE", ""), os.environ.get("FORCE_COLOR")
    if compatible in ("0", "1"):
        return compatible == "1"
    return force != "" if force is not None else sys.stdout.isatty()


class _Progress:
    """grade.py's progress (grader.learner.report.progress): on a terminal one line that goes when
    the report comes; elsewhere a line on stderr as each function's checks start."""

    def __init__(self, terminal):
        self.terminal, self.began, self.seen, self.drawn = terminal, time.monotonic(), set(), False
        self.started = False        # whether the server began grading (it may refuse first)

    def update(self, done, total, function):
        took = time.monotonic() - self.began
        if not self.terminal and not self.started:
            print("grading: starting the sandbox, then the checks", file=sys.stderr, flush=True)
        if self.terminal:
            sys.stdout.write(f"\r\x1b[2K checking {function} {done}/{total} {took:.0f}s")
            sys.stdout.flush()
            self.drawn = True
        elif function not in self.seen:
            self.seen.add(function)
            print(f"checking {function} ({done}/{total} checks done, {took:.1f} s)", file=sys.stderr, flush=True)
        self.started = True

    def clear(self):
        if self.drawn:
            sys.stdout.write("\r\x1b[2K")
            sys.stdout.flush()
            self.drawn = False


def _send(conn, value):
    data = json.dumps(value, ensure_ascii=False).encode()    # an argument not in UTF-8 (UnicodeEncodeError):
    conn.sendall(struct.pack(">I", len(data)) + data)        # grade.py runs as ever, as the server could not


def _receive(conn):
    size = struct.unpack(">I", exactly(conn, 4))[0]
    if size > SAID_BYTES:
        raise EOFError(f"a frame of {size} bytes")
    said = json.loads(exactly(conn, size))
    if type(said) is not dict:
        raise ValueError("a frame that is not a record")
    return said
