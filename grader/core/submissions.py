"""Reading submissions, as data only, for every way of grading: one folder (`--submission`, the
learner's copy), a class of folders and .zips (batch), Gradescope's upload (gradescope.autograde).

Only the lab's student files are read, each a regular file inside the submission (a symbolic
link is refused: it could point at the reference), with caps on sizes and no path leaving a zip.
They are found at any depth of folders and archives nested as LMS downloads nest them (`_locate`:
the shallowest folder holding any of them; else the one archive inside, searched alike). The kinds
of archive are `NESTED`, by suffix: a reader of one more kind (a notebook holding the student's
code) is one entry there, and `grade.py pack` (grader/learner/handin.py) then hands in what it holds.
A student file the submission lacks is graded as the lab's pristine stub (`Lab.stubs`), never as
whatever the working copy in the handout folder holds.
"""
import ast
import hashlib
import io
import os
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.base.errors import UsageError
from grader.base.text import one_line
from grader.readers.identity import as_read, identity, look_alikes, shown

MAX_FILE_BYTES = 2**20              # the largest student file accepted
ZIP_MAX_BYTES = 64 * 2**20          # a submission .zip, as stored
ZIP_MAX_ENTRIES = 10_000
ZIP_MAX_UNZIPPED = 512 * 2**20      # what its entries claim to unpack to, all together
GRADABLE = ("graded", "incomplete", "broken_code")
FOLDER_MAX_BYTES = 200              # a student's folder name, kept under every disk's 255
NOT_IN_FOLDERS = re.compile(r'[<>:"/\\|?*]|[. ]$')     # what Windows refuses in a name, or drops at its end
WINDOWS_DEVICES = re.compile(r"(CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|CLOCK\$|(COM|LPT)[0-9\u00b9\u00b2\u00b3])[ .]*(\..*)?",
                             re.IGNORECASE)     # Windows' reserved names, with any extension


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
        if out is not None and path.resolve() == Path(out).resolve():
            continue
        if _ignored(path.name):
            if path.name not in JUNK:       # a folder or zip a student may have named so: said, not dropped
                ignored.append(f"{one_line(path.name)} (a name starting with . or __ is never a student's)")
            continue
        if path.is_dir() or path.suffix.lower() in types:
            candidates.append(path)
        else:
            ignored.append(one_line(path.name))
    return candidates, ignored


def list_submissions(lab, folder, out=None):
    """Every student in `folder` (a subfolder or a .zip each, named by student id), read. A
    student's name is the folder's or the zip's as grader.readers.identity.shown writes it. Entries that are
    one student (one identity, or one folder on a disk that ignores case), or whose names render
    alike (grader.readers.identity.look_alikes), are a collision: one rejected row names them all, and
    neither is graded over the other."""
    by_student = {}
    candidates, ignored = class_entries(lab, folder, out)
    _a_class_folder(lab, folder, candidates, ignored)
    for path in candidates:
        name = path.stem if path.suffix.lower() == ".zip" and path.is_file() else path.name
        if path.suffix.lower() == ".ipynb" and path.is_file():
            name = notebook_student(path.name)
        student = shown(name) if identity(name) else ascii(name)
        by_student.setdefault(disk_name(student), []).append((student, path))
    for group in look_alikes(same[0][0] for same in by_student.values()):     # "Ada" and "Аda": one row
        keys = [disk_name(student) for student in group]
        by_student[keys[0]] = [entry for key in keys for entry in by_student.pop(key)]
    submissions = []
    for same in by_student.values():
        (student, path), names = same[0], tuple(one_line(p.name) for _, p in same)
        if len({identity(s) for s, _ in same}) > 1 and len({disk_name(s) for s, _ in same}) > 1:
            shown_names = ", ".join(as_read(s) for s, _ in same)
            detail = (f"{len(same)} submissions whose names look alike: {shown_names}; keep one (or rename one, "
                      "if they are two students)")
            submissions.append(Submission(student, path, {}, "rejected", detail, collision=names))
        elif len(same) > 1:
            detail = (f"{len(same)} submissions for one student: {', '.join(map(repr, names))} (names are compared "
                      "in any case and Unicode form): keep one")
            submissions.append(Submission(student, path, {}, "rejected", detail, collision=names))
        else:
            submissions.append(Submission(student, path, *read_submission(lab, path)))
    if len(submissions) == 1 and submissions[0].status == "rejected" and submissions[0].path.is_dir():
        inner = submissions[0].path
        if sum(read_submission(lab, entry)[1] in GRADABLE for entry in class_entries(lab, inner)[0]) > 1:
            raise UsageError(f"SUBMISSIONS {one_line(str(folder))} holds only {one_line(inner.name)!r}, which holds "
                             f"the submissions of several students: give {one_line(str(inner))} instead")
    return submissions


