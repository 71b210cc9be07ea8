"""`python grade.py pack lab2`: the .zip a learner uploads, holding exactly what the course grades.

It holds the files that the course's own reader (grader/core/submissions.py) takes from the learner's
folder: the lab's student files, or the archive or notebook they are kept in where that is what the
reader finds (submissions.NESTED). The zip is then read back by that same reader, as a batch or
Gradescope reads an upload, and must give the same bytes: what is uploaded is what is graded.
"""
import argparse
import zipfile
from pathlib import Path

from rich.markup import escape

from grader.base.errors import UsageError
from grader.core.submissions import Rejected, handin_sources, read_submission
from grader.readers.manifest import find_lab


def parser():
    parser = argparse.ArgumentParser(
        prog="grade.py pack", description="Write the .zip to upload for a lab: exactly the files the course "
        "grades, read back as the course reads an upload. Exit status: 0 written, 2 nothing to hand in.")
    parser.add_argument("lab", help="lab name (e.g. lab2) or path to a lab folder")
    parser.add_argument("--submission", metavar="DIR", help="your folder (default: the lab's handout folder)")
    parser.add_argument("--out", metavar="ZIP", help="the zip to write (default: LAB-submission.zip here)")
    return parser


def pack(lab, folder, dest):
    """Write `dest`, a zip of what `folder` hands in for `lab`; returns (files the course will
    grade {name: bytes}, status, detail) as it reads `dest` back (the detail as it reads `folder`,
    which names a file left out for lying below the others). UsageError when there is nothing
    to hand in, or the zip does not read back as the folder does."""
    try:
        sources, files = handin_sources(lab, folder)
    except Rejected as why:
        raise UsageError(f"{folder}: {why}") from None
    if not files:
        raise UsageError(f"{folder} holds none of {', '.join(lab.manifest.student_files)}: nothing to hand in")
    part = dest.with_name(dest.name + ".part")
    with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sources.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    part.replace(dest)
    read, status, _ = read_submission(lab, dest)
    if read != files:
        dest.unlink()
        raise UsageError(f"{dest}: the zip does not read back as {folder} does (a grader fault: please report it)")
    return read, status, read_submission(lab, folder)[2]        # the folder's words: where each file is


def run(args, console):
    lab = find_lab(args.lab)
    folder = Path(args.submission) if args.submission else lab.handout
    if not folder.is_dir():
        raise UsageError(f"--submission {folder} " + ("is a file; expected your folder" if folder.exists()
                                                      else "does not exist"))
    dest = Path(args.out or f"{lab.name}-submission.zip")
    if dest.suffix.lower() != ".zip" or dest.is_dir() or not dest.absolute().parent.is_dir():
        raise UsageError(f"--out {dest}: expected a .zip path in a folder that exists")
    files, status, detail = pack(lab, folder, dest)
    console.print(f"[green]wrote[/] {escape(str(dest))}: {', '.join(map(escape, files))} "
                  f"({sum(map(len, files.values()))} bytes). Upload this file.", soft_wrap=True)
    if detail:
        console.print(f"[yellow]note:[/] {escape(detail)}", soft_wrap=True)
    return 0
