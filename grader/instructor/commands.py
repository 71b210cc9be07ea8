"""The instructor's commands (batch, release, report, export, gradebook, adjust): grader/learner/cli.py finds them
here, so that a learner's copy, which ships no grader/instructor/, has none of them."""
import argparse
import functools
from collections.abc import Mapping
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.base.errors import LabError, UsageError
from grader.base.kinds import Timing
from grader.base.text import one_line
from grader.core.request import NOT_GRADED_STATUS, Device, SandboxKind, Selection, grading_options
from grader.instructor.lms import FORMATS
from grader.instructor.lms.common import Kind
from grader.readers.identity import identity
from grader.readers.manifest import find_lab

COMMANDS = {}


def batch_parser() -> argparse.ArgumentParser:
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


def timing_options(parser: argparse.ArgumentParser) -> None:
    """Where submission times come from, and what an unknown one costs, under the lab's late policy."""
    parser.add_argument("--timestamps", metavar="FILE", help="CSV: student, submitted_at (ISO 8601 with a zone), "
                        "e.g. the LMS's export: the only source of submission times (a submission's own file "
                        "and zip dates are the student's to set, and never read)")
    assume = parser.add_mutually_exclusive_group()
    assume.add_argument("--assume-on-time", dest="assume", action="store_const", const="on time",
                        help="a submission whose time is unknown is on time (default: no mark until it is known)")
    assume.add_argument("--assume-late", dest="assume", action="store_const", const="late",
                        help="a submission whose time is unknown loses the late policy's cap")