def _a_class_folder(lab, folder, candidates, ignored):
    """UsageError, in a sentence, for a folder that is no class: empty, or one student's own."""
    own = [name for name in lab.manifest.student_files if (Path(folder) / name).is_file()]
    if own:
        raise UsageError(f"SUBMISSIONS {one_line(str(folder))} holds {', '.join(own)} itself: it is one student's "
                         f"submission, not a class's folder (one folder or .zip per student); grade it with "
                         f"python grade.py {lab.name} --submission {one_line(str(folder))}")
    if not candidates:
        held = f" (it holds only {', '.join(ignored[:3])}{', ...' if len(ignored) > 3 else ''})" if ignored else ""
        raise UsageError(f"SUBMISSIONS {one_line(str(folder))} holds no submission{held}: expected one folder or "
                         ".zip per student, as an LMS's download unpacks")


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
    """The lab's student files in a folder or .zip, and what is wrong: (files, status, detail).
    The files are found at any depth, in folders and archives nested as LMS downloads nest them
    (a zip in a student's folder, a folder in that zip): the shallowest folder holding any of
    them is the submission, and two such folders at one depth are refused (one student's files)."""
    from grader.readers.notebook import disown

    wanted = list(lab.manifest.student_files)
    path = Path(path)
    try:
        if path.is_dir():
            found = _locate(_Folder(path), wanted)
        elif path.is_file() and path.suffix.lower() == ".zip":
            _check_zip_size(path.name, path.stat().st_size)
            with _Zip(path.name, path) as tree:
                found = _locate(tree, wanted)
        elif path.is_file() and path.suffix.lower() == ".ipynb":
            found = _Found({}, [], {})
        else:
            raise Rejected(f"{one_line(path.name)} is neither a folder nor a .zip: put each student's files "
                           "in a folder (or .zip) of their own, named for them")
        if not found.files and (notebook := notebook_in(path)):
            return read_notebook_files(lab, *notebook)
    except Rejected as why:
        return {}, "rejected", str(why)
    except OSError as error:            # e.g. a path the record holds as shown, too long for the disk
        return {}, "rejected", f"{one_line(path.name)} cannot be read ({error.strerror})"
    files, misnamed = {n: disown(d) for n, d in found.files.items()}, _case_mismatches(found.names, wanted, found.files)
    if not files:
        return {}, "empty", "; ".join(misnamed or [f"none of {', '.join(wanted)} found (in the submission, "
                                                   "its folders or the zips inside it)"])
    problems = [p for name, data in files.items() if (p := _not_python(name, data))]
    below = [f"{name} is in {found.below[name]!r}, not beside {', '.join(files)}: graded as the stub (keep the lab's "
             "files in one folder)" for name in wanted if name in found.below and name not in files]
    missing = [name for name in wanted if name not in files and name not in found.below]
    detail = "; ".join(problems + misnamed + below + ([f"not submitted, graded as the stubs: {', '.join(missing)}"]
                                                      if missing else []) + _unread_notebook(path))
    return files, "broken_code" if problems else "incomplete" if missing else "graded", detail


def handin_sources(lab, folder):
    """({name: bytes} to hand in, {student file: bytes} the course grades of them) from the learner's
    `folder`, as read_submission finds them: the student files, or the archive that holds them."""
    found = _locate(_Folder(folder), list(lab.manifest.student_files))
    return found.sources, found.files


# -- notebooks: one more container of the student files (grader/readers/notebook.py) ----------------------
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
    from grader.readers.notebook import MAX_NOTEBOOK_BYTES, too_big

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


def _unread_notebook(path):
    """[a sentence] where a submission holding student files holds a notebook too, which is not read
    beside them (its cells may define what the files lack: %%writefile made some of them, or the
    whole release was handed in, its stubs untouched); else []."""
    try:
        found = notebook_in(path)
    except (Rejected, OSError):         # two notebooks, or one that cannot be read: nothing more to say
        found = None
    return [f"{found[0]} is not read: a submission holding the lab's files is graded by them (hand in the notebook "
            "alone, or every file)"] if found else []


def read_notebook_files(lab, name, data):
    """(files, status, detail) of a notebook, as read_submission gives them: the files its
    functions fill (the others are graded as the stubs), the reader's sentences as the detail."""
    from grader.readers.notebook import NotebookError, extract, notes, relocate

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


def _case_mismatches(names, wanted, found):
    """'found Positions.py, expected positions.py' for each missing student file that the
    submission holds under a name differing only in case (names are case-sensitive)."""
    by_lower = {PurePosixPath(n).name.lower(): PurePosixPath(n).name for n in names}
    return [f"found {one_line(by_lower[name.lower()])!r}, expected {name!r}: file names are case-sensitive, "
            "rename it" for name in wanted if name not in found and by_lower.get(name.lower(), name) != name]


