#!/usr/bin/env python3
"""Grade a lab or take a lesson test: `python grade.py --help`."""
import os
import sys

from grader.preflight import problem

if __name__ == "__main__":
    why = problem(sys.argv[1:])
    if why:
        print("error: " + why, file=sys.stderr)
        sys.exit(2)

    from grader.cli import main

    code = main(sys.argv[1:])
    if "torch" in sys.modules:      # every command has closed what it opened: skip the teardown
        sys.stdout.flush()          # of torch's thousands of objects, most of a second of CPU
        sys.stderr.flush()
        if "multiprocessing" in sys.modules:
            import multiprocessing.util

            multiprocessing.util._run_finalizers(0)     # but release the semaphores of process pools
        os._exit(code)
    sys.exit(code)
