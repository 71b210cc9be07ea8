"""Text answers by meaning: which candidate quantities an answer names, asserted or ruled out.

A text question's key (grader/quiz/model.py, TextKey) is data: the answer as an `expression`
(compared as mathematics, grader/quiz/expressions.py) and as `words` (phrases that name it), the
`others` it could be confused with (candidates: "sum", "product"...), `names` (words that stand
for a variable: "the first's speed" for a) and `neutral` phrases that name nothing ("matrix product"
where products are candidates).

An answer is read as tokens: case folded, "minus", "plus", "times", "over", "divided by" as
operators, a dash (any: - – — −) as a minus or a sign, except after a word, where it is punctuation
("their difference — a − b"), and between two words, where it is a hyphen; "'s" and plural "s"
dropped, articles dropped in names; a superscript a power ("a²"), "e^(…)" the exponential, a constant's index dropped
("ω_i"), full-width and mathematical letters the letters they look like ("𝑎 − 𝑏"); symbols written
together are multiplied ("aω" is a·ω, never "ab", as "a b" is two words); a
word one edit from a word of the key's phrases is that word ("differnce"), from five letters up
where it could make an answer right, four where it names another candidate ("summ"; into one shorter
than five letters only by a doubled letter or two letters swapped: "long" and "sort" are words, not
slips for "log" and "sqrt"), and never a letter or a number; "=" ends an expression, each side read
on its own ("aω − bω = (a − b)ω"). Scanning it, every phrase of the key
and every expression in its variables is a mention of a candidate: the answer, one of the others, or
(an expression that is not the answer, in two of its variables where it has two or more: "aω" names
a no more than "a" does) itself. A mention after "not", "no", "never", "≠", "rather than", "instead
of"... up to the next punctuation or "but" is ruled out, and so is one a closing ": no" marks
("a + b: no"), and so is each mention of a clause that a
verdict ends ("the sum is irrelevant", "a + b is wrong", "the sums cancel"; a clause starts again at
"after", "when", "so"...); one in the argument of another ("the ratio of their sums", "the square of
a - b") is not a candidate (a phrase that starts with a preposition is still one, "the distance from
the start", and so is "squared" after an argument: "the distance between them squared"; "1 / X"
is a function of X), nor is one in a reason given after a candidate ("a - b, because their
sums cancel") unless the reason hedges ("or", "also").
The answer is right when it names the answer and no other candidate, does not rule it out, and is
not a bare list of three or more phrases (one that rules a phrase out is a statement); when wrong,
`why` says which of these it broke.
"""
import re
import unicodedata

from grader.quiz.expressions import FUNCTIONS, SYMBOLS, is_operation, parse_at, same_quantity, symbols_of
from grader.quiz.numbers import SUPERSCRIPT, SUPERSCRIPTS
from grader.quiz.wording import DASH, answered_no, one_edit

DASHES = "\u2212\u2010\u2011\u2012\u2013\u2014\u2015\ufe63\uff0d"   # minus sign, hyphens, dashes
TIMES = "×·⋅∙✕"
LONGEST_ANSWER = 1000                   # characters: past this it is not "a short phrase"
WORD_OPERATORS = {("minus",): "-", ("plus",): "+", ("time",): "*", ("multiplied", "by"): "*",
                  ("divided", "by"): "/", ("over",): "/"}
NEGATORS = [("not",), ("no",), ("never",), ("nor",), ("neither",), ("without",), ("rather", "than"),
            ("instead", "of"), ("other", "than"), ("except",), ("independent", "of"), ("regardless", "of"),
            ("irrespective", "of"), ("rule", "out"), ("ruled", "out"), ("ruling", "out"), ("not", "only"),
            ("not", "just"), ("anything", "but"), ("everything", "but"), ("unlike",), ("opposed", "to"),
            ("contrary", "to")]     # "not only X" names more than X
BOUNDARIES = {"but", "only", "just", "whereas", "yet", "however"}     # end what a negation rules out
CLAUSES = {"after", "when", "once", "as", "while", "where", "if", "since", "because", "so", "then",
           "leaving"}                                                  # start what a verdict rules out
