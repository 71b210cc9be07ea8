"""What leaves the instructor's machine: the learners' copy of a lab, and what a Gradescope
autograder holds (grader/instructor/gradescope.py).

Both are a copy of the course laid out as this repository is, holding one lab:
    grade.py, grader/*.py                the engine (requirements.txt: what it needs); a release
                                         leaves out what only instructors and authors run
    grader/labs/LAB/lab.yaml             the manifest, its paths rewritten to this layout
    grader/labs/LAB/public/ (hidden/)    the checks: public only in a release
    grader/labs/LAB/stubs/               the pristine stubs
    assignments/LAB/                     the handout: the pristine stubs, given files, README
    reference/LAB/                       the reference solutions: Gradescope bundle only
    quizzes/LAB.yaml                     the lesson test, in exam or practice form: release only
    README.md                            where to start: release only

Student files always come from the lab's pristine stubs, never from the handout folder, where
an instructor may have tried a solution.
"""
import re
import shutil
import zipfile
from pathlib import Path

import yaml

from grader.base.errors import LabError, UsageError
from grader.base.root import ROOT
from grader.quiz.grading import exam_form
from grader.quiz.model import load_quiz
from grader.readers.manifest import ENGINE, engine_files, find_lab

SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".grade")
CPU_TORCH = "https://download.pytorch.org/whl/cpu"
STAFF_ONLY = ("instructor", "author")     # grader/ folders a learner never runs: not in a release

def stage(lab, dest, hidden, reference, quiz=None, staff=True):
    """Copy the engine and `lab` into `dest` in the course's layout; `quiz`: "exam", "practice"
    or None. Hidden checks and reference solutions only when asked; the instructor's and the
    author's code only with `staff`. Returns the staged Lab."""
    dest = Path(dest)
    (dest / "grader").mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "grade.py", dest / "grade.py")
    for name in engine_files():
        if not staff and name.parts[0] in STAFF_ONLY:
            continue
        (dest / "grader" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ENGINE / name, dest / "grader" / name)
    folder = dest / "grader" / "labs" / lab.name
    if hidden:                      # the whole lab folder: checks, conftests, helpers
        shutil.copytree(lab.folder, folder, ignore=shutil.ignore_patterns("lab.yaml", "__pycache__", "*.pyc"))
    elif (lab.folder / "public").is_dir():
        shutil.copytree(lab.folder / "public", folder / "public", ignore=SKIP)
    folder.mkdir(parents=True, exist_ok=True)
    for module in lab.child_modules:
        shutil.copy2(module, folder / module.name)
    shutil.copytree(lab.handout, dest / "assignments" / lab.name, ignore=SKIP)
    for module in sorted(lab.handout.glob("*.py")):      # pristine, for the judge: the handout's copy
        if module.name not in lab.manifest.student_files:    # is the learner's to change
            (folder / "given").mkdir(parents=True, exist_ok=True)
            shutil.copy2(module, folder / "given" / module.name)
    (folder / "stubs").mkdir(exist_ok=True)
    for name in lab.manifest.student_files:
        for copy in (dest / "assignments" / lab.name / name, folder / "stubs" / name):
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(lab.stubs / name, copy)
    paths = {"handout": f"../../../assignments/{lab.name}", "stubs": "stubs", "reference": None, "quiz": None,
             "child_modules": [m.name for m in lab.child_modules], "visibility": shipped_visibility(lab, hidden)}
    if reference and lab.reference:
        shutil.copytree(lab.reference, dest / "reference" / lab.name, ignore=SKIP)
        paths["reference"] = f"../../../reference/{lab.name}"
    if quiz and lab.quiz:
        _write_quiz(lab, dest / "quizzes" / f"{lab.name}.yaml", quiz)
        paths["quiz"] = f"../../../quizzes/{lab.name}.yaml"
    manifest = lab.manifest.model_copy(update=paths).model_dump(exclude_none=True)
    checks = "public and hidden checks" if hidden else "public checks only"
    (folder / "lab.yaml").write_text(f"# {lab.name}, released with {checks}. Paths are relative to this folder.\n"
                                     + yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))
    return find_lab(folder)


