"""`grade.py mutants LAB`: how strong are a lab's checks? Mutation testing of the reference.

Each student function of the reference is mutated (grader/author/mutate.py), and every mutant,
the reference's other functions and files beside it, is graded on that function's checks by
the batch's warm workers (grader/instructor/batch.py), in their sandboxes like any submission.
A mutant is
  killed      when it loses points: the checks that failed it killed it;
  equivalent  when it earns every point and every call the checks made answered exactly what the
              reference answered to the same arguments (the reference graded the same way, once
              per function): the checks cannot tell it apart, and neither could its outputs there;
  surviving   when it earns every point with some answer that differs: a check too weak, or a
              tolerance wide enough for it. Surviving mutants are what an author reads.
A function's mutation score is killed / (killed + surviving), equivalent ones left out. Mutants
that only hidden checks kill are listed too: the handout's public checks miss them.
"""
import functools
import hashlib
from dataclasses import dataclass, field

from grader.author import mutate
from grader.base.errors import LabError, UsageError
from grader.base.kinds import Answer, Status
from grader.core.request import Device, Observers, SandboxKind, Selection
from grader.instructor.workers import Plan, WarmGrader, grade_all

CAP = 30                            # mutants per function: the kinds take turns past it


@dataclass
class Job:
    """One grading for the pool: `files` is what a worker's grader gets (batch.Worker sends it)."""
    function: str
    mutant: mutate.Mutant | None    # None: the reference itself, for the answers mutants are held to
    files: tuple                    # (the student files {name: bytes}, the function whose checks run)


@dataclass
class Outcome:
    mutant: mutate.Mutant
    status: str                     # killed, surviving, equivalent, error
    killers: list = field(default_factory=list)     # (check test id, visibility) that failed it
    detail: str = ""


class MutantGrader(WarmGrader):
    """A batch worker's warm grader for mutants: the checks of one function, every call recorded as
    (digest of function and arguments, digest of the answer or of the failure)."""

    def grade(self, job):
        files, function = job
        calls = []
        request = self.request(files, selection=Selection((function,)), observers=Observers(on_answer=(
            functools.partial(_record, calls),)))
        kind, data = self.answer(request)
        return (kind, {"results": data, "calls": calls}) if kind == Answer.GRADED else (kind, data)


def _record(calls, call, answer):
    """An observer of every call of student code: its digests go to `calls`."""
    from grader.judge.sandbox import CallFailed

    key = digest((call.function, list(call.args), call.kwargs))
    failed = isinstance(answer, CallFailed)
    calls.append((key, f"{answer.kind}: {answer.message}" if failed else digest(answer)))
    return answer


def digest(value):
    """A hash of a plain value as the wire writes it (tensors by their bytes); None if it has none."""
    from grader.judge import wire

    try:
        return hashlib.sha256(wire.dumps(wire.encode(value))).hexdigest()
    except (wire.WireError, TypeError, ValueError):
        return None


def jobs_for(lab, functions=(), cap=CAP):
    """The reference once per function (default: every function), then its mutants, in a fixed order."""
    if lab.reference is None:
        raise LabError(f"lab {lab.name} has no reference to mutate")
    unknown = [f for f in functions if f not in lab.functions]
    if unknown:
        raise UsageError(f"--function {unknown[0]}: not a function of {lab.name} ({', '.join(lab.functions)})")
    functions = list(functions) or list(lab.functions)
    missing = [name for name in lab.manifest.student_files if not (lab.reference / name).is_file()]
    if missing:
        raise LabError(f"the reference has no {missing[0]}: run grade.py check-lab {lab.name}")
    reference = {name: (lab.reference / name).read_bytes() for name in lab.manifest.student_files}
    jobs = []
    for function in functions:
        file = lab.functions[function]
        jobs.append(Job(function, None, (reference, function)))
        for mutant in mutate.mutants(reference[file].decode(), file, function, cap):
            jobs.append(Job(function, mutant, ({**reference, file: mutant.source.encode()}, function)))
    return jobs


def run(lab, jobs, workers=None, device="cpu", sandbox="auto", progress=None):
    """Grade the jobs on the batch's warm workers -> ({function: [Outcome]}, {function: [check ids]})."""
    answers = {}

    def done(job, kind, data):
        answers[id(job)] = (kind, data)
        if progress:
            progress(job)

    grade_all(lab, jobs, workers, Plan(Device(device), sandbox=SandboxKind(sandbox)), done, MutantGrader)
    baselines = {job.function: answers[id(job)] for job in jobs if job.mutant is None}
    for function, (kind, data) in baselines.items():
        if kind != Answer.GRADED or any(c["status"] != Status.PASSED for c in data["results"]["checks"]):
            raise LabError(f"the reference does not pass every check of {function}: run grade.py check-lab "
                           f"{lab.name} first")
    outcomes = {function: [] for function in baselines}
    for job in jobs:
        if job.mutant is not None:
            outcomes[job.function].append(classify(job.mutant, *answers[id(job)], baselines[job.function][1]))
    checks = {f: [c["test"] for c in data["results"]["checks"]] for f, (_, data) in baselines.items()}
    return outcomes, checks


