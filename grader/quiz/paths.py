"""The quiz command's file arguments checked before use: a usage error in one sentence (exit
status 2) for a folder, a missing file, or a name that differs from an existing one only in case."""
from pathlib import Path

from grader.base.errors import UsageError


def case_hint(path):
    """' (Answers.yaml differs only in case: did you mean that?)', or '' when no name is that close."""
    others = _same_but_case(Path(path))
    if not others:
        return ""
    return f" ({' and '.join(others)} differ{'s' if len(others) == 1 else ''} only in case: did you mean that?)"


def _same_but_case(path):
    """The entries of path's folder whose names differ from path's only in case."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        return sorted(entry.name for entry in folder.iterdir()
                      if entry.name.casefold() == path.name.casefold() and entry.name != path.name)
    except OSError:
        return []


def input_file(option, name):
    """`name` as a Path to read, or UsageError saying why it cannot be."""
    path = Path(name)
    if path.is_dir():
        raise UsageError(f"{option} {name}: that is a folder; expected a file")
    if not path.is_file():
        raise UsageError(f"{option} {name}: no such file{case_hint(path)}")
    return path


def output_file(option, name):
    """`name` as a Path to write (its folder made when missing), or UsageError saying why not."""
    path = Path(name)
    if path.is_dir():
        raise UsageError(f"{option} {name}: that is a folder; expected the path of a file to write")
    others = _same_but_case(path)
    if others and not path.exists():
        raise UsageError(f"{option} {name}: an existing file's name differs from it only in case "
                         f"({' and '.join(others)}); give its exact name, or another one")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"{option} {name}: {parent} is a file, not a folder")
    return path