def shipped_visibility(lab, hidden):
    """lab.yaml's visibility table as far as it concerns checks shipped: a hidden check's entry
    names its file and test, which say what it tries (test_rope_at_4096_positions)."""
    public = lab.folder / "public"
    return {key: level for key, level in lab.manifest.visibility.items()
            if hidden or (lab.folder / key.split("::")[0]).is_relative_to(public)}


def _write_quiz(lab, path, form):
    """The lesson test in `form`: "practice" (the default of a release: the key, so that a learner
    on their own sees feedback and reveals, keeps attempts and completes the lesson) or "exam"
    (questions only, for a class that hands its responses in). Written from the validated quiz,
    so a quiz in an earlier form ships in the current one."""
    quiz = load_quiz(lab.quiz)
    path.parent.mkdir(parents=True, exist_ok=True)
    if form == "practice":
        if not quiz.keyed:
            raise LabError(f"{lab.quiz} is an exam form with no answer key: there is no practice form to release")
        path.write_text(f"# {quiz.title}: practice form, with answers, explanations and reveals. "
                        f"Take it: python grade.py quiz {lab.name}\n"
                        + yaml.safe_dump(quiz.model_dump(exclude_none=True), sort_keys=False, allow_unicode=True))
    else:
        path.write_text(f"# {quiz.title}: exam form, no answer key. Take it: python grade.py quiz {lab.name}\n"
                        + yaml.safe_dump(exam_form(quiz), sort_keys=False, allow_unicode=True))


README = """# %(title)s

Your copy of the lab: the handout in `assignments/%(lab)s/` (the files you fill in, and the given
ones) and a grader that runs the lab's public checks on your code.

## Set up, once

Python 3.10 or newer, then in this folder:

    python3 -m venv .venv
    .venv/bin/pip install -r requirements-cpu.txt   # no NVIDIA GPU: first the small CPU build of torch
    .venv/bin/pip install -r requirements.txt       # then everything else (alone with an NVIDIA GPU)

Without an NVIDIA GPU run both lines: the first takes torch's CPU build (a tenth of the CUDA
build that PyPI gives on Linux and Windows) and the few packages it needs from PyTorch's own
index, %(cpu)s, and nothing else; the second then finds torch
installed. With an NVIDIA GPU run the second line alone: it installs PyPI's torch, built with
CUDA. On a Mac both give the same torch. If PyTorch's index cannot be reached, the first line
stops after a few retries (well under a minute) saying so, and installs nothing. On Windows
the venv's programs are in `.venv\\Scripts\\`.

## The loop

1. Open a file of `assignments/%(lab)s/` (start with `%(file)s`) and fill in one stub: its
   docstring is its whole contract.
2. Keep the grader watching in a terminal; every save grades again, the checks of the file you
   saved first, in about a second:

       .venv/bin/python grade.py %(lab)s --watch

3. Read what a failed check says: what it expected, what your code gave, and often the likely
   mistake. What your code prints shows under the check that ran it. Then the next stub.

## Every command

%(commands)s

The tasks are in `assignments/%(lab)s/README.md`. Your code runs in a separate process
(sandboxed where bubblewrap is installed), so a crash or an endless loop costs only the checks
that needed it. Deleted a stub by mistake? `cp grader/labs/%(lab)s/stubs/FILE assignments/%(lab)s/`
brings it back. The course's own grading adds hidden checks of the same contracts.
"""
QUIZ_LINE = {"practice": "the lesson test: feedback after each answer; it and the lab passed complete the lesson",
             "exam": "the lesson test: your answers go to a file you hand in to be graded"}
REQUIREMENTS = "# Everything the grader needs. Without an NVIDIA GPU install requirements-cpu.txt first: the\n" \
    "# small CPU build of torch; with one, this alone installs PyPI's torch, built with CUDA.\n"
REQUIREMENTS_CPU = "# Without an NVIDIA GPU, first: torch's CPU build (about a tenth of the CUDA one) and what it\n" \
    "# needs, from PyTorch's own index only; then pip install -r requirements.txt, which finds torch.\n" \
    "--index-url %(cpu)s\n%(torch)s\n"


