"""A Gradescope autograder: the bundle (`export_gradescope`), what setup.sh checks once the image
is built (`check_sandbox`), and what run_autograder runs for each submission (`autograde`).

Gradescope runs both scripts as root in a Docker container, whose default seccomp profile
refuses the namespaces bubblewrap needs. A submission is then graded in the strongest sandbox
that works there: bubblewrap, else the process sandbox as root (a user of its own, seccomp,
rlimits, fresh mounts and no network where the kernel gives root those namespaces). Without
mounts nothing is hidden from that user, so the judge's files are made unreadable to it: the
bundle (hidden checks, reference, grader), the results and the upload are root's alone (0700).
setup.sh fails, saying why, where neither sandbox can keep a submission from the judge.
"""
import os
import platform
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from grader.base.errors import SetupError
from grader.base.kinds import Timing
from grader.core.results import GradescopeResults, GradescopeTest, LabResults, Visibility
from grader.instructor import deadlines
from grader.instructor.release import CPU_TORCH, dependencies, stage
from grader.readers.manifest import find_lab

if TYPE_CHECKING:
    from grader.judge.launchers import BubblewrapLauncher, ProcessLauncher
    from grader.readers.manifest import Deadline, Lab

# No index is waited on for minutes, nothing built from source, nothing compiled ahead (the
# smoke grading imports what grading needs, and its compiled copies stay in the image)
PIP = "--quiet --disable-pip-version-check --retries 1 --timeout 20 --no-compile --only-binary :all:"
VERDICT = "sandbox.txt"             # in source/: the sandbox setup.sh found working
VENV = "venv"                       # beside source/: setup.sh's, the one folder the sandbox reads
METADATA = deadlines.METADATA            # Gradescope's, beside submission/: the judge's to read, as root
CUDA_ONLY = ("nvidia-", "cuda-", "triton")   # what only torch's CUDA build needs: never pinned

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, to build the autograder image: Python's venv module and
# bubblewrap where missing, the grader's pinned packages (torch's CPU build: no CUDA libraries),
# then which sandbox grades here; it fails, saying why, where none keeps a submission from the
# judge. AUTOGRADER (default /autograder); GRADER_PYTHON: a Python with the packages (tests).
set -euo pipefail
AUTOGRADER="${AUTOGRADER:-/autograder}"
PYTHON="${GRADER_PYTHON:-}"
if [ -z "$PYTHON" ]; then
    missing=()
    command -v bwrap >/dev/null || missing+=(bubblewrap)
    python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3 python3-venv)
    if [ ${#missing[@]} -gt 0 ]; then
        apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
    have=$(python3 -c 'import platform; print(".".join(platform.python_version_tuple()[:2]))')
    if [ "$have" != "%(python)s" ]; then
        echo "setup.sh: the packages are pinned from Python %(python)s, this image has $have: pip may find no wheel" >&2
    fi
    python3 -m venv "$AUTOGRADER/venv"
    PYTHON="$AUTOGRADER/venv/bin/python"
    "$PYTHON" -m pip install %(pip)s --no-deps --index-url %(cpu)s "torch==%(torch)s"
    "$PYTHON" -m pip install %(pip)s --no-deps -r "$AUTOGRADER/source/requirements.txt"   # all it needs
fi
cd "$AUTOGRADER/source"
exec "$PYTHON" -c 'import sys, grader.instructor.gradescope as g; sys.exit(g.check_sandbox(*sys.argv[1:]))' \\
    "$AUTOGRADER" "%(lab)s" "%(sandbox)s"
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this per submission: grade $AUTOGRADER/submission into
# $AUTOGRADER/results/results.json. AUTOGRADER (default /autograder) and GRADER_PYTHON (default:
# the venv setup.sh made) can be set to run it elsewhere, e.g. in tests with an existing venv.
set -euo pipefail
AUTOGRADER="${AUTOGRADER:-/autograder}"
PYTHON="${GRADER_PYTHON:-$AUTOGRADER/venv/bin/python}"
cd "$AUTOGRADER/source"
exec "$PYTHON" -c 'import sys, grader.instructor.gradescope as g; sys.exit(g.autograde(*sys.argv[1:]))' \\
    "$AUTOGRADER" "%(lab)s" "%(sandbox)s"
"""


def export_gradescope(lab: "Lab", zip_path: str | os.PathLike, sandbox: str = "auto") -> list[str]:
    """A Gradescope autograder bundle for `lab` at `zip_path`; returns the names in it.

    `sandbox`: "auto" (the default) grades in the strongest sandbox the container allows
    (bubblewrap, else the process sandbox as root); "required" only in bubblewrap.
    """
    with tempfile.TemporaryDirectory(prefix="gradescope-") as folder:
        work = Path(folder)
        stage(lab, work, hidden=True, reference=True)
        (work / "requirements.txt").write_text(pinned_requirements())
        values = {"cpu": CPU_TORCH, "pip": PIP, "torch": public_version(metadata.version("torch")),
                  "python": ".".join(platform.python_version_tuple()[:2]), "lab": lab.name, "sandbox": sandbox}
        (work / "setup.sh").write_text(SETUP % values)
        (work / "run_autograder").write_text(RUN % values)
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


def public_version(version: str) -> str:
    """A version without its local label: 2.13.0+cpu -> 2.13.0, which any build of it matches."""
    return version.split("+")[0]


def pinned_requirements() -> str:
    """requirements.txt of the bundle: the grader's packages and all they need, at the versions
    installed here, found by their metadata; none of the CUDA build's own libraries."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, tuple[str, set[str]]] = {}
    todo = [(Requirement(text), "") for text in dependencies()]
    while todo:
        requirement, extra = todo.pop()
        name = canonicalize_name(requirement.name)
        if name.startswith(CUDA_ONLY) or (requirement.marker and not requirement.marker.evaluate({"extra": extra})):
            continue
        wanted = set(requirement.extras) - found.get(name, (None, set()))[1]
        if name in found and not wanted:
            continue
        version = found[name][0] if name in found else public_version(metadata.version(name))
        found[name] = (version, found.get(name, (None, set()))[1] | set(requirement.extras))
        for text in metadata.requires(name) or []:
            todo += [(Requirement(text), e) for e in ["", *wanted]]
    lines = [f"{name}=={version}" for name, (version, _) in sorted(found.items())]
    return f"# The grader's packages as `grade.py export` found them: Python {platform.python_version()} on " \
        f"{platform.system()} {platform.machine()}\n" + "\n".join(lines) + "\n"


# -- in the container ---------------------------------------------------------------------------
def lock_judge_files(root: Path) -> None:
    """Make the judge's files root's alone: everything in `root` (the bundle, the results, the
    upload, Gradescope's metadata and whatever else its image keeps there) but the venv the
    sandbox's Python runs from, and `root` itself may be entered, not listed. The process
    sandbox's user, hidden nothing by mounts, reads none of them."""
    for name in ("source", "results", "submission"):
        (root / name).mkdir(exist_ok=True)
    os.chmod(root, 0o711)
    for path in root.iterdir():
        if path.name != VENV and not path.is_symlink():
            os.chmod(path, path.stat().st_mode & 0o700)


def choose_launcher(mode: str, verdict: str | None = None) -> "BubblewrapLauncher | ProcessLauncher":
    """The strongest sandbox that works here: bubblewrap (unless setup.sh's `verdict` found it
    failing), else, as root and unless `mode` is "required", the process sandbox. SetupError
    where neither keeps a submission from the judge."""
    from grader.judge.launchers import BubblewrapLauncher, ProcessLauncher, bubblewrap_works

    if verdict != "process" and bubblewrap_works():
        return BubblewrapLauncher()
    why = "bubblewrap cannot run here" if verdict != "process" else "bubblewrap failed when setup.sh tried it"
    if mode == "required":
        raise SetupError(f"{why}, and this bundle grades only in bubblewrap (export it with --sandbox auto "
                         "to allow the process sandbox)")
    if os.getuid() != 0:
        raise SetupError(f"{why}, and the process sandbox keeps a submission from the judge only as root "
                         f"(this is uid {os.getuid()})")
    return ProcessLauncher()


def in_words(facts: Mapping[str, str]) -> str:
    """A launcher's facts as one line for a log."""
    return f"sandbox {facts['sandbox']}: the submission's user: {facts['user']}; mounts: {facts['mounts']}; " \
        f"network: {facts['network']}"


def check_sandbox(root: str | os.PathLike, lab_name: str, mode: str = "auto") -> int:
    """setup.sh's last step: lock the judge's files, then grade the lab's stubs (one function's
    checks) in the strongest sandbox, then in the next if that fails; keep the one that worked
    in source/sandbox.txt. Exit status 1, saying why, when none did."""
    from grader.core.request import Device, Request, Selection
    from grader.core.runner import grade
    from grader.judge.zygote import Zygote

    root = Path(root)
    lock_judge_files(root)
    lab, verdict, why = find_lab(lab_name), None, ""
    while True:
        try:
            launcher = choose_launcher(mode, verdict)
        except SetupError as error:
            print(f"setup.sh: no sandbox here keeps a submission from the judge: {error}{why}", flush=True)
            return 1
        zygote = Zygote(launcher)
        try:
            results = grade(Request(lab, None, Device.CPU, Selection(tuple(lab.functions)[:1])), zygote)
            failed = "; ".join(dict.fromkeys(c.message for c in results.faults))
        except SetupError as error:
            failed = str(error)
        finally:
            zygote.close()
        if not failed:
            (root / "source" / VERDICT).write_text(launcher.name + "\n")
            print(f"setup.sh: grading in the {in_words(launcher.facts())}", flush=True)
            return 0
        if launcher.name == "process":
            print(f"setup.sh: the process sandbox failed: {failed}{why}", flush=True)
            return 1
        verdict, why = "process", f" (bubblewrap failed: {failed})"


def _grader_fault(why):
    """The autograder's own failure: said on stdout, no results.json, exit status 3."""
    print(f"The grader could not grade this submission, through no fault of the student's: {why}. "
          "Nothing was recorded; regrade it once the autograder is fixed.", flush=True)
    return 3


def autograde(root: str | os.PathLike, lab_name: str, sandbox: str = "auto") -> int:
    """Gradescope's run_autograder: grade ROOT/submission into ROOT/results/results.json.

    The submission is read as batch grading reads one (one wrapping folder is fine); one that
    cannot be graded gets a results.json saying why. When the grader is at fault (no sandbox can
    be had, checks it could not grade) it writes no results and fails loudly (exit 3, the reason on
    stdout): Gradescope then shows a failed run to regrade, not a 0 for the student. The sandbox
    it graded in is said in extra_data and on stdout.
    """
    from grader.core.request import Request
    from grader.core.runner import grade
    from grader.core.submissions import GRADABLE, read_submission
    from grader.instructor.gradebook import not_graded
    from grader.judge.sandbox import write_files
    from grader.judge.zygote import Zygote
    from grader.readers.notebook import notes

    root = Path(root)
    lock_judge_files(root)          # before any student code runs
    submitted, members = deadlines.gradescope_time(root)     # Gradescope's, read before any student code runs
    lab = find_lab(lab_name)
    verdict = root / "source" / VERDICT
    try:
        launcher = choose_launcher(sandbox, verdict.read_text().strip() if verdict.is_file() else None)
    except SetupError as error:
        return _grader_fault(str(error))
    print(f"grading in the {in_words(launcher.facts())}", flush=True)
    files, status, detail = read_submission(lab, root / "submission")
    if status not in GRADABLE:
        report = not_graded(detail, launcher.name)
    else:
        zygote = Zygote(launcher)
        with tempfile.TemporaryDirectory(prefix="submission-") as folder:
            write_files(folder, files)
            try:
                results = grade(Request(lab, Path(folder), laid_out=True), zygote)
            except SetupError as error:
                return _grader_fault(str(error))
            finally:
                zygote.close()
        if results.faults:
            return _grader_fault("; ".join(dict.fromkeys(c.message for c in results.faults)))
        report = students_total(results, lab.manifest.score_visibility)
        if status == "broken_code":
            report.output += f"\n{detail}"
        elif said := notes(files):         # an uploaded notebook's: what grading did not run, and why
            report.output += "\n" + "\n".join(said)
        late_policy(report, lab.manifest.deadline, submitted, members, results.max_score)
    report.extra_data.update(launcher.facts())
    (root / "results" / "results.json").write_text(report.model_dump_json(indent=2))
    print(report.summary(), flush=True)         # run_autograder's stdout: what a failed run shows
    return 0


def students_total(results: LabResults, score_visibility: Visibility | None) -> GradescopeResults:
    """results.json for Gradescope, where students see their total by default: Gradescope hides it
    while any test is hidden, so the hidden checks are one visible line with their points and no
    detail, as the terminal shows them. `score_visibility` (lab.yaml's), where set, keeps each
    hidden check hidden and the total as it says (e.g. hidden, after_due_date)."""
    report = results.gradescope(score_visibility)
    hidden = [t for t in report.tests if t.visibility == "hidden"]
    if score_visibility is not None or not hidden:
        return report
    shown = [t for t in report.tests if t.visibility != "hidden"]
    line = GradescopeTest(name=f"{len(hidden)} hidden checks", number=str(len(shown) + 1),
                          score=sum(t.score for t in hidden), max_score=sum(t.max_score for t in hidden),
                          status="passed" if all(t.status == "passed" for t in hidden) else "failed",
                          output="Their points count; their details stay hidden.", visibility="visible", tags=[])
    rest = report.output.split("\n")[1:]
    return report.model_copy(update={
        "tests": [*shown, line],
        "output": "\n".join([f"{results.title}: {results.score:g}/{results.max_score:g} points", *rest])})


def total_in_words(score_visibility: Visibility | None) -> str:
    """What `export` says of the total students see on Gradescope."""
    if score_visibility is None:
        return "students see their total; the hidden checks show as one line with their points (set " \
            "score_visibility in lab.yaml to hide the total)"
    return f"the total is {score_visibility.replace('_', ' ')} to students (lab.yaml's score_visibility), " \
        "each hidden check hidden"


def late_policy(report: GradescopeResults, policy: "Deadline | None", submitted: datetime | None,
                members: Sequence[deadlines.Member], max_score: float | None) -> None:
    """The lab's late policy (lab.yaml's deadline) applied to `report` at Gradescope's own time of
    the submission, each member (deadlines.Member) against their own due time on Gradescope (an
    extension included; None: lab.yaml's), both from its metadata beside the submission, never
    from a file the student sent. A group's one score carries the largest penalty of its members,
    whatever their order, and the output says each member's. No policy, nothing; no time, said,
    not cut."""
    if policy is None:
        return
    report.extra_data["time_source"] = "gradescope" if submitted else "unknown"
    if submitted is None:
        report.extra_data["timing"] = f"{Timing.UNKNOWN}: no late policy applied"
        report.output += "\nThe submission time is unknown here: no late policy was applied."
        return
    report.extra_data["submitted_at"] = submitted.isoformat()
    judged, late = deadlines.group_lateness(policy, submitted, members)
    if len(judged) > 1:
        each = "; ".join(f"{member.name}: {_verdict(member_late)} (due {(member.due or policy.due).isoformat()})"
                         for member, member_late in judged)
        report.extra_data["members"] = each
        report.output += f"\nEach member against their own due time: {each}."
        if late is not None:
            report.output += " The group's score carries the largest penalty."
    if late is None:
        report.extra_data["timing"] = Timing.ON_TIME.value
        return
    cut = _verdict(late)
    report.extra_data["timing"] = cut
    report.score = 0.0 if late.zeroed else max(report.score - (max_score or 0) * late.penalty_percent / 100, 0.0)
    report.output += f"\nSubmitted {cut} under the lab's late policy."


def _verdict(late):
    """'on time', or '1 d 2.0 h late: -20%' (or the score 0 past the cap)."""
    if late is None:
        return Timing.ON_TIME.value
    return f"{deadlines.describe(late)}: " + ("score 0 past the late policy's cap" if late.zeroed
                                              else f"-{late.penalty_percent:g}%")