PREPOSITIONS = {"of", "between", "in", "from", "among"}                # "ratio of X": X an argument
HEDGES = {"or", "also", "too", "maybe", "perhaps", "possibly", "probably", "might", "could", "either",
          "alternatively", "equally"}                                  # a reason with one still names
POSTFIX = {"squared", "cubed"}                                        # "the distance between them squared"
GLUE = {"and", "or", "&"}                                              # what a bare list has between items
ARTICLES = {"the", "a", "an"}
MATH = {"num", "sym", "fn", "op", "open", "bar"}
LETTER = r"[^\W\d_\u0370-\u03ff]"          # a letter, not Greek: "aω-bω" is a difference, "x-axis" one word
HYPHEN = re.compile(rf"(?<={LETTER}{{2}})[{DASH}](?={LETTER}{{2}})")
INDEXED = re.compile(r"(θ|ω|theta|omega)_(?:\{\w{1,3}\}|\w)", re.I)    # a constant's index: "θ_i", "\\omega_{k}"
EXPONENTIAL = re.compile(r"\be\s*\^\s*(?:\{([^{}]*)\}|\()")     # "e^(m-n)", "e^{m-n}": exp of it
SHORTENED = {"rel": "relative", "pos": "position", "dist": "distance", "diff": "difference"}
SHORT = re.compile(rf"\b({'|'.join(SHORTENED)})\b\.?", re.I)
MENDED = 5                              # letters: a word that may make an answer right may carry a typo


def lex(text):
    """(kind, text) tokens of an answer or a phrase: word, num, op, dash, open, close, bar, stop.
    A dash joining two words is a hyphen (dropped); any other is a "dash", read by `dashes`."""
    text = SUPERSCRIPT.sub(lambda powers: _power(powers.group().translate(SUPERSCRIPTS)), str(text))   # "a²"
    text = unicodedata.normalize("NFKC", text)                       # "ａ－ｂ", "𝑎 − 𝑏": the letters they look like
    text = INDEXED.sub(r"\1", text)                                  # "θ_i": one frequency of many, still θ
    text = SHORT.sub(lambda short: SHORTENED[short.group(1).casefold()], text)          # "rel. pos", "the diff"
    text = HYPHEN.sub(" ", text.casefold().replace("’", "'").replace("**", "^").replace("+/-", "±")
                      .replace("+-", "±"))                            # "a +- b" is a ± b, never a - b
    text = EXPONENTIAL.sub(lambda power: f"exp({power.group(1)})" if power.group(1) is not None else "exp(", text)
    text = text.translate({ord(c): "-" for c in DASHES} | {ord(c): "*" for c in TIMES} | {ord("÷"): "/"})
    text = text.replace("!=", " not ").replace("≠", " not ")                 # "a - b ≠ a + b": the sum ruled out
    tokens = []
    for match in re.finditer(r"(\d+(?:\.\d+)?)|([^\W\d_]+(?:'[^\W\d_]+)*)|([+*/^])|(-)|([(\[])|([)\]])|(\|)"
                             r"|([,;:.!?=≈→])", text):
        kind = ("num", "word", "op", "dash", "open", "close", "bar", "stop")[match.lastindex - 1]
        tokens.append((kind, _word(match.group()) if kind == "word" else match.group()))
    return _replace(tokens, OPERATOR_INDEX)


def _power(exponent):
    return f"^{exponent}" if exponent.isdigit() else f"^({exponent})"


def dashes(tokens):
    """Each dash read by context: after a word it is punctuation ("their difference — a − b"),
    elsewhere a minus (between operands) or a sign."""
    out = []
    for kind, text in tokens:
        if kind == "dash":
            kind = "stop" if out and out[-1][0] == "word" else "op"
        out.append((kind, text))
    return out


def _word(word):
    """'car's' -> 'car', "doesn't" -> 'not', 'speeds' -> 'speed'."""
    if word.endswith("n't") or word in ("isnt", "doesnt", "dont", "cant", "arent"):
        return "not"
    word = word.removesuffix("'s").replace("'", "")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


def _index(phrases):
    """{first word: [(phrase, value)], longest first} of {phrase (a tuple of words): value}."""
    index = {}
    for phrase in sorted(phrases, key=len, reverse=True):
        index.setdefault(phrase[0], []).append((phrase, phrases[phrase]))
    return index


