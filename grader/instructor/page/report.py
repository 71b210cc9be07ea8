"""OUT/report.html, read at a glance: the class, the students, the hardest checks, the common
mistakes, the quiz, the experiments, similar code last; what is long is folded (<details>)."""
import functools
from collections.abc import Iterable

from grader.instructor import record
from grader.instructor.page import classdata, similar, svg
from grader.instructor.page.classdata import Class
from grader.instructor.page.html import cell, details, e, link, names, page, student_href, table
from grader.instructor.similarity import Similarity

HARDEST = 10                    # checks shown before the fold
SECTIONS = {"class": "The class", "students": "Students", "checks": "Hardest checks", "mistakes": "Common mistakes",
            "quiz": "Lesson test", "experiments": "Experiments", "similar": "Similar code"}


def render(klass: Class, found: Similarity | None, notes: Iterable[str] = ()) -> str:
    """The whole page. `found`: a similarity.Similarity, or None where the code could not be read;
    `notes`: sentences on what the page leaves out."""
    summary = klass.summary
    sections = [_class(klass), _students(klass), _checks(klass), _mistakes(klass), _quiz(klass),
                _experiments(klass), similar.section(found)]
    shown = [key for key in SECTIONS if any(f'id="{key}"' in s for s in sections)]
    contents = "".join(f'<a href="#{key}">{e(SECTIONS[key])}</a>' for key in shown)
    head = (f"<h1>{e(summary.title)}</h1><p class=muted>lab {e(summary.lab)} · {summary.students} students · "
            f'written by grade.py report</p><nav class="contents" aria-label="Contents">{contents}</nav>')
    return page(f"{summary.title}: class report",
                head + "".join(f"<p class=note>{e(n)}</p>" for n in notes) + "".join(sections))


def _section(key, body):
    return f'<section aria-labelledby="{key}"><h2 id="{key}">{e(SECTIONS[key])}</h2>{body}</section>'


def _class(klass):
    summary = klass.summary
    counts = dict(classdata.glance(klass))
    if summary.mean_percent is not None:
        counts |= {"mean score": f"{summary.mean_percent:.0f}%", "median score": f"{summary.median_percent:.0f}%"}
    cards = "".join(f"<li><b>{e(n)}</b>{e(label)}</li>" for label, n in counts.items())
    bins = summary.histogram
    alone = bool(bins) and bins[-1].low == bins[-1].high
    histogram = svg.bars([(f"{b.low:g}", b.students) for b in bins],
                         f"Scores of the {summary.counted} students the grader scored",
                         "score (% of the points), bins of 10" + ("; 100 alone" if alone else ", the last with 100"))
    steps = [(text, {"done": done, "not yet": of - done}) for text, done, of in classdata.completion(klass)]
    completion = svg.stacked(steps, "Lesson completion: students who have done each step", "students",
                             "step", {"done": svg.OUTCOME_COLOURS["passed"], "not yet": "#bdbdbd"}) if steps else ""
    _, functions = classdata.check_outcomes(klass)
    outcomes = svg.stacked(functions, "Students per function: all its checks passed, some failed, not attempted, "
                           "not run", "students", "function") if functions else ""
    quiz = "" if klass.questions else "<p class=note>No class quiz was read: give grade.py report --quiz " \
        "RESPONSES.csv (or put quiz-responses.csv in OUT) for the lesson test and lesson completion.</p>"
    figures = "".join(f"<figure>{plot}</figure>" for plot in (histogram, completion, outcomes) if plot)
    return _section("class", f'<ul class="cards">{cards}</ul><div class="grid">{figures}</div>{quiz}')


