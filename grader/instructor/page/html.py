"""The pieces of a self-contained HTML page: the frame with its style and one small script,
accessible tables (caption, th scope, sorting buttons with aria-sort), links that survive any name."""
from collections.abc import Container, Iterable, Sequence
from html import escape
from itertools import count
from urllib.parse import quote

from grader.core.submissions import folder_name

STYLE = """
:root { color-scheme: light; --line: #d0d7de; --muted: #57606a; --alike: #fff1c2; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1200px; padding: 0 12px 12px; color: #1f2328; background: #fff; overflow-wrap: break-word; }
h1 { font-size: 1.5em; margin: .4em 0 .1em; } h2 { font-size: 1.2em; margin: 1.2em 0 .4em;
     border-bottom: 1px solid var(--line); scroll-margin-top: 3em; } h3 { font-size: 1em; margin: .8em 0 .3em; }
p { margin: .4em 0; } .muted { color: var(--muted); } .note { color: var(--muted); font-style: italic; }
nav.contents { position: sticky; top: 0; z-index: 2; background: #fff; border-bottom: 1px solid var(--line);
               display: flex; flex-wrap: wrap; gap: 2px 16px; padding: 6px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(8.5em, 1fr)); gap: 6px; padding: 0;
         margin: 8px 0; list-style: none; }
.cards li { border: 1px solid var(--line); border-radius: 6px; padding: 2px 8px; line-height: 1.25; }
.cards b { display: block; font-size: 1.3em; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(420px, 100%), 1fr)); gap: 4px 28px;
        align-items: start; }
figure { margin: 0; min-width: 0; } figcaption { font-weight: 600; }
svg.plot { width: 100%; height: auto; max-width: 600px; display: block; margin: 6px 0; font-family: inherit; }
.scroll { overflow-x: auto; max-width: 100%; } table { border-collapse: collapse; margin: 6px 0; }
p.caption { font-weight: 600; margin: 8px 0 0; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.students tbody th { position: sticky; left: 0; background: #fff; max-width: 14em; }
table.students td:last-child { min-width: 13em; } table.students th, table.students td { padding: 3px 6px; }
table.students thead th { font-size: 13px; }
td details { max-width: 26em; } td summary { cursor: pointer; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; color: inherit;
            text-align: inherit; }
th button::after { content: " \\2195"; color: var(--muted); }
th[aria-sort=ascending] button::after { content: " \\2191"; }
th[aria-sort=descending] button::after { content: " \\2193"; }
button:focus-visible, a:focus-visible, summary:focus-visible { outline: 3px solid #0969da; outline-offset: 2px; }
details { margin: 6px 0; } details > summary { cursor: pointer; }
.meter { display: inline-block; width: 4em; height: .65em; background: #e8e8e8; margin-right: .4em; }
.meter span { display: block; height: 100%; background: #2e7d32; }
pre { background: #f6f8fa; padding: 8px; font-size: 13px; white-space: pre-wrap; overflow-wrap: anywhere;
      margin: 4px 0; }
table.diff { width: 100%; table-layout: fixed; font: 12px/1.35 ui-monospace, SFMono-Regular, Menlo, monospace; }
table.diff th { font-family: system-ui, sans-serif; } table.diff tr.alike td { background: var(--alike); }
table.diff td { border: 0; padding: 0 6px; white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; }
.alike-key { background: var(--alike); padding: 0 4px; }
@media (max-width: 700px) { body { font-size: 14px; } th, td { padding: 3px 5px; } }
.passed { color: #1a7f37; } .failed { color: #c62828; } .not-attempted, .not-run { color: #6e5a00; }
"""

# Sorts a table by a column when its header's button is pressed: numbers by data-sort, else text.
SCRIPT = """
document.querySelectorAll("table.sortable th button").forEach(function (button) {
  button.addEventListener("click", function () {
    var th = button.parentElement, table = th.closest("table"), body = table.tBodies[0];
    var column = Array.prototype.indexOf.call(th.parentElement.children, th);
    var order = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", order);
    var key = function (row) {
      var cell = row.children[column], v = cell.getAttribute("data-sort");
      return v === null ? cell.textContent.trim().toLowerCase() : parseFloat(v);
    };
    var rows = Array.prototype.slice.call(body.rows).sort(function (a, b) {
      var x = key(a), y = key(b), c = x < y ? -1 : x > y ? 1 : 0;
      return order === "ascending" ? c : -c;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
"""


def e(text: object) -> str:
    return escape(str(text))


def link(href: str, text: object) -> str:
    return f'<a href="{e(href)}">{e(text)}</a>'


def student_href(name: str, file: str = "feedback.html", prefix: str = "students/") -> str:
    """The address of a student's file under OUT (in their submissions.folder_name), whatever
    characters the name holds."""
    return f"{prefix}{quote(folder_name(name), safe='')}/{file}"


def cell(value: object, sort: object = None, html: bool = False, numeric: bool = False, head: bool = False) -> str:
    """A <td> (a row's header <th> with head): escaped text unless html; data-sort for numbers."""
    attributes = (' class="n"' if numeric else "") + (f' data-sort="{sort}"' if sort is not None else "")
    tag = "th" if head else "td"
    return f'<{tag}{" scope=row" if head else ""}{attributes}>{value if html else e(value)}</{tag}>'


def names(text: object) -> str:
    """Escaped text that may break after an underscore (a long function name in a narrow column)."""
    return e(text).replace("_", "_<wbr>")


def details(summary: object, body: str) -> str:
    """Folded: `summary` (text) shown, `body` (HTML) on opening."""
    return f"<details><summary>{e(summary)}</summary>{body}</details>"


_captions = count()


def table(caption: str, headers: Sequence[str], rows: Iterable[Iterable[str]], sortable: bool = True,
          numeric: Container[int] = (), kind: str = "") -> str:
    """A table of `rows` of cells made by cell(), the first of each with head=True; headers are text
    (long names may break after an underscore); `kind`: a class of the table, for its style."""
    def head(i: int, name: str) -> str:
        label = f'<button type="button">{names(name)}</button>' if sortable else names(name)
        attributes = (" class=n" if i in numeric else "") + (" aria-sort=none" if sortable else "")
        return f'<th scope="col"{attributes}>{label}</th>'
    body = "".join("<tr>" + "".join(row) + "</tr>" for row in rows)
    classes, n = " ".join(filter(None, ["sortable" if sortable else "", kind])), next(_captions)
    return (f'<p class="caption" id="c{n}">{e(caption)}</p>'      # outside: it wraps at the page's width
            f'<div class="scroll"><table class="{classes}" aria-labelledby="c{n}">'
            f'<thead><tr>{"".join(head(i, h) for i, h in enumerate(headers))}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def page(title: str, body: str, script: bool = True) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{STYLE}</style></head><body>{body}"
            f"{f'<script>{SCRIPT}</script>' if script else ''}</body></html>\n")
