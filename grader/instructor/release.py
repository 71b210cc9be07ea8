"""What leaves the instructor's machine: the learners' copy of a lab, and a Gradescope autograder.

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
import tempfile
import zipfile
from pathlib import Path

import yaml

from grader.errors import LabError, SetupError, UsageError
from grader.labs import ENGINE, ROOT, engine_files, find_lab
from grader.quiz.grading import exam_form
from grader.quiz.model import load_quiz

SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".grade")
CPU_TORCH = "https://download.pytorch.org/whl/cpu"
STAFF_ONLY = ("instructor", "author")     # grader/ folders a learner never runs: not in a release

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, to build the autograder image: Python, bubblewrap, packages.
set -euo pipefail
AUTOGRADER="${AUTOGRADER:-/autograder}"
apt-get update -q
apt-get install -y -q python3 python3-venv python3-pip bubblewrap
python3 -m venv "$AUTOGRADER/venv"
"$AUTOGRADER/venv/bin/pip" install -q --extra-index-url %(cpu)s -r "$AUTOGRADER/source/requirements.txt"
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this per submission: grade $AUTOGRADER/submission into
# $AUTOGRADER/results/results.json. AUTOGRADER (default /autograder) and GRADER_PYTHON (default:
# the venv setup.sh made) can be set to run it elsewhere, e.g. in tests with an existing venv.
set -euo pipefail
AUTOGRADER="${AUTOGRADER:-/autograder}"
PYTHON="${GRADER_PYTHON:-$AUTOGRADER/venv/bin/python}"
cd "$AUTOGRADER/source"
exec "$PYTHON" -c 'import sys; from grader.instructor.release import autograde; sys.exit(autograde(*sys.argv[1:]))' \\
    "$AUTOGRADER" "%(lab)s" "%(sandbox)s"
"""


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
             "child_modules": [m.name for m in lab.child_modules]}
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
    .venv/bin/pip install -r requirements-cpu.txt   # no NVIDIA GPU: the small CPU build of torch
    .venv/bin/pip install -r requirements.txt       # an NVIDIA GPU: PyPI's torch, built with CUDA

Pick one of the two installs: on Linux and Windows PyPI's torch is the large CUDA build, and
`requirements-cpu.txt` takes the CPU build from %(cpu)s instead; on a Mac both give
the same torch. On Windows the venv's programs are in `.venv\\Scripts\\`.

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
REQUIREMENTS = "# With an NVIDIA GPU. Without one, install requirements-cpu.txt: the small CPU build of torch.\n"
REQUIREMENTS_CPU = "# The CPU build of torch (about a tenth of the CUDA one), then everything else.\n" \
    "--extra-index-url %(cpu)s\n-r requirements.txt\n"


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
    width = max(len(command) for command, _ in commands)
    lines = "\n".join(f"    {command:<{width}}   # {what}" for command, what in commands)
    return README % {"title": lab.manifest.title, "lab": lab.name, "file": file, "commands": lines, "cpu": CPU_TORCH}


def working_copy_changes(lab):
    """Student files in the handout folder that are not their pristine stubs (or are missing)."""
    return [name for name in lab.manifest.student_files if not (lab.handout / name).is_file()
            or (lab.handout / name).read_bytes() != (lab.stubs / name).read_bytes()]


def release(lab, out, quiz="practice", ignore_working_copy=False):
    """The learners' copy of `lab` in `out`: no reference, no hidden check, the quiz in `quiz` form,
    the student files as the pristine stubs. Refuses while the handout folder's copies differ from
    them (a solution tried there, or a stub edited but not saved as pristine) unless told to ignore
    that. Returns the files written."""
    changed = working_copy_changes(lab)
    if changed and not ignore_working_copy:
        raise UsageError(f"{', '.join(changed)} in {lab.handout} differ from the pristine stubs in {lab.stubs}; "
                       "the release ships the pristine stubs: copy your edits there to ship them, or pass "
                       "--ignore-working-copy")
    stage(lab, out, hidden=False, reference=False, quiz=quiz, staff=False)
    (Path(out) / "requirements.txt").write_text(REQUIREMENTS + "\n".join(dependencies(extras=["plots"])) + "\n")
    (Path(out) / "requirements-cpu.txt").write_text(REQUIREMENTS_CPU % {"cpu": CPU_TORCH})
    (Path(out) / "README.md").write_text(readme(lab, quiz))
    return sorted(p for p in Path(out).rglob("*") if p.is_file())