def readme(lab, quiz="practice"):
    """The release's top-level README: set up, the loop (a stub, --watch, the hint), every command
    (`quiz`: the lesson test's form, "practice" or "exam")."""
    python = ".venv/bin/python grade.py"
    function, file = next(iter(lab.functions.items()))
    commands = [(f"{python} {lab.name}", "grade everything once: a report of every check"),
                (f"{python} {lab.name} --watch", "grade again each time you save a file (Ctrl-C stops)"),
                (f"{python} {lab.name} -k {function}", f"only the checks of one function (-k {file}: one file)"),
                (f"{python} {lab.name} -s", "under each check, all your code printed, not only its start"),
                (f"{python} {lab.name} --json results.json", "the results as JSON as well"),
                (f"{python} {lab.name} --submission DIR", "grade a folder holding your files"),
                (f"{python} {lab.name} --device cuda", "grade on an NVIDIA GPU (auto: one if there is one)")]
    if lab.manifest.experiments:
        commands.append((f"{python} {lab.name} --experiments", "run your experiments: progress, tables, plots"))
    if lab.quiz:
        commands.append((f"{python} quiz {lab.name}", QUIZ_LINE[quiz]))
    commands.append((f"{python} pack {lab.name}", f"the zip to hand in: {lab.name}-submission.zip, your files only"))
    width = max(len(command) for command, _ in commands)
    lines = "\n".join(f"    {command:<{width}}   # {what}" for command, what in commands)
    return README % {"title": lab.manifest.title, "lab": lab.name, "file": file, "commands": lines, "cpu": CPU_TORCH}


def working_copy_changes(lab):
    """Student files in the handout folder that are not their pristine stubs (or are missing)."""
    return [name for name in lab.manifest.student_files if not (lab.handout / name).is_file()
            or (lab.handout / name).read_bytes() != (lab.stubs / name).read_bytes()]


def release(lab, out, quiz="practice", ignore_working_copy=False, url=""):
    """The learners' copy of `lab` in `out`: no reference, no hidden check, the quiz in `quiz` form,
    the student files as the pristine stubs; also the lab as a notebook, and the release zipped
    for it (`url`: where the course will host that zip, written into the notebook's install cell).
    Refuses while the handout folder's copies differ from
    them (a solution tried there, or a stub edited but not saved as pristine) unless told to ignore
    that. Returns the files written."""
    changed = working_copy_changes(lab)
    if changed and not ignore_working_copy:
        raise UsageError(f"{', '.join(changed)} in {lab.handout} differ from the pristine stubs in {lab.stubs}; "
                       "the release ships the pristine stubs: copy your edits there to ship them, or pass "
                       "--ignore-working-copy")
    stage(lab, out, hidden=False, reference=False, quiz=quiz, staff=False)
    (Path(out) / "requirements.txt").write_text(REQUIREMENTS + "\n".join(dependencies(extras=["plots"])) + "\n")
    torch = next(name for name in dependencies() if re.match(r"torch\b", name))
    (Path(out) / "requirements-cpu.txt").write_text(REQUIREMENTS_CPU % {"cpu": CPU_TORCH, "torch": torch})
    (Path(out) / "README.md").write_text(readme(lab, quiz))
    learner_notebook(lab, out, url)
    return sorted(p for p in Path(out).rglob("*") if p.is_file())


def learner_notebook(lab, out, url=""):
    """OUT/LAB.ipynb, the lab as a notebook (grader/instructor/notebook_handout.py), what it installs
    (requirements-notebook.txt: never torch), and OUT/LAB-handout.zip: the release itself, which
    the notebook's install cell fetches from `url` where it is not opened inside the release (Colab)."""
    import nbformat

    from grader.instructor import notebook_handout

    out = Path(out)
    (out / "requirements-notebook.txt").write_text(
        "# What a notebook's install cell adds: the grader's packages, never torch (Colab's stays)\n"
        + "\n".join(notebook_handout.requirements(dependencies())) + "\n")
    nbformat.write(notebook_handout.notebook(lab, url), out / f"{lab.name}.ipynb")
    archive = out / f"{lab.name}-handout.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted(p for p in out.rglob("*") if p.is_file() and p != archive):
            info = zipfile.ZipInfo(path.relative_to(out).as_posix(), date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            bundle.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)


def dependencies(extras=()):
    """The grader's packages, as pyproject.toml lists them, with those of the optional `extras`."""
    text = (ROOT / "pyproject.toml").read_text()
    blocks = [re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)]
    blocks += [re.search(rf"^{extra} = \[(.*?)\]", text, re.S | re.M).group(1) for extra in extras]
    return [name for block in blocks for name in re.findall(r'"([^"]+)"', block)]
