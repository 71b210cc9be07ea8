"""Command line: parse arguments, call the right part, map outcomes to exit codes.

Exit status: 0 all passed, 1 graded with failures, 2 bad usage or a broken lab/file, 3 the grader
could not grade the submission (its own fault: nothing was charged, grade again).
Heavy modules (torch, pytest) are imported only by the commands that need them.
"""
import argparse
import functools
import sys
import traceback
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.errors import GraderError, LabError, UsageError
from grader.labs import find_lab

NOT_GRADED_STATUS = 3          # the grader could not grade the submission: its fault, regrade


def grade_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py", description="Grade a lab: python grade.py lab2 [--submission DIR]. "
        f"Other commands: {', '.join(COMMANDS)} (e.g. python grade.py quiz --help).")
    parser.add_argument("lab", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("--submission", metavar="DIR",
                        help="folder with your files (default: the lab's handout folder)")
    parser.add_argument("--json", metavar="FILE", help="write Gradescope results.json here")
    parser.add_argument("--watch", action="store_true",
                        help="grade again each time you save a file of the lab (Ctrl-C to stop)")
    parser.add_argument("--experiments", action="store_true",
                        help="run your experiments with progress, tables and plots instead of grading")
    parser.add_argument("--out", metavar="DIR", help="where --experiments puts its plots (default: plots)")
    parser.add_argument("-s", dest="show_output", action="store_true",
                        help="show all your code printed under each check, not only its first lines")
    return grading_options(parser)


def grading_options(parser):
    """The options every grading command takes."""
    parser.add_argument("-k", dest="select", action="append", default=[], metavar="NAME",
                        help="grade only checks of this function or file (repeatable), e.g. -k FUNCTION or -k FILE.py")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--sandbox", choices=("auto", "required", "process"), default="auto",
                        help="auto: bubblewrap when installed; required: refuse without it")
    return parser


def run_grade(args, console):
    from grader import report
    from grader.quiz.progress import lesson_after
    from grader.runner import grade, run_experiments

    if args.submission and Path(args.submission).suffix == ".zip":
        raise UsageError(f"--submission {args.submission}: unzip it first (grade.py batch reads .zip files)")
    if args.experiments:
        if args.select or args.json or args.watch or args.show_output or args.sandbox != "auto":
            raise UsageError("--experiments runs your experiments; it takes --submission, --device and --out")
        return run_experiments(find_lab(args.lab), args.submission, args.device, args.out or "plots")
    if args.out:
        raise UsageError("--out is where --experiments puts its plots; grading writes --json FILE")
    lab = find_lab(args.lab)
    if args.watch:
        from grader.watch import watch

        return watch(lab, console, args.submission, args.select, args.device, args.sandbox, args.json,
                     args.show_output)
    with report.progress(console) as on_progress:
        results = grade(lab, submission=args.submission, device=args.device, select=args.select,
                        sandbox=args.sandbox, show_output=args.show_output, on_progress=on_progress)
    if results.faults:          # not a grade: nothing is recorded, and no results.json is written
        report.show(results, lab, console)
        return NOT_GRADED_STATUS
    quiz = lesson_after(lab, results, own_copy=args.submission is None)
    report.show(results, lab, console, quiz=(lab.quiz is not None, quiz))
    if args.json:
        report.write_json(results, args.json)
    return 0 if results.all_passed else 1


# Subcommands: name -> (parser builder, runner). `python grade.py LAB ...` grades.
COMMANDS = {}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    console = Console(highlight=False)
    try:
        if argv and argv[0] in COMMANDS:
            build, run = COMMANDS[argv[0]]
            return run(build().parse_args(argv[1:]), console)
        return run_grade(grade_parser().parse_args(argv), console)
    except GraderError as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        return 130
    except ModuleNotFoundError as error:    # a package this command needs, or staff code not shipped
        from grader.preflight import install_hint

        why = f"{argv[0]} is for instructors: this copy of the course has no {error.name}" \
            if (error.name or "").startswith("grader.") else f"this Python lacks {error.name}. {install_hint()}"
        console.print(f"[bold red]error:[/] {escape(why)}", soft_wrap=True)
        return 2
    except Exception as error:          # a bug of the grader's: one line, not a traceback
        where = traceback.extract_tb(error.__traceback__)[-1]
        console.print(f"[bold red]the grader itself failed:[/] {escape(type(error).__name__)}: "
                      f"{escape(str(error))} ({Path(where.filename).name} line {where.lineno}); "
                      "please report it", soft_wrap=True)
        return 2


def quiz_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py quiz", description="Take a lesson test, or grade answers to one. "
        "Exit status: 0 passed, 1 not passed or stopped early, 2 bad input.")
    parser.add_argument("quiz", help="lab name (e.g. lab2) or path to a quiz .yaml")
    parser.add_argument("--answers", metavar="FILE",
                        help="grade these answers without asking (YAML/JSON: question id -> answer)")
    parser.add_argument("--json", metavar="OUT", help="write the result: score, max, passed, per question")
    parser.add_argument("--response", metavar="FILE",
                        help="exam form only: where your answers go (default: ./NAME-response.yaml)")
    parser.add_argument("--class", dest="class_csv", metavar="CSV",
                        help="instructor: grade a class (columns: student, one per question id, optionally "
                        "timestamp; a spreadsheet's CSV or tab-separated export in any common encoding)")
    parser.add_argument("--out", metavar="CSV", help="the gradebook CSV that --class writes")
    return parser


