"""Reading submissions, as data only, for every way of grading: one folder (`--submission`, the
learner's copy), a class of folders and .zips (batch), Gradescope's upload (gradescope.autograde).

Only the lab's student files are read, each a regular file inside the submission (a symbolic
link is refused: it could point at the reference), with caps on sizes and no path leaving a zip.
A student file the submission lacks is graded as the lab's pristine stub (`Lab.stubs`), never as
whatever the working copy in the handout folder holds.
"""
import ast
import hashlib
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grader.errors import UsageError
from grader.identity import identity, shown
from grader.results import one_line

MAX_FILE_BYTES = 2**20              # the largest student file accepted
ZIP_MAX_BYTES = 64 * 2**20          # a submission .zip, as stored
ZIP_MAX_ENTRIES = 10_000
ZIP_MAX_UNZIPPED = 512 * 2**20      # what its entries claim to unpack to, all together
GRADABLE = ("graded", "incomplete", "broken_code")
FOLDER_MAX_BYTES = 200              # a student's folder name, kept under every disk's 255
NOT_IN_FOLDERS = re.compile(r'[<>:"/\\|?*]|[. ]$')     # what Windows refuses in a name, or drops at its end
WINDOWS_DEVICES = re.compile(r"(CON|PRN|AUX|NUL|(COM|LPT)[0-9\u00b9\u00b2\u00b3])(\..*)?", re.IGNORECASE)


class Rejected(Exception):
    """A submission that cannot be read safely: its row says why."""


@dataclass
class Submission:
    student: str
    path: Path
    files: dict                     # the lab's student files found: {name: bytes}
    status: str                     # graded / incomplete / broken_code, or empty / rejected
    detail: str = ""
    hash: str = ""
    collision: tuple = ()           # the entries that are this one student, when more than one


# -- reading submissions ----------------------------------------------------------------------------
def class_entries(lab, folder, out=None):
    """(candidates, ignored) in a class folder: folders, .zip files, notebooks and files of the lab's
    own types (.py: a student who sent one file) are submissions; anything else (a README.txt, a
    spreadsheet) is listed as ignored, by a name safe to print."""
    types = {".zip", ".ipynb", *(PurePosixPath(name).suffix.lower() for name in lab.manifest.student_files)}
    candidates, ignored = [], []
    for path in sorted(Path(folder).iterdir()):
        if _ignored(path.name) or (out is not None and path.resolve() == Path(out).resolve()):
            continue
        if path.is_dir() or path.suffix.lower() in types:
            candidates.append(path)
        else:
            ignored.append(one_line(path.name))
    return candidates, ignored


def list_submissions(lab, folder, out=None):
    """Every student in `folder` (a subfolder or a .zip each, named by student id), read. A
    student's name is the folder's or the zip's as grader.identity.shown writes it. Entries that are
    one student (one identity, or one folder on a disk that ignores case) are a collision: one
    rejected row names them all, and neither is graded over the other."""
    by_student = {}
    for path in class_entries(lab, folder, out)[0]:
        name = path.stem if path.suffix.lower() == ".zip" and path.is_file() else path.name
        if path.suffix.lower() == ".ipynb" and path.is_file():
            name = notebook_student(path.name)
        student = shown(name) if identity(name) else ascii(name)
        by_student.setdefault(disk_name(student), []).append((student, path))
    submissions = []
    for same in by_student.values():
        (student, path), names = same[0], tuple(one_line(p.name) for _, p in same)
        if len(same) > 1:
            detail = (f"{len(same)} submissions for one student: {', '.join(map(repr, names))} (names are compared "
                      "in any case and Unicode form): keep one")
            submissions.append(Submission(student, path, {}, "rejected", detail, collision=names))
        else:
            submissions.append(Submission(student, path, *read_submission(lab, path)))
    return submissions


def disk_name(student):
    """What a disk that ignores case (and, on Windows, trailing dots and spaces) makes of a name:
    two students' folders under OUT/students/ never share it."""
    return identity(student.upper()).rstrip(". ")


def folder_name(student):
    """The folder of OUT/students/ that holds `student`'s files: the name itself where every disk
    makes it one folder of its own, else "__", the name's letters and a hash of its disk_name. No
    submission's name is so made ("__" and "." start names class_entries ignores), and names that
    share a disk_name (one student) share it."""
    if not _ignored(student) and len(student.encode()) <= FOLDER_MAX_BYTES and not NOT_IN_FOLDERS.search(student) \
            and not WINDOWS_DEVICES.fullmatch(student):
        return student
    letters = re.sub(r"[^\w-]+", "_", student)[:40]
    return f"__{letters}-{hashlib.sha256(disk_name(student).encode()).hexdigest()[:16]}"


