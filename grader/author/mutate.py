"""Mutants of a function: small wrong versions of the reference, made from its syntax tree.

Each mutant changes one thing (KINDS): an arithmetic operator swapped, a comparison or a boolean
operator turned, a sign dropped, a constant changed by one or by a factor of 2, two arguments of
a call swapped, a statement deleted, a return of the first input instead of the result, a range
or slice moved by one, a dtype or device argument (or a .to() call) dropped; a new tensor's
dtype or device lost (torch.zeros_like(x) -> torch.zeros(x.shape), dtype= fixed to float32,
device= to the CPU, .float() on what is returned); a sum turned into a mean or back; the first
(batch) index fixed to its first row (x[:, i] -> x[0:1, i], x[0, i]); every permutation narrowed
to the swaps of two, the rotations, or one random order. Mutants are deduplicated by their text
and those that do not compile are dropped. Over `cap`, kinds take turns, each in source order:
the same source gives the same mutants, in the same order.
"""
import ast
import copy
import difflib
from typing import NamedTuple

KINDS = ("operator", "comparison", "boolean", "sign", "constant", "arguments", "statement", "return", "range",
         "dtype/device", "new tensor", "reduction", "batch index", "orders")
BINARY = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
          ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.MatMult: ast.Mult}
COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
           ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
RANGES = {"range", "arange"}
CONVERSIONS = {"to", "float", "double", "half", "bfloat16", "cpu", "cuda"}     # x.to(...) -> x
PLACEMENT = {"dtype", "device"}
FIXED = {"dtype": "torch.float32", "device": "'cpu'"}          # what a forgotten placement amounts to
LIKE = {"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"}
REDUCTIONS = {"sum": "mean", "mean": "sum"}
ORDERS = {      # permutations(A) narrowed, x's own order first as in permutations: (label, expression)
    "the swaps of two of": "[tuple(items[j] if k == i else items[i] if k == j else items[k] for k in "
                           "range(len(items))) for items in [list({A})] for i in range(len(items)) "
                           "for j in range(i, len(items))]",
    "the rotations of": "[tuple(items[(k + r) % len(items)] for k in range(len(items))) for items in [list({A})] "
                        "for r in range(len(items))]",
    "one random order of": "[tuple(order) for items in [list({A})] for order in (items, "
                           "__import__('random').sample(items, len(items)))]",
}


class Mutant(NamedTuple):
    file: str
    function: str
    kind: str                       # one of KINDS
    line: int                       # in the reference file
    description: str                # "a - b -> a + b"
    source: str                     # the whole file, mutated
    diff: str                       # the function's lines that changed, as -/+ lines


def mutants(source, file, function, cap=None):
    """The mutants of `function` in `source` (the text of `file`), at most `cap` of them; none when
    it is not a top-level def there."""
    tree = ast.parse(source)
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function),
                None)
    if node is None:
        return []
    original = ast.unparse(node)
    found, seen = [], {original}
    for position, (_, _, _, target) in enumerate(_sites(node)):
        for kind, make, *label in _replacements(target, node):
            mutated = copy.deepcopy(node)
            parent, field, slot, there = list(_sites(mutated))[position]
            new = make(there)
            _put(parent, field, slot, new)
            text = ast.unparse(ast.fix_missing_locations(mutated))
            if text in seen or not _compiles(text):
                continue
            seen.add(text)
            description = label[0].format(ast.unparse(target)) if label else _describe(target, new)
            found.append(Mutant(file, function, kind, target.lineno, description,
                                _splice(source, node, text), _diff(original, text)))
    return _take(found, cap)


def _sites(tree):
    """(parent, field, index in the field's list or None, node) for every node below `tree`,
    depth first in source order."""
    for field, value in ast.iter_fields(tree):
        items = value if isinstance(value, list) else [value]
        for index, child in enumerate(items):
            if isinstance(child, ast.AST):
                yield tree, field, index if isinstance(value, list) else None, child
                yield from _sites(child)


def _put(parent, field, slot, new):
    if slot is None:
        setattr(parent, field, new)
    else:
        getattr(parent, field)[slot] = new


