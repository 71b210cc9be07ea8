"""A Jupyter notebook (.ipynb) read as the lab's student files, without executing anything.

A notebook is one more container of a lab's student files. Only the source of its code cells is
read (outputs and attachments never are), after caps on its bytes, cells and code:
1. IPython-only lines are dropped: `%magic`, `!cmd`, `name?`, `?name`, autocall's `/f x` and
   `,f a b`. A cell magic's cell (`%%bash`, `%%writefile`) is not Python and is dropped whole,
   except those whose body is Python that runs once (`%%capture`, `%%time`): their body is read
   as any other cell's.
2. Of each cell's top-level statements, imports, `def`, `class` and assignments of constants
   (values without calls) are kept; loops, calls (training, plots, prints) never run. The
   last definition of a name wins, as in a kernel run top to bottom.
3. Each function of lab.yaml's `student_files` goes to its file, with what it needs of the kept
   statements (helpers, imports, constants); a file none of whose functions the notebook defines
   is left out (the pristine stub stands in), a function it lacks keeps its stub.
4. A graded function that uses a name only a dropped statement defines gets a sentence, before
   anything runs.

Each generated file starts with one comment line (HEADER) holding a map from its lines to the
notebook's ("cell 4, line 2") and the reader's sentences, so that they travel with the files to
any worker: `where` and `relocate` rewrite locations in what the judge shows; `notes` reads the
sentences back.
"""
import ast
import builtins
import json
import re
import symtable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.readers.manifest import Lab

MAX_NOTEBOOK_BYTES = 32 * 2**20     # the .ipynb as stored, outputs included
MAX_CELLS = 5_000
MAX_CODE_BYTES = 2**20              # all code cells' source together (a student file's own cap)
HEADER = "# grader-notebook: "      # the first line of a generated file: its map and notes
PYTHON_CELL_MAGICS = {"capture", "time", "prun"}     # their body is Python, run once as written (%%timeit
#                                                     runs it in a function of its own: it defines nothing)
LINE_MAGIC = re.compile(r"^\s*([%!?/,;]|[\w.]+\?\??\s*$)|^\s*\w+\s*=\s*[%!]")
CELL_MAGIC = re.compile(r"^%%(\w+)")
MAGIC_ASSIGNS = re.compile(r"^\s*(\w+)\s*=\s*[%!]")  # files = !ls, t = %timeit -o f(): a name IPython binds
DROPPED_KINDS = {ast.For: "a loop", ast.AsyncFor: "a loop", ast.While: "a loop", ast.With: "a with block",
                 ast.If: "an if block", ast.Try: "a try block", ast.Delete: "a del"}


class NotebookError(Exception):
    """A notebook that cannot be read safely: one sentence that says why."""


@dataclass
class Block:
    """A kept top-level statement: the names it binds and uses, its source, where it came from."""
    binds: set
    uses: set
    source: str
    cell: str                       # "cell 4" (every cell counted from 1), or a kernel's "In [4]"
    line: int                       # its first line in the cell, 1-based
    kind: str                       # import, def, constant, broken
    order: int = 0


@dataclass
class Extracted:
    files: dict                     # {student file: bytes} for files with a function of theirs
    notes: list = field(default_factory=list)   # the reader's sentences: what was not read, and why


# -- reading the file, capped -------------------------------------------------------------------
def too_big(name, size):
    return (f"{name} is {size / 2**20:.1f} MiB; a notebook may have at most {MAX_NOTEBOOK_BYTES // 2**20} MiB: "
            "clear its outputs (Edit > Clear all outputs) and save it again")


