"""OUT/report.html: the class at a glance, checks, mistakes, quiz, experiments, similar code, students."""
from grader.instructor.page import classdata, svg
from grader.instructor.page.html import cell, e, link, page, student_href, table

HISTOGRAM = "Scores: students per bin of 10% of the points, from the label up"
SHOWN_PAIRS = 30                # similar pairs shown side by side; the rest are named


def render(klass, pairs, notes=()):
    """The whole page. `pairs`: similarity.Pair list, or None where the code could not be read;
    `notes`: sentences on what the page leaves out."""
    summary = klass.summary
    body = [f"<h1>{e(summary.title)}</h1><p class=muted>lab {e(summary.lab)} · {summary.students} students · "
            f"written by grade.py report</p>", _glance(klass), _checks(klass), _mistakes(klass),
            _quiz(klass), _experiments(klass), _similar(pairs), _students(klass)]
    body += [f"<p class=note>{e(n)}</p>" for n in notes]
    return page(f"{summary.title}: class report", "".join(body))


def _glance(klass):
    counts = classdata.glance(klass)
    cards = "".join(f"<li><b>{n}</b>{e(label)}</li>" for label, n in counts.items())
    summary = klass.summary
    average = "" if summary.mean_percent is None else \
        f"<p>mean {summary.mean_percent:.0f}% · median {summary.median_percent:.0f}% " \
        f"of {summary.max_score:g} points</p>"
    quiz = "" if klass.questions else "<p class=note>No class quiz was read: give grade.py report --quiz " \
        "RESPONSES.csv (or put quiz-responses.csv in OUT) for the lesson test and lesson completion.</p>"
    return (f'<section aria-labelledby="glance"><h2 id="glance">The class at a glance</h2>'
            f'<ul class="cards">{cards}</ul>{average}'
            f'{svg.bars(classdata.histogram(klass), HISTOGRAM)}{quiz}</section>')


def _rate(parts):
    passed = parts.get("passed", 0)
    reached = passed + parts.get("failed", 0)
    return (f"{100 * passed / reached:.0f}%", passed / reached) if reached else ("-", -1)


def _checks(klass):
    checks, functions = classdata.check_outcomes(klass)
    if not checks:
        return ""
    rows = []
    for check, parts in checks:
        shown, rate = _rate(parts)
        hidden = "" if check.visibility == "visible" else " (hidden)"
        rows.append([cell(check.name + hidden, head=True), cell(check.function),
                     *(cell(parts.get(o, 0), sort=parts.get(o, 0), numeric=True) for o in classdata.OUTCOMES),
                     cell(shown, sort=rate, numeric=True)])
    explain = ("<p>Not attempted: the function's stub was left as given. Not run: blocked by another function "
               "(its stub, or a failure it depends on) or by the time budget. Neither counts as failed; the pass "
               "rate is of the students who reached the check.</p>")
    return (f'<section aria-labelledby="checks"><h2 id="checks">Functions and checks</h2>{explain}'
            f'{svg.stacked(functions, "Students per function: all checks passed, some failed, not attempted, not run")}'
            f'{svg.stacked(_families(checks), "Outcomes per check (the variants of a check together)")}'
            + table("Checks: students per outcome", ["check", "function", *classdata.OUTCOMES, "pass rate"], rows,
                    numeric=(2, 3, 4, 5, 6)) + "</section>")


def _families(checks):
    """[(check name without variant, {outcome: count over students and variants})] in the lab's order."""
    families = {}
    for check, parts in checks:
        total = families.setdefault(classdata.family(check.name), {})
        for outcome, n in parts.items():
            total[outcome] = total.get(outcome, 0) + n
    return list(families.items())


def _who(names, shown=12):
    links = ", ".join(link(student_href(n), n) for n in names[:shown])
    return links + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _mistakes(klass):
    found = classdata.mistakes(klass)
    if not found:
        body = "<p class=note>No failed check named a likely mistake.</p>"
    else:
        rows = [[cell(len(who), sort=len(who), numeric=True, head=True), cell(check.function),
                 cell(check.mistake or "-"), cell(check.hint or check.message.splitlines()[0]),
                 cell("; ".join(sorted(names))), cell(_who(who), html=True)] for check, names, who in found]
        body = table("Mistakes, grouped by the mistake (its id, else the function and the hint's words)",
                     ["students", "function", "id", "mistake", "checks", "who"], rows, numeric=(0,))
    return f'<section aria-labelledby="mistakes"><h2 id="mistakes">Most common mistakes</h2>{body}</section>'


