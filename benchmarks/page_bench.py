"""Writing the class page for 100 students: `python benchmarks/page_bench.py [STUDENTS]`.

A made-up batch output (tests/synthetic_class.py: five kinds of results, a rejected fifth) whose
submissions cycle through six real solutions and test submissions of lab 2, so that similarity
compares real code (and finds the identical copies the cycle makes). Times write_report, which
reads every graded.json and submission, grades nothing, and writes report.html and two feedback
files per student; median of 3 (wall clock, and this process's CPU time, which a busy machine
inflates less), the target under 5 s for 100 students.
"""
import statistics
import sys
import tempfile
import time
from pathlib import Path

from figures import Figures

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from synthetic_class import make_class  # noqa: E402

from grader.instructor.page import write_report  # noqa: E402
from grader.readers.manifest import find_lab  # noqa: E402

SOURCES = [ROOT / "reference" / "lab2", *(ROOT / "tests" / "submissions" / name for name in (
    "alternative_styles", "mistakes_a", "mistakes_b", "device_ignored", "fixed_reorderings"))]


def main(students=100, rounds=3):
    lab = find_lab("lab2")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        make_class(lab, out, students, SOURCES)
        times, cpu = [], []
        for _ in range(rounds):
            started, started_cpu = time.perf_counter(), time.process_time()
            page = write_report(out, lab)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        size = page.stat().st_size
    table = Figures(__file__, f"The class page and 200 feedback files for {students} students (median of {rounds})",
                    ("what", "seconds", "all (s)", "CPU s", "page", "target"))
    table.row("grade.py report", f"{statistics.median(times):.2f}", " ".join(f"{t:.2f}" for t in times),
              f"{statistics.median(cpu):.2f}", f"{size / 1024:.0f} KiB", "< 5 s")
    table.publish()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