def _match(tokens, at, index):
    """(length, value) of the longest indexed phrase at tokens[at], or (0, None)."""
    for phrase, value in index.get(tokens[at][1], ()):
        if tuple(text for _, text in tokens[at:at + len(phrase)]) == phrase:
            return len(phrase), value
    return 0, None


def _replace(tokens, index):
    """`tokens` with each indexed phrase replaced by its token."""
    out, at = [], 0
    while at < len(tokens):
        length, token = _match(tokens, at, index)
        out.append(token if length else tokens[at])
        at += length or 1
    return out


OPERATOR_INDEX = _index({phrase: ("op", op) for phrase, op in WORD_OPERATORS.items()})
NEGATOR_INDEX = _index(dict.fromkeys(NEGATORS, True))
VERDICT_INDEX = _index(dict.fromkeys([("wrong",), ("false",), ("incorrect",), ("untrue",), ("irrelevant",), ("myth",),
                                      ("nonsense",), ("bogus",), ("fiction",), ("trap",), ("distractor",),
                                      ("unnecessary",), ("not", "needed"), ("not", "necessary"), ("cancel",),
                                      ("cancelled",), ("canceled",),
                                      ("drop", "out"), ("dropped", "out"), ("disappear",),
                                      ("not", "relevant"), ("not", "matter"), ("no", "role"), ("not", "right"),
                                      ("not", "correct"), ("not", "true"), ("not", "it"), ("not", "what"),
                                      ("not", "appear"), ("never", "appear"), ("not", "enter"), ("never", "enter"),
                                      ("not", "survive"), ("lost",), ("vanish",), ("vanishe",), ("gone",),
                                      ("eliminated",)], True))        # what is absent: "m + n never appears"
REASONS = {_word(word) for word in ("because", "since", "cause", "whereas", "while", "whereby", "given")}


def _words(phrase, keep=()):
    return tuple(text for kind, text in lex(phrase) if not (text in ARTICLES and text not in keep))


def _mark(tokens, is_symbol):
    """Words that are functions (followed by a bracket) or symbols marked as such."""
    tokens = list(tokens)
    for at, (kind, word) in enumerate(tokens):
        if kind == "word" and word in FUNCTIONS and at + 1 < len(tokens) and tokens[at + 1][0] == "open":
            tokens[at] = ("fn", word)
        elif kind == "word" and is_symbol(word):
            tokens[at] = ("sym", word)
    return tokens


