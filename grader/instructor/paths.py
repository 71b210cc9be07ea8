"""The path arguments of the instructor's commands, checked before any work: each mistake is one
sentence (a UsageError, exit status 2) instead of an IsADirectoryError or FileExistsError."""
import os
from pathlib import Path

from grader.base.errors import UsageError
from grader.base.text import one_line


def _missing(option, path):
    """'OPTION PATH does not exist', naming the file that differs only in case when there is one."""
    path = Path(path)
    try:
        twins = [p.name for p in path.parent.iterdir() if p.name.lower() == path.name.lower()]
    except OSError:
        twins = []
    twin = f"; {one_line(twins[0])!r} does (names are case-sensitive)" if twins else ""
    return UsageError(f"{option} {one_line(str(path))} does not exist{twin}")


def existing_file(option: str, path: str | os.PathLike) -> Path:
    """A file to read."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{option} {one_line(str(path))} is a folder; expected a file")
    if not path.is_file():
        raise _missing(option, path)
    return path


def existing_folder(option: str, path: str | os.PathLike, what: str = "a folder") -> Path:
    """A folder to read."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {one_line(str(path))} is a file; expected {what}")
    if not path.is_dir():
        raise _missing(option, path)
    return path


def new_file(option: str, path: str | os.PathLike, suffix: str | None = None) -> Path:
    """A file to write: not a folder, in a folder that exists, with `suffix` when given."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{option} {one_line(str(path))} is a folder; expected a file to write")
    if suffix and path.suffix.lower() != suffix:
        raise UsageError(f"{option} {one_line(str(path))}: expected a {suffix} path")
    if not path.parent.is_dir():
        raise UsageError(f"{option} {one_line(str(path))}: the folder {one_line(str(path.parent))} does not exist")
    return path


def output_folder(option: str, path: str | os.PathLike, what: str) -> Path:
    """A folder to write into: new, or `what` (it may exist as a folder, never as a file)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {one_line(str(path))} is a file; expected {what}")
    return path
