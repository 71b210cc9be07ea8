"""Command line: parse arguments, call the right part, map outcomes to exit codes.

Exit status: 0 all passed, 1 graded with failures, 2 bad usage or a broken lab/file.
Heavy modules (torch, pytest) are imported only by the commands that need them.
"""
import argparse
import functools
import sys
import traceback
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.errors import GraderError, UsageError
from grader.labs import find_lab


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
        if args.select or args.json or args.watch or args.sandbox != "auto":
            raise UsageError("--experiments runs your experiments; it takes --submission, --device and --out")
        return run_experiments(find_lab(args.lab), args.submission, args.device, args.out or "plots")
    if args.out:
        raise UsageError("--out is where --experiments puts its plots; grading writes --json FILE")
    lab = find_lab(args.lab)
    if args.watch:
        from grader.watch import watch

        return watch(lab, console, args.submission, args.select, args.device, args.sandbox, args.json)
    results = grade(lab, submission=args.submission, device=args.device, select=args.select,
                    sandbox=args.sandbox)
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
                        help="instructor: grade a class (columns: student, then one per question id)")
    parser.add_argument("--out", metavar="CSV", help="the gradebook CSV that --class writes")
    return parser


def run_quiz(args, console):
    from grader.quiz import terminal as quiz_tui
    from grader.quiz.grading import write_result
    from grader.quiz.model import find_quiz, load_quiz

    if bool(args.class_csv) != bool(args.out):
        raise UsageError("--class RESPONSES.csv and --out GRADEBOOK.csv go together")
    if args.class_csv and (args.answers or args.json):
        raise UsageError("--class grades a whole class into --out; it takes no --answers or --json")
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
        "regrades only changed submissions. Exit status: 0 done, 1 some submissions met a grader "
        "error (rerun them), 2 bad input, 130 interrupted (what was graded is kept).")
    parser.add_argument("lab", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("submissions", metavar="SUBMISSIONS", help="folder of student folders and .zip files")
    parser.add_argument("--out", required=True, metavar="OUT", help="where the gradebook and results go")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="grading processes (default: the machine's cores, or the cluster's with --ray)")
    parser.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                        help="grade on Ray: alone, a Ray instance on this machine; with auto or "
                        "ray://HOST:PORT, the running cluster there (needs pip install -e '.[cluster]')")
    parser.add_argument("--force", action="store_true", help="regrade students whose files have not changed")
    return grading_options(parser)


def run_batch(args, console):
    from grader import report
    from grader.instructor import batch

    lab = find_lab(args.lab)
    if not Path(args.submissions).is_dir():
        raise UsageError(f"submissions folder {args.submissions} does not exist")
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
                                    sandbox=args.sandbox, backend=backend)
    except KeyboardInterrupt:
        console.print(f"[yellow]stopped:[/] what was graded is kept in {escape(args.out)} "
                      "(grades.csv lists the rest as pending); the same command grades the rest")
        raise
    report.show_batch(summary, console, args.out)
    return 1 if summary.statuses.get("error") else 0


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
    from grader.instructor import release

    lab = find_lab(args.lab)
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out}: expected a new or empty folder")
    files = release.release(lab, out, quiz=args.quiz, ignore_working_copy=args.ignore_working_copy)
    console.print(f"[green]released[/] {lab.name} to {escape(str(out))}: {len(files)} files "
                  f"(quiz: {args.quiz if lab.quiz else 'none'}). Learners run: python grade.py {lab.name}")
    return 0


COMMANDS["release"] = (release_parser, run_release)


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
    from grader.instructor import release

    if not args.gradescope.endswith(".zip"):
        raise UsageError(f"--gradescope {args.gradescope}: expected a .zip path")
    lab = find_lab(args.lab)
    names = release.export_gradescope(lab, args.gradescope, sandbox=args.sandbox)
    console.print(f"[green]wrote[/] {escape(args.gradescope)}: {len(names)} files; upload it as the "
                  "autograder of a Gradescope programming assignment (Ubuntu base image)")
    return 0


COMMANDS["export"] = (export_parser, run_export)


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