def code_cells(data, name="notebook.ipynb"):
    """[("cell N", source)] of the code cells of notebook bytes `data`: bytes, cells and code
    capped before nbformat reads it; outputs and attachments are never looked at."""
    import nbformat

    if len(data) > MAX_NOTEBOOK_BYTES:
        raise NotebookError(too_big(name, len(data)))
    try:
        raw = json.loads(data.decode("utf-8-sig"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise NotebookError(f"{name} is not a notebook: not UTF-8 text") from None
    except (ValueError, RecursionError) as error:
        where = f" (line {error.lineno}, column {error.colno})" if isinstance(error, json.JSONDecodeError) else ""
        raise NotebookError(f"{name} is not a notebook: not valid JSON{where}; save it again from Jupyter "
                            "or Colab") from None
    cells = raw.get("cells") if isinstance(raw, dict) else None
    if isinstance(raw, dict) and "worksheets" in raw:           # nbformat 3: cells in worksheets
        sheets = raw.get("worksheets")
        cells = [c for s in sheets for c in s.get("cells", [])] if isinstance(sheets, list) and all(
            isinstance(s, dict) and isinstance(s.get("cells", []), list) for s in sheets) else None
    if not isinstance(cells, list):
        raise NotebookError(f"{name} is not a notebook: it has no list of cells")
    if len(cells) > MAX_CELLS:
        raise NotebookError(f"{name} has {len(cells)} cells; a notebook may have at most {MAX_CELLS}")
    try:
        notebook = nbformat.from_dict(_read_parts(raw))
        if notebook.get("nbformat", 4) < 4:
            notebook = nbformat.convert(notebook, 4)
    except Exception as error:          # nbformat's converters raise what they meet
        raise NotebookError(f"{name} is not a notebook nbformat can read ({type(error).__name__})") from None
    found, total = [], 0
    for number, cell in enumerate(notebook.get("cells", []), 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"{name}: cell {number}'s source is not text")
        try:
            total += len(source.encode())
        except UnicodeEncodeError:      # JSON's "\ud800": no character, nor anything Python could read
            raise NotebookError(f"{name}: cell {number}'s source is not text (it holds a lone surrogate, "
                                "\\ud800 to \\udfff)") from None
        if total > MAX_CODE_BYTES:
            raise NotebookError(f"{name}: its code cells hold more than {MAX_CODE_BYTES // 2**20} MiB of code")
        found.append((f"cell {number}", source))
    return found


def _read_parts(raw):
    """Notebook `raw` (a dict, its cells checked to be a list) with only what is read of it: its
    version and its cells' kinds and sources (an nbformat 3 one's worksheets of them). nbformat's
    copy of outputs and metadata made of millions of small objects took GiBs and half a minute."""
    def cells(found):
        return [{key: cell[key] for key in ("cell_type", "source", "input", "level") if key in cell}
                | {"metadata": {}, "outputs": []} if isinstance(cell, dict) else cell for cell in found]
    parts = {key: raw[key] for key in ("nbformat", "nbformat_minor") if key in raw} | {"metadata": {}}
    if "worksheets" in raw:                                     # nbformat 3: a code cell's source is its input
        return parts | {"worksheets": [{"cells": cells(sheet.get("cells", []))} for sheet in raw["worksheets"]]}
    return parts | {"cells": cells(raw["cells"])}


def _no_constant(word):
    raise ValueError(f"{word} is not JSON")


# -- a cell, as Python -------------------------------------------------------------------------
def cell_python(source):
    """(the cell's Python, its cell magic or ""): IPython-only lines blanked so that line numbers
    stay; a cell magic whose body is not Python gives None."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    magic = ""
    if first is not None and (match := CELL_MAGIC.match(lines[first].lstrip())):
        magic = match.group(1)
        if magic not in PYTHON_CELL_MAGICS:
            return None, magic
        lines[first] = ""
    try:
        ast.parse("\n".join(lines))
        return "\n".join(lines), magic
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    return "\n".join(_without_magics(lines)), magic


def _without_magics(lines):
    """`lines` with each IPython-only line blanked: one that starts a logical line, as IPython
    reads them (a `% 2` or `!= y` continuing a bracket, a string or a backslash is Python)."""
    kept, depth, quote, joined = [], 0, None, False
    for line in lines:
        if depth == 0 and quote is None and not joined and LINE_MAGIC.match(line):
            kept.append("")
            continue
        kept.append(line)
        at, comment = 0, False
        while at < len(line):
            if quote:
                if line[at] == "\\":
                    at += 2
                elif line.startswith(quote, at):
                    at, quote = at + len(quote), None
                else:
                    at += 1
                continue
            char = line[at]
            if char == "#":
                comment = True
                break
            if char in "\"'":
                quote = line[at:at + 3] if line[at:at + 3] in ('"""', "'''") else char
                at += len(quote)
                continue
            depth = depth + 1 if char in "([{" else max(0, depth - 1) if char in ")]}" else depth
            at += 1
        joined = line.rstrip("\r").endswith("\\") and not comment
        if quote in ('"', "'") and not joined:      # a one-line string ends with its line
            quote = None
    return kept


def _names(node, context=(ast.Load,)):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, context)}


