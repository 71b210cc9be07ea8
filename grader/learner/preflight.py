"""Before the grader is imported: the right Python, and the packages it needs, said in a sentence.

Written for any Python 3: an old one must reach the sentence that says it is too old.
"""
import importlib.util
import os
import sys
from pathlib import Path

from grader.base.root import ROOT

NEEDED = ("pydantic", "rich", "yaml", "pytest")     # every command; grading adds torch (the quiz does not)
IMPORT_NAMES = {"yaml": "pyyaml"}


def problem(argv, version=None, present=None):
    """What keeps `grade.py argv` from running here, in words, or None."""
    version = version or sys.version_info
    present = present or (lambda name: importlib.util.find_spec(name) is not None)
    if tuple(version[:2]) < (3, 10):
        return "grade.py needs Python 3.10 or newer; this is Python {}.{} ({}). {}".format(
            version[0], version[1], sys.executable, install_hint())
    try:
        os.getcwd()
    except FileNotFoundError:       # (torch's import would end in "Intel oneMKL FATAL ERROR")
        return "the folder grade.py was started in has been deleted: cd to a folder that exists and run it again"
    wanted = NEEDED + (() if argv[:1] == ["quiz"] else ("torch",))
    missing = [IMPORT_NAMES.get(name, name) for name in wanted if not present(name)]
    if missing:
        return "this Python ({}) lacks {}. {}".format(sys.executable, ", ".join(missing), install_hint())
    return None


def install_hint():
    """How to get a Python with the grader's packages, in this copy of the course."""
    venv = ROOT / ".venv" / "bin" / "python"
    if venv.exists() and Path(sys.executable).resolve() != venv.resolve():
        return "Use the course's venv: .venv/bin/python grade.py ..."
    if (ROOT / "requirements-cpu.txt").exists():        # the learners' copy
        return ("Set it up, in this folder: python3 -m venv .venv && .venv/bin/pip install -r requirements-cpu.txt "
                "(with an NVIDIA GPU: -r requirements.txt), then: .venv/bin/python grade.py ...")
    return ("Set it up, in this folder: make .venv/.installed (or python3 -m venv .venv && "
            ".venv/bin/pip install -e .), then: .venv/bin/python grade.py ...")
