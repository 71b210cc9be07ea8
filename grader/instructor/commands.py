"""The instructor's commands (batch, release, report, export, gradebook): grader/cli.py finds them
here, so that a learner's copy, which ships no grader/instructor/, has none of them."""
import argparse
import functools

from rich.markup import escape

from grader.cli import NOT_GRADED_STATUS, grading_options
from grader.errors import LabError, UsageError
from grader.labs import find_lab
from grader.request import Device, SandboxKind, Selection

COMMANDS = {}


def batch_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py batch", description="Grade a class: one folder or .zip per student (named by "
        "student id) into OUT/grades.csv, OUT/<student>/results.json and a class summary. A rerun "
        "regrades only changed submissions, and those the grader could not grade (rows marked regrade). "
        "Exit status: 0 done, 2 bad input, 3 some submissions could not be graded through the grader's "
        "fault (no score given: run the same command again, or --student ID), 130 interrupted (what was "
        "graded is kept).")
    parser.add_argument("lab", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("submissions", metavar="SUBMISSIONS", help="folder of student folders and .zip files")
    parser.add_argument("--out", required=True, metavar="OUT", help="where the gradebook and results go")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="grading processes (default: the machine's cores, or the cluster's with --ray)")
    parser.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                        help="grade on Ray: alone, a Ray instance on this machine; with auto or "
                        "ray://HOST:PORT, the running cluster there (needs pip install -e '.[cluster]')")
    parser.add_argument("--force", action="store_true", help="regrade students whose files have not changed")
    parser.add_argument("--student", action="append", default=[], metavar="ID",
                        help="grade only this student (again, changed or not); repeatable")
    parser.add_argument("--quiz", metavar="QUIZ_CSV", help="the class quiz: a form's responses (student, one column "
                        "per question id) or its gradebook (grade.py quiz --class): grades.csv then shows quiz "
                        "score and lesson complete")
    timing_options(parser)
    parser.add_argument("--roster", metavar="FILE", help="the class roster (see grade.py gradebook): its extension "
                        "column moves a student's due time")
    return grading_options(parser)


def timing_options(parser):
    """Where submission times come from, and what an unknown one costs, under the lab's late policy."""
    parser.add_argument("--timestamps", metavar="FILE", help="CSV: student, submitted_at (ISO 8601 with a zone), "
                        "e.g. the LMS's export: the only source of submission times (a submission's own file "
                        "and zip dates are the student's to set, and never read)")
    assume = parser.add_mutually_exclusive_group()
    assume.add_argument("--assume-on-time", dest="assume", action="store_const", const="on time",
                        help="a submission whose time is unknown is on time (default: no mark until it is known)")
    assume.add_argument("--assume-late", dest="assume", action="store_const", const="late",
                        help="a submission whose time is unknown loses the late policy's cap")


def run_batch(args, console):
    from grader import report
    from grader.instructor import batch, paths, workers

    lab = find_lab(args.lab)
    paths.existing_folder("SUBMISSIONS", args.submissions, "the class folder (a folder of student folders and .zips)")
    paths.output_folder("--out", args.out, "a folder (new, or this batch's earlier --out)")
    quiz = paths.existing_file("--quiz", args.quiz) if args.quiz else None
    timing = batch.Timing(**{option: paths.existing_file(f"--{option}", getattr(args, option))
                             for option in ("timestamps", "roster") if getattr(args, option)}, assume=args.assume)
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers {args.workers}: expected 1 or more")
    backend = workers.grade_all
    if args.ray:
        if args.ray not in ("local", "auto") and not args.ray.startswith("ray://"):
            raise UsageError(f"--ray {args.ray}: expected nothing (a Ray instance here), auto or ray://HOST:PORT")
        if args.device == "cuda":
            raise UsageError("--ray grades on the cluster's CPUs; --device cuda grades with the local pool")
        if args.sandbox == "process":   # a plain child has the network, and Ray's services take anyone
            raise UsageError("--ray grades in bubblewrap only: a plain child could reach Ray's services, "
                             "which accept unauthenticated connections, and run code as the grader")
        args.sandbox = "required"       # on every node: a node without bubblewrap refuses, not falls back
        from grader.instructor import cluster

        cluster.load_ray(args.ray)          # refuses now, saying how to install it, where it is missing
        backend = functools.partial(cluster.grade_all, address=args.ray)
    try:
        plan = workers.Plan(Device(args.device), Selection(tuple(args.select)), SandboxKind(args.sandbox))
        request = batch.ClassRequest(plan, args.workers, args.force, tuple(args.student), quiz, timing)
        summary = batch.grade_class(lab, args.submissions, args.out, console, request, backend)
    except KeyboardInterrupt:
        console.print(f"[yellow]stopped:[/] what was graded is kept in {escape(args.out)} "
                      "(grades.csv lists the rest as pending); the same command grades the rest")
        raise
    report.show_batch(summary, console, args.out)
    show_timing(summary.timing, console)
    return NOT_GRADED_STATUS if summary.statuses.get("regrade") else 0