JUNK = {"__MACOSX", ".DS_Store", ".git", "__pycache__", ".ipynb_checkpoints", ".localized"}     # never said


def _ignored(name):
    return name.startswith((".", "__"))        # .git, .DS_Store, __MACOSX, __pycache__


def _mib(size):
    return f"{size / 2**20:.1f} MiB"


def _too_big(name, size):
    return f"{name} is {_mib(size)}; a student file may have at most {_mib(MAX_FILE_BYTES)}"


# -- where a submission's files are: folders and archives, nested --------------------------------------
@dataclass
class _Found:
    files: dict                     # {student file: bytes}
    names: list                     # every path seen where the files were looked for (case hints)
    sources: dict                   # {name: bytes} of what holds them at the top: the files, or their archive
    below: dict = field(default_factory=dict)   # {student file: the deeper folder holding it, not graded}


class _Folder:
    """A folder's regular files, shallowest first, symbolic links listed but never followed."""

    def __init__(self, root):
        self.root = Path(root)

    def entries(self):
        """(relative POSIX path, kind: file, link or other), shallowest first; junk folders
        (.git, __MACOSX) are not entered."""
        queue, seen = [(self.root, "")], 0
        while queue:
            folder, prefix = queue.pop(0)
            with os.scandir(folder) as listing:
                found = sorted(listing, key=lambda entry: entry.name)
            for entry in found:
                seen += 1
                if seen > ZIP_MAX_ENTRIES:
                    raise Rejected(f"the folder holds more than {ZIP_MAX_ENTRIES} files and folders")
                if entry.is_symlink():
                    yield prefix + entry.name, "link"
                elif entry.is_dir(follow_symlinks=False):
                    if not _ignored(entry.name):
                        queue.append((Path(entry.path), prefix + entry.name + "/"))
                else:
                    yield prefix + entry.name, "file" if entry.is_file(follow_symlinks=False) else "other"

    def too_big(self, name, path):
        return _too_big(name, os.lstat(self.root / path).st_size)

    def read(self, name, limit):
        """Up to `limit` + 1 bytes of a regular file, never through a link."""
        descriptor = os.open(self.root / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(descriptor, "rb") as file:
            return file.read(limit + 1)


class _Zip:
    """A zip's files (from a path, or bytes when nested), each path checked to stay inside it."""

    def __init__(self, name, source):
        self.name = name
        try:
            self.archive = zipfile.ZipFile(source)
            infos = self.archive.infolist()
        except ZIP_ERRORS as error:
            raise Rejected(f"{one_line(name)} is not a readable zip ({error})") from None
        if len(infos) > ZIP_MAX_ENTRIES:
            raise Rejected(f"the zip holds {len(infos)} entries; at most {ZIP_MAX_ENTRIES}")
        self.members = {}
        for info in infos:
            path = info.filename.replace("\\", "/")
            parts = PurePosixPath(path).parts
            if path.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
                raise Rejected(f"unsafe path in the zip: {info.filename!r} (absolute, or leaving "
                               "the folder with ..); zip the files themselves")
            if not info.is_dir():
                self.members["/".join(p for p in parts if p != ".")] = info
        declared = sum(info.file_size for info in infos)
        if declared > ZIP_MAX_UNZIPPED:
            raise Rejected(f"the zip unpacks to {_mib(declared)} (a zip bomb?); at most {_mib(ZIP_MAX_UNZIPPED)}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.archive.close()

    def entries(self):
        names = sorted(self.members, key=lambda name: (name.count("/"), name))
        return ((name, "file") for name in names if not any(_ignored(p) for p in name.split("/")[:-1]))

    def too_big(self, name, path):
        return (f"{name} unzips to more than {_mib(MAX_FILE_BYTES)} (a zip bomb?); a student file may have at most "
                f"{_mib(MAX_FILE_BYTES)}")

    def read(self, name, limit):
        try:
            with self.archive.open(self.members[name]) as member:      # streamed, capped: headers lie
                return member.read(limit + 1)
        except ZIP_ERRORS as error:
            raise Rejected(f"{one_line(self.name)} is not a readable zip ({error})") from None


ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError,
              OSError, ValueError)
NEST_MAX = 4                        # archives inside archives: deeper is refused, not searched


def _nested_zip(name, data):
    _check_zip_size(name, len(data))
    return _Zip(name, io.BytesIO(data))


# The archives a submission may hold its files in, by suffix: (name, bytes) -> a tree of files with
# entries() and read(); a notebook that holds the student's code can be one more kind.
NESTED = {".zip": _nested_zip}


def _check_zip_size(name, size):
    if size > ZIP_MAX_BYTES:
        raise Rejected(f"{one_line(name)} is {_mib(size)}; a submission .zip may have at most {_mib(ZIP_MAX_BYTES)}")


def _locate(tree, wanted, depth=0):
    """The student files in `tree`: those in the shallowest folder holding any of them; else, where
    the tree holds none, those in its one archive (the shallowest), searched the same way."""
    places, names, archives, at = {}, [], [], None
    below = {}                      # a student file deeper than those found: {name: its folder}
    for path, kind in tree.entries():
        level = path.count("/")
        name = PurePosixPath(path).name
        if at is not None and level > at:
            if name in wanted:
                below.setdefault(name, path[:-len(name)])
            continue
        names.append(path)
        if name in wanted:
            if kind == "link":
                raise Rejected(f"{name} is a symbolic link; submit the file itself")
            places.setdefault(path[:-len(name)], []).append((name, path, kind))
            at = level
        elif kind == "file" and PurePosixPath(path).suffix.lower() in NESTED:
            archives.append(path)
    if len(places) > 1:
        raise Rejected(f"the lab's files are in {len(places)} folders ({', '.join(map(repr, sorted(places)))}): "
                       "a submission holds one student's files; keep one")
    if places:
        files = {}
        for name, path, kind in next(iter(places.values())):
            if kind != "file":
                raise Rejected(f"{name} is not a regular file")
            data = tree.read(path, MAX_FILE_BYTES)
            if len(data) > MAX_FILE_BYTES:
                raise Rejected(tree.too_big(name, path))
            files[name] = data
        return _Found(files, names, dict(files), below)
    shallowest = [p for p in archives if p.count("/") == min((a.count("/") for a in archives), default=0)]
    if len(shallowest) > 1:
        raise Rejected(f"none of {', '.join(wanted)} found, and {len(shallowest)} archives that may hold them "
                       f"({', '.join(map(repr, shallowest))}): a submission holds one student's files; keep one")
    if not shallowest:
        return _Found({}, names, {})
    if depth >= NEST_MAX:
        raise Rejected(f"archives nested more than {NEST_MAX} deep ({shallowest[0]!r}); zip the files themselves")
    inner = shallowest[0]
    data = tree.read(inner, ZIP_MAX_BYTES)
    kind = NESTED[PurePosixPath(inner).suffix.lower()]
    nested = kind(inner, data)
    try:
        found = _locate(nested, wanted, depth + 1)
    finally:
        getattr(nested, "__exit__", lambda *exc: None)(None, None, None)
    return _Found(found.files, names + found.names, {PurePosixPath(inner).name: data} if found.files else {},
                  found.below)


def _not_python(name, data):
    """What keeps a student .py file from being Python source, or None. Parsed, never run."""
    if not name.endswith(".py"):
        return None
    if b"\0" in data:              # its line, which a notebook's file says as a cell's
        line = data[:data.index(b"\0")].count(b"\n") + 1
        return f"{name} is not Python source (binary data): {name} line {line} holds a NUL character"
    error = _syntax_error(data)
    if isinstance(error, SyntaxError):
        return f"{name} line {error.lineno}: {error.msg}"
    return error and f"{name} cannot be parsed ({type(error).__name__}: {error})"


# -- what a learner should hear first ------------------------------------------------------------------
def file_problems(lab, folder, files, missing):
    """Sentences on the student files of `folder` before any check runs: a syntax error (its line,
    with a caret under the place), a file missing (and any other file there that seems to be it,
    renamed). Parsed, never run."""
    from grader.readers.notebook import notes, relocate

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
def submission_files(lab, submission=None, pristine=True, laid_out=False):
    """The files a child works with: the handout's given Python files, the lab's pristine stubs,
    and the student files of `submission` (a folder; default: the handout, the learner's copy) over them.
    In a release, whose handout is the learner's to change, the given modules are those the judge
    imports (lab.given), unless not `pristine` (--experiments: the learner's own run): a grade is
    made of the student files only, with the same given code as the course's grading. A student
    file's first line posing as a notebook's generated header is made a comment (disown), unless
    the folder is `laid_out` by the grader from files read_submission read.

    Returns ({relative path: bytes}, [student files the submission lacks]); UsageError if it cannot be read.
    """
    from grader.readers.notebook import disown

    folder = Path(submission) if submission is not None else lab.handout
    notebook = folder.suffix.lower() == ".ipynb" and folder.is_file()
    if not folder.is_dir() and not notebook:
        where = f"--submission {submission}" if submission is not None else f"the handout folder {folder}"
        raise UsageError(f"{where} is a file, not a folder or a notebook" if folder.exists() else
                         f"{where} does not exist")
    wanted = list(lab.manifest.student_files)
    try:
        found = {} if notebook else {name: data if laid_out else disown(data)
                                     for name, data in _locate(_Folder(folder), wanted).files.items()}
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
