"""Forbidden calls (`forbid:` in lab.yaml), found by the judge in a submission's syntax tree.

A lab may forbid what a function must not use, such as the library's own version of what the
learner is asked to write: `forbid: [torch.softmax]` for every function, or
`forbid: {softmax: [torch.softmax]}` per function. A name forbids what it stands for, under any
of its names (grader/core/forbid_rules.py): torch.softmax forbids torch.nn.functional.softmax,
torch.special.softmax, nn.Softmax, torch._softmax, torch.ops.aten._softmax and `.softmax` on
any value too (a value the scan cannot name is taken for a tensor). The scan follows imports and
aliases (`import torch.nn.functional as F`, `from torch import softmax as s`, `f = F.softmax`),
`getattr(X, "name")`, `sys.modules["name"]`, `X.__dict__["name"]`, `vars(X)["name"]` and
`operator.methodcaller("name")` with constant names, `importlib.import_module("...")` and
`__import__`, each in its scope: what a function, lambda, class or comprehension binds itself (a
parameter, a loop variable) shadows the aliases around it. A use counts against the function it
is in and every student function that reaches it through the file's own functions, classes and
names; a use in the module's top-level code, against all of the file's functions. A reference
counts as a call (`map(F.softmax, ...)`). A method of a name the file defines as a method or sets
as an attribute (`self.softmax = Mine()`) is taken for its own.
What the text cannot show, names built at run time, the child traps while checks run
(grader/judge/trap.py). The source is parsed, never run.
"""
import ast
from typing import NamedTuple

from grader.core import forbid_rules


class Hit(NamedTuple):
    name: str                       # the forbidden dotted name the code reaches
    line: int
    rule: str = ""                  # the name in lab.yaml it is (when not the name itself)


def sentence(function, file, hit):
    """What a learner is told: (expected, seen, hint) for grader.lab_api.checks.CheckFailed."""
    rule = hit.rule or hit.name
    if rule == forbid_rules.WATCH:
        return (f"{function} written with your own code", f"{file} line {hit.line} uses {hit.name}",
                f"this lab watches torch's dispatcher for the calls {function} may not make, and {hit.name} "
                f"would switch that watch off or reach into it: write {function} without it")
    same = "" if rule == hit.name else f", the same as {rule}"
    return (f"{function} written with your own code", f"{file} line {hit.line} uses {hit.name}{same}",
            f"this lab asks you to write {function} yourself, without {rule}")


def scan_files(lab, files):
    """{function: (file, first Hit)} for the lab's student files among `files` ({name: bytes})."""
    rules, found = lab.forbidden, {}
    for file, functions in lab.manifest.student_files.items():
        mine = {f: rules[f] for f in functions if f in rules}
        if mine and file in files:
            hits = scan(files[file].decode("utf-8", "replace"), mine)
            found.update({f: (file, h[0]) for f, h in hits.items()})
    return found


def trusted(rules, files, student_files):
    """{file: {top-level name: the rules its own code uses}} for the given modules among `files`
    ({name: bytes}): the child trusts a given module's code with a forbidden call only there, and
    only for those rules (grader/judge/trap.py), never a function that calls what it is handed."""
    found: dict[str, dict[str, list[str]]] = {}
    every = sorted({name for names in rules.values() for name in names})
    for file, data in files.items() if rules else ():
        if file.endswith(".py") and file not in student_files:
            source = data.decode("utf-8", "replace")
            try:
                body = ast.parse(source).body
            except (SyntaxError, ValueError, RecursionError):
                continue
            loose = ast.unparse(ast.Module([s for s in body if not isinstance(
                s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))], []))
            tops = [name for statement in body for name in _defines(statement)]
            for top, hits in [*scan(source, dict.fromkeys(tops, every)).items(),
                              *scan(loose, {"<module>": every}).items()]:
                if used := sorted({hit.rule for hit in hits} & set(every)):    # (not the watch's switches)
                    found.setdefault(file, {})[top] = used
    return found


def scan(source, rules):
    """{function: [Hit, ...] in line order} for the functions of `rules` ({function: names})
    defined in `source`. A file that does not parse has no hits (grading reports its error)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    aliases = _aliases(tree.body, {})
    defined = {}                    # top-level name -> the statements that define it
    loose = []                      # top-level code that runs at import
    for statement in tree.body:
        names = _defines(statement)
        for name in names:
            defined.setdefault(name, []).append(statement)
        if not names and not isinstance(statement, (ast.Import, ast.ImportFrom)):
            loose.append(statement)
    own = {m.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for m in c.body
           if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))} | \
        {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    found = {}
    for function, names in rules.items():           # defined out of sight (in an `if`): all of it counts
        statements = _reachable(function, defined) + loose if function in defined else tree.body
        forbidden = forbid_rules.rules(tuple(names))
        hits = {h for s in statements for nodes, known in _scopes(s, _aliases([s], aliases))
                for h in _uses(nodes, known, forbidden, own)}
        if hits:
            found[function] = sorted(hits, key=lambda h: (h.line, h.name))
    return found


def _defines(statement):
    """The top-level names a statement binds to code or values (not imports)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def _reachable(name, defined):
    """The top-level statements `name` reaches through the top-level names it loads, itself included
    (a function's own parameters and variables shadow them)."""
    seen, todo, statements = {name}, [name], []
    while todo:
        for statement in defined[todo.pop()]:
            statements.append(statement)
            nodes = list(ast.walk(statement))
            local = {n.arg for n in nodes if isinstance(n, ast.arg)} | \
                {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} \
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
            for node in nodes:
                if isinstance(node, ast.Name) and node.id in defined and node.id not in seen | local:
                    seen.add(node.id)
                    todo.append(node.id)
    return statements


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp)


