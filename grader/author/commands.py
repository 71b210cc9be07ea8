"""The course author's commands (check-lab, mutants): grader/learner/cli.py finds them here; a learner's
copy ships no grader/author/."""
import argparse

from grader.base.errors import UsageError
from grader.readers.manifest import find_lab

COMMANDS = {}


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