def run_batch(args: argparse.Namespace, console: Console) -> int:
    from grader.instructor import batch, paths, workers
    from grader.instructor.summary import show_batch

    lab = find_lab(args.lab)
    paths.existing_folder("SUBMISSIONS", args.submissions, "the class folder (a folder of student folders and .zips)")
    paths.output_folder("--out", args.out, "a folder (new, or this batch's earlier --out)")
    quiz = paths.existing_file("--quiz", args.quiz) if args.quiz else None
    timing = batch.TimeFiles(**{option: paths.existing_file(f"--{option}", getattr(args, option))
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
    show_batch(summary, console, args.out)
    show_timing(summary.timing, console)
    show_lists(lab, args.out, timing.roster, quiz, console, timing.timestamps)
    return NOT_GRADED_STATUS if summary.statuses.get("regrade") else 0


def show_timing(counts: Mapping[Timing, int], console: Console) -> None:
    """One line on lateness under the late policy: how many on time, late, of unknown time."""
    if counts:
        unknown = counts.get(Timing.UNKNOWN, 0)
        console.print("late policy: " + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
                      + (f"[yellow]; {unknown} with no mark until their time is known (give --timestamps FILE, "
                         "or choose --assume-on-time or --assume-late)[/]" if unknown else ""), soft_wrap=True)


def show_stranded(out, decided, console):
    """A line on the adjustments whose student has no submission now (grader.instructor.record.stranded)."""
    from grader.instructor import record

    said = record.stranded(out, decided) if decided else ""
    if said:
        console.print(f"[yellow]{escape(one_line(said))}[/]", soft_wrap=True)


def show_lists(lab, out, roster, quiz, console, timestamps=None):
    """A line on the roster (who matched, who is not on it, extensions), one on the quiz's rows
    (how many counted, each student's duplicate rows and which one counts) and one on the
    timestamps' names that match no submission, where given."""
    from pathlib import Path

    from grader.instructor import record
    from grader.instructor.deadlines import read_timestamps
    from grader.instructor.export import strays_in_words
    from grader.instructor.roster import read_roster

    decided = record.load(Path(out))
    strays = strays_in_words(read_timestamps(timestamps), decided.rows) if timestamps and decided else []
    if strays:
        console.print(f"[yellow]timestamps: {len(strays)} name(s) match no submission:[/] "
                      f"{escape('; '.join(strays[:10]))}", soft_wrap=True)
    graded = {identity(row.student): row.student for row in decided.rows} if decided else {}
    given = decided.deadline() if decided and decided.policy_from == "command line" else None
    if given is not None:
        console.print(f"late policy: the one grade.py gradebook was given (due {given.due.isoformat()}, "
                      f"-{given.penalty:g}% per {given.per}), kept from {record.RECORD}")
    adjusted = sum(bool(row.adjustments) for row in decided.rows) if decided else 0
    if adjusted:
        console.print(f"adjustments: {adjusted} student(s)' kept (grade.py adjust)")
    show_stranded(Path(out), decided, console)
    if roster:
        entries = read_roster(roster)
        strays = [name for key, name in graded.items() if key not in entries]
        extended = sum(bool(entry.extension) for entry in entries.values())
        console.print(f"roster: {len(entries)} students, {sum(key in graded for key in entries)} with a submission"
                      f", {extended} with an extension" + (f"; [yellow]not on it: "
                                                           f"{escape(', '.join(map(one_line, strays[:10])))}[/]"
                                                           if strays else ""), soft_wrap=True)
    if quiz and lab.quiz:
        from grader.base.errors import QuizError
        from grader.quiz.model import load_quiz
        from grader.quiz.responses import read_class

        try:
            answers = read_class(quiz, load_quiz(lab.quiz), lab.name)
        except QuizError:
            return                      # the batch read it already: said there
        doubles = [row for row in answers.rows if row.status.startswith("duplicate")]
        left = [row for row in answers.rows if row.result is None and row not in doubles]
        said = [f"quiz: {len(answers.counted())} students' rows counted"]
        if doubles:
            said.append(f"[yellow]{len(doubles)} duplicate row(s) left out[/] (" + escape("; ".join(
                f"{one_line(row.student)}: {row.status.removeprefix('duplicate: ')}" for row in doubles[:5])) + ")")
        if left:
            said.append(f"{len(left)} row(s) that count for nothing (" + escape("; ".join(
                f"row {row.row}: {one_line(row.status)}" for row in left[:5])) + ")")
        console.print(", ".join(said), soft_wrap=True)


COMMANDS["batch"] = (batch_parser, run_batch)


def release_parser() -> argparse.ArgumentParser:
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
    parser.add_argument("--url", default="", metavar="URL",
                        help="where the course will host OUT/LAB-handout.zip: the notebook's install cell "
                        "fetches it from there on Colab (the learner can also paste it into that cell)")
    return parser


def run_release(args: argparse.Namespace, console: Console) -> int:
    from grader.instructor import paths, release

    lab = find_lab(args.lab)
    out = paths.output_folder("--out", args.out, "a new or empty folder")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out}: expected a new or empty folder")
    files = release.release(lab, out, quiz=args.quiz, ignore_working_copy=args.ignore_working_copy, url=args.url)
    console.print(f"[green]released[/] {lab.name} to {escape(str(out))}: {len(files)} files "
                  f"(quiz: {args.quiz if lab.quiz else 'none'}). Learners run: python grade.py {lab.name}, or "
                  f"open {lab.name}.ipynb (Colab: host {lab.name}-handout.zip, pass its link with --url)")
    if lab.quiz and args.quiz == "practice":
        console.print("[yellow]the quiz is in its practice form: its answer key is in the release, for learners "
                      "on their own; for a graded class release with --quiz exam[/]")
    return 0


COMMANDS["release"] = (release_parser, run_release)


def report_parser() -> argparse.ArgumentParser:
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
    from pathlib import Path

    from grader.instructor import export
    from grader.instructor.page import write_report

    lab = find_lab(args.lab) if args.lab else None
    path = write_report(args.out, lab, args.quiz)
    if args.quiz:                   # the quiz shown is the one grades.csv keeps
        export.record_quiz(Path(args.out), lab, args.quiz)
    console.print(f"[green]wrote[/] {escape(str(path))} and a feedback page per student"
                  + (" (and the quiz's marks into grades.csv)" if args.quiz else ""))
    return 0


COMMANDS["report"] = (report_parser, run_report)


def export_parser() -> argparse.ArgumentParser:
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


def run_export(args: argparse.Namespace, console: Console) -> int:
    from grader.instructor import gradescope, paths

    paths.new_file("--gradescope", args.gradescope, ".zip")
    lab = find_lab(args.lab)
    names = gradescope.export_gradescope(lab, args.gradescope, sandbox=args.sandbox)
    console.print(f"[green]wrote[/] {escape(args.gradescope)}: {len(names)} files; upload it as the "
                  "autograder of a Gradescope programming assignment (Ubuntu base image)")
    console.print(f"total: {escape(gradescope.total_in_words(lab.manifest.score_visibility))}", soft_wrap=True)
    return 0


COMMANDS["export"] = (export_parser, run_export)


def gradebook_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grade.py gradebook", description="Write the gradebook an LMS imports from a batch's --out "
        "folder: Canvas's or Moodle's CSV, or a plain CSV with lateness, penalty, quiz and lesson. "
        "Exit status: 0 written, 2 bad input.")
    parser.add_argument("batch_out", metavar="OUT", help="the --out folder of grade.py batch")
    parser.add_argument("--format", choices=FORMATS, default="csv",
                        help="; ".join(f"{fmt.name}: {fmt.summary}" for fmt in FORMATS.values()))
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


