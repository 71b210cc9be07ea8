"""Where the course lives: the folder of grade.py, assignments/ and grader/. The ground floor:
it imports nothing of the grader's, and runs on any Python 3 (grader/learner/preflight.py needs it there)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "grader" / "labs"


def lab_folder(name_or_path: "str | Path", typed_in: "Path | None" = None) -> Path:
    """Where the lab called `name_or_path` lies: the folder at that path (from `typed_in`, else this
    process's folder) when it holds a lab.yaml, else grader/labs/NAME (whether or not one is there:
    grader.readers.manifest.find_lab says so)."""
    folder = (typed_in or Path()) / name_or_path
    return folder if (folder / "lab.yaml").is_file() else LABS / str(name_or_path)
