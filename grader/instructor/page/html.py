"""The pieces of a self-contained HTML page: the frame with its style and one small script,
accessible tables (caption, th scope, sorting buttons with aria-sort), links that survive any name."""
from html import escape
from urllib.parse import quote

STYLE = """
:root { color-scheme: light; --line: #d0d7de; --muted: #57606a; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1100px; padding: 12px; color: #1f2328; background: #fff; }
h1 { font-size: 1.5em; margin: .2em 0; } h2 { font-size: 1.2em; margin-top: 1.6em;
     border-bottom: 1px solid var(--line); } h3 { font-size: 1em; }
.muted { color: var(--muted); } .note { color: var(--muted); font-style: italic; }
.cards { display: flex; flex-wrap: wrap; gap: 8px; padding: 0; margin: 8px 0; list-style: none; }
.cards li { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; min-width: 7.5em; }
.cards b { display: block; font-size: 1.4em; }
svg.plot { width: 100%; height: auto; max-width: 640px; display: block; margin: 8px 0; font-family: inherit; }
.scroll { overflow-x: auto; } table { border-collapse: collapse; margin: 8px 0; min-width: 60%; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; color: inherit; }
th button::after { content: " \\2195"; color: var(--muted); }
th[aria-sort=ascending] button::after { content: " \\2191"; }
th[aria-sort=descending] button::after { content: " \\2193"; }
button:focus-visible, a:focus-visible { outline: 3px solid #0969da; outline-offset: 2px; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; font-size: 13px; white-space: pre-wrap; margin: 4px 0; }
.pair pre { white-space: pre; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
@media (max-width: 700px) { .pair { grid-template-columns: 1fr; } body { font-size: 14px; } }
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


def e(text):
    return escape(str(text))


def link(href, text):
    return f'<a href="{e(href)}">{e(text)}</a>'


def student_href(name, file="feedback.html", prefix="students/"):
    """The address of a student's file under OUT, whatever characters the name holds."""
    return f"{prefix}{quote(name, safe='')}/{file}"


def cell(value, sort=None, html=False, numeric=False, head=False):
    """A <td> (a row's header <th> with head): escaped text unless html; data-sort for numbers."""
    attributes = (' class="n"' if numeric else "") + (f' data-sort="{sort}"' if sort is not None else "")
    tag = "th" if head else "td"
    return f'<{tag}{" scope=row" if head else ""}{attributes}>{value if html else e(value)}</{tag}>'


def table(caption, headers, rows, sortable=True, numeric=()):
    """A table of `rows` of cells made by cell(), the first of each with head=True."""
    def head(i, name):
        label = f'<button type="button">{e(name)}</button>' if sortable else e(name)
        attributes = (" class=n" if i in numeric else "") + (" aria-sort=none" if sortable else "")
        return f'<th scope="col"{attributes}>{label}</th>'
    body = "".join("<tr>" + "".join(row) + "</tr>" for row in rows)
    return (f'<div class="scroll"><table{" class=sortable" if sortable else ""}><caption>{e(caption)}</caption>'
            f'<thead><tr>{"".join(head(i, h) for i, h in enumerate(headers))}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def page(title, body, script=True):
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{STYLE}</style></head><body>{body}"
            f"{f'<script>{SCRIPT}</script>' if script else ''}</body></html>\n")
