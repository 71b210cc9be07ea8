"""The exit of a process that has imported torch, without the interpreter's teardown of its
thousands of objects (most of a second of CPU): grade.py's, and --experiments' run of a lab's
script, `python grader/core/fast_exit.py SCRIPT ARGS...`, which runs SCRIPT as `python SCRIPT ARGS...`
does (its status, message and traceback), then exits so. A process a profiler, tracer or debugger
watches (python -m cProfile grade.py ..., coverage, pdb) exits as usual, so that it writes what it
gathered. Imports nothing of the grader's: it runs as a file, where there may be no grader package.
"""
import os
import runpy
import sys


def watched():
    """Whether a profiler, tracer or debugger watches this process (sys.monitoring: Python 3.12+)."""
    monitoring = getattr(sys, "monitoring", None)
    tools = monitoring is not None and any(monitoring.get_tool(tool) is not None for tool in range(6))
    return bool(sys.gettrace() or sys.getprofile() or tools)


def exit_now(code):
    """Exit with `code` once what was printed is out: every caller has closed what it opened. Only
    process pools' semaphores are released first (multiprocessing's finalizers)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if watched():
        sys.exit(code)
    if "multiprocessing" in sys.modules:
        import multiprocessing.util

        multiprocessing.util._run_finalizers(0)
    os._exit(code)


def run(argv):
    """`python SCRIPT ARGS...` for argv [SCRIPT, ARGS...]: its exit status, having printed what
    Python prints (a SystemExit's message, a traceback); 130 after Ctrl-C."""
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))     # the script's folder, not ours
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException as error:
        sys.excepthook(type(error), error, error.__traceback__)
        return 130 if isinstance(error, KeyboardInterrupt) else 1
    return 0


if __name__ == "__main__":
    exit_now(run(sys.argv[1:]))
