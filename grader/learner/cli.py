"""Command line: parse arguments, call the right part, map outcomes to exit codes.

Exit status: 0 all passed, 1 graded with failures, 2 bad usage or a broken lab/file, 3 the grader
could not grade the submission (its own fault: nothing was charged, grade again).
Heavy modules (torch, pytest) are imported only by the commands that need them.
"""
import argparse
import dataclasses
import sys
import traceback
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.base import collector
from grader.base.errors import GraderError, UsageError
from grader.core.request import (  # noqa: F401
    NOT_GRADED_STATUS,
    Device,
    Observers,
    Output,
    Request,
    SandboxKind,
    Selection,
    grading_options,
)
from grader.learner import handin, head_start
from grader.learner.arguments import grade_parser, grading_request
from grader.readers.manifest import find_lab


def run_grade(args, console, zygote=None):
    """A grading, --watch or --experiments; `zygote`: the one grade.py started (head_start), which
    its caller closes."""
    if args.submission and Path(args.submission).suffix == ".zip":
        raise UsageError(f"--submission {args.submission}: unzip it first (grade.py batch reads .zip files)")
    if args.experiments:
        if args.select or args.json or args.watch or args.show_output or args.sandbox != "auto":
            raise UsageError("--experiments runs your experiments; it takes --submission, --device and --out")
        from grader.core.runner import run_experiments

        lab = find_lab(args.lab)
        collector.resume()
        console.print(f"[bold]running {escape(lab.name)}'s experiments[/] [dim](importing torch, then each "
                      "experiment with its progress; Ctrl-C stops and keeps what finished)[/]")
        return run_experiments(lab, args.submission, args.device, args.out or "plots")
    if args.out:
        raise UsageError("--out is where --experiments puts its plots; grading writes --json FILE")
    request = grading_request(args, find_lab(args.lab))     # a bad -k is refused here, before anything starts
    own = zygote is None and not args.watch
    if own:
        zygote = head_start.early_zygote(request.sandbox)
    try:
        return _grade(request, console, zygote, args.watch)
    finally:
        if own and zygote is not None:
            zygote.close()


def _grade(request, console, zygote, watching):
    """One grading on `zygote` (one started early), else on this checkout's warm grader when one
    answers, else cold (or, `watching`, a --watch session): the report, and finish()'s exit status."""
    if watching:
        from grader.learner.watch import watch

        return watch(request, console)
    from grader.core.runner import grade
    from grader.learner import report, serve

    client = None if zygote else serve.WarmClient.for_checkout(request.lab, request.sandbox)
    with report.progress(console) as on_progress:
        observed = dataclasses.replace(request, observers=Observers(on_progress))
        results = grade(observed, zygote, ending=True) if zygote else serve.grade(observed, client)
    if zygote:
        zygote.end()            # it dies while the report is written; its close waits for it
    return report.ended(results, request, console, client.served_by if client is not None else None)


def serve_parser():
    parser = argparse.ArgumentParser(
        prog="grade.py serve", description="Keep a warm grader for a lab of this checkout: grade.py LAB, "
        "--watch and the notebook's check are then answered by it, without starting torch or a sandbox. "
        "It stops with --stop, or after --idle seconds with no grading.")
    parser.add_argument("lab", nargs="?", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("--stop", action="store_true", help="stop this checkout's warm graders")
    parser.add_argument("--foreground", action="store_true", help="serve in this terminal until Ctrl-C")
    parser.add_argument("--idle", type=float, default=None, metavar="SECONDS",
                        help="stop after this long with no grading (default: 15 minutes)")
    parser.add_argument("--sandbox", choices=[k.value for k in SandboxKind], default="auto")
    return parser


def run_serve(args, console):
    from grader.learner import serve

    if args.stop:
        if args.lab or args.foreground:
            raise UsageError("--stop stops every warm grader of this checkout; it takes no lab")
        count = serve.stop_all()
        console.print(f"stopped {count} warm grader{'s' * (count != 1)}")
        return 0
    if not args.lab:
        raise UsageError("grade.py serve LAB: which lab to keep warm (or --stop)")
    if args.idle is not None and args.idle <= 0:
        raise UsageError(f"--idle {args.idle:g}: expected seconds above 0")

    lab, kind, idle = find_lab(args.lab), SandboxKind(args.sandbox), args.idle or serve.IDLE_SECONDS
    if args.foreground:
        server = serve.Server(lab, kind, idle)
        console.print(f"warm grader for {escape(lab.name)} at {escape(str(server.path))} · Ctrl-C stops it")
        try:
            server.serve()
        except KeyboardInterrupt:
            pass
        return 0
    if serve.WarmClient.for_checkout(lab, kind) is not None:
        console.print(f"a warm grader for {escape(lab.name)} runs already")
        return 0
    with console.status(f"starting a warm grader for {escape(lab.name)}"):
        pid = serve.start(lab, kind, idle)
    console.print(f"warm grader for {escape(lab.name)} started (pid {pid}): grade.py {escape(lab.name)} uses "
                  f"it; it stops after {idle:g} s idle, or with grade.py serve --stop")
    return 0


# Subcommands: name -> (parser builder, runner). `python grade.py LAB ...` grades. The staff's
# commands are registered by their own modules, which a learner's copy of the course does not ship:
# name -> its room (tests/learner/test_cli.py holds this table to their registrations).
COMMANDS = {}
STAFF = {**dict.fromkeys(("batch", "release", "report", "export", "gradebook", "adjust"), "instructor"),
         **dict.fromkeys(("check-lab", "mutants"), "author")}


def command(name):
    """The (parser builder, runner) of subcommand `name`; ModuleNotFoundError for a staff command
    in a learner's copy."""
    if name in COMMANDS:
        return COMMANDS[name]
    return staff_commands(STAFF[name])[name]


def staff_commands(room):
    """The commands the staff's room registers: the instructors' or the course authors'."""
    if room == "instructor":
        from grader.instructor import commands
    else:
        from grader.author import commands
    return commands.COMMANDS


def main(argv=None, zygote=None):
    """grade.py's command `argv`; `zygote`: a grading's, started by grade.py (head_start), which
    grade.py closes."""
    argv = sys.argv[1:] if argv is None else list(argv)
    console = Console(highlight=False)
    try:
        if argv and (argv[0] in COMMANDS or argv[0] in STAFF):
            collector.resume()          # a grading collects once its checks are collected; others now
            build, run = command(argv[0])
            return run(build().parse_args(argv[1:]), console)
        return run_grade(grade_parser([*COMMANDS, *STAFF]).parse_args(argv), console, zygote)
    except GraderError as error:
        from grader.learner.report import said

        said(error, console)
        return 2
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        return 130
    except ModuleNotFoundError as error:    # a package this command needs, or staff code not shipped
        from grader.learner.preflight import install_hint

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
COMMANDS["pack"] = (handin.parser, handin.run)
COMMANDS["serve"] = (serve_parser, run_serve)