def classify(mutant, kind, data, baseline):
    """The Outcome of a mutant's grading, held to the reference's own (`baseline`)."""
    if kind != Answer.GRADED:
        return Outcome(mutant, "error", detail=str(data))
    checks = data["results"]["checks"]
    killers = [(c["test"], c["visibility"]) for c in checks if c["status"] != Status.PASSED]
    if killers:
        return Outcome(mutant, "killed", killers)
    expected = {tuple(call) for call in baseline["calls"]}
    if all(tuple(call) in expected and call[0] is not None and call[1] is not None for call in data["calls"]):
        return Outcome(mutant, "equivalent")
    return Outcome(mutant, "surviving")


def only_hidden(outcome):
    """Whether only hidden checks killed it: the handout's public checks let it through."""
    return outcome.status == "killed" and all(visibility == "hidden" for _, visibility in outcome.killers)


def score(outcomes):
    """killed / (killed + surviving), or None when no mutant counts."""
    killed = sum(o.status == "killed" for o in outcomes)
    counted = killed + sum(o.status == "surviving" for o in outcomes)
    return killed / counted if counted else None


def summary(lab, outcomes):
    """The --json document: per student file, its score, counts and surviving mutants."""
    files = {}
    for function, found in outcomes.items():
        entry = files.setdefault(lab.functions[function], {"outcomes": []})
        entry["outcomes"] += found
    return {"lab": lab.name, "files": {file: _file_entry(entry["outcomes"]) for file, entry in files.items()},
            "functions": {f: _file_entry(found) for f, found in outcomes.items()}}


def _file_entry(found):
    def listed(outcomes):
        return [{"function": o.mutant.function, "line": o.mutant.line, "kind": o.mutant.kind,
                 "mutation": o.mutant.description, "diff": o.mutant.diff} for o in outcomes]

    count = {status: sum(o.status == status for o in found) for status in ("killed", "equivalent", "error")}
    return {"score": score(found), "mutants": len(found), "killed": count["killed"],
            "equivalent": count["equivalent"], "errors": count["error"],
            "survived": listed(o for o in found if o.status == "surviving"),
            "equivalent_mutants": listed(o for o in found if o.status == "equivalent"),
            "only_hidden": listed(o for o in found if only_hidden(o))}


# -- on screen ------------------------------------------------------------------------------------
def audit(lab, console, functions=(), cap=CAP, json_path=None, grading=None):
    """grade.py mutants: grade the mutants with a progress bar, show the report, write --json.
    `grading`: run()'s workers, device and sandbox."""
    import json
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    started = time.monotonic()
    jobs = jobs_for(lab, functions, cap)
    columns = [TextColumn("[bold]grading mutants of {task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(lab.name, total=len(jobs))
        outcomes, checks = run(lab, jobs, **(grading or {}), progress=lambda job: bar.advance(task))
    show(lab, outcomes, checks, console, time.monotonic() - started)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as file:
            json.dump(summary(lab, outcomes), file, indent=2)
    return 0


def show(lab, outcomes, checks, console, seconds):
    """The scores per function, each surviving mutant as a diff, what each check killed, and the
    mutants that only hidden checks kill."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"Mutation testing of {escape(lab.name)}'s checks ({seconds:.0f} s)", title_justify="left")
    for column in ("function", "file", "mutants", "killed", "surviving", "equivalent", "errors", "score"):
        table.add_column(column, justify="left" if column in ("function", "file") else "right")
    for function, found in outcomes.items():
        count = [sum(o.status == s for o in found) for s in ("killed", "surviving", "equivalent", "error")]
        value = score(found)
        table.add_row(function, lab.functions[function], str(len(found)), *map(str, count),
                      "-" if value is None else f"[{'green' if value >= 0.95 else 'yellow'}]{value:.0%}[/]")
    console.print(table)
    everything = [o for found in outcomes.values() for o in found]
    _show_mutants(console, "Surviving mutants: every check passes them", [o for o in everything
                                                                           if o.status == "surviving"], diff=True)
    _show_mutants(console, "Killed only by hidden checks: the handout's public checks miss them",
                  [o for o in everything if only_hidden(o)])
    _show_mutants(console, "Equivalent on the checks' inputs, not scored", [o for o in everything
                                                                           if o.status == "equivalent"])
    _show_mutants(console, "Not graded (the grader failed; grade them again)", [o for o in everything
                                                                                if o.status == "error"])
    killed = {test: sum(test in (t for t, _ in o.killers) for o in everything) for f in checks for test in checks[f]}
    kills = Table(title="What each check killed", title_justify="left")
    kills.add_column("check")
    kills.add_column("mutants killed", justify="right")
    for test, count in killed.items():
        kills.add_row(escape(test), str(count) if count else "[yellow]0: no mutant fails it[/]")
    console.print(kills)


def _show_mutants(console, title, found, diff=False):
    from rich.markup import escape

    if not found:
        return
    console.rule(f"{title} ({len(found)})", align="left")
    for outcome in found:
        m = outcome.mutant
        names = ", ".join(test.split("::")[-1] for test, _ in outcome.killers)
        killers = f" [dim](killed by {escape(names)})[/]" if outcome.killers else ""
        console.print(f"[bold]{m.file}:{m.line}[/] {m.function} · {m.kind} · {escape(m.description)}{killers}",
                      soft_wrap=True)
        for line in m.diff.splitlines() if diff else ():
            console.print(f"    [{'red' if line.startswith('-') else 'green'}]{escape(line)}[/]", soft_wrap=True)
        if outcome.detail:
            console.print(f"    [dim]{escape(outcome.detail)}[/]", soft_wrap=True)
