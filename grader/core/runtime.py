"""This user's runtime folder: where warm graders (grader/core/warm.py) listen. Imports nothing heavy:
a front door asks whether any may be listening before it imports the rest."""
import contextlib
import os
import stat
import tempfile
from pathlib import Path

from grader.errors import SetupError


def runtime_folder() -> Path:
    """The folder of this user's servers, made 0700; SetupError when it is not safely ours (another
    owner, or open to others: then no server is trusted, and grading is cold)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(base) / "grade" if base and Path(base).is_dir() else \
        Path(tempfile.gettempdir()) / f"grade-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise SetupError(f"{folder} is not a folder of this user's alone (0700): no warm grader is used")
    return folder


def any_listening() -> bool:
    """Whether some warm grader of this user may be listening (a socket in the runtime folder)."""
    try:
        return any(name.endswith(".sock") for name in os.listdir(runtime_folder()))
    except (SetupError, OSError):
        return False
