"""The mutation audit's counts, per function, and its equivalent mutants, written into
docs/figures.md: `python benchmarks/mutants_figures.py [LAB]` runs `grade.py mutants LAB --json`
(lab2 by default; minutes on 2 cores) and reads its document."""
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import Figures

ROOT = Path(__file__).resolve().parent.parent


def main(lab):
    with tempfile.TemporaryDirectory() as work:
        found = Path(work) / "mutants.json"
        started = time.monotonic()
        run = subprocess.run([sys.executable, str(ROOT / "grade.py"), "mutants", lab, "--json", str(found)],
                             cwd=ROOT, capture_output=True, text=True)
        seconds = time.monotonic() - started
        if run.returncode != 0:
            sys.exit(f"grade.py mutants {lab} failed:\n{run.stdout}{run.stderr}")
        audit = json.loads(found.read_text())
    table = Figures(__file__, f"Mutants of {lab}'s reference (`grade.py mutants {lab}`)",
                    ("function", "mutants", "killed", "equivalent", "surviving", "killed only by hidden checks"))
    for function, entry in audit["functions"].items():
        table.row(function, entry["mutants"], entry["killed"], entry["equivalent"], len(entry["survived"]),
                  len(entry["only_hidden"]))
    entries = audit["functions"].values()
    total = {key: sum(entry[key] for entry in entries) for key in ("mutants", "killed", "equivalent")}
    table.note(f"{total['mutants']} mutants, {total['killed']} killed, {total['equivalent']} equivalent, "
               f"graded in {seconds:.0f} s. Equivalent (no answer of theirs differs on the checks' inputs):")
    table.note("")
    for entry in entries:
        for mutant in entry["equivalent_mutants"]:
            table.note(f"- `{mutant['function']}`, line {mutant['line']}: {mutant['mutation']}")
    table.publish()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "lab2")