class Rules:
    """A text key made ready to read answers with (built once per key)."""

    def __init__(self, key):
        self.key = key
        self.variables = sorted(key.names) if key.names else []
        self.expression = self.tree(lex(key.expression)) if key.expression else None
        if self.expression is not None:
            self.variables = sorted(symbols_of(self.expression) - SYMBOLS)
        self.label = f"'{key.words[0]}' ({key.expression})" if key.expression else f"'{key.words[0]}'"
        self.names = _index({_words(phrase, self.variables): ("sym", name)
                             for name, phrases in key.names.items() for phrase in phrases})
        self.phrases = {_words(phrase): "answer" for phrase in key.words}
        self.phrases |= {_words(phrase): other for other, phrases in key.others.items() for phrase in phrases}
        self.phrases |= {_words(phrase): None for phrase in key.neutral}
        self.targets = {word for phrase in self.phrases for word in phrase} | \
            {word for phrases in key.names.values() for phrase in phrases for word in _words(phrase)}
        self.vocabulary = self.targets | {word for phrase in [*NEGATORS, *WORD_OPERATORS] for word in phrase} | \
            BOUNDARIES | PREPOSITIONS | GLUE | ARTICLES | SYMBOLS | set(FUNCTIONS) | set(self.variables)
        self.other_words = {word for phrases in key.others.values() for phrase in phrases
                            for word in _words(phrase)} - {word for phrase in [*key.words, *key.neutral]
                                                           for word in _words(phrase)}
        self.phrases = _index(self.phrases)

    def tokens(self, text):
        """The answer's tokens with typos mended, symbols written together split ("aω" is a ω),
        names replaced by their variables, symbols and functions marked."""
        kept = []
        for kind, word in lex(text):
            if kind == "word" and word not in self.vocabulary:
                kept += [("word", part) for part in self._symbols(word) or [self._mended(word)]]
            elif not (word in ARTICLES and word not in self.variables):
                kept.append((kind, word))
        return dashes(_mark(_replace(kept, self.names), lambda word: word in self.variables or word in SYMBOLS))

    def _symbols(self, word):
        """The variables and symbols `word` is written of, with one symbol at least ("aω", "bω",
        "aomega"), else None: "ab" stays a word, as "a b" is two."""
        pieces = sorted(set(self.variables) | SYMBOLS, key=len, reverse=True)
        ways = {len(word): []}                          # {start: the pieces from there to the end}
        for start in range(len(word) - 1, -1, -1):
            ways[start] = next(([piece] + ways[start + len(piece)] for piece in pieces
                                if word.startswith(piece, start) and start + len(piece) in ways), None)
            if ways[start] is None:
                del ways[start]
        split = ways.get(0)
        return split if split and len(split) > 1 and set(split) & SYMBOLS else None

    def _mended(self, word):
        """`word`, or the one word of the key's phrases and names it is a typo of (one edit; never
        a negation: "either" stays itself). A word that may make an answer right is mended from five
        letters up, so that no letter, name or short word is taken for another; another
        candidate's ("summ" for "sum") from four, into one shorter than five letters only from a
        slip of the keys ("summ", "sqtr"), as "long" and "sort" are words of their own."""
        if len(word) < 4:
            return word
        near = [known for known in self.targets if one_edit(word, known) and
                (len(known) >= MENDED and len(word) >= MENDED or len(known) >= 3 and known in self.other_words
                 and (len(known) >= MENDED or _slip(word, known)))]
        return near[0] if len(near) == 1 else word

    def tree(self, tokens):
        """The one expression `tokens` hold (the key's; every word a symbol), or SyntaxError."""
        tokens = dashes(_mark(tokens, lambda word: True))
        parsed = parse_at(tokens, 0, len(tokens))
        if parsed is None or parsed[1] != len(tokens):
            raise SyntaxError(f"{self.key.expression!r} is not an expression, e.g. a - b")
        return parsed[0]

    def candidate(self, tree, shown):
        if self.expression is not None and same_quantity(tree, self.expression, self.variables,
                                                         self.key.up_to):
            return "answer"
        return shown


def _slip(typed, word):
    """Whether `typed` is `word` (one edit from it) with a letter doubled or two neighbours swapped."""
    if len(typed) == len(word) + 1:
        return any(typed[:at] + typed[at + 1:] == word and typed[at] == typed[at - 1] for at in range(1, len(typed)))
    return len(typed) == len(word) and sorted(typed) == sorted(word)


