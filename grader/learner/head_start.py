"""A grading's zygote, started as early as its arguments are known to be good: it imports torch
while the judge imports the rest (rich, pytest, torch too) and collects the lab's checks. grade.py
starts it first thing, before rich or the judge is imported; cli.run_grade does where grade.py did
not (cli.main called directly). None where a warm grader may answer (a socket in this user's
runtime folder), for anything but a plain grading, and for arguments that will be refused: no
zygote is begun for those."""
from grader.learner.runtime import any_listening


def zygote_for(argv):
    """The zygote of `grade.py argv` when it is a plain grading with good arguments, else None
    (cli reads them again, and says what is wrong with them)."""
    from grader.learner.arguments import grading_request, plain_grading
    from grader.readers.manifest import find_lab

    args = plain_grading(argv)
    if args is None:
        return None
    try:
        return early_zygote(grading_request(args, find_lab(args.lab)).sandbox)
    except Exception:           # said by cli, as it meets it again (a GraderError in a sentence)
        return None


def early_zygote(kind):
    """A zygote of sandbox `kind`, or None where a warm grader may answer."""
    if any_listening():
        return None
    from grader.judge.launchers import launcher_for
    from grader.judge.zygote import Zygote

    return Zygote(launcher_for(kind))