def _free(source):
    """The global names code `source` reads, in any of its scopes (symtable: a function's locals,
    parameters and comprehension variables are not among them)."""
    names = set()

    def walk(table):
        module = table.get_type() == "module"      # a str, or a StrEnum of it (3.13)
        names.update(s.get_name() for s in table.get_symbols() if s.is_referenced() and (module or s.is_global()))
        for child in table.get_children():
            walk(child)
    try:
        walk(symtable.symtable(source, "<cell>", "exec"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):      # e.g. a stray nonlocal: the child's
        return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}   # import will say so
    return names


def _bound(statement):
    """Names a dropped top-level statement would bind (assigned, defined, imported), anywhere inside it."""
    names = _names(statement, (ast.Store, ast.Del))
    for node in ast.walk(statement):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
    return names


def _constant(value):
    """A value made of literals, names and operators only: no call, lambda or comprehension."""
    allowed = (ast.Constant, ast.Name, ast.Attribute, ast.UnaryOp, ast.BinOp, ast.BoolOp, ast.Compare, ast.Tuple,
               ast.List, ast.Set, ast.Dict, ast.Subscript, ast.Slice, ast.IfExp, ast.JoinedStr, ast.FormattedValue,
               ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.Starred)
    return all(isinstance(node, allowed) for node in ast.walk(value))


def _kept_kind(statement):
    """What a top-level statement is kept as (import, def, constant), or None: dropped."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return "import"
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return "def"
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, ast.AnnAssign) and statement.value is not None else None
    if targets and all(isinstance(t, ast.Name) and not t.id.startswith("__") for t in targets) \
            and all(_constant(v) for v in (statement.value, getattr(statement, "annotation", None))
                    if v is not None):                      # an annotation runs at import too
        return "constant"
    return None


def _what(statement):
    """A dropped statement in a few words, for a sentence."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        return "a call"
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return "an assignment of a computed value"
    return DROPPED_KINDS.get(type(statement), "a statement")


# -- the notebook's blocks ------------------------------------------------------------------------
@dataclass
class Cells:
    blocks: list = field(default_factory=list)      # kept statements, in notebook order
    dropped: dict = field(default_factory=dict)     # name -> (cell, line, what) of a dropped statement binding it
    ran: list = field(default_factory=list)         # cells holding top-level code that is not run
    notes: list = field(default_factory=list)