def mentions(rules, text):
    """(candidate, ruled_out, "words" or "expression") for each mention in the answer, and how many
    of its words name no candidate. After an answer is named, a reason ("because", "since",
    "whereas"... up to the sentence's end or its bracket's close) names no candidate: "a - b,
    because their sums cancel" names one; a reason that hedges ("or", "also", "maybe"...) still
    does."""
    tokens, found, other_words = rules.tokens(answered_no(text)), [], 0
    ruled_out = argument = False
    clause = 0                                 # where in `into` the clause's mentions start
    at, depth, reason = 0, 0, None             # reason: (its bracket depth, hedged, its mentions)
    while at < len(tokens):
        kind, word = tokens[at]
        depth += (kind == "open") - (kind == "close")
        if reason and (word in (".", ";", "!", "?") or depth < reason[0]):
            found += reason[2] if reason[1] else []
            reason = None
        elif reason is None and word in REASONS and any(not ruled for _, ruled, _ in found):
            reason = (depth, False, [])
        elif reason and word in HEDGES:
            reason = (reason[0], True, reason[2])
        into = reason[2] if reason else found
        clause = len(into) if kind == "open" else clause
        if word == ":" and tokens[at + 1:at + 2] == [("word", "no")] and \
                (at + 2 == len(tokens) or tokens[at + 2][0] == "stop"):       # "a + b: no; a - b: yes"
            into[clause:] = [(candidate, True, how) for candidate, _, how in into[clause:]]
            at += 2
            continue
        if kind in ("stop", "close") or word in BOUNDARIES or word == "or":
            ruled_out, argument, clause = ruled_out and word == "or", False, len(into)
            at += 1
            continue
        if word in CLAUSES:                    # "the difference remains after the sums cancel"
            clause = len(into)
        verdict = _match(tokens, at, VERDICT_INDEX)[0]
        if verdict and clause < len(into):     # "the sum is irrelevant", "a + b is wrong"
            into[clause:] = [(candidate, True, how) for candidate, _, how in into[clause:]]
            at += verdict
            continue
        negator = _match(tokens, at, NEGATOR_INDEX)[0]
        if negator:
            ruled_out, at = True, at + negator
            continue
        if kind in MATH:
            parsed = parse_at(tokens, at, len(tokens))
            if parsed:
                tree, stop = parsed
                named = symbols_of(tree) & set(rules.variables)     # "aω" is a scaled, named as "a" is
                if is_operation(tree) and len(named) >= min(2, len(rules.variables)) and not argument:
                    shown = "".join(f" {text} " if text in "+-" else text for _, text in tokens[at:stop])
                    shown = shown if len(shown) <= 40 else shown[:40] + "…"
                    into.append((rules.candidate(tree, shown), ruled_out, "expression"))
                depth += sum((kind == "open") - (kind == "close") for kind, _ in tokens[at + 1:stop])
                at = stop
                continue
        length, concept = _match(tokens, at, rules.phrases)
        if length:
            over = at >= 2 and tokens[at - 1] == ("op", "/") and tokens[at - 2][0] == "num"     # "1 / distance"
            if concept == "answer" and over:
                into.append((f"{tokens[at - 2][1]} / {' '.join(text for _, text in tokens[at:at + length])}",
                             ruled_out, "expression"))
            elif concept and (not argument or length == 1 and tokens[at][1] in POSTFIX or
                              tokens[at][1] in PREPOSITIONS):                   # "distance from the first token"
                into.append((concept, ruled_out, "words"))
                argument = tokens[at + length - 1][1] in PREPOSITIONS or \
                    at + length < len(tokens) and tokens[at + length][1] in PREPOSITIONS     # "square of"
            other_words += concept is None
            at += length
            continue
        other_words += kind == "word" and word not in GLUE
        at += 1
    return found + (reason[2] if reason and reason[1] else []), other_words


def judge(answer, key_rules):
    """(right, why) for a text answer against its key's Rules; `why` says what a wrong answer did."""
    text = str(answer)
    if len(text) > LONGEST_ANSWER:
        return False, f"an expression or a short phrase was asked for; this answer is {len(text):,} characters long"
    found, other_words = mentions(key_rules, text)
    named = list(dict.fromkeys(candidate for candidate, ruled_out, _ in found if not ruled_out))
    shown = lambda candidate: key_rules.label if candidate == "answer" else f"'{candidate.strip()}'"
    if any(candidate == "answer" and ruled_out for candidate, ruled_out, _ in found):
        return False, f"it rules out {key_rules.label}, which is the answer"
    if len(named) > 1:
        return False, (f"it names more than one candidate ({', '.join(map(shown, named))}); "
                       "an answer commits to one")
    if named == ["answer"]:
        phrases = sum(how == "words" for _, _, how in found)
        if phrases >= 3 and not other_words and len(found) == phrases and not any(ruled for _, ruled, _ in found):
            return False, "a bare list of words is not an answer: say which quantity, in a phrase or an expression"
        return True, ""
    if named and (named[0] in key_rules.key.others or key_rules.expression is None):
        return False, f"{shown(named[0])} is not the quantity asked for"
    if named:
        up_to = {"factor": " up to sign or a constant factor", "sign": " up to sign"}
        slack = next((up_to[kind] for kind in up_to if kind in key_rules.key.up_to), "")
        return False, f"{shown(named[0])} is not {key_rules.key.expression}" + (f", even{slack}" if slack else "")
    return False, "it names none of the quantities the question is about"
