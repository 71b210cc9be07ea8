"""A seam of the tests, kept out of the grader: Python runs this at start-up in a process the tests
start with PYTHONPATH=tests/seams (a grade.py, and the batch workers it spawns). With
GRADER_FAULT=function, every answer of that function becomes a grader fault, on the judge's side."""
import os

FUNCTION = os.environ.get("GRADER_FAULT")


def _install():
    import dataclasses

    from grader.base.kinds import Failure
    from grader.judge.channel import CallFailed
    from grader.judge.sandbox import Sandbox, Settings

    def fault(call, answer):
        if call.function == FUNCTION and not isinstance(answer, CallFailed):
            return CallFailed(FUNCTION, Failure.GRADER_FAULT, "a simulated grader fault (GRADER_FAULT)")
        return answer

    built = Sandbox.__init__

    def with_fault(self, lab, files, zygote, settings=None):
        settings = settings or Settings()
        built(self, lab, files, zygote, dataclasses.replace(settings, observers=(fault, *settings.observers)))
    Sandbox.__init__ = with_fault


if FUNCTION:
    try:
        _install()
    except ImportError:         # a process that cannot see the grader (a sandboxed child): nothing to do
        pass