def _quiz(klass):
    if not klass.questions:
        return ""
    rows, plot = [], []
    for question, right, answered, wrong in classdata.quiz_questions(klass):
        rate = right / answered if answered else 0.0
        common = "; ".join(f"{given} ({n})" for given, n in wrong) or "-"
        prompt = question.prompt if len(question.prompt) <= 160 else question.prompt[:159] + "…"
        rows.append([cell(question.id, head=True), cell(prompt), cell(f"{right}/{answered}", sort=rate, numeric=True),
                     cell(f"{100 * rate:.0f}%", sort=rate, numeric=True), cell(common)])
        plot.append((question.id, {"right": right, "wrong": answered - right}))
    colours = {"right": svg.OUTCOME_COLOURS["passed"], "wrong": svg.OUTCOME_COLOURS["failed"]}
    return (f'<section aria-labelledby="quiz"><h2 id="quiz">Lesson test: {e(klass.quiz_title)}</h2>'
            f'{svg.stacked(plot, "Answers per question: right and wrong", colours)}'
            + table("Questions: right rate and the most common wrong answers (how many)",
                    ["question", "prompt", "right", "rate", "common wrong answers"], rows, numeric=(2, 3))
            + "</section>")


def _experiments(klass):
    found = classdata.experiments(klass)
    head = '<section aria-labelledby="experiments"><h2 id="experiments">Experiments</h2>'
    if not found:
        return head + "<p class=note>No check of this lab recorded measurements (Check.data).</p></section>"
    parts = []
    for check, values, reference, xs in found:
        parts.append(f"<h3>{e(check.name)}</h3>")
        for key, by_student in values.items():
            scalars = {s: v for s, v in by_student.items() if isinstance(v, float | int)}
            curves = [v for v in by_student.values() if isinstance(v, list) and len(v) == len(xs)]
            if scalars:
                parts.append(svg.strip(scalars, reference.get(key), f"{key}: the class (dots) and the reference"))
            if curves and xs:
                parts.append(svg.curves(xs, curves, reference.get(key), f"{key}: the class's curves (thin) and "
                                        "the reference's (dashed)", key))
    return head + "<p>Measured by the grader from each learner's returned models, on data of its own; the " \
        "reference is the grader's own run of the lab's recipe.</p>" + "".join(parts) + "</section>"


def _similar(pairs):
    head = '<section aria-labelledby="similar"><h2 id="similar">Similar code</h2>'
    if pairs is None:
        return head + "<p class=note>The submissions could not be read again: no similarity.</p></section>"
    text = ("<p>A lead to read, never a score: functions whose normalised code (no comments, docstrings, "
            "formatting or variable names; the handout's stub removed) shares most of its MOSS-style "
            f"fingerprints. {len(pairs)} pair(s) at or above the threshold.</p>")
    items = []
    for pair in pairs[:SHOWN_PAIRS]:
        a, b = pair.students
        items.append(f"<h3>{e(pair.function)}: {link(student_href(a), a)} and {link(student_href(b), b)} · "
                     f"{100 * pair.score:.0f}% alike</h3><div class=pair><pre aria-label=\"{e(a)}\">"
                     f"{e(pair.code[0])}</pre><pre aria-label=\"{e(b)}\">{e(pair.code[1])}</pre></div>")
    rest = [f"{p.function}: {p.students[0]} and {p.students[1]} ({100 * p.score:.0f}%)" for p in pairs[SHOWN_PAIRS:]]
    more = f"<p>{len(rest)} more, without their code: {e('; '.join(rest))}</p>" if rest else ""
    return head + text + "".join(items) + more + "</section>"


def _students(klass):
    functions = list(klass.summary.functions)
    rows = []
    for s in klass.students:
        row = s.row
        percent = row.percent
        quiz = [cell(f"{s.quiz['score']}/{s.quiz['max']}" if s.quiz else "-",
                     sort=s.quiz["score"] if s.quiz else -1, numeric=True)] if klass.questions else []
        rows.append([cell(link(student_href(s.name), s.name), html=True, head=True), cell(row.status),
                     cell("-" if row.score is None else f"{row.score:g}", sort=row.score or 0, numeric=True),
                     cell("-" if percent is None else f"{percent:.0f}%", sort=percent or 0, numeric=True),
                     *(cell(f"{row.functions.get(f, 0):g}", sort=row.functions.get(f, 0), numeric=True)
                       for f in functions), *quiz,
                     cell(f"{row.seconds:.1f}", sort=row.seconds, numeric=True),
                     cell("; ".join(f"{k}: {v}" for k, v in s.late.items()) or "-"),
                     cell("; ".join(filter(None, [row.detail, *row.incidents])))])
    headers = ["student", "status", "score", "percent", *functions, *(["quiz"] if klass.questions else []),
               "seconds", "late", "detail"]
    numeric = tuple(range(2, 5 + len(functions) + bool(klass.questions)))
    return ('<section aria-labelledby="students"><h2 id="students">Students</h2>'
            + table("One row per student; the name opens their feedback page", headers, rows, numeric=numeric)
            + "</section>")