def show_timing(counts, console):
    """One line on lateness under the late policy: how many on time, late, of unknown time."""
    if counts:
        unknown = counts.get("time unknown", 0)
        console.print("late policy: " + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
                      + (f"[yellow]; {unknown} with no mark until their time is known (give --timestamps FILE, "
                         "or choose --assume-on-time or --assume-late)[/]" if unknown else ""), soft_wrap=True)


COMMANDS["batch"] = (batch_parser, run_batch)


def release_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py release", description="Build the learners' copy of a lab: stubs, given files, "
        "README, the quiz, and a grader that gives public feedback (python grade.py LAB inside it). "
        "No reference solution, no hidden check; the quiz's key only in its practice form (the default).")
    parser.add_argument("lab", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    parser.add_argument("--quiz", choices=("practice", "exam"), default="practice",
                        help="practice (default): with answers, explanations and reveals, for learners on their "
                        "own: attempts are kept and the lesson completes; exam: questions only, for a graded "
                        "class that hands its responses in")
    parser.add_argument("--ignore-working-copy", action="store_true",
                        help="release the pristine stubs even though the handout folder's copies differ")
    return parser


def run_release(args, console):
    from grader.instructor import paths, release

    lab = find_lab(args.lab)
    out = paths.output_folder("--out", args.out, "a new or empty folder")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out}: expected a new or empty folder")
    files = release.release(lab, out, quiz=args.quiz, ignore_working_copy=args.ignore_working_copy)
    console.print(f"[green]released[/] {lab.name} to {escape(str(out))}: {len(files)} files "
                  f"(quiz: {args.quiz if lab.quiz else 'none'}). Learners run: python grade.py {lab.name}")
    if lab.quiz and args.quiz == "practice":
        console.print("[yellow]the quiz is in its practice form: its answer key is in the release, for learners "
                      "on their own; for a graded class release with --quiz exam[/]")
    return 0


COMMANDS["release"] = (release_parser, run_release)


def report_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py report", description="Write a batch's class page, OUT/report.html (self-contained), and "
        "each student's feedback.html and feedback.md in OUT/students/<student>/. A batch writes them too.")
    parser.add_argument("out", metavar="OUT", help="the output folder of grade.py batch")
    parser.add_argument("--lab", help="the lab (default: the one the batch graded)")
    parser.add_argument("--quiz", metavar="CSV", help="the class's lesson-test responses (columns: student, then "
                        "one per question id) or their gradebook (grade.py quiz --class); default: "
                        "OUT/quiz-responses.csv where it exists")
    return parser


def run_report(args, console):
    from grader.instructor.page import write_report

    path = write_report(args.out, find_lab(args.lab) if args.lab else None, args.quiz)
    console.print(f"[green]wrote[/] {escape(str(path))} and a feedback page per student")
    return 0


COMMANDS["report"] = (report_parser, run_report)