def run_gradebook(args: argparse.Namespace, console: Console) -> int:
    from grader.instructor import export, paths
    from grader.instructor.deadlines import parse_time

    out = paths.existing_folder("OUT", args.batch_out, "a batch's --out folder")
    files = {option: paths.existing_file(f"--{option}", getattr(args, option)) if getattr(args, option) else None
             for option in ("roster", "quiz", "timestamps")}
    dest = paths.new_file("--out", args.out)
    fmt = FORMATS[args.format]
    if fmt.needs_roster and not args.roster:
        raise UsageError(f"--format {fmt.name} matches students by the LMS's ids: give --roster FILE")
    overrides = {k: getattr(args, k) for k in ("due", "grace_minutes", "penalty", "per", "cap", "after_cap")
                 if getattr(args, k) is not None}
    if "due" in overrides:
        overrides["due"] = parse_time(overrides["due"], "--due")
    try:
        lab = find_lab(args.lab or export.load_batch(out)[0].lab)
    except LabError as error:
        raise error if args.lab else UsageError(f"{error}; name the batch's lab with --lab") from None
    titles: dict[Kind, str | None] = {"lab": args.column, "quiz": args.quiz_column, "lesson": args.lesson_column}
    columns = {kind: title for kind, title in titles.items() if title}
    from grader.instructor import record

    earlier = record.load(out)
    given = earlier.deadline() if earlier and earlier.policy_from == "command line" else None
    if given is not None and not overrides:
        console.print(f"[yellow]note:[/] the late policy given before (due {given.due.isoformat()}, "
                      f"-{given.penalty:g}% per {given.per}) gives way to lab.yaml's "
                      f"({'none' if lab.manifest.deadline is None else 'its deadline'}) in the record, the page and "
                      "the feedback: give --due and --penalty again to keep it", soft_wrap=True)
    lines, unmatched, strays = export.gradebook(export.GradebookRequest(
        out, fmt, dest, lab, overrides=overrides, scale=args.scale, columns=columns, missing=args.missing,
        assume=args.assume, **files))
    if strays:
        console.print(f"[yellow]--timestamps: {len(strays)} name(s) match no submission:[/] "
                      f"{escape('; '.join(strays[:10]))}", soft_wrap=True)
    show_stranded(out, record.load(out), console)
    _show_gradebook(args, console, dest, lines, unmatched, columns)
    return 0