def _blocks(cells, graded):
    """Cells: the kept statements of the code cells [(label, source)] and what was dropped."""
    found = Cells()
    for label, source in cells:
        source = source.replace("\r\n", "\n").replace("\r", "\n")   # Python's line ends: a lone \r ends one too
        python, magic = cell_python(source)
        if python is None:
            defined = _seems_to_define(graded, source)
            if defined:
                found.notes.append(f"{label} is a %%{magic} cell, not Python to the grader: its "
                                   f"{', '.join(defined)} is not read (remove the %%{magic} line)")
            continue
        try:
            tree = ast.parse(python)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            _broken(found, label, python, error, graded)
            continue
        for number, (line, kept) in enumerate(zip(source.split("\n"), python.split("\n")), 1):
            if line != kept and (match := MAGIC_ASSIGNS.match(line)):
                found.dropped[match.group(1)] = (label, number, "an IPython line (%magic or !shell)")
        lines = python.split("\n")
        own = any(_front_door(s) for s in tree.body)      # the handout's own cell (install, check): not said
        spans = [(_first_line(s), s.end_lineno) for s in tree.body]    # in order: only neighbours share a line
        for index, statement in enumerate(tree.body):
            kind = _kept_kind(statement)
            if kind is None:
                if not (isinstance(statement, ast.Expr) and isinstance(statement.value, (ast.Constant, ast.Name,
                                                                                         ast.Attribute))):
                    what = _what(statement)
                    for name in _bound(statement):
                        found.dropped[name] = (label, statement.lineno, what)
                    if not own and label not in found.ran:
                        found.ran.append(label)
                continue
            start, end = spans[index]
            shares = (index > 0 and spans[index - 1][1] >= start) or \
                (index + 1 < len(spans) and spans[index + 1][0] <= end)
            try:
                text = ast.unparse(statement) if shares else "\n".join(lines[start - 1:end])
            except (RecursionError, MemoryError, ValueError):
                _broken(found, label, python, SyntaxError("too deeply nested to read"), graded)
                break
            binds = _bound(statement) if kind != "def" else {statement.name}
            found.blocks.append(Block(binds, _free(text), text, label, start, kind))
            for name in binds:
                found.dropped.pop(name, None)
    for order, block in enumerate(found.blocks):
        block.order = order
    return found


def _first_line(statement):
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _front_door(statement):
    """A call of the notebook front door (notebook.check(...), notebook.start(...)): a cell of the
    released notebook's own, whose top-level code is no learner's."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
        isinstance(call.func.value, ast.Name) and call.func.value.id == "notebook"


def _seems_to_define(graded, text):
    """The graded functions that text which is not Python seems to define: a line `def NAME(`,
    only spaces and tabs before it (\\s would span lines: quadratic on a cell of blank lines)."""
    return [f for f in graded if re.search(rf"^[ \t]*def[ \t]+{f}[ \t]*\(", text, re.M)]


def _broken(found, label, python, error, graded):
    """A cell that is not Python: kept whole in the file of the graded functions it seems to
    define, so that file is graded as broken, as a .py file would be (unless an earlier cell defines
    them: a kernel runs none of a cell that does not parse); else dropped, said."""
    defined = _seems_to_define(graded, python)
    line = getattr(error, "lineno", None) or 1
    why = f"{label}, line {line}: {getattr(error, 'msg', None) or type(error).__name__}"
    if defined:
        found.blocks.append(Block(set(defined), set(), python, label, 1, "broken"))
    else:
        found.notes.append(f"{why}; the cell defines no function of the lab and is not graded")


# -- the student files -------------------------------------------------------------------------------
def extract(lab, data, name="notebook.ipynb"):
    """The lab's student files in notebook bytes `data` (an Extracted). Parsed, never run."""
    return extract_cells(lab, code_cells(data, name), name)


