"""The class page's similar code: each cluster once, the two most alike side by side, and the
functions alike to the reference solution. A lead to read, never a score."""
from difflib import SequenceMatcher

from grader.instructor import similarity
from grader.instructor.page.html import details, e, link, names, student_href

EXPLAIN = ("A lead to read, never a score. Each function is compared in a normalised form (no comments, docstrings, "
           "formatting or variable names) by its MOSS-style fingerprints, less what the course gave: the stubs and "
           "the code the lesson shows (lab.yaml's given_code), so typing in the lesson is nobody's likeness. Two "
           "copies score the share of their fingerprints that both hold beyond what the course gave (a copy of a "
           "function whose signature the stub gave scores a little under 100%); students linked by a score of "
           "{threshold:.0%} or more in any function form a cluster, shown once.")


def section(found: similarity.Similarity | None) -> str:
    """The section for a similarity.Similarity, or None where the submissions could not be read."""
    head = '<section aria-labelledby="similar"><h2 id="similar">Similar code</h2>'
    if found is None:
        return head + "<p class=note>The submissions could not be read again: no similarity.</p></section>"
    body = [f"<p>{e(EXPLAIN.format(threshold=similarity.THRESHOLD))} {found.compared} students compared.</p>"]
    if not found.clusters:
        body.append("<p class=note>No two students' functions are that alike.</p>")
    body += [_cluster(i, c) for i, c in enumerate(found.clusters, 1)]
    body.append(_reference(found.reference))
    return head + "".join(body) + "</section>"


def _who(students):
    return ", ".join(link(student_href(s), s) for s in students)


def _cluster(number, cluster):
    top = cluster.pairs[0]
    a, b = top.students
    alike = "; ".join(f"{p.function} {p.score:.0%}" for p in _best_per_function(cluster.pairs))
    pairs = "".join(f"<li>{e(p.students[0])} and {e(p.students[1])}: {names(p.function)} {p.score:.0%}</li>"
                    for p in cluster.pairs)
    return (f'<div class="cluster"><h3>Cluster {number}: {len(cluster.students)} students, '
            f"{len(cluster.functions)} function(s) alike</h3><p>{_who(cluster.students)} · most alike: {e(alike)}</p>"
            + details(f"The two most alike side by side: {a} and {b}, {top.function}, {top.score:.0%} alike",
                      diff(top.code, (a, b)))
            + (details(f"Every pair of the cluster ({len(cluster.pairs)})", f"<ul>{pairs}</ul>")
               if len(cluster.pairs) > 1 else "") + "</div>")


def _best_per_function(pairs):
    best = {}
    for pair in pairs:                      # most alike first
        best.setdefault(pair.function, pair)
    return list(best.values())


def _reference(matches):
    head = ("<h3>Matches the reference solution</h3><p>Functions alike to the reference solution's, after what "
            "the course gave is removed: a signal of its own, since the reference is never shipped.</p>")
    if not matches:
        return head + "<p class=note>No student's function is that alike to the reference solution's.</p>"
    by_student = {}
    for match in matches:                   # most alike first
        by_student.setdefault(match.students[0], []).append(match)
    items = [f"<li>{link(student_href(s), s)}: {e('; '.join(f'{m.function} {m.score:.0%}' for m in found))}"
             + details(f"{found[0].function} beside the reference's", diff(found[0].code, (s, "the reference")))
             + "</li>" for s, found in by_student.items()]
    return head + f"<ul>{''.join(items)}</ul>"


def diff(code: tuple[str, str], who: tuple[str, str]) -> str:
    """Two functions side by side, lined up on their normalised lines; lines that are the same once
    names, comments and spacing are set aside are highlighted."""
    left, right = (text.splitlines() for text in code)
    rows = []
    matcher = SequenceMatcher(None, similarity.line_shapes(code[0]), similarity.line_shapes(code[1]), autojunk=False)
    for kind, a0, a1, b0, b1 in matcher.get_opcodes():
        for i in range(max(a1 - a0, b1 - b0)):
            a = left[a0 + i] if a0 + i < a1 else ""
            b = right[b0 + i] if b0 + i < b1 else ""
            rows.append(f'<tr{" class=alike" if kind == "equal" else ""}><td>{e(a)}</td><td>{e(b)}</td></tr>')
    return (f"<p class=muted><span class=alike-key>highlighted</span>: the same line once names, comments and "
            f'spacing are set aside</p><div class="scroll"><table class="diff"><thead><tr><th scope=col>{e(who[0])}'
            f"</th><th scope=col>{e(who[1])}</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
