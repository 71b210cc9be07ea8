"""The one reader of grade.py's grading arguments: its parser, the Request they make, and whether
they ask for a plain grading (which this checkout's warm grader may answer for grade.py itself:
grader/learner/express.py, serve.py)."""
import argparse
import contextlib
import io
from pathlib import Path

from grader.core.request import Device, Output, Request, SandboxKind, Selection, grading_options


def grade_parser(commands=()):
    """grade.py's parser of a grading; `commands`: the names of the others, for its help."""
    parser = argparse.ArgumentParser(
        prog="grade.py", description="Grade a lab: python grade.py lab2 [--submission DIR]. "
        f"Other commands: {', '.join(commands)} (e.g. python grade.py quiz --help).")
    parser.add_argument("lab", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("--submission", metavar="DIR",
                        help="folder with your files, or your notebook (.ipynb) (default: the lab's handout folder)")
    parser.add_argument("--json", metavar="FILE", help="write Gradescope results.json here")
    parser.add_argument("--watch", action="store_true",
                        help="grade again each time you save a file of the lab (Ctrl-C to stop)")
    parser.add_argument("--experiments", action="store_true",
                        help="run your experiments with progress, tables and plots instead of grading")
    parser.add_argument("--out", metavar="DIR", help="where --experiments puts its plots (default: plots)")
    parser.add_argument("-s", dest="show_output", action="store_true",
                        help="show all your code printed under each check, not only its first lines")
    return grading_options(parser)


def grading_request(args, lab):
    """The Request of a grading command's arguments (those of grading_options, and --submission,
    --json and -s where the command has them); UsageError for a --json that cannot be written."""
    from grader.quiz.paths import output_file

    json_path = getattr(args, "json", None)
    if json_path:
        output_file("--json", json_path)        # a folder, say: said before the grading, not after
    return Request(lab, getattr(args, "submission", None), Device(args.device),
                   Selection(tuple(args.select)), SandboxKind(args.sandbox),
                   Output(getattr(args, "show_output", False), Path(json_path) if json_path else None))


def plain_grading(argv):
    """grade.py's arguments read as grade.py reads them (paths as typed: a warm grader reads them
    in its client's folder), when they ask for a grading and nothing else (no --watch,
    --experiments, --out, zip or help: for those the command runs as ever); else None."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            args = grade_parser().parse_args(list(argv))
    except SystemExit:
        return None
    if args.watch or args.experiments or args.out or (args.submission or "").endswith(".zip"):
        return None
    return args
