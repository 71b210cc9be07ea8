"""What a user can fix: every error here is printed as one line, and the command exits with 2."""


class GraderError(Exception):
    """The base of the errors a user can fix (exit status 2)."""


class LabError(GraderError):
    """A lab that cannot be found, or whose manifest, stubs or checks are broken."""


class UsageError(GraderError):
    """Bad input on the command line: an option, a -k name, a submission that cannot be read."""


class QuizError(GraderError):
    """A quiz, answers or responses file that cannot be read or graded."""


class SetupError(GraderError):
    """This machine cannot do what was asked: no CUDA, no bubblewrap, a Python environment that
    holds the course, a grading worker that cannot start."""