def _students(klass):
    functions = list(klass.summary.functions)
    late = any(s.late for s in klass.students)
    final = klass.policy is not None or any(s.row.adjustments for s in klass.students)
    rows = []
    for s in klass.students:
        row = s.row
        detail = "; ".join(filter(None, [row.detail, *row.incidents, _extension(row),
                                         *(f"adjusted {said}" for said in record.in_words(row))]))
        rows.append([cell(link(student_href(s.name), s.name), html=True, head=True), cell(row.status),
                     cell("-" if row.score is None else f"{row.score:g}", sort=row.score or 0, numeric=True),
                     cell("-" if row.percent is None else f"{row.percent:.0f}%", sort=row.percent or 0, numeric=True),
                     *([cell("-" if row.final_score is None else f"{row.final_score:g}", sort=row.final_score or 0,
                             numeric=True)] if final else []),
                     *(cell(f"{row.functions.get(f, 0):g}", sort=row.functions.get(f, 0), numeric=True)
                       for f in functions),
                     *([cell(f"{s.quiz['score']}/{s.quiz['max']}" if s.quiz else "-",
                             sort=s.quiz["score"] if s.quiz else -1, numeric=True)] if klass.questions else []),
                     cell(f"{row.seconds:.1f}", sort=row.seconds, numeric=True),
                     *([cell("; ".join(f"{k}: {v}" for k, v in s.late.items()) or "-")] if late else []),
                     cell(_folded(detail), html=True)])
    headers = ["student", "status", "score", "percent", *(["final"] if final else []), *functions,
               *(["quiz"] if klass.questions else []), "seconds", *(["late"] if late else []), "detail"]
    numeric = tuple(range(2, 5 + final + len(functions) + bool(klass.questions)))
    return _section("students", table("One row per student, points per function; the name opens their feedback "
                                      "page", headers, rows, numeric=numeric, kind="students"))


def _extension(row):
    """The roster's extension of the row in words ('' where none)."""
    if not row.extension:
        return ""
    return f"extension {row.extension:g} h" if isinstance(row.extension, float | int) else \
        f"extension to {row.extension.isoformat(' ', 'minutes')}"


def _folded(text, shown=48):
    """A long cell's text folded after its first words, so that a row keeps to a line."""
    if len(text) <= shown:
        return e(text) or "-"
    return details(text[:shown].rsplit(" ", 1)[0] + " …", e(text))


def _meter(rate):
    """A rate in words and as a bar."""
    return f'<span class="meter"><span style="width:{100 * rate:.0f}%"></span></span>{100 * rate:.0f}%'


def _rate(parts):
    passed = parts.get("passed", 0)
    reached = passed + parts.get("failed", 0)
    return passed / reached if reached else None


def _check_rows(checks, variants=False):
    rows = []
    for check, parts in checks:
        rate = _rate(parts)
        name = (check.name if variants else classdata.family(check.name)) + \
            ("" if check.visibility == "visible" else " (hidden)")
        rows.append([cell(name, head=True), cell(names(check.function), html=True),
                     cell("-" if rate is None else _meter(rate), sort=-1 if rate is None else rate,
                          html=True, numeric=True),
                     *(cell(parts.get(o, 0), sort=parts.get(o, 0), numeric=True) for o in classdata.OUTCOMES)])
    return rows


def _checks(klass):
    hardest = classdata.hardest(klass)
    if not hardest:
        return ""
    checks, _ = classdata.check_outcomes(klass)
    headers = ["check", "function", "pass rate", *classdata.OUTCOMES]
    explain = ("<p>A student's outcome of a check is their worst over its variants. Not attempted: the function's "
               "stub was left as given. Not run: blocked by another function (its stub, or a failure it depends "
               "on) or by the time budget. Neither counts as failed: the pass rate is of the students who reached "
               "the check.</p>")
    top = table(f"The {min(HARDEST, len(hardest))} hardest checks, lowest pass rate first", headers,
                _check_rows(hardest[:HARDEST]), numeric=(2, 3, 4, 5, 6))
    rest = details(f"The other {len(hardest) - HARDEST} checks", table(
        "The other checks", headers, _check_rows(hardest[HARDEST:]), numeric=(2, 3, 4, 5, 6))) \
        if len(hardest) > HARDEST else ""
    variants = details(f"Every variant of every check ({len(checks)})", table(
        "Checks and their variants, students per outcome", headers, _check_rows(checks, variants=True),
        numeric=(2, 3, 4, 5, 6)))
    return _section("checks", explain + top + rest + variants)


