#!/usr/bin/env bash
# The grader on a CUDA machine: `bash benchmarks/gpu_check.sh` from the course folder, with the
# course's venv set up (make .venv/.installed: pip takes torch's CUDA build there).
#   1. the reference graded with --device cuda: every point, the report saying device cuda;
#   2. a submission that ignores device= (tests/submissions/device_ignored, cpu_positions) graded
#      with --device cuda: it loses the device checks' points, each saying so;
#   3. a quick grading (positions + invariance, experiments the stub) timed beside `import torch`,
#      median of 5, on cuda and on cpu.
# Exit status 0 when all of that holds; it prints what did not.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${OUT:-$(mktemp -d)}
failed=0

"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" || {
    echo "gpu_check: this torch sees no CUDA device"; exit 2; }
"$PY" -c "import torch; print('torch', torch.__version__, 'on', torch.cuda.get_device_name(0))"

echo "== 1. the reference on cuda"
"$PY" grade.py lab2 --submission reference/lab2 --device cuda --json "$OUT/reference.json" > "$OUT/reference.txt" 2>&1
code=$?
"$PY" - "$OUT/reference.json" "$code" "$OUT/reference.txt" <<'PYTHON' || failed=1
import json, sys
path, code, report = sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read()
results = json.load(open(path))
on_cuda = "device cuda" in report                  # the report's header: where the tensors went
print(f"exit {code}, {results['score']:g}/{sum(t['max_score'] for t in results['tests']):g}, "
      f"{'graded on cuda' if on_cuda else 'NOT graded on cuda'}")
sys.exit(0 if code == 0 and on_cuda else 1)
PYTHON

for mutant in device_ignored cpu_positions; do
    echo "== 2. $mutant on cuda"
    "$PY" grade.py lab2 --submission "tests/submissions/$mutant" --device cuda -k positions.py \
        --json "$OUT/$mutant.json" > "$OUT/$mutant.txt" 2>&1
    code=$?
    "$PY" - "$OUT/$mutant.json" "$code" <<'PYTHON' || failed=1
import json, sys
path, code = sys.argv[1], int(sys.argv[2])
tests = json.load(open(path))["tests"]
lost = [t["name"] for t in tests if t["score"] < t["max_score"]]
said = [t for t in tests if t["score"] < t["max_score"] and "device" in t.get("output", "")]
print(f"exit {code}; lost points on {len(lost)} checks, {len(said)} of them saying device")
sys.exit(0 if code == 1 and lost else 1)
PYTHON
done

echo "== 3. a quick grading beside import torch (median of 5)"
quick=$(mktemp -d)
cp reference/lab2/positions.py reference/lab2/invariance.py "$quick/"
"$PY" - "$PY" "$quick" <<'PYTHON' || failed=1
import statistics, subprocess, sys, time
python, quick = sys.argv[1], sys.argv[2]

def timed(command):
    started = time.perf_counter()
    subprocess.run(command, capture_output=True)
    return time.perf_counter() - started

for device in ("cuda", "cpu"):
    base, ours = [], []
    for _ in range(5):
        base.append(timed([python, "-c", "import torch"]))
        ours.append(timed([python, "grade.py", "lab2", "--submission", quick, "--device", device]))
    b, o = statistics.median(base), statistics.median(ours)
    print(f"quick grading on {device}: {o:.2f} s, import torch {b:.2f} s, {o / b:.2f}x")
PYTHON
rm -rf "$quick"
echo "outputs in $OUT"
[ "$failed" = 0 ] && echo "gpu_check: all held" || echo "gpu_check: something did not hold (see above)"
exit "$failed"