def run_quiz(args, console):
    from grader.quiz import terminal as quiz_tui
    from grader.quiz.grading import write_result
    from grader.quiz.model import find_quiz, load_quiz
    from grader.quiz.paths import input_file, output_file

    if bool(args.class_csv) != bool(args.out):
        raise UsageError("--class RESPONSES.csv and --out GRADEBOOK.csv go together")
    if args.class_csv and (args.answers or args.json):
        raise UsageError("--class grades a whole class into --out; it takes no --answers or --json")
    for option, name, check in [("--answers", args.answers, input_file), ("--class", args.class_csv, input_file),
                                ("--out", args.out, output_file), ("--json", args.json, output_file),
                                ("--response", args.response, output_file)]:
        if name:
            check(option, name)
    name, path = find_quiz(args.quiz)
    test = load_quiz(path)
    if args.class_csv:
        quiz_tui.grade_class(test, name, args.class_csv, args.out, console)
        return 0
    if test.keyed and args.response:
        raise UsageError("--response is for exam forms; practice attempts are recorded in .grade/")
    if args.answers:
        result = quiz_tui.grade_answers(test, name, args.answers, console)
    elif test.keyed:
        result = quiz_tui.take_practice(test, name, console)
    else:
        if args.json:
            raise UsageError("this quiz is an exam form with no answer key: nothing to write with --json")
        response = Path(args.response or f"{name}-response.yaml")
        return 0 if quiz_tui.take_exam(test, console, response) else 1
    if result is None:
        return 1
    if args.json:
        write_result(result, args.json)
    return 0 if result.passed else 1


COMMANDS["quiz"] = (quiz_parser, run_quiz)


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
    from grader.instructor import batch, paths

    lab = find_lab(args.lab)
    paths.existing_folder("SUBMISSIONS", args.submissions, "the class folder (a folder of student folders and .zips)")
    paths.output_folder("--out", args.out, "a folder (new, or this batch's earlier --out)")
    quiz = paths.existing_file("--quiz", args.quiz) if args.quiz else None
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers {args.workers}: expected 1 or more")
    backend = batch.grade_all
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
    parser.add_argument("--sandbox", choices=("required", "auto"), default="required",
                        help="required (default): without bubblewrap every submission gets 0 saying why; "
                        "auto: grade in a plain process then (student code can read the bundle)")
    return parser


def run_export(args, console):
    from grader.instructor import paths, release

    paths.new_file("--gradescope", args.gradescope, ".zip")
    lab = find_lab(args.lab)
    names = release.export_gradescope(lab, args.gradescope, sandbox=args.sandbox)
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


def check_lab_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py check-lab", description="Check that a lab is sound: manifest, checks, reference at "
        "full marks, stubs at 0, no forbidden call in the reference (docs/authoring.md). Exit status: "
        "0 sound, 1 problems (each a sentence), 2 a lab that cannot be read.")
    parser.add_argument("lab", nargs="?", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("--fields", action="store_true", help="print lab.yaml's fields (a markdown table)")
    return parser


def run_check_lab(args, console):
    from grader.author import check_lab

    if args.fields:
        print(check_lab.manifest_fields())
        return 0
    if not args.lab:
        raise UsageError("check-lab LAB: name a lab (e.g. lab2) or its folder")
    return check_lab.report(find_lab(args.lab), console)


COMMANDS["check-lab"] = (check_lab_parser, run_check_lab)


def mutants_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py mutants", description="Mutation testing of a lab's checks: grade small wrong versions "
        "of the reference's functions and report which the checks miss (docs/authoring.md).")
    parser.add_argument("lab", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("--function", action="append", default=[], metavar="F",
                        help="mutate only this function (repeatable; default: all of them)")
    parser.add_argument("--json", metavar="FILE", help="write the scores and surviving mutants here")
    parser.add_argument("--max", type=int, default=30, metavar="N", help="mutants per function (default 30)")
    parser.add_argument("--workers", type=int, metavar="N", help="grading processes (default: the machine's cores)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where mutants run: on a GPU, mutants that drop device= can be told apart")
    parser.add_argument("--sandbox", choices=("auto", "required", "process"), default="auto")
    return parser


def run_mutants(args, console):
    from grader.author import mutants

    if args.max < 1 or (args.workers is not None and args.workers < 1):
        raise UsageError("--max and --workers take a number of 1 or more")
    return mutants.audit(find_lab(args.lab), console, args.function, args.max, args.json,
                         {"workers": args.workers, "device": args.device, "sandbox": args.sandbox})


COMMANDS["mutants"] = (mutants_parser, run_mutants)
