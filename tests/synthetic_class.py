"""A batch's output folder made up without grading: graded.json records built from results as the
grader writes them, for tests of the report page and its benchmark (benchmarks/page_bench.py).

Students cycle through kinds: all passed; apply_rope fails with a named mistake; apply_rope's stub
left as given (so the experiments that need it are not run); a failure whose hint carries numbers;
and a rejected submission. Each graded student's submission folder holds `sources[i % len]`."""
import shutil
from pathlib import Path

from grader.instructor import gradebook
from grader.results import BatchRow, Check, DoneItem, LabResults, StudentRecord

KINDS = ("perfect", "swapped", "stub", "numbers", "rejected")
XS = [24.0, 48.0, 96.0]


def check(function, name, status="passed", visibility="hidden", tags=(), **fields):
    return Check(name=name, test=f"{visibility}/test_{function}.py::{name.replace(' ', '_')}",
                 tags=[function, *tags], points=2, score=2 if status == "passed" else 0, status=status,
                 visibility=visibility, **fields)


def checks_for(kind, i):
    swapped = kind == "swapped"
    rope = ([check("apply_rope", "rotates pairs", "not_implemented", "visible", message="apply_rope is a stub",
                   blocked_by="apply_rope"),
             check("apply_rope", "any shape", "not_implemented", message="apply_rope is a stub",
                   blocked_by="apply_rope")] if kind == "stub" else
            [check("apply_rope", "rotates pairs", "failed" if swapped else "passed", "visible",
                   message="expected the right values\n     saw others" if swapped else "",
                   hint=(f"cos and sin are swapped (student {i})" if i % 2 else "cos, sin swapped") if swapped else "",
                   mistake="rope-swapped" if swapped else "", output="debug: x.shape" if swapped else ""),
             check("apply_rope", "any shape", "failed" if swapped else "passed", message="hidden detail",
                   hint="secret hint" if swapped else "", mistake="rope-swapped" if swapped else "")])
    blocked = dict(status="not_implemented", message="needs apply_rope, which is a stub",
                   blocked_by="apply_rope") if kind == "stub" else {}
    numbered = kind == "numbers"
    return [
        check("rope_frequencies", "cos and sin", visibility="visible"),
        check("rope_frequencies", "other bases"),
        *rope,
        check("is_permutation_invariant", "says True and False", "failed" if numbered else "passed", "visible",
              message="expected False\n     saw True",
              hint=f"trained at length {24 * (i % 4 + 1)}, the lab trains at 24" if numbered else ""),
        check("measure_loss_gap", "a clear loss gap", data={"loss gap": 2.2 + 0.01 * (i % 9),
                                                              "reference loss gap": 2.3}),
        check("extrapolation_runs", "RoPE extrapolates", tags=("apply_rope",), **blocked,
              data={} if blocked else {"x": XS, "accuracy rope": [0.95, 0.9 - 0.01 * (i % 5), 0.85],
                                       "reference accuracy rope": [0.96, 0.95, 0.95]}),
    ]


def make_class(lab, out, n, sources=()):
    """Write OUT as a batch of `n` students would leave it; returns the student names."""
    out, rows, graded = Path(out), [], {}
    for i in range(n):
        kind, name = KINDS[i % len(KINDS)], f"student{i:03d}"
        folder = out / "students" / name
        folder.mkdir(parents=True)
        submission = out.parent / "submissions" / name
        if sources:
            shutil.copytree(sources[i % len(sources)], submission)
        if kind == "rejected":
            row = BatchRow(student=name, status="rejected", detail="unsafe path in the zip", score=0)
            record = StudentRecord(hash="", row=row)
        else:
            results = LabResults(lab=lab.name, title=lab.manifest.title, submission=str(submission), device="cpu",
                                 sandbox="bubblewrap", execution_time=1.0, checks=checks_for(kind, i),
                                 done_when=[DoneItem(text="done", done=kind == "perfect")])
            row = BatchRow(student=name, status="graded", score=results.score, max_score=results.max_score,
                           passed=results.all_passed, seconds=1.0,
                           functions={f: s for f, (s, _) in results.by_function(lab.functions).items()})
            record = StudentRecord(hash="h", row=row, results=results)
            graded[name] = results
        rows.append(row)
        (folder / "graded.json").write_text(record.model_dump_json())
    summary = gradebook.summarize(lab, rows, graded, len(graded), 1, 1.0)
    (out / "summary.json").write_text(summary.model_dump_json())
    return [row.student for row in rows]