def read_submission(lab, path):
    """The lab's student files in a folder or .zip, and what is wrong: (files, status, detail)."""
    wanted = list(lab.manifest.student_files)
    path = Path(path)
    try:
        if path.is_dir():
            files = _read_folder(path, wanted)
        elif path.is_file() and path.suffix.lower() == ".zip":
            files = _read_zip(path, wanted)
        elif path.is_file() and path.suffix.lower() == ".ipynb":
            files = {}
        else:
            raise Rejected(f"{one_line(path.name)} is neither a folder nor a .zip")
        if not files and (notebook := notebook_in(path)):
            return read_notebook_files(lab, *notebook)
    except Rejected as why:
        return {}, "rejected", str(why)
    except OSError as error:            # e.g. a path the record holds as shown, too long for the disk
        return {}, "rejected", f"{one_line(path.name)} cannot be read ({error.strerror})"
    misnamed = _case_mismatches(path, wanted, files)
    if not files:
        return {}, "empty", "; ".join(misnamed or [f"none of {', '.join(wanted)} found (expected at the top "
                                                   "of the submission, or in one folder inside it)"])
    problems = [p for name, data in files.items() if (p := _not_python(name, data))]
    missing = [name for name in wanted if name not in files]
    detail = "; ".join(problems + misnamed + ([f"not submitted, graded as the stubs: {', '.join(missing)}"]
                                              if missing else []))
    return files, "broken_code" if problems else "incomplete" if missing else "graded", detail


# -- notebooks: one more container of the student files (grader/notebook_reader.py) ----------------------
CANVAS = re.compile(r"(?P<student>.+?)(?:_late)?_\d+_\d+_.+", re.IGNORECASE)   # name[_late]_USER_SUBMISSION_file


def notebook_student(filename):
    """The student a notebook's file name stands for: Canvas's download naming
    (name_12345_67890_lab2.ipynb, its _late mark too) gives the name; else the name less .ipynb."""
    stem = filename[:-len(".ipynb")] if filename.lower().endswith(".ipynb") else filename
    match = CANVAS.fullmatch(stem)
    return match.group("student") if match else stem


def notebook_in(path):
    """(its name, its bytes) of the notebook that is the submission at `path`: the .ipynb itself,
    or the one notebook of a folder or a .zip (at its top or in one folder inside it), holding no
    student file; None when there is none. Rejected when there are two (which would be graded?)."""
    from grader.notebook_reader import MAX_NOTEBOOK_BYTES, too_big

    def notebook(name):
        parts = PurePosixPath(name).parts
        return name.lower().endswith(".ipynb") and not any(_ignored(p) or p == ".ipynb_checkpoints" for p in parts)

    def one(found, name):
        if len(found) > 1:
            names = ", ".join(sorted(one_line(name(f)) for f in found)[:5])
            raise Rejected(f"the submission holds {len(found)} notebooks ({names}) and no student file: keep one")
        return found[0] if found else None

    def capped(name, stream, size):
        if size > MAX_NOTEBOOK_BYTES:
            raise Rejected(too_big(one_line(name), size))
        data = stream.read(MAX_NOTEBOOK_BYTES + 1)
        if len(data) > MAX_NOTEBOOK_BYTES:
            raise Rejected(f"{one_line(name)} unpacks to more than {_mib(MAX_NOTEBOOK_BYTES)}")
        return one_line(PurePosixPath(name).name), data

    if path.is_file() and path.suffix.lower() == ".ipynb":
        with open(path, "rb") as file:
            return capped(path.name, file, path.stat().st_size)
    if path.is_dir():
        found = one([p for p in [*path.iterdir(), *(p for d in path.iterdir() if d.is_dir() and not d.is_symlink()
                                                    and not _ignored(d.name) for p in d.iterdir())]
                     if notebook(p.name) and p.is_file() and not p.is_symlink()], lambda p: p.name)
        if found is None:
            return None
        with open(found, "rb") as file:
            return capped(found.name, file, found.stat().st_size)
    try:
        with zipfile.ZipFile(path) as archive:      # its paths were checked by _read_zip
            found = one([i for i in archive.infolist() if not i.is_dir() and len(PurePosixPath(i.filename).parts) <= 2
                         and notebook(i.filename.replace("\\", "/"))], lambda i: i.filename)
            if found is None:
                return None
            with archive.open(found) as member:
                return capped(found.filename, member, found.file_size)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError,
            ValueError) as error:
        raise Rejected(f"{path.name} is not a readable zip ({error})") from None