def _replacements(node, function):
    """(kind, make) pairs, or (kind, make, label), for `node`: make(a copy of node) returns what
    replaces it; label.format(node's text) describes the mutant, when the new text would not."""
    found = []
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        found.append(("operator", lambda n: ast.BinOp(n.left, BINARY[type(n.op)](), n.right)))
    if isinstance(node, ast.Compare) and type(node.ops[0]) in COMPARE:
        found.append(("comparison", lambda n: ast.Compare(n.left, [COMPARE[type(n.ops[0])](), *n.ops[1:]],
                                                          n.comparators)))
    if isinstance(node, ast.BoolOp):
        found.append(("boolean", lambda n: ast.BoolOp(ast.Or() if isinstance(n.op, ast.And) else ast.And(), n.values)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        found.append(("sign" if isinstance(node.op, ast.USub) else "boolean", lambda n: n.operand))
    if isinstance(node, ast.Constant):
        found += [("constant", make) for make in _constants(node.value)]
    if isinstance(node, ast.Call):
        found += _call_replacements(node)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) > 1 \
            and _is_everything(node.slice.elts[0]):
        found += [("batch index", _first_index(index)) for index in ("0:1", "0")]
    if isinstance(node, ast.Slice):
        found += [("range", _moved_bound(bound, step)) for bound in ("lower", "upper")
                  if getattr(node, bound) is not None for step in (1, -1)]
    if isinstance(node, ast.stmt) and not _is_docstring(node, function):
        found.append(("statement", lambda n: ast.Pass()))
    if isinstance(node, ast.Return) and node.value is not None and function.args.args:
        found.append(("return", lambda n: ast.Return(ast.Name(function.args.args[0].arg, ast.Load()))))
    if isinstance(node, ast.Return) and node.value is not None:
        found.append(("new tensor", lambda n: ast.Return(_as_float32(n.value)), "returned as float32 (.float())"))
    return found


def _constants(value):
    if isinstance(value, bool):
        return [lambda n: ast.Constant(not n.value)]
    if not isinstance(value, (int, float)):
        return []
    changes = [lambda v: v + 1, lambda v: v - 1, lambda v: v * 2]
    if isinstance(value, float):
        changes.append(lambda v: v / 2)
    return [lambda n, change=change: ast.Constant(change(n.value)) for change in changes]


def _call_replacements(node):
    found = []
    positional = [a for a in node.args if not isinstance(a, ast.Starred)]
    if len(positional) == len(node.args):
        found += [("arguments", _swapped(i)) for i in range(len(node.args) - 1)]
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    if name in RANGES and positional:
        found += [("range", _moved_argument(len(node.args) - 1, step)) for step in (1, -1)]
        if len(positional) >= 2:
            found.append(("range", _moved_argument(0, 1)))
    found += [("dtype/device", lambda n, k=k: ast.Call(n.func, n.args, [w for w in n.keywords if w.arg != k]))
              for k in sorted({w.arg for w in node.keywords} & PLACEMENT)]
    found += [("new tensor", lambda n, k=k: ast.Call(n.func, n.args, [
        ast.keyword(k, _expression(FIXED[k])) if w.arg == k else w for w in n.keywords]))
        for k in sorted({w.arg for w in node.keywords if ast.unparse(w.value) != FIXED.get(w.arg)} & PLACEMENT)]
    if isinstance(node.func, ast.Attribute) and node.func.attr in CONVERSIONS:
        found.append(("dtype/device", lambda n: n.func.value))
    if isinstance(node.func, ast.Attribute) and node.func.attr in LIKE and node.args:
        found.append(("new tensor", _unlike))
    if isinstance(node.func, ast.Attribute) and name in REDUCTIONS:
        found.append(("reduction", _reduced))
    if name == "permutations" and len(node.args) == 1 and not node.keywords and positional:
        found += [("orders", lambda n, e=e: _expression(e.format(A=ast.unparse(n.args[0]))), f"{{}} -> {label} it")
                  for label, e in ORDERS.items()]
    return found


def _expression(text):
    return ast.parse(text, mode="eval").body


def _as_float32(value):
    """`value`.float(), each item's when it is a tuple."""
    if isinstance(value, ast.Tuple):
        return ast.Tuple([_as_float32(item) for item in value.elts], ast.Load())
    return ast.Call(ast.Attribute(value, "float", ast.Load()), [], [])


def _unlike(n):
    """torch.zeros_like(x, ...) -> torch.zeros(x.shape, ...): x's dtype and device lost."""
    func = ast.Attribute(n.func.value, n.func.attr.removesuffix("_like"), ast.Load())
    return ast.Call(func, [ast.Attribute(n.args[0], "shape", ast.Load()), *n.args[1:]], n.keywords)


def _reduced(n):
    if isinstance(n.func, ast.Attribute):
        return ast.Call(ast.Attribute(n.func.value, REDUCTIONS[n.func.attr], ast.Load()), n.args, n.keywords)
    return ast.Call(ast.Name(REDUCTIONS[n.func.id], ast.Load()), n.args, n.keywords)


def _is_everything(index):
    return isinstance(index, ast.Slice) and index.lower is index.upper is index.step is None


def _first_index(text):
    def make(n):
        index = ast.parse(f"_[{text}]", mode="eval").body.slice
        return ast.Subscript(n.value, ast.Tuple([index, *n.slice.elts[1:]], ast.Load()), n.ctx)
    return make


def _swapped(i):
    return lambda n: ast.Call(n.func, [*n.args[:i], n.args[i + 1], n.args[i], *n.args[i + 2:]], n.keywords)


def _moved_argument(index, step):
    def make(n):
        args = list(n.args)
        args[index] = ast.BinOp(args[index], ast.Add() if step > 0 else ast.Sub(), ast.Constant(1))
        return ast.Call(n.func, args, n.keywords)
    return make


def _moved_bound(bound, step):
    def make(n):
        moved = ast.BinOp(getattr(n, bound), ast.Add() if step > 0 else ast.Sub(), ast.Constant(1))
        return ast.Slice(**{**{f: getattr(n, f) for f in ("lower", "upper", "step")}, bound: moved})
    return make


def _is_docstring(node, function):
    return node is function.body[0] and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def _compiles(text):
    try:
        compile(text, "<mutant>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def _describe(old, new):
    def short(node):
        text = "pass" if isinstance(node, ast.Pass) else ast.unparse(node).splitlines()[0]
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(new, ast.Pass):
        return f"deleted: {short(old)}"
    return f"{short(old)} -> {short(new)}"


def _splice(source, node, text):
    """`source` with the lines of `node` (a top-level def, decorators included) replaced by `text`."""
    lines = source.splitlines(keepends=True)
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    return "".join(lines[:start]) + text + "\n" + "".join(lines[node.end_lineno:])


def _diff(original, text):
    changed = difflib.unified_diff(original.splitlines(), text.splitlines(), lineterm="", n=0)
    return "\n".join(line for line in changed if line[:1] in "-+" and not line.startswith(("---", "+++")))


def _take(found, cap):
    """At most `cap` mutants, the kinds taking turns, each kind in source order."""
    if cap is None or len(found) <= cap:
        return found
    queues = [[m for m in found if m.kind == kind] for kind in KINDS]
    taken = []
    while len(taken) < cap:
        for queue in queues:
            if queue and len(taken) < cap:
                taken.append(queue.pop(0))
    return sorted(taken, key=found.index)
