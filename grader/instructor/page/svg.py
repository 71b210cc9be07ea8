"""Plots as inline SVG, written by hand: a few rectangles, dots and lines scale to any width
(viewBox), weigh a few KiB, need no plotting library and cost microseconds. Each plot is an image
with a title and a description for screen readers, names both its axes (text.axis) and draws the
reference's value and the lab's claim where the data has them, explained in a legend; the page's
tables hold the same numbers."""
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from itertools import count

Claim = tuple[str, float]        # the lab's claim: ("above" or "below", a value)
OUTCOME_COLOURS = {"passed": "#2e7d32", "failed": "#c62828", "not attempted": "#9e9e9e", "not run": "#e0a800"}
SERIES, REFERENCE, CLAIM = "#1565c0", "#000", "#c62828"
WIDTH = 440                     # every plot's viewBox width: one scale for every plot's text
LABEL = 56                      # characters of a bar's label that fit above it (its title holds the rest)
_ids = count()


def _svg(height, title, description, body):
    n = next(_ids)
    return (f'<svg class="plot" viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="t{n} d{n}" '
            f'preserveAspectRatio="xMinYMin meet"><title id="t{n}">{escape(title)}</title>'
            f'<desc id="d{n}">{escape(description)}</desc>{"".join(body)}</svg>')


def _text(x, y, text, anchor="start", size=12, extra=""):
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{extra}>{escape(str(text))}</text>'


def _axes(x_label, y_label, left, top, bottom, height):
    """The two axis lines of a plot area and their names: x's under its ticks, y's turned along the axis."""
    floor = height - bottom
    middle = (top + floor) / 2
    return [f'<line x1="{left}" y1="{floor}" x2="{WIDTH - 4}" y2="{floor}" stroke="#555"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{floor}" stroke="#555"/>',
            _text((left + WIDTH) / 2, height - 4, x_label, "middle", extra=' class="axis"'),
            _text(12, middle, y_label, "middle", extra=f' class="axis" transform="rotate(-90 12 {middle:.1f})"')]


def _legend(entries, y=12):
    """A row of (kind, colour, text) keys: kind is "box", "dot", "line", "dash" or "dots"."""
    body, x = [], 4
    for kind, colour, text in entries:
        if kind == "box":
            body.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{colour}"/>')
        elif kind == "dot":
            body.append(f'<circle cx="{x + 5}" cy="{y - 4}" r="4" fill="{colour}" fill-opacity="0.7"/>')
        else:
            dash = {"line": "", "dash": ' stroke-dasharray="6 3"', "dots": ' stroke-dasharray="2 2"'}[kind]
            body.append(f'<line x1="{x}" y1="{y - 4}" x2="{x + 16}" y2="{y - 4}" stroke="{colour}" '
                        f'stroke-width="2.5"{dash}/>')
        body.append(_text(x + 20, y, text, size=11))
        x += 30 + 6 * len(text)
    return body


def ticks(low: float, high: float, most: int = 5, whole: bool = False) -> list[float]:
    """Round numbers from at most `low` to at least `high`, about `most` steps apart; whole numbers
    only with `whole` (counts of students)."""
    span = (high - low) or abs(high) or 1.0
    raw = max(span / most, 1) if whole else span / most
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in ((1, 2, 5, 10) if whole else (1, 2, 2.5, 5, 10)) if m * magnitude >= raw)
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(i * step, 12) for i in range(first, max(last, first + 1) + 1)]


def _scale(low, high, start, end):
    span = (high - low) or 1.0
    return lambda v: start + (v - low) * (end - start) / span


def _claim_words(claim):
    side, value = claim
    return f"the lab's claim: {'>' if side == 'above' else '<'} {value:g}"


