"""feedback.html and feedback.md in a student's folder of OUT: what a learner may read of their grade.

Checks whose visibility is not "visible" (hidden/ checks, as Gradescope hides them) show only as a
count and their points per function: no name, message, hint or output of theirs is written here.
Nothing names another student."""
import re
from collections.abc import Sequence

from grader.base.text import markdown as md
from grader.instructor import record
from grader.instructor.page.classdata import Student
from grader.instructor.page.html import e, page

WORDS = {"passed": "passed", "failed": "failed", "not attempted": "not attempted (the stub is as given)",
         "not run": "not run (it needs something above first)"}
LONG_HINT = 80                  # characters: a hint this long is shown once a page, then referred to
REGRADE = "the grader could not grade it, through no fault of yours: it will be graded again"
#           a regrade's detail is the grader's own words, for the instructor: any check's, a hidden one's too


def _sections(student, functions):
    """[(function, score, max, [visible checks], (hidden passed points, hidden points, hidden count))];
    a long hint met again is referred to, not repeated (_once)."""
    results = student.results
    sections, said = [], {}
    for function, (score, top) in results.by_function(functions).items():
        checks = [_once(c.for_learner(), said) for c in results.checks if c.function == function]
        shown = [c for c in checks if c.visibility == "visible"]
        hidden = [c for c in checks if c.visibility != "visible"]
        sections.append((function, score, top, shown,
                         (sum(c.score for c in hidden), sum(c.points for c in hidden), len(hidden))))
    return sections


def _once(check, said):
    """The check with a long hint it shares with a check shown before replaced by a reference to
    that check (`said`: {hint: the first visible check's name that gave it})."""
    hint = check.hint
    if check.visibility != "visible" or len(hint) < LONG_HINT or hint not in check.message:
        return check
    if hint not in said:
        said[hint] = check.name
        return check
    return check.model_copy(update={"message": check.message.replace(hint, f"(the same hint as for {said[hint]!r}, "
                                                                           "above)")})


def _headline(student):
    row = student.row
    lines = [f"Status: {row.status}" + (f" ({REGRADE})" if row.status == "regrade" else
                                          f" ({row.detail})" if row.detail else "")]
    final = row.final_score is not None and row.max_score and abs(row.final_score - (row.score or 0)) > 1e-9
    if row.score is not None and row.max_score:
        lines.append(f"{'Autograded score' if final else 'Score'}: {row.score:g} / {row.max_score:g} "
                     f"({row.percent:.0f}%)")
    lines += _timing(row) if row.timing else [f"{k.replace('_', ' ')}: {v}" for k, v in student.late.items()]
    lines += [f"Adjusted by your instructor: {said}" for said in record.in_words(row)]
    if final:
        why = " and ".join(filter(None, ["the late penalty" if row.penalty_percent else "",
                                         "your instructor's adjustment" if row.adjustments else ""]))
        lines.append(f"Final score: {row.final_score:g} / {row.max_score:g}" + (f" (after {why})" if why else ""))
    if student.quiz:
        verdict = "passed" if student.quiz["passed"] else "not passed"
        lines.append(f"Lesson test: {student.quiz['score']}/{student.quiz['max']}, {verdict}")
    return lines


def _timing(row):
    """When the submission came in, from where, and what that cost, in words."""
    source = {"timestamps": "the course's record of submission times", "gradescope": "Gradescope"}
    lines = [f"Submitted: {row.submitted_at.isoformat(' ', 'minutes')} (from {source.get(row.time_source, '?')})"
             if row.submitted_at else "Submitted: time unknown"]
    if row.extension:
        lines.append("Extension: " + (f"{row.extension:g} h" if isinstance(row.extension, float | int)
                                      else f"due {row.extension.isoformat(' ', 'minutes')}"))
    lines.append(f"Lateness: {row.timing}")
    return lines


def html(student: Student, title: str, functions: Sequence[str]) -> str:
    body = [f"<h1>{e(title)}</h1><p class=muted>Feedback for {e(student.name)}</p>",
            "<ul>" + "".join(f"<li>{e(line)}</li>" for line in _headline(student)) + "</ul>"]
    for function, score, top, shown, (got, hidden_points, hidden) in _sections(student, functions) \
            if student.results else ():
        body.append(f"<section><h2>{e(function)}: {score:g} / {top:g}</h2>")
        for c in shown:
            body.append(f'<h3 class="{c.outcome.replace(" ", "-")}">{e(c.name)}: {e(WORDS[c.outcome])} '
                        f"({c.score:g}/{c.points:g})</h3>")
            if c.outcome != "passed" and c.message:
                body.append(f"<pre>{e(c.message)}</pre>")
            if c.output:
                body.append(f"<p>Your code printed:</p><pre>{e(c.output)}</pre>")
        if hidden:
            body.append(f"<p class=muted>{hidden} hidden check(s): {got:g} / {hidden_points:g} points "
                        "(their details stay hidden)</p>")
        body.append("</section>")
    return page(f"{title}: feedback for {student.name}", "".join(body), script=False)


def markdown(student: Student, title: str, functions: Sequence[str]) -> str:
    """The feedback in Markdown: every name, file name and detail escaped (grader.base.text.markdown), every
    message and printed output in a fence no line of it can close."""
    lines = [f"# {md(title)}", "", f"Feedback for {md(student.name)}", ""]
    lines += [f"- {md(line)}" for line in _headline(student)]
    for function, score, top, shown, (got, hidden_points, hidden) in _sections(student, functions) \
            if student.results else ():
        lines += ["", f"## {md(function)}: {score:g} / {top:g}", ""]
        for c in shown:
            lines.append(f"- **{md(c.name)}**: {WORDS[c.outcome]} ({c.score:g}/{c.points:g})")
            if c.outcome != "passed" and c.message:
                lines += ["", _fenced(c.message)]
            if c.output:
                lines += ["", "  Your code printed:", "", _fenced(c.output)]
        if hidden:
            lines.append(f"- {hidden} hidden check(s): {got:g} / {hidden_points:g} points (their details stay hidden)")
    return "\n".join(lines) + "\n"


def _fenced(text):
    """A fenced block no line of `text` can close."""
    fence = "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))
    return "\n".join(["  " + fence, *("  " + line for line in text.splitlines()), "  " + fence])