def read_notebook_files(lab, name, data):
    """(files, status, detail) of a notebook, as read_submission gives them: the files its
    functions fill (the others are graded as the stubs), the reader's sentences as the detail."""
    from grader.notebook_reader import NotebookError, extract, notes, relocate

    try:
        found = extract(lab, data, name)
    except NotebookError as why:
        return {}, "rejected", str(why)
    if not found.files:
        return {}, "empty", f"{name} defines none of {', '.join(lab.functions)} at the top level of a code cell"
    problems = [relocate(p, found.files) for n, d in found.files.items() if (p := _not_python(n, d))]
    missing = [file for file in lab.manifest.student_files if file not in found.files]
    said = problems + notes(found.files) + ([f"{name} defines none of the functions of {', '.join(missing)}: "
                                             "graded as the stubs"] if missing else [])
    return found.files, "broken_code" if problems else "incomplete" if missing else "graded", "; ".join(said)


def _case_mismatches(path, wanted, found):
    """'found Positions.py, expected positions.py' for each missing student file that the
    submission holds under a name differing only in case (names are case-sensitive)."""
    try:
        if path.is_dir():
            folders = [path, *(d for d in path.iterdir() if d.is_dir() and not d.is_symlink())]
            names = [p.name for folder in folders for p in folder.iterdir()]
        else:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()[:ZIP_MAX_ENTRIES]
    except (OSError, ValueError, zipfile.BadZipFile):
        return []
    by_lower = {PurePosixPath(n).name.lower(): PurePosixPath(n).name for n in names}
    return [f"found {one_line(by_lower[name.lower()])!r}, expected {name!r}: file names are case-sensitive, "
            "rename it" for name in wanted if name not in found and by_lower.get(name.lower(), name) != name]


def _ignored(name):
    return name.startswith((".", "__"))        # .git, .DS_Store, __MACOSX, __pycache__


def _mib(size):
    return f"{size / 2**20:.1f} MiB"


def _too_big(name, size):
    return f"{name} is {_mib(size)}; a student file may have at most {_mib(MAX_FILE_BYTES)}"


def _read_folder(folder, wanted):
    root = folder
    if not any((folder / name).exists() or (folder / name).is_symlink() for name in wanted):
        inner = [p for p in folder.iterdir() if p.is_dir() and not _ignored(p.name)]
        if len(inner) == 1 and not inner[0].is_symlink():
            root = inner[0]                  # one wrapping folder
    files = {}
    for name in wanted:
        path = root / name
        if path.is_symlink() or (path.exists() and not path.resolve().is_relative_to(root.resolve())):
            raise Rejected(f"{name} is a symbolic link; submit the file itself")
        if not path.exists():
            continue
        if not path.is_file():
            raise Rejected(f"{name} is not a regular file")
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise Rejected(_too_big(name, path.stat().st_size))
        files[name] = data
    return files


def _read_zip(path, wanted):
    size = path.stat().st_size
    if size > ZIP_MAX_BYTES:
        raise Rejected(f"{path.name} is {_mib(size)}; a submission .zip may have at most {_mib(ZIP_MAX_BYTES)}")
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
            if len(entries) > ZIP_MAX_ENTRIES:
                raise Rejected(f"the zip holds {len(entries)} entries; at most {ZIP_MAX_ENTRIES}")
            members = {}
            for info in entries:
                name = info.filename.replace("\\", "/")
                parts = PurePosixPath(name).parts
                if name.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
                    raise Rejected(f"unsafe path in the zip: {info.filename!r} (absolute, or leaving "
                                   "the folder with ..); zip the files themselves")
                if not info.is_dir():
                    members["/".join(p for p in parts if p != ".")] = info
            declared = sum(info.file_size for info in entries)
            if declared > ZIP_MAX_UNZIPPED:
                raise Rejected(f"the zip unpacks to {_mib(declared)} (a zip bomb?); at most "
                               f"{_mib(ZIP_MAX_UNZIPPED)}")
            root = _zip_root(members, wanted)
            files = {}
            for name in wanted:
                if root + name not in members:
                    continue
                with archive.open(members[root + name]) as member:   # streamed, capped: headers lie
                    data = member.read(MAX_FILE_BYTES + 1)
                if len(data) > MAX_FILE_BYTES:
                    raise Rejected(f"{name} unzips to more than {_mib(MAX_FILE_BYTES)} (a zip bomb?); "
                                   f"a student file may have at most {_mib(MAX_FILE_BYTES)}")
                files[name] = data
            return files
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, RuntimeError, NotImplementedError,
            EOFError, OSError, ValueError) as error:
        raise Rejected(f"{path.name} is not a readable zip ({error})") from None


def _zip_root(members, wanted):
    """'' when student files sit at the top of the zip; 'top/' when all is in one folder."""
    if any(name in members for name in wanted):
        return ""
    tops = {name.split("/")[0] for name in members if "/" in name and not _ignored(name.split("/")[0])}
    return f"{tops.pop()}/" if len(tops) == 1 else ""


