"""This user's runtime folder: where warm graders (grader/learner/serve.py) listen. Imports nothing heavy:
a front door asks whether any may be listening before it imports the rest."""
import contextlib
import hashlib
import os
import socket
import stat
import tempfile
from pathlib import Path

from grader.base.errors import SetupError
from grader.base.root import ROOT


def runtime_folder() -> Path:
    """The folder of this user's servers, made 0700 in XDG_RUNTIME_DIR, or else in the temporary
    folder, whichever is safely ours; SetupError when it is not safely ours (another owner, open
    to others, or in a folder another user could swap it out of: then no server is trusted, and
    grading is cold)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and Path(base).is_dir() and _only_ours_above(Path(os.path.realpath(base))):
        folder = Path(os.path.realpath(base)) / "grade"
    else:
        folder = Path(os.path.realpath(tempfile.gettempdir())) / f"grade-{os.getuid()}"
        if not _only_ours_above(folder.parent):
            raise SetupError(f"{folder.parent} may be changed by another user: no warm grader is used")
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise SetupError(f"{folder} is not a folder of this user's alone (0700): no warm grader is used")
    return folder


def _only_ours_above(folder: Path) -> bool:
    """Whether `folder` (a real path) and every folder above it are root's or ours, and none lets
    another user rename what is in it (writable by others, and not sticky like /tmp): else another
    user (say, the owner of an XDG_RUNTIME_DIR kept by `su`) could swap our folder for a link to
    theirs between our check and our use of it."""
    for each in (folder, *folder.parents):
        try:
            info = os.stat(each)
        except OSError:
            return False
        if info.st_uid not in (0, os.getuid()) or (info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX):
            return False
    return True


def any_listening() -> bool:
    """Whether some warm grader of this user may be listening (a socket in the runtime folder)."""
    try:
        return any(name.endswith(".sock") for name in os.listdir(runtime_folder()))
    except (SetupError, OSError):
        return False


def socket_for(lab_folder: Path) -> Path:
    """The socket of this checkout's warm grader for the lab in `lab_folder`."""
    key = hashlib.sha256(f"{ROOT}\0{lab_folder.resolve()}".encode()).hexdigest()[:20]
    return runtime_folder() / f"{key}.sock"


def exactly(conn: socket.socket, size: int) -> bytes:
    """`size` bytes from a warm grader's socket (its frames, either end); EOFError once it closed."""
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("the other end closed")
        data += chunk
    return data