def extract_cells(lab, cells, name="notebook.ipynb"):
    """The lab's student files in code cells [(label, source)]: a notebook's ("cell 4"), or the
    cells a kernel ran ("In [4]", grader.notebook)."""
    graded = dict(lab.functions)            # function -> its file
    found = _blocks(cells, graded)
    defines, notes = {}, list(found.notes)     # name -> the last kept statement binding it
    for block in found.blocks:
        for bound in block.binds:
            if block.kind == "broken" and bound in defines:     # a kernel runs none of a cell that does not parse
                notes.append(f"{name}: {block.cell} does not parse, so a kernel runs none of it: {bound} is graded "
                             f"as {defines[bound].cell} defines it (line {defines[bound].line})")
                continue
            defines[bound] = block
    for function in graded:
        if function in defines and defines[function].kind == "import":     # from positions import apply_rope:
            block = defines.pop(function)                                   # the handout's file, not the notebook's
            notes.append(f"{name}: {function} is imported ({block.cell}, line {block.line}), not defined in a cell: "
                         "grading reads the notebook's own def, so it stays a stub")
    for function in graded:
        if function not in defines and function in found.dropped:
            cell, line, what = found.dropped[function]
            notes.append(f"{name}: {function} is defined inside {what} ({cell}, line {line}); grading reads "
                         "functions defined at the top level of a cell: it stays a stub")
    result = Extracted({}, notes)
    read = _Read(lab, name, graded, found, defines)
    for file, functions in lab.manifest.student_files.items():
        mine = [f for f in functions if f in defines]
        if not mine:
            continue
        text, uses_dropped = _file_text(read, file, mine)
        notes += [n for n in uses_dropped if n not in notes]
        result.files[file] = text
    if found.ran:
        cells_said = _cells(found.ran)
        verb = "holds" if len(found.ran) == 1 else "hold"
        notes.append(f"{cells_said} of {name} {verb} top-level code (loops, calls, prints) that grading never runs: "
                     "only functions, classes, imports and constants are graded")
    for file in result.files:
        result.files[file] = _with_header(result.files[file], notes)
    return result


def _cells(labels):
    """'cell 3', 'cells 3, 5 and 7' (or 'In [3], In [5] and In [7]' for a kernel's cells)."""
    numbers = [label.removeprefix("cell ") for label in labels]
    shown = numbers[:8] + (["..."] if len(numbers) > 8 else [])
    words = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    return ("cell " if len(shown) == 1 else "cells ") + words if labels[0].startswith("cell ") else words


@dataclass(frozen=True)
class _Read:
    """A notebook as read, whichever student file is made of it: the lab, the notebook's name,
    the lab's graded functions ({function: its file}), its Cells and the kept Block binding each
    name (the last one)."""
    lab: "Lab"
    name: str
    graded: dict
    found: Cells
    defines: dict


def _file_text(read, file, mine):
    """(the source of student file `file`, as segments [(text, cell, line)], notes on names used
    that only dropped statements define); `mine`: the lab's functions of `file` the notebook defines."""
    lab, name, graded, found, defines = read.lab, read.name, read.graded, read.found, read.defines
    needed, todo, notes, other, unresolved = set(), list(mine), [], {}, False
    while todo:
        bound = todo.pop()
        if bound in needed:
            continue
        needed.add(bound)
        if bound in graded and graded[bound] != file:
            other[bound] = Path(graded[bound]).stem       # another file's function: imported from it
            continue
        block = defines.get(bound)
        if block is None:
            unresolved = unresolved or not hasattr(builtins, bound)
            if bound in found.dropped and not hasattr(builtins, bound):
                cell, line, what = found.dropped[bound]
                notes.append(f"{name}: {bound} is defined only by {what} at the top level ({cell}, line {line}), "
                             f"which grading never runs; define it inside the function that uses it, or as a "
                             "constant")
            continue
        todo += [u for u in block.uses if u not in needed]
    future = {id(b): b for b in found.blocks if b.kind == "import" and "__future__" in b.source.split("\n")[0]}
    chosen = {id(defines[n]): defines[n] for n in needed if n in defines and n not in other}
    if unresolved:                  # a name no cell binds by name: a star import may give it, as in a kernel
        chosen |= {id(b): b for b in found.blocks if b.kind == "import" and not b.binds}     # `from m import *`
    segments = [(b.source, b.cell, b.line) for b in sorted(future.values(), key=lambda b: b.order)]
    for module in sorted(set(other.values())):
        names = ", ".join(sorted(f for f, m in other.items() if m == module))
        segments.append((f"from {module} import {names}", 0, 0))
    segments += [(b.source, b.cell, b.line) for b in sorted(chosen.values(), key=lambda b: (b.kind != "import",
                                                                                             b.order))
                 if id(b) not in future]          # imports first: a decorator or default may need one
    stubs = [_stub_of(lab, file, function) for function in lab.manifest.student_files[file] if function not in mine]
    if stubs:                                   # with the stub file's imports: its annotations may need them
        segments[len(future):len(future)] = [(text, 0, 0) for text in _stub_imports(lab, file)]
    return segments + [(text, 0, 0) for text in stubs], notes