def _who(names, shown=12):
    links = ", ".join(link(student_href(n), n) for n in names[:shown])
    return links + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _mistakes(klass):
    found = classdata.mistakes(klass)
    if not found:
        return _section("mistakes", "<p class=note>No failed check named a likely mistake.</p>")
    ids = any(check.mistake for check, _, _ in found)
    rows = [[cell(len(who), sort=len(who), numeric=True, head=True), cell(names(check.function), html=True),
             cell(check.hint or check.message.splitlines()[0]), *([cell(check.mistake or "-")] if ids else []),
             cell(e(next(iter(checks))) if len(checks) == 1 else
                  details(f"{len(checks)} checks", e("; ".join(sorted(checks)))), html=True),
             cell(_who(who), html=True)] for check, checks, who in found]
    return _section("mistakes", table("Mistakes, grouped by the mistake (its id, else the function and the hint's "
                                      "words)", ["students", "function", "mistake", *(["id"] if ids else []),
                                                 "checks", "who"], rows, numeric=(0,)))


def _quiz(klass):
    if not klass.questions:
        return ""
    rows = []
    for question, right, answered, wrong in classdata.quiz_questions(klass):
        rate = right / answered if answered else 0.0
        common = "; ".join(f"{given} ({n})" for given, n in wrong) or "-"
        prompt = question.prompt if len(question.prompt) <= 120 else question.prompt[:119] + "…"
        rows.append([cell(question.id, head=True), cell(prompt),
                     cell(f"{_meter(rate)} ({right}/{answered})", sort=rate, html=True, numeric=True), cell(common)])
    return _section("quiz", f"<p>{e(klass.quiz_title)}</p>" + table(
        "Questions: right answers and the most common wrong ones (how many)",
        ["question", "prompt", "right", "common wrong answers"], rows, numeric=(2,)))


def _dots(scalars, reference, claim, key, title):
    return svg.dots(scalars, reference, claim, f"{title}: the class and the reference", key)


def _curves(drawn, x_label, key, title):
    return svg.curves(drawn, f"{title}: the class's curves and the reference's", x_label, key)


def _titles(words):
    """One title per chart, no two alike: a check's name, with as many of its further words (the
    measurement, the kind of chart, the test) as it takes to tell that chart from the others."""
    def title(i):
        for used in range(1, len(words[i]) + 1):
            if all(words[j][:used] != words[i][:used] for j in range(len(words)) if j != i):
                return ": ".join(words[i][:used])
        return ": ".join(words[i]) + f" ({i + 1})"
    return [title(i) for i in range(len(words))]


def _experiments(klass):
    found = classdata.experiments(klass)
    if not found:
        return _section("experiments", "<p class=note>No check of this lab recorded measurements (Check.data).</p>")
    charts = []                 # (words that may title it, how to draw it under a title)
    for x in found:
        for key, by_student in x.values.items():
            scalars = {s: v for s, v in by_student.items() if isinstance(v, float | int)}
            lines = [v for v in by_student.values() if isinstance(v, list) and len(v) == len(x.xs)]
            if scalars:
                charts.append(([x.check.name, key, "each learner's value", x.check.test], functools.partial(
                    _dots, scalars, x.reference.get(key), x.claims.get(key), key)))
            if lines and x.xs:
                charts.append(([x.check.name, key, "curves", x.check.test], functools.partial(
                    _curves, svg.Curves(x.xs, lines, x.reference.get(key), x.claims.get(key)), x.x_label or "x",
                    key)))
    titles = _titles([words for words, _ in charts])
    kinds = [tuple(words[1:3]) for words, _ in charts]  # a chart's own title: its measurement's, unless it repeats
    figures = [(title, draw(kind[0] if kinds.count(kind) == 1 else f"{kind[0]}, {title}"))
               for title, kind, (_, draw) in zip(titles, kinds, charts)]
    plots = "".join(f"<figure><figcaption>{e(name)}</figcaption>{plot}</figure>" for name, plot in figures)
    return _section("experiments", "<p>Measured by the grader from each learner's returned models, on data of its "
                    "own; the reference is the grader's own run of the lab's recipe; the claim is the lab's "
                    f'threshold, as its checks record it.</p><div class="grid">{plots}</div>')