def export_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py export", description="Build a Gradescope autograder .zip (setup.sh, run_autograder "
        "and this grader with the lab): it grades /autograder/submission into "
        "/autograder/results/results.json.")
    parser.add_argument("lab", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("--gradescope", required=True, metavar="OUT.zip", help="the autograder bundle to write")
    parser.add_argument("--sandbox", choices=("auto", "required"), default="auto",
                        help="auto (default): bubblewrap where the container allows it, else the process "
                        "sandbox as root (a user of its own, seccomp, the bundle unreadable to it); "
                        "required: bubblewrap only, else setup.sh fails")
    return parser


def run_export(args, console):
    from grader.instructor import gradescope, paths

    paths.new_file("--gradescope", args.gradescope, ".zip")
    lab = find_lab(args.lab)
    names = gradescope.export_gradescope(lab, args.gradescope, sandbox=args.sandbox)
    console.print(f"[green]wrote[/] {escape(args.gradescope)}: {len(names)} files; upload it as the "
                  "autograder of a Gradescope programming assignment (Ubuntu base image)")
    return 0


COMMANDS["export"] = (export_parser, run_export)


def gradebook_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py gradebook", description="Write the gradebook an LMS imports from a batch's --out "
        "folder: Canvas's or Moodle's CSV, or a plain CSV with lateness, penalty, quiz and lesson. "
        "Exit status: 0 written, 2 bad input.")
    parser.add_argument("batch_out", metavar="OUT", help="the --out folder of grade.py batch")
    parser.add_argument("--format", choices=("canvas", "moodle", "csv"), default="csv")
    parser.add_argument("--out", required=True, metavar="FILE", help="the CSV to write")
    parser.add_argument("--roster", metavar="FILE", help="CSV: student, id, sis_user_id, sis_login_id, email, "
                        "section, optional name and extension (hours, or the student's own due time)")
    parser.add_argument("--quiz", metavar="QUIZ_CSV", help="the class quiz: a form's responses or their gradebook "
                        "(grade.py quiz --class)")
    timing_options(parser)
    parser.add_argument("--lab", help="the lab whose deadline applies (default: the batch's)")
    parser.add_argument("--scale", choices=("points", "percent"), default="points")
    parser.add_argument("--column", metavar="NAME", help="the lab's column (default: the lab's name); Canvas: "
                        "'NAME (ID)', ID the Canvas assignment's id")
    parser.add_argument("--quiz-column", metavar="NAME", help="the quiz's column (default: COLUMN quiz; "
                        "Canvas: 'NAME (ID)', else left out)")
    parser.add_argument("--lesson-column", metavar="NAME", help="the lesson-complete column (default: COLUMN "
                        "lesson complete; Canvas: 'NAME (ID)', else left out)")
    parser.add_argument("--missing", choices=("zero", "blank"), default="zero",
                        help="what a roster student with no submission gets (default: zero)")
    late = parser.add_argument_group("late policy (overrides lab.yaml's deadline)")
    late.add_argument("--due", metavar="TIME", help="ISO 8601 with a zone, e.g. 2026-12-01T23:59:00+01:00, or "
                      "2026-12-01T23:59:00[Europe/Paris] to count days on that clock (summer time included)")
    late.add_argument("--grace", dest="grace_minutes", type=float, metavar="MINUTES")
    late.add_argument("--penalty", type=float, metavar="PERCENT", help="of the points, per day or hour late")
    late.add_argument("--per", choices=("day", "hour"))
    late.add_argument("--cap", type=float, metavar="PERCENT", help="the largest penalty")
    late.add_argument("--after-cap", choices=("keep", "zero"), help="past the cap: keep the capped penalty, or 0")
    return parser


def run_gradebook(args, console):
    from grader.instructor import export, paths
    from grader.instructor.deadlines import parse_time

    out = paths.existing_folder("OUT", args.batch_out, "a batch's --out folder")
    files = {option: paths.existing_file(f"--{option}", getattr(args, option)) if getattr(args, option) else None
             for option in ("roster", "quiz", "timestamps")}
    dest = paths.new_file("--out", args.out)
    if args.format != "csv" and not args.roster:
        raise UsageError(f"--format {args.format} matches students by the LMS's ids: give --roster FILE")
    overrides = {k: getattr(args, k) for k in ("due", "grace_minutes", "penalty", "per", "cap", "after_cap")
                 if getattr(args, k) is not None}
    if "due" in overrides:
        overrides["due"] = parse_time(overrides["due"], "--due")
    try:
        lab = find_lab(args.lab or export.load_batch(out)[0].lab)
    except LabError as error:
        raise error if args.lab else UsageError(f"{error}; name the batch's lab with --lab") from None
    columns = {kind: title for kind, title in (("lab", args.column), ("quiz", args.quiz_column),
                                               ("lesson", args.lesson_column)) if title}
    lines, unmatched, strays = export.gradebook(out, args.format, dest, lab, overrides=overrides, scale=args.scale,
                                                columns=columns, missing=args.missing, assume=args.assume, **files)
    if strays:
        console.print(f"[yellow]--timestamps: {len(strays)} name(s) match no submission:[/] "
                      f"{escape(', '.join(map(ascii, strays[:10])))}", soft_wrap=True)
    _show_gradebook(args, console, dest, lines, unmatched, columns)
    return 0


def _show_gradebook(args, console, dest, lines, unmatched, columns):
    from grader.instructor.deadlines import tally
    from grader.instructor.export import unmatched_path
    from grader.results import one_line

    for line in (line for line in lines if line.notes or line.matched):
        said = "; ".join(filter(None, [*line.notes, line.matched]))
        console.print(f"[yellow]note:[/] {escape(one_line(line.student))}: {escape(one_line(said))}", soft_wrap=True)
    if args.format == "canvas" and args.quiz:
        left = [f"{kind} (give --{kind}-column 'NAME (ID)')" for kind in ("quiz", "lesson") if kind not in columns]
        if left:
            console.print(f"[yellow]left out of the Canvas file:[/] {escape(', '.join(left))}", soft_wrap=True)
    show_timing(tally(line.row for line in lines if line.row), console)
    console.print(f"[green]wrote[/] {escape(str(dest))} ({args.format}): {len(lines) - len(unmatched)} students"
                  + (f"; [bold yellow]{len(unmatched)} not on the roster[/], left out of it and listed in "
                     f"{escape(str(unmatched_path(dest)))}" if unmatched else ""), soft_wrap=True)


COMMANDS["gradebook"] = (gradebook_parser, run_gradebook)
