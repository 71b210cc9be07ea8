"""A batch's output folder made up without grading: graded.json records built from results as the
grader writes them, for tests of the report page and its benchmark (benchmarks/page_bench.py).

Students cycle through kinds: all passed; apply_rope fails with a named mistake; apply_rope's stub
left as given (so the experiments that need it are not run); a failure whose hint carries numbers;
and a rejected submission. Each graded student's submission folder holds `sources[i % len]`.
lesson_class() makes the sources of a class of twelve who each typed in the lesson's code, two of
whom copied each other's own code."""
import ast
import re
import shutil
from pathlib import Path

from grader.core.results import Check, DoneItem, LabResults
from grader.instructor import gradebook
from grader.instructor.records import BatchRow, StudentRecord

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
        *(check("rope_frequencies", f"other bases [base {base}]") for base in (10, 100, 500)),
        check("rope_frequencies", "float32 on the device"),
        check("apply_rope", "keeps x unchanged", **(dict(status="not_implemented", message="apply_rope is a stub",
                                                         blocked_by="apply_rope") if kind == "stub" else {})),
        *rope,
        check("is_permutation_invariant", "says True and False", "failed" if numbered else "passed", "visible",
              message="expected False\n     saw True",
              hint=f"trained at length {24 * (i % 4 + 1)}, the lab trains at 24" if numbered else ""),
        check("is_permutation_invariant", "tries every order"),
        check("measure_loss_gap", "reproduces its numbers"),
        check("measure_loss_gap", "a clear loss gap", data={"loss gap (nats)": 2.2 + 0.01 * (i % 9),
                                                              "reference loss gap (nats)": 2.3,
                                                              "above loss gap (nats)": 1.0}),
        check("extrapolation_runs", "learned fails beyond", tags=("apply_rope",), **blocked),
        check("extrapolation_runs", "RoPE extrapolates", tags=("apply_rope",), **blocked,
              data={} if blocked else {"x evaluation length (tokens), trained at 24": XS,
                                       "rope accuracy (fraction right)": [0.95, 0.9 - 0.01 * (i % 5), 0.85],
                                       "reference rope accuracy (fraction right)": [0.96, 0.95, 0.95],
                                       "above rope accuracy (fraction right)": 0.8}),
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
    summary = gradebook.summarize(lab, rows, graded, gradebook.Tally(len(graded), 1, 1.0, False))
    (out / "summary.json").write_text(summary.model_dump_json())
    return [row.student for row in rows]


# -- a class that typed in the lesson --------------------------------------------------------------
COPIED = ('''import itertools

import torch


def is_permutation_invariant(attn, x, atol=1e-5):
    batch, length, width = x.shape
    baseline = attn(x).sum(dim=1, keepdim=True)
    worst = 0.0
    for order in itertools.permutations(range(length)):
        moved = torch.index_select(x, 1, torch.tensor(order, device=x.device))
        gap = (attn(moved).sum(dim=1, keepdim=True) - baseline).abs().amax().item()
        worst = max(worst, gap)
        if worst > atol:
            break
    return worst <= atol
''', '''"""My invariance check."""
import itertools
import torch

def is_permutation_invariant(attn, x, atol=1e-5):
    """Try every order of the positions."""
    b, n, d = x.shape
    # the sum in the given order
    base = attn(x).sum(
        dim=1, keepdim=True)
    largest = 0.0
    for perm in itertools.permutations(range(n)):
        shuffled = torch.index_select(x, 1,
                                      torch.tensor(perm, device=x.device))
        diff = (attn(shuffled).sum(dim=1, keepdim=True)
                - base).abs().amax().item()
        largest = max(largest, diff)
        if largest > atol:   # found one
            break
    return largest <= atol
''')
OWN_INVARIANCE = ["reference/lab2", "tests/submissions/alternative_styles", "tests/submissions/fixed_reorderings",
                  "tests/submissions/mistakes_a", "tests/submissions/mistakes_b", "tests/submissions/orbit_search",
                  "tests/submissions/lesson_starter", "tests/submissions/peek_layers", "grader/labs/lab2/stubs",
                  "tests/submissions/read_weights"]
NAMES = [dict(zip(("inv", "pos", "ang", "x1", "x2", "out1", "out2"), names)) for names in (
    ("inv_freq", "positions", "angles", "even", "odd", "first", "second"),
    ("freqs", "t", "theta", "a", "b", "ra", "rb"),
    ("inv", "pos", "ang", "x1", "x2", "out1", "out2"),
    ("omega", "where", "phase", "left", "right", "new_left", "new_right"))]


def typed_in(lesson, i):
    """The lesson's RoPE functions as learner i types them in: names, comments and spacing of their
    own; every fourth also writes .to(torch.float32) where the lesson writes .float()."""
    module = ast.parse(lesson)
    text = "\n\n\n".join(ast.get_source_segment(lesson, node) for node in module.body
                         if isinstance(node, ast.FunctionDef) and node.name in ("rope_frequencies", "apply_rope"))
    for old, new in NAMES[i % len(NAMES)].items():
        text = re.sub(rf"\b{old}\b", new, text)
    text = re.sub(r"  +#.*", "", text) if i % 2 else text.replace("):\n", "):\n    # typed in from the lesson\n", 1)
    if i % 4 == 1:
        text = text.replace(".float()", ".to(torch.float32)")
    return f'"""Lab 2, learner {i}."""\nimport torch\n\n\n{text}\n'


def lesson_class(lab, root, n=12, copiers=(3, 8)):
    """Submission folders of `n` learners who each typed in the lesson's code (positions.py), each
    with an invariance.py of another origin but `copiers`, whose own code is one's, renamed and
    reformatted by the other. Returns the folders."""
    course, lesson = Path(__file__).resolve().parent.parent, lab.given_code[0].read_text()
    folders, others = [], iter(OWN_INVARIANCE)
    for i in range(n):
        folder = Path(root) / f"learner{i:02d}"
        shutil.copytree(lab.stubs, folder)
        (folder / "positions.py").write_text(typed_in(lesson, i))
        if i in copiers:
            (folder / "invariance.py").write_text(COPIED[copiers.index(i)])
        else:
            shutil.copy(course / next(others) / "invariance.py", folder / "invariance.py")
        folders.append(folder)
    return folders
