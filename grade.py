#!/usr/bin/env python3
"""Grade a lab or take a lesson test: `python grade.py --help`."""
import sys

from grader.learner.preflight import problem

if __name__ == "__main__":
    why = problem(sys.argv[1:])
    if why:
        print("error: " + why, file=sys.stderr)
        sys.exit(2)
    from grader.base import collector

    collector.pause()               # until the checks are collected (grader/base/collector.py)
    from grader.learner import express

    code = express.answer(sys.argv[1:])     # this checkout's warm grader, when one grades it
    if code is None:
        from grader.learner import head_start

        try:
            zygote = head_start.zygote_for(sys.argv[1:])    # a grading's, importing torch from now on
        except KeyboardInterrupt:   # as cli says it (a zygote begun dies with this process)
            print("interrupted", flush=True)
            sys.exit(130)
        try:
            from grader.learner.cli import main

            code = main(sys.argv[1:], zygote)
        finally:
            if zygote is not None:
                zygote.close()
    if "torch" in sys.modules:      # every command has closed what it opened: skip torch's teardown
        from grader.core.fast_exit import exit_now

        exit_now(code)
    sys.exit(code)
