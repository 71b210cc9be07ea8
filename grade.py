#!/usr/bin/env python3
"""Grade a lab or take a lesson test: `python grade.py --help`."""
import os
import sys

from grader.cli import main

if __name__ == "__main__":
    code = main(sys.argv[1:])
    if "torch" in sys.modules:      # every command has closed what it opened: skip the teardown
        sys.stdout.flush()          # of torch's thousands of objects, most of a second of CPU
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
