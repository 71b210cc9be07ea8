#!/usr/bin/env python3
"""Grade a lab or take a lesson test: `python grade.py --help`."""
import sys

from grader.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
