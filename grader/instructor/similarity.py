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
4. what the course gave is removed: every K-token run of the pristine stubs and of the lab's
   given code (lab.yaml's given_code: the lesson's listings), so typing in the lesson is nobody's
   likeness to anybody; and, in a class of COMMON_MIN or more, hashes found in more than
   COMMON_SHARE of the class (the lab's idioms, as MOSS's -m option ignores them).
Two students' copies of a function score the share of their hashes that both hold beyond what was
removed: |own A ∩ own B| / |A ∪ B|, over the whole functions A and B, so that two who typed in the
lesson and changed the same word share little, and two who share code of their own share most. A
function compared keeps MIN_PRINTS hashes of its own or more (a two-line function is the same for
everyone who wrote it well).
Students linked by a pair at THRESHOLD or above, in any function, form a cluster (a connected
group), shown once. A student's function as alike to the reference solution's is a signal of its
own (before the class's idioms are removed: a solution half the class copied is still the reference).
"""
import ast
import io
import itertools
import tokenize
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

K, W = 6, 4                     # k-gram length and winnowing window, in tokens
THRESHOLD = 0.5                 # Jaccard of the kept hashes at which a pair is listed
MIN_PRINTS = 6                  # fewer kept hashes than this: too little code to tell
COMMON_MIN, COMMON_SHARE = 10, 0.4
REFERENCE = "the reference solution"


@dataclass
class Pair:
    function: str
    students: tuple[str, str]   # for a match of the reference: (student, REFERENCE)
    score: float                # the share of their hashes both hold, of their own, 0..1
    shared: int                 # hashes of their own in common
    code: tuple[str, str]       # the two functions as written


@dataclass(frozen=True)
class Prints:
    whole: frozenset[int]       # the function's winnowed hashes
    own: frozenset[int]         # those the course did not give (nor, in a large class, its idioms)
    text: str                   # the function as written


@dataclass
class Cluster:
    """Students linked by alike functions: `pairs`, every pair among them at the threshold, most alike first."""
    students: list[str]
    pairs: list[Pair]

    @property
    def functions(self) -> list[str]:
        return sorted({p.function for p in self.pairs})


@dataclass
class Similarity:
    clusters: list[Cluster] = field(default_factory=list)      # largest, then most alike, first
    reference: list[Pair] = field(default_factory=list)        # students' functions alike to the reference's
    compared: int = 0                                          # students whose code was compared


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
    """Every name the function (or module) binds: arguments, targets, nested definitions, imports."""
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


def tokens(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Module) -> list[str]:
    """The normalised tokens of a parsed function (ast.FunctionDef), or of a module's statements."""
    visitor = _Tokens(_bound_names(function))
    if not isinstance(function, ast.Module):
        visitor.visit(function.args)
    for statement in _without_docstring(function.body):
        visitor.visit(statement)
    return visitor.out


def kgrams(stream: Sequence[str], k: int = K) -> list[int]:
    """The hash of every run of k tokens."""
    return [zlib.crc32("\0".join(stream[i:i + k]).encode()) for i in range(len(stream) - k + 1)]


def winnow(stream: Sequence[str], k: int = K, w: int = W) -> set[int]:
    """The set of winnowed hashes of a token stream (step 3 above)."""
    hashes = kgrams(stream, k)
    if len(hashes) <= w:
        return set(hashes)
    return {min(hashes[start:start + w]) for start in range(len(hashes) - w + 1)}


def given_hashes(sources: Iterable[str]) -> frozenset[int]:
    """Every k-gram hash of the code the course gave (step 4): each top-level function of each
    source, and its other top-level statements as one stream."""
    given = set()
    for source in sources:
        try:
            module = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        functions = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        rest = ast.Module(body=[n for n in module.body if n not in functions], type_ignores=[])
        for part in (*functions, rest):
            given.update(kgrams(tokens(part)))
    return frozenset(given)


def find_function(source: str, name: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """(the top-level function `name` in `source` as parsed, its text), or None."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node, ast.get_source_segment(source, node) or ""
    return None


def fingerprints(source: str, name: str, given: frozenset[int] = frozenset()) -> Prints | None:
    """The Prints of function `name` in `source` (its own: less the hashes in `given`), or None."""
    found = find_function(source, name)
    if found is None:
        return None
    node, text = found
    whole = frozenset(winnow(tokens(node)))
    return Prints(whole, whole - given, text)


def similarity(sources: Mapping[str, Mapping[str, str]], functions: Mapping[str, str], given: Iterable[str],
               reference: Mapping[str, str] | None = None, threshold: float = THRESHOLD) -> Similarity:
    """The class's clusters and its matches of the reference (a Similarity).

    sources: {student: {file name: source text}}; functions: {function: file name};
    given: texts of the code the course gave (stubs, the lesson's listings);
    reference: {file name: the reference solution's text}, or None where there is none.
    """
    course, found = given_hashes(given), Similarity(compared=len(sources))
    pairs = []
    for function, file in functions.items():
        prints: dict[str, Prints] = {}
        for student, files in sources.items():
            kept = fingerprints(files.get(file, ""), function, course)
            if kept and len(kept.own) >= MIN_PRINTS:
                prints[student] = kept
        theirs = fingerprints((reference or {}).get(file, ""), function, course)
        if theirs and len(theirs.own) >= MIN_PRINTS:
            found.reference += [_pair(function, (student, REFERENCE), mine, theirs) for student, mine in prints.items()]
        pairs += [_pair(function, (a, b), prints_a, prints_b) for (a, prints_a), (b, prints_b)
                  in itertools.combinations(sorted(_drop_common(prints).items()), 2)]
    found.reference = sorted((p for p in found.reference if p.score >= threshold), key=_most_alike)
    found.clusters = clusters([p for p in pairs if p.score >= threshold])
    return found


def _most_alike(pair):
    return -pair.score, pair.function, pair.students


def _pair(function, students, a, b):
    shared = len(a.own & b.own)
    return Pair(function, students, shared / len(a.whole | b.whole), shared, (a.text, b.text))


def _drop_common(prints):
    """Step 4's second half: in a large class, hashes most of the class shares are the lab's idiom."""
    if len(prints) < COMMON_MIN:
        return prints
    counts = Counter(h for kept in prints.values() for h in kept.own)
    common = {h for h, n in counts.items() if n > COMMON_SHARE * len(prints)}
    return {s: Prints(kept.whole, kept.own - common, kept.text) for s, kept in prints.items()
            if len(kept.own - common) >= MIN_PRINTS}


def clusters(pairs: Sequence[Pair]) -> list[Cluster]:
    """The connected groups of students that `pairs` link, each with its pairs; largest, then most alike, first."""
    group: dict[str, str] = {}                  # union-find: student -> a student of the same group

    def root(student):
        while group.setdefault(student, student) != student:
            student = group[student]
        return student
    for pair in pairs:
        group[root(pair.students[0])] = root(pair.students[1])
    members: dict[str, list[str]] = {}
    for student in list(group):
        members.setdefault(root(student), []).append(student)
    found = [Cluster(sorted(names), sorted((p for p in pairs if root(p.students[0]) == key), key=_most_alike))
             for key, names in members.items()]
    return sorted(found, key=lambda c: (-len(c.students), _most_alike(c.pairs[0])))


def line_shapes(code: str) -> list[str]:
    """Each line of a function's text in its normalised form (no comment, no spacing, bound names
    as V, strings as S), for lining two copies up; text the tokenizer cannot read is kept as written."""
    lines = code.splitlines()
    try:
        parsed = ast.parse(code).body
        local = _bound_names(parsed[0]) if parsed else set()
        shapes = [""] * len(lines)
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING):
                word = "V" if token.type == tokenize.NAME and token.string in local else \
                    "S" if token.type == tokenize.STRING else token.string
                shapes[token.start[0] - 1] += word + " "
    except (SyntaxError, ValueError, tokenize.TokenError):
        return [" ".join(line.split()) for line in lines]
    return shapes