def _stub_imports(lab, file):
    source = (lab.stubs / file).read_text(encoding="utf-8")
    return [ast.get_source_segment(source, s) for s in ast.parse(source).body
            if isinstance(s, ast.Import) or (isinstance(s, ast.ImportFrom) and s.module != "__future__")]


def _stub_of(lab, file, function):
    """The pristine stub's def of `function` (it raises NotImplementedError), for a function the
    notebook lacks."""
    source = (lab.stubs / file).read_text(encoding="utf-8")
    for statement in ast.parse(source).body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == function:
            return "\n".join(source.split("\n")[_first_line(statement) - 1:statement.end_lineno])
    return f"def {function}(*args, **kwargs):\n    raise NotImplementedError"


def _with_header(segments, notes):
    """The file's bytes: HEADER with its line map and the notes, then the segments, a blank line apart."""
    body, spans, line = [], [], 2
    for text, cell, first in segments:
        count = text.count("\n") + 1
        if cell != 0:
            spans.append([line, cell, first, count])
        body.append(text)
        line += count + 1
    header = HEADER + json.dumps({"map": spans, "notes": notes}, ensure_ascii=True, separators=(",", ":"))
    header = header.replace("coding", "cod\\u0069ng")     # "coding=utf-16" in a note sets no encoding
    return (header + "\n" + "\n\n".join(body) + "\n").encode()


# -- what a generated file says about itself ------------------------------------------------------
def disown(data):
    """A student's own file (`data`, bytes), its first line made a plain comment where it would pass
    for a generated file's HEADER: the map and sentences of a header are the reader's alone, never
    written by a student (a "100/100" of their own shown as the grader's). Its lines stay where they were."""
    return b"#" + data if data.startswith(HEADER.encode()) else data


def _header(data):
    first = data.split(b"\n", 1)[0]
    if not first.startswith(HEADER.encode()):
        return None
    try:
        header = json.loads(first[len(HEADER):])
        return header if isinstance(header, dict) else None
    except (ValueError, RecursionError):
        return None


def notes(files):
    """The reader's sentences carried by generated files {name: bytes}, each once."""
    said = []
    for data in files.values():
        header = _header(data) if isinstance(data, bytes) else None
        said += [n for n in (header or {}).get("notes", []) if isinstance(n, str) and n not in said]
    return said


def where(data, line):
    """'cell 4, line 2' for line `line` of a generated file's bytes, or None."""
    header = _header(data)
    for span in (header or {}).get("map", []):
        if isinstance(span, list) and len(span) == 4 and isinstance(span[1], str) \
                and all(isinstance(v, int) for v in span[:1] + span[2:]):
            start, cell, first, count = span
            if start <= line < start + count:
                return f"{cell}, line {first + line - start}"
    return None


def relocate(text, files):
    """`text` with each "FILE line N" (and Python's 'File ".../FILE", line N') of a generated
    file of `files` said as "cell C, line M" of the notebook."""
    generated = {name: data for name, data in files.items() if isinstance(data, bytes) and _header(data)}
    if not generated or not text:
        return text
    names = "|".join(re.escape(Path(name).name) for name in generated)
    pattern = re.compile(rf'(?:File "[^"\n]*?)?\b({names})"?,? line (\d{{1,9}})\b')

    def replace(match):
        data = next(d for n, d in generated.items() if Path(n).name == match.group(1))
        return where(data, int(match.group(2))) or match.group(0)
    return pattern.sub(replace, text)
