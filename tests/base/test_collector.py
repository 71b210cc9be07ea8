"""grader/base/collector.py: no collections while a grading imports, and on again afterwards."""
import os
import subprocess
import sys

import pytest

from grader.base.root import ROOT


def run(code):
    """`code` in a Python of its own (freezing this test process's heap would be for good)."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_resume_turns_on_what_pause_turned_off_with_the_heap_frozen():
    assert run("import gc; from grader.base import collector; collector.pause(); print(gc.isenabled()); "
               "collector.resume(); print(gc.isenabled(), gc.get_freeze_count() > 0)") == ["False", "True", "True"]


def test_a_process_that_did_not_pause_is_left_as_it_is():
    assert run("import gc; from grader.base import collector; collector.resume(); "
               "print(gc.isenabled(), gc.get_freeze_count())") == ["True", "0"]
    assert run("import gc; from grader.base import collector; gc.disable(); collector.pause(); collector.resume(); "
               "print(gc.isenabled(), gc.get_freeze_count())") == ["False", "0"]


@pytest.mark.slow
def test_a_grading_makes_no_full_collection_until_its_checks_are_collected(tmp_path):
    """grade.py (torch, pytest and the lab imported) made three before; cold: no warm grader is
    found in a runtime folder of its own."""
    watch = ("import gc, runpy, sys\n"
             "def seen(phase, info):\n"
             "    if phase == 'start' and info['generation'] == 2:\n"
             "        print('FULL', 'frozen' if gc.get_freeze_count() else 'importing', file=sys.stderr, flush=True)\n"
             "gc.callbacks.append(seen)\n"
             "sys.argv = ['grade.py', 'lab2', '--submission', 'grader/labs/lab2/stubs']\n"
             "runpy.run_path('grade.py', run_name='__main__')\n")
    tmp_path.chmod(0o700)
    done = subprocess.run([sys.executable, "-c", watch], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)})
    assert "warm grader" not in done.stdout and "rope_frequencies" in done.stdout, done.stdout + done.stderr
    assert "FULL importing" not in done.stderr, done.stderr