def bars(items: Sequence[tuple[str, int]], title: str, x_label: str, y_label: str = "students") -> str:
    """A vertical bar chart of (label, value) pairs, e.g. a score histogram."""
    height, left, top, bottom = 210, 40, 22, 44
    steps = ticks(0, max((v for _, v in items), default=0) or 1, 4, whole=True)
    fy = _scale(0, steps[-1], height - bottom, top)
    step = (WIDTH - 4 - left) / max(len(items), 1)
    body = _axes(x_label, y_label, left, top, bottom, height)
    body += [_text(left - 5, fy(t) + 4, f"{t:g}", "end", 11) for t in steps]
    for i, (label, value) in enumerate(items):
        x = left + i * step
        body.append(f'<rect class="mark" x="{x + 2:.1f}" y="{fy(value):.1f}" width="{step - 4:.1f}" '
                    f'height="{fy(0) - fy(value):.1f}" fill="{SERIES}"><title>{escape(f"{label}: {value} {y_label}")}'
                    "</title></rect>")
        if value:
            body.append(_text(x + step / 2, fy(value) - 3, value, "middle", 11))
        body.append(_text(x + step / 2, height - bottom + 14, label, "middle", 11))
    described = ", ".join(f"{label}: {value}" for label, value in items)
    return _svg(height, title, f"{y_label} per {x_label}: {described}", body)


def stacked(rows: Sequence[tuple[str, Mapping[str, int]]], title: str, x_label: str, y_label: str,
            colours: Mapping[str, str] = OUTCOME_COLOURS) -> str:
    """Horizontal bars, one per (label, {part: count}), each split into its parts on a common count
    axis; the label sits above its bar so that long names read at a phone's width."""
    left, bar, gap, top, bottom = 22, 14, 20, 22, 40
    height = top + len(rows) * (bar + gap) + bottom
    steps = ticks(0, max((sum(parts.values()) for _, parts in rows), default=0) or 1, 5, whole=True)
    fx = _scale(0, steps[-1], left, WIDTH - 16)
    body = _legend([("box", colour, part) for part, colour in colours.items()])
    body += _axes(x_label, y_label, left, top, bottom, height)
    body += [_text(fx(t), height - bottom + 14, f"{t:g}", "middle", 11) for t in steps]
    for i, (label, parts) in enumerate(rows):
        y, x = top + i * (bar + gap), fx(0)
        body.append(_text(left + 4, y + 13, label if len(label) <= LABEL else label[:LABEL - 1] + "…"))
        for part, colour in colours.items():
            share = fx(parts.get(part, 0)) - fx(0)
            if share:
                body.append(f'<rect class="mark" x="{x:.1f}" y="{y + 16}" width="{share:.1f}" height="{bar}" '
                            f'fill="{colour}"><title>{escape(f"{label}: {parts[part]} {part}")}</title></rect>')
            x += share
    described = "; ".join(f"{label}: " + ", ".join(f"{n} {p}" for p, n in parts.items() if n) for label, parts in rows)
    return _svg(height, title, described, body)


@dataclass(frozen=True)
class Curves:
    """What a curves plot draws: the class's curves (one per student) over `xs`, the reference's
    curve (None: no reference) and the lab's claim (None: none)."""
    xs: Sequence[float]
    class_curves: Sequence[Sequence[float]]
    reference: Sequence[float] | None = None
    claim: Claim | None = None


