"""The instructor's commands (batch, release, report, export, gradebook): grader/cli.py finds them
here, so that a learner's copy, which ships no grader/instructor/, has none of them."""
import argparse
import functools

from rich.markup import escape

from grader.cli import NOT_GRADED_STATUS, grading_options
from grader.errors import LabError, UsageError
from grader.labs import find_lab

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
    parser.add_argument("--quiz", metavar="QUIZ_CSV", help="the class quiz's gradebook (grade.py quiz --class): "
                        "grades.csv then shows quiz score and lesson complete")
    return grading_options(parser)


def run_batch(args, console):
    from grader import report
    from grader.instructor import batch, paths, workers

    lab = find_lab(args.lab)
    paths.existing_folder("SUBMISSIONS", args.submissions, "the class folder (a folder of student folders and .zips)")
    paths.output_folder("--out", args.out, "a folder (new, or this batch's earlier --out)")
    quiz = paths.existing_file("--quiz", args.quiz) if args.quiz else None
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
        summary = batch.grade_class(lab, args.submissions, args.out, console, workers=args.workers,
                                    force=args.force, select=args.select, device=args.device,
                                    sandbox=args.sandbox, backend=backend, students=args.student, quiz=quiz)
    except KeyboardInterrupt:
        console.print(f"[yellow]stopped:[/] what was graded is kept in {escape(args.out)} "
                      "(grades.csv lists the rest as pending); the same command grades the rest")
        raise
    report.show_batch(summary, console, args.out)
    return NOT_GRADED_STATUS if summary.statuses.get("regrade") else 0


COMMANDS["batch"] = (batch_parser, run_batch)


def release_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py release", description="Build the learners' copy of a lab: stubs, given files, "
        "README, the quiz, and a grader that gives public feedback (python grade.py LAB inside it). "
        "No reference solution, no hidden check, no quiz key in exam form.")
    parser.add_argument("lab", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    parser.add_argument("--quiz", choices=("exam", "practice"), default="exam",
                        help="exam: questions only (default); practice: with answers and explanations")
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
    return 0


COMMANDS["release"] = (release_parser, run_release)


def report_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py report", description="Write a batch's class page, OUT/report.html (self-contained), and "
        "each student's feedback.html and feedback.md in OUT/students/<student>/. A batch writes them too.")
    parser.add_argument("out", metavar="OUT", help="the output folder of grade.py batch")
    parser.add_argument("--lab", help="the lab (default: the one the batch graded)")
    parser.add_argument("--quiz", metavar="CSV", help="the class's lesson-test responses (columns: student, then "
                        "one per question id); default: OUT/quiz-responses.csv where it exists")
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
    parser.add_argument("--quiz", metavar="QUIZ_CSV", help="the class quiz's gradebook (grade.py quiz --class)")
    parser.add_argument("--timestamps", metavar="FILE", help="CSV: student, submitted_at (ISO 8601 with a zone)")
    parser.add_argument("--lab", help="the lab whose deadline applies (default: the batch's)")
    parser.add_argument("--scale", choices=("points", "percent"), default="points")
    parser.add_argument("--column", metavar="NAME", help="the assignment's column (default: the lab's name)")
    parser.add_argument("--quiz-column", metavar="NAME", help="the quiz's column (default: COLUMN quiz)")
    parser.add_argument("--missing", choices=("zero", "blank"), default="zero",
                        help="what a roster student with no submission gets (default: zero)")
    late = parser.add_argument_group("late policy (overrides lab.yaml's deadline)")
    late.add_argument("--due", metavar="TIME", help="ISO 8601 with a zone, e.g. 2026-12-01T23:59:00+01:00")
    late.add_argument("--grace", dest="grace_minutes", type=float, metavar="MINUTES")
    late.add_argument("--penalty", type=float, metavar="PERCENT", help="of the points, per day or hour late")
    late.add_argument("--per", choices=("day", "hour"))
    late.add_argument("--cap", type=float, metavar="PERCENT", help="the largest penalty")
    late.add_argument("--after-cap", choices=("keep", "zero"), help="past the cap: keep the capped penalty, or 0")
    return parser


def run_gradebook(args, console):
    from grader.instructor import export, paths
    from grader.instructor.deadlines import parse_time
    from grader.results import one_line

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
    lines = export.gradebook(out, args.format, dest, lab, overrides=overrides, scale=args.scale, column=args.column,
                             quiz_column=args.quiz_column, missing=args.missing, **files)
    for line in (line for line in lines if line.notes):
        console.print(f"[yellow]note:[/] {escape(one_line(line.student))}: {escape(one_line('; '.join(line.notes)))}",
                      soft_wrap=True)
    console.print(f"[green]wrote[/] {escape(str(dest))} ({args.format}): {len(lines)} students, "
                  f"{sum('not on the roster' in line.notes for line in lines)} of them not on the roster")
    return 0


COMMANDS["gradebook"] = (gradebook_parser, run_gradebook)
