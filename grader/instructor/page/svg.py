"""Plots as inline SVG, written by hand: a few rectangles, dots and lines scale to any width
(viewBox), weigh a few KiB, need no plotting library and cost microseconds. Each plot is an image
with a title and a description for screen readers; the page's tables hold the same numbers."""
from html import escape
from itertools import count

OUTCOME_COLOURS = {"passed": "#2e7d32", "failed": "#c62828", "not attempted": "#9e9e9e", "not run": "#e0a800"}
SERIES = "#1565c0"
LABEL = 64                      # characters of a bar's label that fit above it (its title holds the rest)
_ids = count()


def _svg(width, height, title, description, body):
    n = next(_ids)
    return (f'<svg class="plot" viewBox="0 0 {width} {height}" role="img" aria-labelledby="t{n} d{n}" '
            f'preserveAspectRatio="xMinYMin meet"><title id="t{n}">{escape(title)}</title>'
            f'<desc id="d{n}">{escape(description)}</desc>{"".join(body)}</svg>')


def _text(x, y, text, anchor="start", size=13, extra=""):
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{extra}>{escape(str(text))}</text>'


def bars(items, title, unit="students"):
    """A vertical bar chart of (label, value) pairs, e.g. a score histogram."""
    width, height, left, bottom = 440, 200, 30, 34
    most = max((v for _, v in items), default=0) or 1
    step = (width - left) / max(len(items), 1)
    body = [f'<line x1="{left}" y1="{height - bottom}" x2="{width}" y2="{height - bottom}" stroke="#555"/>',
            _text(left - 6, 16, most, "end"), _text(left - 6, height - bottom, 0, "end")]
    for i, (label, value) in enumerate(items):
        tall = (height - bottom - 20) * value / most
        x = left + i * step
        body.append(f'<rect class="mark" x="{x + 3:.1f}" y="{height - bottom - tall:.1f}" width="{step - 6:.1f}" '
                    f'height="{tall:.1f}" fill="{SERIES}"><title>{escape(f"{label}: {value} {unit}")}</title></rect>')
        if value:
            body.append(_text(x + step / 2, height - bottom - tall - 4, value, "middle", 12))
        body.append(_text(x + step / 2, height - bottom + 16, label, "middle", 12))
    described = ", ".join(f"{label}: {value}" for label, value in items)
    return _svg(width, height, title, f"{unit} per bin: {described}", body)


def stacked(rows, title, colours=OUTCOME_COLOURS):
    """Horizontal bars, one per (label, {part: count}), each split into its parts; the label sits
    above its bar so that long check names read at a phone's width."""
    width, bar, gap = 440, 16, 24
    height = len(rows) * (bar + gap) + 30
    body = []
    x = 0
    for part, colour in colours.items():           # the legend
        body += [f'<rect x="{x}" y="2" width="12" height="12" fill="{colour}"/>', _text(x + 16, 13, part)]
        x += 24 + 8 * len(part)
    for i, (label, parts) in enumerate(rows):
        y, total, x = 30 + i * (bar + gap), sum(parts.values()) or 1, 0.0
        body.append(_text(0, y + 11, label if len(label) <= LABEL else label[:LABEL - 1] + "…"))
        for part, colour in colours.items():
            share = width * parts.get(part, 0) / total
            if share:
                body.append(f'<rect class="mark" x="{x:.1f}" y="{y + 14}" width="{share:.1f}" height="{bar}" '
                            f'fill="{colour}"><title>{escape(f"{label}: {parts[part]} {part}")}</title></rect>')
            x += share
    described = "; ".join(f"{label}: " + ", ".join(f"{n} {p}" for p, n in parts.items() if n) for label, parts in rows)
    return _svg(width, height, title, described, body)


def _anchor(x, width):
    """Where a label at x can stand without leaving the plot."""
    return "start" if x < width / 4 else "end" if x > 3 * width / 4 else "middle"


def _scale(low, high, start, end):
    span = (high - low) or 1.0
    return lambda v: start + (v - low) * (end - start) / span


def curves(xs, class_curves, reference, title, y_label):
    """The class's curves (one thin line each) against the reference's (thick, dashed) over xs."""
    width, height, left, bottom = 440, 220, 56, 34
    values = [v for c in class_curves for v in c] + list(reference or [])
    low, high = min(values + [0.0]), max(values, default=1.0)         # from 0, or below it
    fx, fy = _scale(min(xs), max(xs), left + 8, width - 10), _scale(low, high, height - bottom, 12)
    body = [f'<line x1="{left}" y1="{height - bottom}" x2="{width}" y2="{height - bottom}" stroke="#555"/>',
            f'<line x1="{left}" y1="8" x2="{left}" y2="{height - bottom}" stroke="#555"/>',
            _text(left - 4, 16, f"{high:.3g}", "end", 12), _text(left - 4, height - bottom, f"{low:.3g}", "end", 12),
            _text(left + 4, height - 4, y_label, size=12)]
    body += [_text(fx(x), height - bottom + 14, f"{x:g}", "middle", 12) for x in xs]

    def line(ys, style):
        points = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in zip(xs, ys))
        return f'<polyline class="mark" points="{points}" fill="none" {style}/>'
    body += [line(c, f'stroke="{SERIES}" stroke-opacity="0.35" stroke-width="1.5"') for c in class_curves]
    if reference:
        body.append(line(reference, 'stroke="#000" stroke-width="3" stroke-dasharray="6 4"'))
    described = f"{len(class_curves)} students' curves" + \
        (f"; the reference: {', '.join(f'{v:.3g}' for v in reference)}" if reference else "")
    return _svg(width, height, title, described, body)


def strip(values, reference, title):
    """The class's values of one number as dots on a line, the reference's as a dashed mark."""
    width, height, margin = 440, 90, 16
    everything = list(values.values()) + ([reference] if reference is not None else [])
    low, high = min(everything, default=0.0), max(everything, default=1.0)
    fx = _scale(low, high, margin, width - margin)
    body = [f'<line x1="{margin}" y1="50" x2="{width - margin}" y2="50" stroke="#555"/>',
            _text(margin, 80, f"{low:.3g}", size=12), _text(width - margin, 80, f"{high:.3g}", "end", 12)]
    body += [f'<circle class="mark" cx="{fx(v):.1f}" cy="{44 - 10 * (i % 3)}" r="5" fill="{SERIES}" '
             f'fill-opacity="0.6"><title>{escape(f"{student}: {v:.4g}")}</title></circle>'
             for i, (student, v) in enumerate(sorted(values.items(), key=lambda item: item[1]))]
    if reference is not None:
        at = fx(reference)
        body += [f'<line class="mark" x1="{at:.1f}" y1="14" x2="{at:.1f}" y2="60" stroke="#000" stroke-width="3" '
                 'stroke-dasharray="5 3"/>', _text(at, 10, "reference", _anchor(at, width), 12)]
    described = f"{len(values)} students from {low:.3g} to {high:.3g}" + \
        (f"; the reference {reference:.3g}" if reference is not None else "")
    return _svg(width, height, title, described, body)