def export_gradescope(lab, zip_path, sandbox="required"):
    """A Gradescope autograder bundle for `lab` at `zip_path`; returns the names in it.

    `sandbox` is the --sandbox mode it grades with: "required" (the default) gives every
    submission a 0 that says why when bubblewrap cannot run there, rather than grading it, as
    root, in a plain process that can read the hidden checks and rewrite results.json.
    """
    with tempfile.TemporaryDirectory(prefix="gradescope-") as work:
        work = Path(work)
        stage(lab, work, hidden=True, reference=True)
        (work / "requirements.txt").write_text("\n".join(dependencies()) + "\n")
        (work / "setup.sh").write_text(SETUP % {"cpu": CPU_TORCH})
        (work / "run_autograder").write_text(RUN % {"lab": lab.name, "sandbox": sandbox})
        names = []
        Path(zip_path).parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as bundle:
            for path in sorted(p for p in work.rglob("*") if p.is_file()):
                name = path.relative_to(work).as_posix()
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (0o755 if name in ("setup.sh", "run_autograder") else 0o644) << 16
                bundle.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
                names.append(name)
    return names


def _grader_fault(why):
    """The autograder's own failure: said on stdout, no results.json, exit status 3."""
    print(f"The grader could not grade this submission, through no fault of the student's: {why}. "
          "Nothing was recorded; regrade it once the autograder is fixed.", flush=True)
    return 3


def dependencies(extras=()):
    """The grader's packages, as pyproject.toml lists them, with those of the optional `extras`."""
    text = (ROOT / "pyproject.toml").read_text()
    blocks = [re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)]
    blocks += [re.search(rf"^{extra} = \[(.*?)\]", text, re.S | re.M).group(1) for extra in extras]
    return [name for block in blocks for name in re.findall(r'"([^"]+)"', block)]


def autograde(root, lab_name, sandbox="required"):
    """Gradescope's run_autograder: grade ROOT/submission into ROOT/results/results.json.

    The submission is read as batch grading reads one (one wrapping folder is fine); one that
    cannot be graded gets a results.json saying why. When the grader is at fault (no sandbox can
    be had, checks it could not grade) it writes no results and fails loudly (exit 3, the reason on
    stdout): Gradescope then shows a failed run to regrade, not a 0 for the student.
    """
    from grader.instructor.gradebook import not_graded
    from grader.judge.launchers import bubblewrap_works
    from grader.judge.sandbox import write_files
    from grader.runner import grade
    from grader.submissions import GRADABLE, read_submission

    root = Path(root)
    lab = find_lab(lab_name)
    files, status, detail = read_submission(lab, root / "submission")
    if status not in GRADABLE:
        report = not_graded(detail, "bubblewrap" if bubblewrap_works() else "process")
    elif sandbox == "required" and not bubblewrap_works():
        return _grader_fault("bubblewrap cannot run on this autograder, and this bundle refuses to grade "
                             "without it (export it with --sandbox auto to allow a plain process)")
    else:
        with tempfile.TemporaryDirectory(prefix="submission-") as folder:
            write_files(folder, files)
            try:
                results = grade(lab, folder, sandbox=sandbox)
            except SetupError as error:
                return _grader_fault(str(error))
        if results.faults:
            return _grader_fault("; ".join(dict.fromkeys(c.message for c in results.faults)))
        report = results.gradescope()
        if status == "broken_code":
            report.output += f"\n{detail}"
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "results.json").write_text(report.model_dump_json(indent=2))
    print(report.summary(), flush=True)         # run_autograder's stdout: what a failed run shows
    return 0