def _not_python(name, data):
    """What keeps a student .py file from being Python source, or None. Parsed, never run."""
    if not name.endswith(".py"):
        return None
    if b"\0" in data:
        return f"{name} is not Python source (binary data)"
    error = _syntax_error(data)
    if isinstance(error, SyntaxError):
        return f"{name} line {error.lineno}: {error.msg}"
    return error and f"{name} cannot be parsed ({type(error).__name__}: {error})"


# -- what a learner should hear first ------------------------------------------------------------------
def file_problems(lab, folder, files, missing):
    """Sentences on the student files of `folder` before any check runs: a syntax error (its line,
    with a caret under the place), a file missing (and any other file there that seems to be it,
    renamed). Parsed, never run."""
    from grader.notebook_reader import notes, relocate

    problems = []
    for name in lab.manifest.student_files:
        error = _syntax_error(files[name]) if name.endswith(".py") and name not in missing else None
        if isinstance(error, SyntaxError) and error.lineno:
            line = (error.text or "").rstrip("\n")
            indent = len(line) - len(line.lstrip())
            caret = " " * (max(1, error.offset or 1) - 1 - indent) + "^"
            problems.append(relocate(f"{name} line {error.lineno}: {error.msg}\n    {line.strip()}\n    {caret}",
                                     files))
    said = notes({name: files[name] for name in lab.manifest.student_files if name in files and name not in missing})
    if said or Path(folder).suffix.lower() == ".ipynb":      # a notebook's: its sentences, and no file to copy
        return problems + said + [f"{', '.join(missing)}: the notebook defines none of "
                                  f"{', '.join(f for m in missing for f in lab.manifest.student_files[m])}, "
                                  "graded as the stubs"] * bool(missing)
    for name in missing:
        stub = lab.stubs / name
        why = f"{name} is not in {_shown(folder)}: its pristine stub was graded instead"
        functions = lab.manifest.student_files[name]
        renamed = [p.name for p in sorted(Path(folder).glob("*.py")) if p.is_file() and not p.is_symlink()
                   and p.name not in files and p.stat().st_size <= MAX_FILE_BYTES
                   and any(f"def {f}(" in p.read_text(errors="replace") for f in functions)]
        if renamed:
            why += f"; {', '.join(renamed)} defines {functions[0]}: renamed? the grader reads {name}"
        problems.append(f"{why}. To start again from the stub: cp {_shown(stub)} {_shown(Path(folder) / name)}")
    return problems


def _shown(path):
    """A path as the learner would type it here: relative when under the working folder."""
    path = Path(path).absolute()
    return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def _syntax_error(data):
    """The SyntaxError of Python source `data`, another parse error, or None."""
    try:
        ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return error
    return None


# -- the files a child gets ---------------------------------------------------------------------------
def submission_files(lab, submission=None, pristine=True):
    """The files a child works with: the handout's given Python files, the lab's pristine stubs,
    and the student files of `submission` (a folder; default: the handout, the learner's copy) over them.
    In a release, whose handout is the learner's to change, the given modules are those the judge
    imports (lab.given), unless not `pristine` (--experiments: the learner's own run): a grade is
    made of the student files only, with the same given code as the course's grading.

    Returns ({relative path: bytes}, [student files the submission lacks]); UsageError if it cannot be read.
    """
    folder = Path(submission) if submission is not None else lab.handout
    notebook = folder.suffix.lower() == ".ipynb" and folder.is_file()
    if not folder.is_dir() and not notebook:
        where = f"--submission {submission}" if submission is not None else f"the handout folder {folder}"
        raise UsageError(f"{where} is a file, not a folder or a notebook" if folder.exists() else
                         f"{where} does not exist")
    wanted = list(lab.manifest.student_files)
    try:
        found = {} if notebook else _read_folder(folder, wanted)
        if not found and submission is not None and (inside := notebook_in(folder)):
            found, status, detail = read_notebook_files(lab, *inside)
            if status == "rejected":
                raise Rejected(detail)
    except Rejected as why:
        raise UsageError(f"{folder}: {why}") from None
    files = {str(p.relative_to(lab.handout)): p.read_bytes() for p in sorted(lab.handout.rglob("*.py"))
             if not any(part.startswith((".", "__pycache__")) for part in p.relative_to(lab.handout).parts)}
    if pristine and lab.given != lab.handout:
        files.update({p.name: p.read_bytes() for p in sorted(lab.given.glob("*.py"))})
    files.update({m.name: m.read_bytes() for m in lab.child_modules})
    files.update({name: (lab.stubs / name).read_bytes() for name in wanted})
    files.update(found)
    return files, [name for name in wanted if name not in found]
