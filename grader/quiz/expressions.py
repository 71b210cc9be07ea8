"""Expressions in quiz answers, read and compared as mathematics without evaluating any code.

A learner's expression ("a - b", "|b − a|", "(a-b)ω", "2(a - b)") is parsed by the small grammar
below into a tree of numbers, symbols and operations, and compared with the key's expression by
evaluating both at random points, as homework systems such as WeBWorK compare formulas: two
expressions that agree at many random points are the same function. No symbolic algebra and no
`eval`: a class's answers are untrusted text, and this costs microseconds at import and per answer.

Grammar (tokens come from grader/quiz/matching.py):  sum := product (('+'|'-') product)*
  product := signed (('*'|'/') signed | signed written next to it: 2a, 2(a - b), (a - b)ω)*
  signed := ('-'|'+') signed | power     power := atom ('^' signed)?
  atom := number | symbol | function '(' sum ')' | '(' sum ')' | '|' sum '|'
"""
import math
import random

FUNCTIONS = {"abs": abs, "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "ln": math.log,
             "sin": math.sin, "cos": math.cos, "tan": math.tan}
CONSTANTS = {"pi": math.pi, "π": math.pi}
SYMBOLS = {"θ", "theta", "ω", "omega", "α", "alpha", "β", "beta", "λ", "lambda", "φ", "phi", *CONSTANTS}
DEEPEST = 30                            # brackets nested deeper than this are not an answer
LONGEST = 60                            # tokens: an answer's expression is short


class Parser:
    """Parses the longest expression that starts at tokens[start]: `tokens` are (kind, text) pairs
    with kinds num, sym (a variable or constant symbol), fn, op, open, close, bar."""

    def __init__(self, tokens, start, end):
        self.tokens, self.at, self.end, self.depth, self.bars = tokens, start, end, 0, 0

    def peek(self, kind=None, text=None):
        token = self.tokens[self.at] if self.at < self.end else (None, None)
        return (kind is None or token[0] == kind) and (text is None or token[1] == text)

    def take(self):
        self.at += 1
        return self.tokens[self.at - 1]

    def _more(self, tree, operators, operand):
        """`tree` extended by `operators` and operands while they parse; a dangling operator is left."""
        while True:
            saved = self.at, self.depth, self.bars
            if any(self.peek("op", op) for op in operators):
                operator = self.take()[1]
            elif "*" in operators and self._implicit(tree):
                operator = "*"
            else:
                return tree
            try:
                tree = (operator, tree, operand())
            except SyntaxError:
                self.at, self.depth, self.bars = saved
                return tree

    def sum(self):
        return self._more(self.product(), "+-", self.product)

    def product(self):
        return self._more(self.signed(), "*/", self.signed)

    def _implicit(self, left):
        """'2a', '(a-b)ω', 'ω(a - b)', '2|a - b|': a product without '*', but never 'a b' (two
        variables side by side are two words) nor a number on the right."""
        kind, text = self.tokens[self.at] if self.at < self.end else (None, None)
        if kind == "bar":
            return self.bars == 0
        variable = lambda kind, text: kind == "sym" and text not in SYMBOLS
        return kind in ("sym", "open", "fn") and not (variable(*left[:2]) and variable(kind, text))

    def signed(self):
        if self.peek("op", "-") or self.peek("op", "+"):
            sign = self.take()[1]
            return ("neg", self.signed()) if sign == "-" else self.signed()
        return self.power()

    def power(self):
        """a^b, right to left: a^b^c is a^(b^c)."""
        tree = self.atom()
        if not self.peek("op", "^"):
            return tree
        saved = self.at, self.depth, self.bars
        self.take()
        try:
            return ("^", tree, self.signed())
        except SyntaxError:
            self.at, self.depth, self.bars = saved
            return tree

    def atom(self):
        kind, text = self.take() if self.at < self.end else (None, None)
        if kind == "num":
            return ("num", float(text))
        if kind == "sym":
            return ("sym", text)
        if kind == "fn" and self.peek("open"):
            return ("fn", text, self.atom())
        if kind in ("open", "bar") and self.depth < DEEPEST:
            self.depth += 1
            self.bars += kind == "bar"
            inner = self.sum()
            if not self.peek("close" if kind == "open" else "bar"):
                raise SyntaxError("unclosed bracket")
            self.take()
            self.depth -= 1
            self.bars -= kind == "bar"
            return inner if kind == "open" else ("fn", "abs", inner)
        raise SyntaxError("not an expression")


def parse_at(tokens, start, end):
    """(tree, stop) of the longest expression in tokens[start:end] (at most LONGEST tokens) that
    starts at `start`, or None. One pass: an operator whose operand does not parse is left out."""
    parser = Parser(tokens, start, min(end, start + LONGEST))
    try:
        return parser.sum(), parser.at
    except SyntaxError:
        return None


def symbols_of(tree):
    if tree[0] == "sym":
        return {tree[1]}
    return set().union(*(symbols_of(part) for part in tree[1:] if isinstance(part, tuple)))


def is_operation(tree):
    """Whether a tree does something (a - b, |a|, 2a), rather than name one symbol or number."""
    return tree[0] not in ("sym", "num")


def value(tree, point):
    """The tree's value at `point` ({symbol: number}); NaN where it is undefined."""
    try:
        return _value(tree, point)
    except (ArithmeticError, ValueError, TypeError):
        return math.nan


def _value(tree, point):
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind == "sym":
        return CONSTANTS[tree[1]] if tree[1] in CONSTANTS else point[tree[1]]
    if kind == "neg":
        return -_value(tree[1], point)
    if kind == "fn":
        return float(FUNCTIONS[tree[1]](_value(tree[2], point)))
    left, right = _value(tree[1], point), _value(tree[2], point)
    return {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
            "/": lambda: left / right, "^": lambda: float(left ** right)}[kind]()


def points(variables, constants, seed=0):
    """Random points where the key's `variables` vary and every other symbol (a constant such as
    ω) keeps one value per group: 3 groups of 6 points."""
    draw = random.Random(seed)
    for _ in range(3):
        fixed = {name: draw.uniform(0.3, 2.0) for name in constants}
        yield [fixed | {name: draw.uniform(1.0, 40.0) for name in variables} for _ in range(6)]


def same_quantity(tree, key, variables, up_to=()):
    """Whether `tree` is the key's quantity: equal to it everywhere, or (per `up_to`) equal up to
    sign (±key, |key|) or up to a constant factor (c·key, c·|key|, c free of the variables)."""
    constants = (symbols_of(tree) | symbols_of(key)) - set(variables) - set(CONSTANTS)
    for group in points(variables, constants):
        pairs = [(value(tree, point), value(key, point)) for point in group]
        if not all(math.isfinite(mine) and math.isfinite(theirs) and theirs for mine, theirs in pairs):
            return False
        if "factor" in up_to:
            ratios = [abs(mine / theirs) for mine, theirs in pairs]
            if not ratios[0] or not all(math.isclose(r, ratios[0], rel_tol=1e-9) for r in ratios):
                return False
        elif not all(math.isclose(abs(mine) if "sign" in up_to else mine,
                                  abs(theirs) if "sign" in up_to else theirs, rel_tol=1e-9)
                     for mine, theirs in pairs):
            return False
    return True
