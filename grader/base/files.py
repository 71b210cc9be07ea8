"""One way the project writes a file: atomically, so that a reader (a watcher, an editor, a run
interrupted half-way) sees the old file or the new one, never part of either."""
import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, data: str | bytes, durable: bool = False) -> None:
    """Write `data` (text as UTF-8, line ends as given) beside `path` and rename it over `path`;
    `durable`: synced to the disk before it takes the name. Makes the folder if need be."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, part = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.chmod(part, 0o644)
        os.replace(part, path)
    except BaseException:
        Path(part).unlink(missing_ok=True)
        raise
