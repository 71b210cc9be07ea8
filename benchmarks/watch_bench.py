"""The learner's inner loop, timed: `python benchmarks/watch_bench.py [--saves N]`.

`grade.py lab2 --watch` runs in a pseudo-terminal on a copy of the reference solution, as a
learner runs it. Each save rewrites positions.py (a new comment at its end); what is timed is
the save to the rewritten --json file, which the watcher writes after the report is drawn.
Two selections: -k positions.py, and -k positions.py -k invariance.py. Then, with the second:
a save that puts an endless loop in rope_frequencies (the round must end within the lab's
per-call limit), and the fix (the round after it must be as fast as before). The load average
is printed beside the figures: on a shared machine, they are only as quiet as it is.
"""
import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import pexpect

from figures import Figures

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.readers.manifest import find_lab  # noqa: E402

ENDLESS = "\n\ndef rope_frequencies(*args, **kwargs):\n    while True:\n        pass\n"


class Watcher:
    """grade.py --watch in a pseudo-terminal, its output drained so that it never blocks."""

    def __init__(self, submission, json_path, select):
        args = ["grade.py", "lab2", "--watch", "--submission", str(submission), "--json", str(json_path)]
        for name in select:
            args += ["-k", name]
        self.json_path = json_path
        self.process = pexpect.spawn(sys.executable, args, cwd=ROOT, dimensions=(60, 160), timeout=None)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        try:
            while True:
                self.process.read_nonblocking(1 << 16, timeout=None)
        except (pexpect.EOF, OSError, ValueError):
            pass

    def _version(self):
        try:
            stat = self.json_path.stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_mtime_ns

    def round_after(self, save, limit=120.0):
        """Seconds from `save()` to the rewritten --json file, and the results in it."""
        before = self._version()
        started = time.perf_counter()
        save()
        while self._version() == before:
            if time.perf_counter() - started > limit:
                raise TimeoutError(f"no new {self.json_path.name} within {limit:g} s")
            time.sleep(0.005)
        took = time.perf_counter() - started
        return took, json.loads(self.json_path.read_text())

    def stop(self):
        self.process.sendintr()
        self.process.expect(pexpect.EOF, timeout=30)
        self.process.close()
        return self.process.exitstatus


def median_round(watcher, positions, source, saves):
    times = []
    for i in range(saves):
        took, results = watcher.round_after(lambda i=i: positions.write_text(f"{source}\n# save {i}\n"))
        assert results["score"] == sum(t["max_score"] for t in results["tests"]), "the reference lost points"
        times.append(took)
        time.sleep(0.2)             # a learner reads between saves
    return statistics.median(times), times


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--saves", type=int, default=9, help="timed saves per selection")
    args = parser.parse_args()
    limit = find_lab("lab2").manifest.call_timeout
    table = Figures(__file__, f"--watch: a save to the finished report and --json (median of {args.saves})",
                    ("what", "median s", "all (s)", "target"))
    with tempfile.TemporaryDirectory() as work:
        submission = Path(work, "submission")
        shutil.copytree(ROOT / "reference" / "lab2", submission)
        positions = submission / "positions.py"
        source = positions.read_text()
        for select in (["positions.py"], ["positions.py", "invariance.py"]):
            json_path = Path(work, "results.json")
            json_path.unlink(missing_ok=True)
            started = time.perf_counter()
            watcher = Watcher(submission, json_path, select)
            while not json_path.exists():
                time.sleep(0.01)
            first = time.perf_counter() - started
            median, times = median_round(watcher, positions, source, args.saves)
            what = " + ".join(select)
            table.row(f"{what}: first round from start", f"{first:.2f}", "", "")
            table.row(f"{what}: a save", f"{median:.2f}", " ".join(f"{t:.2f}" for t in times),
                          "<= 0.15" if len(select) == 1 else "<= 1.0")
            if len(select) == 2:
                took, results = watcher.round_after(lambda: positions.write_text(source + ENDLESS))
                looped = any("endless loop" in t["output"] for t in results["tests"])
                table.row("a save with an endless loop", f"{took:.2f}", "timed out" if looped else
                              "NOT timed out", f"<= {limit:g} (call limit) + a round")
                took, _ = watcher.round_after(lambda: positions.write_text(source))
                after, _ = median_round(watcher, positions, source, 3)
                table.row("the fix after it; the rounds after that", f"{took:.2f}", f"median {after:.2f}",
                              "as before")
            code = watcher.stop()
            table.row(f"{what}: Ctrl-C", f"exit {code}", "", "exit 0")
    table.publish()


if __name__ == "__main__":
    main()