def curves(drawn: Curves, title: str, x_label: str, y_label: str) -> str:
    """The class's curves (one thin line each) against the reference's (thick, dashed) over xs, and
    the lab's claim (side, value) as a dotted line."""
    xs, class_curves, reference, claim = drawn.xs, drawn.class_curves, drawn.reference, drawn.claim
    height, left, top, bottom = 230, 48, 26, 44
    values = [v for c in class_curves for v in c] + list(reference or []) + ([claim[1]] if claim else [])
    steps = ticks(min(values + [0.0]), max(values, default=1.0), 4)
    fx, fy = _scale(min(xs), max(xs), left + 10, WIDTH - 12), _scale(steps[0], steps[-1], height - bottom, top)
    body = _legend([("line", SERIES, "a student"), *([("dash", REFERENCE, "the reference")] if reference else []),
                    *([("dots", CLAIM, _claim_words(claim))] if claim else [])])
    body += _axes(x_label, y_label, left, top, bottom, height)
    body += [_text(left - 5, fy(t) + 4, f"{t:g}", "end", 11) for t in steps]
    body += [_text(fx(x), height - bottom + 14, f"{x:g}", "middle", 11) for x in xs]

    def line(ys, style):
        points = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in zip(xs, ys))
        return f'<polyline class="mark" points="{points}" fill="none" {style}/>'
    body += [line(c, f'stroke="{SERIES}" stroke-opacity="0.4" stroke-width="1.5"') for c in class_curves]
    if claim:
        body.append(f'<line class="mark" x1="{left}" y1="{fy(claim[1]):.1f}" x2="{WIDTH - 4}" y2="{fy(claim[1]):.1f}" '
                    f'stroke="{CLAIM}" stroke-width="2" stroke-dasharray="2 2"/>')
    if reference:
        body.append(line(reference, f'stroke="{REFERENCE}" stroke-width="2.5" stroke-dasharray="6 3"'))
    described = f"{len(class_curves)} students' curves" + \
        (f"; the reference: {', '.join(f'{v:.3g}' for v in reference)}" if reference else "") + \
        (f"; {_claim_words(claim)}" if claim else "")
    return _svg(height, title, described, body)


def dots(values: Mapping[str, float], reference: float | None, claim: Claim | None, title: str, x_label: str,
         y_label: str = "students") -> str:
    """The class's values of one number as a dot histogram (a dot per student, stacked where
    values are close), the reference's as a dashed line and the lab's claim as a dotted one."""
    left, top, bottom, r = 40, 26, 44, 5
    everything = list(values.values()) + [v for v in (reference, claim and claim[1]) if v is not None]
    steps = ticks(min(everything + [0.0]), max(everything, default=1.0), 5)
    fx = _scale(steps[0], steps[-1], left + 8, WIDTH - 12)
    stacks: dict[int, int] = {}
    placed = []
    for student, v in sorted(values.items(), key=lambda item: item[1]):
        column = round((fx(v) - left) / (2 * r))
        stacks[column] = stacks.get(column, -1) + 1
        placed.append((student, v, stacks[column]))
    height = top + bottom + max(70, 2 * r * (max(stacks.values(), default=0) + 1) + 6)
    body = _legend([("dot", SERIES, "a student"), *([("dash", REFERENCE, f"the reference ({reference:.3g})")]
                                                    if reference is not None else []),
                    *([("dots", CLAIM, _claim_words(claim))] if claim else [])])
    body += _axes(x_label, y_label, left, top, bottom, height)
    body += [_text(fx(t), height - bottom + 14, f"{t:g}", "middle", 11) for t in steps]
    body += [f'<circle class="mark" cx="{fx(v):.1f}" cy="{height - bottom - r - 1 - 2 * r * level:.1f}" r="{r}" '
             f'fill="{SERIES}" fill-opacity="0.7"><title>{escape(f"{student}: {v:.4g}")}</title></circle>'
             for student, v, level in placed]
    for at, colour, dash in ((reference, REFERENCE, "6 3"), (claim and claim[1], CLAIM, "2 2")):
        if at is not None:
            body.append(f'<line class="mark" x1="{fx(at):.1f}" y1="{top}" x2="{fx(at):.1f}" y2="{height - bottom}" '
                        f'stroke="{colour}" stroke-width="2.5" stroke-dasharray="{dash}"/>')
    described = f"{len(values)} students from {min(values.values()):.3g} to {max(values.values()):.3g}" + \
        (f"; the reference {reference:.3g}" if reference is not None else "") + \
        (f"; {_claim_words(claim)}" if claim else "")
    return _svg(height, title, described, body)
