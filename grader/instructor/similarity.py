"""Similar code across a class: a lead for the instructor to read, never a score.

Each student function is fingerprinted as MOSS does (Schleimer, Wilkerson and Aiken, "Winnowing:
local algorithms for document fingerprinting", SIGMOD 2003), over a normalised form of its code:
1. the function is parsed (Python's ast), so comments, docstrings and formatting are gone;
2. its syntax tree is written out as tokens in order: node kinds, operators, attribute, keyword and
   global names, numbers; every name the function binds itself (arguments, variables, loop and
   comprehension targets, nested functions, local imports) becomes the same token, so renaming
   variables changes nothing, and every string literal becomes one token;
3. each run of K tokens is hashed, and in every window of W consecutive hashes the smallest is kept
   (winnowing): any match of K + W - 1 tokens or more shares at least one kept hash;
4. what the handout gave is removed: the hashes of the pristine stub of the same function (its
   signature, `raise NotImplementedError`); and, in a class of COMMON_MIN or more, hashes found in
   more than COMMON_SHARE of the class (the lab's idioms, as MOSS's -m option ignores them).
Two students' copies of a function score |A ∩ B| / |A ∪ B| (Jaccard) over what is left; a pair
at THRESHOLD or above is listed, when both functions keep MIN_PRINTS hashes or more (a two-line
function is the same for everyone who wrote it well).
"""
import ast
import itertools
import zlib
from collections import Counter
from dataclasses import dataclass

K, W = 6, 4                     # k-gram length and winnowing window, in tokens
THRESHOLD = 0.5                 # Jaccard of the kept hashes at which a pair is listed
MIN_PRINTS = 6                  # fewer kept hashes than this: too little code to tell
COMMON_MIN, COMMON_SHARE = 10, 0.4


@dataclass
class Pair:
    function: str
    students: tuple[str, str]
    score: float                # Jaccard of the two fingerprints, 0..1
    shared: int                 # hashes in common
    code: tuple[str, str]       # the two functions as written


class _Tokens(ast.NodeVisitor):
    """The normalised token stream of one function (step 2 above)."""

    def __init__(self, local):
        self.local, self.out = local, []

    def generic_visit(self, node):
        if isinstance(node, (ast.expr_context, ast.Expr)):
            return super().generic_visit(node)
        self.out.append(type(node).__name__)
        if isinstance(node, (ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
            return
        if isinstance(node, ast.Name):
            self.out.append("V" if node.id in self.local else node.id)
        elif isinstance(node, ast.Attribute):
            self.out.append("." + node.attr)
        elif isinstance(node, ast.keyword):
            self.out.append(f"{node.arg}=")
        elif isinstance(node, ast.Constant):
            self.out.append("S" if isinstance(node.value, (str, bytes)) else repr(node.value))
        super().generic_visit(node)


def _bound_names(function):
    """Every name the function binds: arguments, targets, nested definitions, local imports."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not function:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _without_docstring(body):
    first = body[0] if body else None
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
        and isinstance(first.value.value, str)
    return body[1:] if docstring else body


def tokens(function):
    """The normalised tokens of a parsed function (ast.FunctionDef)."""
    visitor = _Tokens(_bound_names(function))
    visitor.visit(function.args)
    for statement in _without_docstring(function.body):
        visitor.visit(statement)
    return visitor.out


def winnow(stream, k=K, w=W):
    """The set of winnowed hashes of a token stream (step 3 above)."""
    hashes = [zlib.crc32("\0".join(stream[i:i + k]).encode()) for i in range(len(stream) - k + 1)]
    if len(hashes) <= w:
        return set(hashes)
    kept = set()
    for start in range(len(hashes) - w + 1):
        window = hashes[start:start + w]
        kept.add(min(window))
    return kept


def find_function(source, name):
    """(the top-level function `name` in `source` as parsed, its text), or None."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node, ast.get_source_segment(source, node) or ""
    return None


def fingerprints(source, name, given=frozenset()):
    """(winnowed hashes of function `name` in `source` less those in `given`, its text), or None."""
    found = find_function(source, name)
    if found is None:
        return None
    node, text = found
    return winnow(tokens(node)) - given, text


def similar_pairs(sources, functions, stubs, threshold=THRESHOLD):
    """Pairs of students whose copies of a function are alike, most alike first.

    sources: {student: {file name: source text}}; functions: {function: file name};
    stubs: {file name: the pristine stub's text}.
    """
    pairs = []
    for function, file in functions.items():
        stub = fingerprints(stubs.get(file, ""), function)
        given = stub[0] if stub else frozenset()
        prints = {}
        for student, files in sources.items():
            found = fingerprints(files.get(file, ""), function, given)
            if found and len(found[0]) >= MIN_PRINTS:
                prints[student] = found
        pairs += _compare(function, _drop_common(prints), threshold)
    return sorted(pairs, key=lambda p: (-p.score, p.function, p.students))


def _drop_common(prints):
    """Step 4's second half: in a large class, hashes most of the class shares are the lab's idiom."""
    if len(prints) < COMMON_MIN:
        return prints
    counts = Counter(h for hashes, _ in prints.values() for h in hashes)
    common = {h for h, n in counts.items() if n > COMMON_SHARE * len(prints)}
    return {s: (hashes - common, text) for s, (hashes, text) in prints.items() if len(hashes - common) >= MIN_PRINTS}


def _compare(function, prints, threshold):
    found = []
    for (a, (hashes_a, text_a)), (b, (hashes_b, text_b)) in itertools.combinations(sorted(prints.items()), 2):
        shared = len(hashes_a & hashes_b)
        score = shared / len(hashes_a | hashes_b)
        if score >= threshold:
            found.append(Pair(function, (a, b), score, shared, (text_a, text_b)))
    return found