def _scopes(node, aliases):
    """(the nodes of each scope in `node`, the aliases there): the names a function, lambda, class or
    comprehension binds shadow the aliases around it, unless it binds them to one itself. What a
    scope's definition evaluates where it stands (decorators, defaults, bases) is the outer scope's too."""
    nodes, inner, todo = [], [], [node]
    while todo:
        one = todo.pop()
        nodes.append(one)
        for child in ast.iter_child_nodes(one):
            if isinstance(child, _SCOPES):
                inner.append(child)
                nodes += [n for part in _outside(child) for n in ast.walk(part)]
            else:
                todo.append(child)
    if isinstance(node, _SCOPES):
        mine = _bound(node, nodes, inner)
        aliases = _aliases([node], {name: value for name, value in aliases.items() if name not in mine})
    yield nodes, aliases
    for child in inner:
        yield from _scopes(child, aliases)


def _outside(scope):
    """The parts of a scope's definition that run in the scope around it."""
    if isinstance(scope, ast.ClassDef):
        return [*scope.decorator_list, *scope.bases, *scope.keywords]
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [*scope.decorator_list, *scope.args.defaults, *filter(None, scope.args.kw_defaults)]
    if isinstance(scope, ast.Lambda):
        return [*scope.args.defaults, *filter(None, scope.args.kw_defaults)]
    return [scope.generators[0].iter]


def _bound(scope, nodes, inner):
    """The names a scope binds itself (its own `nodes`; `inner`, the scopes it holds), less those it
    declares global or nonlocal."""
    if isinstance(scope, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return {n.id for g in scope.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
    declared = {name for n in nodes if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    names = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} | \
        {n.arg for n in nodes if isinstance(n, ast.arg)} | \
        {n.name for n in nodes if isinstance(n, ast.ExceptHandler) and n.name} | \
        {a.asname or a.name.split(".")[0] for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))
         for a in n.names} | \
        {n.name for n in inner if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return names - declared


def _aliases(statements, known):
    """`known` extended with the names these statements bind to modules or their attributes,
    anywhere inside them (flow-insensitive), until nothing changes."""
    aliases = dict(known)
    nodes = [n for s in statements for n in ast.walk(s)]
    for _ in range(4):              # aliases of aliases: a few rounds reach them all
        before = dict(aliases)
        for node in nodes:
            if isinstance(node, ast.Import):
                aliases.update({a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                                for a in node.names})
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                aliases.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
            elif isinstance(node, (ast.Assign, ast.NamedExpr)):
                value = _resolve(node.value, aliases)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                aliases.update({t.id: value for t in targets if isinstance(t, ast.Name) and value})
        if aliases == before:
            break
    return aliases


def _resolve(node, aliases):
    """The dotted name an expression stands for, or None when it is a value we cannot name."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, aliases)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Subscript):     # sys.modules["torch"], X.__dict__["name"], vars(X)["name"]
        key, base = _constant(node.slice), _resolve(node.value, aliases)
        if key is None or base is None:
            return None
        return key if base == "sys.modules" else f"{base.removesuffix('.__dict__')}.{key}" \
            if base.endswith(".__dict__") else None
    if not isinstance(node, ast.Call) or not node.args:
        return None
    if _constant_attribute(node):
        base = _resolve(node.args[0], aliases)
        return f"{base}.{node.args[1].value}" if base else None
    called = _resolve(node.func, aliases) or (node.func.id if isinstance(node.func, ast.Name) else None)
    if called in ("vars", "builtins.vars") and len(node.args) == 1:
        base = _resolve(node.args[0], aliases)
        return f"{base}.__dict__" if base else None
    module = _constant(node.args[0])
    if module is None:
        return None
    if called == "importlib.import_module":
        return module
    if called in ("__import__", "builtins.__import__"):     # the top package, unless a fromlist asks for the module
        wants_module = len(node.args) > 3 or any(k.arg == "fromlist" for k in node.keywords)
        return module if wants_module else module.split(".")[0]
    return None


def _constant(node):
    """The string a node is, if it is a constant one."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _constant_attribute(node):
    """Whether a call is getattr(X, "constant name", ...)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
        and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)


def _uses(nodes, aliases, forbidden, own):
    """Hits of the `forbidden` Rules among the nodes of one scope: resolved references, and methods
    called on values (unless the file defines a method or sets an attribute of that name: its own)."""
    for node in nodes:
        if not isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) or \
                isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            continue
        resolved = _resolve(node, aliases)
        found = resolved and forbidden.match(resolved)
        if found:
            yield Hit(found[0], node.lineno, found[1])
        if isinstance(node, ast.Attribute):
            attribute, receiver = node.attr, node.value
        elif _constant_attribute(node):
            attribute, receiver = node.args[1].value, node.args[0]
        elif isinstance(node, ast.Call) and node.args and _constant(node.args[0]) and \
                _resolve(node.func, aliases) in ("operator.methodcaller", "operator.attrgetter"):
            attribute, receiver = node.args[0].value, None         # methodcaller("softmax", -1)(x)
        else:
            continue
        found = attribute not in own and (receiver is None or _resolve(receiver, aliases) is None) and \
            forbidden.method(attribute)
        if found:
            yield Hit(found[0], node.lineno, found[1])