def _show_gradebook(args, console, dest, lines, unmatched, columns):
    from grader.base.text import one_line
    from grader.instructor.deadlines import tally
    from grader.instructor.export import unmatched_path

    for line in (line for line in lines if line.notes or line.matched):
        said = "; ".join(filter(None, [*line.notes, line.matched]))
        console.print(f"[yellow]note:[/] {escape(one_line(line.student))}: {escape(one_line(said))}", soft_wrap=True)
    if FORMATS[args.format].column_ids and args.quiz:
        left = [f"{kind} (give --{kind}-column with its {args.format.capitalize()} id)" for kind in ("quiz", "lesson")
                if kind not in columns]
        if left:
            console.print(f"[yellow]left out of the {args.format.capitalize()} file:[/] {escape(', '.join(left))}",
                          soft_wrap=True)
    show_timing(tally(line.row for line in lines if line.row), console)
    console.print(f"[green]wrote[/] {escape(str(dest))} ({args.format}): {len(lines) - len(unmatched)} students"
                  + (f"; [bold yellow]{len(unmatched)} not on the roster[/], left out of it and listed in "
                     f"{escape(str(unmatched_path(dest)))}" if unmatched else ""), soft_wrap=True)


COMMANDS["gradebook"] = (gradebook_parser, run_gradebook)


def adjust_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grade.py adjust", description="Give a student points back (or take some) after grading, with the "
        "reason: recorded in OUT/adjustments.json with when, added to the final score after the late policy, "
        "shown on the learner's feedback and the class page, and kept through a regrade. grades.csv, the page "
        "and the feedback are written again; run grade.py gradebook again for the LMS. Exit status: 0 "
        "recorded, 2 bad input.")
    parser.add_argument("out", metavar="OUT", help="the --out folder of grade.py batch")
    one = parser.add_argument_group("one adjustment")
    one.add_argument("--student", metavar="NAME", help="the student (as any file of the class names them)")
    one.add_argument("--points", metavar="N", help="points to add (negative to take), e.g. 5 or -2.5")
    one.add_argument("--reason", metavar="TEXT", help="why, in words the student reads")
    parser.add_argument("--file", metavar="CSV", help="many at once: a CSV with the columns student, points, reason")
    return parser


def run_adjust(args: argparse.Namespace, console: Console) -> int:
    from grader.instructor import export, paths, record

    out = paths.existing_folder("OUT", args.out, "a batch's --out folder")
    given = [name for name in ("student", "points", "reason") if getattr(args, name) is not None]
    if args.file and given:
        raise UsageError("give either --file CSV or --student, --points and --reason, not both")
    if not args.file and len(given) < 3:
        missing = [f"--{name}" for name in ("student", "points", "reason") if name not in given]
        raise UsageError(f"give --student, --points and --reason (missing {', '.join(missing)}), or --file CSV")
    decided = record.load(out)
    if decided is None:
        raise UsageError(f"{out}: no {record.RECORD}, the record of its final grades: run grade.py batch (again) "
                         "first")
    students = {identity(row.student): row.student for row in decided.rows}
    if args.file:
        new = record.read_adjustments_csv(paths.existing_file("--file", args.file), students, decided.max_score)
        if not new:
            raise UsageError(f"--file {args.file}: no adjustment in it")
    else:
        new = [record.adjustment(args.student, args.points, args.reason, "--student", students, decided.max_score)]
    lab = find_lab(decided_lab(out))        # before anything is recorded: a bad OUT records nothing
    record.add_adjustments(out, new)
    decided = record.again(out, "grade.py adjust")
    record.save(out, decided)
    export.follow(out, lab, decided)
    finals = {row.student: row.final_score for row in decided.rows}
    for a in new:
        final = finals.get(a.student)
        console.print(f"[green]adjusted[/] {escape(one_line(a.student))}: {a.points:+g} ({escape(one_line(a.reason))})"
                      f"; final score {'-' if final is None else f'{final:g}'}", soft_wrap=True)
    console.print("grades.csv, the class page and the feedback follow; run grade.py gradebook again for the LMS")
    return 0


def decided_lab(out: Path) -> str:
    from grader.instructor.export import load_batch

    return load_batch(out)[0].lab


COMMANDS["adjust"] = (adjust_parser, run_adjust)
