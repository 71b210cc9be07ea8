"""The number an answer gives, in the question's unit, with the working people write around it.

Numbers as typed: "12.5", "12,500,000", "12 500 000", "12'500'000", "12.500.000", "1,25,00,000"
(Indian grouping), "12,5" (a decimal comma), "12 point 5", "1.25e7", in words ("twelve point five
million": grader/quiz/number_words.py), with a suffix ("12.5M", "12.5 million", "12k", "0.0125B";
"12 million 500 thousand" is one number) or "× 10^7" / "·10⁷". Which mark
separates thousands is read from the answer's own numbers: several groups of three ("12.500.000")
or both marks ("12.500,5") show it, and so does a decimal mark ("12,5"); "12,500" alone is a
thousands comma (a decimal one beside "Mio", "millones"...) and "12.500" a decimal point. A plain
count (at least one unit, or with a suffix) is read in the question's unit: in millions
"12,500,000" is 12.5. Units decide: where the question counts (thousands, millions, billions), a
percentage, a memory size or an amount of compute ("12.5%", "12.5 GB", "12.5 millions of bytes",
"12.5 GFLOPs") is no count, and beside a count it is an aside ("12.5M (50 MB in float32)", "12.5M ≈ 50 MB").
Arithmetic is evaluated (grader/quiz/expressions.py's grammar, no eval): "5000*2500" is a count; in
"5000 × 2500 = 12,500,000 ≈ 12.5M" the last value of the chain is the one stated. Numbers after
"because", "since"... explain, and so does the whole after a share of it ("12.5M, a third of 37.5M",
"10% of 125M"), and a share after a number with its whole ("12.5M, 1/3 of 37.5M"); those of the
prompt quoted beside another number are working.
"minus" or "negative" before a number is its sign.
A dash between numbers is a minus, except an en or em dash, or "-" from a smaller number to a
larger one, which is a range ("12–13", "12.5 - 20"). After "not", "≠" or "!=" a number is ruled out, and so
is one a verdict follows with only a copula between ("12.5 is wrong", "12.5 isn't right", "12.5 is a
myth"; not "12.5 - counting twice would be wrong"); after "over", "at least", ">"... it
is a bound, unless the bound is nearly none ("just under 12.5M", "slightly over 12.5M" are about 12.5M).

One value given (or several that agree) is the answer; two that differ ("12.5 or 25"), a range, a bound,
only numbers ruled out, or only a measure that is no count is judged wrong with the reason; no
number at all is an AnswerError.
"""
import math
import re
import unicodedata
from typing import Literal

from grader.quiz.choices import AnswerError, Reading
from grader.quiz.expressions import parse_at, value
from grader.quiz.number_words import read_runs
from grader.quiz.wording import DASH, EXPLAINERS, SENTENCE_ENDS, answered_no, negator_at

Unit = Literal["thousand", "million", "billion"]            # the scale a question counts in
UNITS: dict[Unit, float] = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
SUFFIXES = {"hundred": 1e2, "k": 1e3, "thousand": 1e3, "thousands": 1e3, "lakh": 1e5, "lakhs": 1e5,
            "m": 1e6, "mio": 1e6, "mn": 1e6, "mln": 1e6, "million": 1e6, "millions": 1e6, "millionen": 1e6,
            "millones": 1e6, "milioni": 1e6, "miljoen": 1e6, "mega": 1e6, "crore": 1e7, "crores": 1e7,
            "b": 1e9, "bn": 1e9, "g": 1e9, "billion": 1e9, "billions": 1e9, "mrd": 1e9, "mia": 1e9, "milliard": 1e9,
            "milliards": 1e9, "milliarden": 1e9, "giga": 1e9, "tn": 1e12, "trillion": 1e12, "trillions": 1e12,
            "tera": 1e12}
MEASURES = dict.fromkeys(["%", "‰", "percent", "percentage", "pct"], "a percentage") | dict.fromkeys(
    ["byte", "bytes", "kb", "kib", "mb", "mib", "gb", "gib", "tb", "tib", "kilobyte", "kilobytes", "megabyte",
     "megabytes", "gigabyte", "gigabytes", "terabyte", "terabytes", "bit", "bits"], "a memory size") | dict.fromkeys(
    ["flop", "flops", "mflops", "gflops", "tflops", "pflops", "flos", "megaflops", "gigaflops", "teraflops",
     "petaflops"], "an amount of compute") | dict.fromkeys(
    ["dp", "decimal", "decimals", "sf", "sig", "significant"], "a precision")
COMMA_WORDS = {"mio", "mrd", "millionen", "milliarden", "millones", "milioni", "miljoen", "mia", "milliard",
               "milliards"}             # scale words of languages that write a decimal comma
SUPERSCRIPT = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+")
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
SEPARATORS = ",. '’_"                    # between groups of three digits (spaces are NFKC-folded)
TOKEN = re.compile(rf"""(?P<num>(?:\d{{1,2}}(?:,\d{{2}})+,\d{{3}}(?![\d,])(?:\.\d+)?    # Indian: 1,25,00,000
            |\d{{1,3}}(?P<sep>[{SEPARATORS}])\d{{3}}(?:(?P=sep)\d{{3}})*(?!\d)(?!(?P=sep)\d)
            (?:(?!(?P=sep))[.,]\d+)?|\d+(?:[.,]\d+)?|(?<!\.)\.\d+)(?:e[+-]?\d+(?![\w.]))?)
    |(?P<eq>~=|=>|->|<-|[=≈≃≅→←])|(?P<bound>>=|<=|[<>≤≥])|(?P<op>\*\*|[*/^×·⋅∙✕+])|(?P<dash>[{DASH}])|(?P<open>[(\[])|(?P<close>[)\]])
    |(?P<word>[^\W\d_]{{2,}}-?\d+(?![.,]?\d)|[^\W\d_]+|%|‰)|(?P<stop>[,;:!?\n]|\.(?!\d))""", re.X | re.I)
WORD_OPERATORS = {"times": "*", "x": "*", "cdot": "*", "plus": "+", "minus": "-"}     # "cdot": LaTeX's \cdot
RANGES = {"to", "and", "between", "from"}
SHARES = {"half", "third", "thirds", "quarter", "quarters", "fifth", "tenth", "fraction", "share", "part",
          "portion"}                    # "12.5M, a third of 37.5M": the number after "of" is the whole
BOUNDS = [(">",), ("<",), (">=",), ("<=",), ("≥",), ("≤",), ("over",), ("under",), ("above",), ("below",),
          ("more", "than"), ("less", "than"), ("fewer", "than"), ("greater", "than"), ("at", "least"), ("at", "most"),
          ("up", "to")]                 # before a number: "over 12.5M" is a bound, no number
NEARLY = {"just", "slightly", "bit", "little", "barely", "marginally", "fractionally"}   # before a bound: about
VERDICTS = {"wrong", "false", "incorrect", "untrue", "myth", "nonsense", "bogus", "fiction", "trap",
            "distractor"}                                   # after a number in its clause: "12.5 is wrong"
COPULAS = {"is", "was", "are", "be", "would", "seems", "looks", "a", "an", "the", "just", "simply", "clearly",
           "definitely", "totally", "-", "—", "–", ":", "params", "parameters", "parameter", "weights",
           "entries", "values", "my", "answer", "here"}     # between a number and its verdict, nothing else
DENIED = {"right", "correct", "true", "it", "accurate"}     # after "not": "12.5 is not right", "12.5 isn't it"
NOT = re.compile(r"n['’]t\b")
LATEX_TIMES = re.compile(r"\\(?:times|cdot)(?![a-z])")     # "1.25\times10^7" (no space before the 10)
SPOKEN_POINT = re.compile(r"\b(\d+) point (\d+)\b")
CHAINERS = {"=", "≈", "≃", "≅", "→", "~=", "=>", "->", "is", "so", "thus", "therefore", "gives", "giving", "makes",
            "equals", "equal", "hence"}


def _tokens(raw):
    """[(kind, text, what)]: numbers as plain float text, number words and suffixes folded into
    their number; a number's `what` is "suffixed" (a count: "12.5M"), a measure after it (MEASURES:
    "12.5%", "12.5 GB") or None."""
    text = SUPERSCRIPT.sub(lambda m: "^" + m.group().translate(SUPERSCRIPTS), str(raw))
    text = unicodedata.normalize("NFKC", text).casefold().replace("{,}", ",")     # LaTeX: "12{,}500{,}000"
    text = SPOKEN_POINT.sub(r"\1.\2", NOT.sub(" not", LATEX_TIMES.sub(" × ", text)))    # "12 point 5"; "isn't"
    text = text.replace("!=", " not ").replace("≠", " not ")                        # "12.5 ≠ 25": 25 ruled out
    found = _said([(m.lastgroup, m.group()) for m in TOKEN.finditer(text)])
    decimal = _decimal_mark([word for kind, word in found if kind == "num"])
    if decimal is None and any(kind == "word" and word in COMMA_WORDS for kind, word in found):
        decimal = "comma words"     # "12,500 Mio": the comma is decimal, "12.500 Mio" still a point
    out, scaled = [], {}        # scaled: {index in out: (scale, at)} of a whole number said with a scale
    for at, (kind, word) in enumerate(found):
        if kind == "num" and _goes_on(scaled.get(len(out) - 1), at, _digits(word, decimal), found):
            out[-1] = ("num", repr(float(out[-1][1]) + float(_digits(word, decimal))), "suffixed")
        elif kind == "num":
            out.append(("num", _digits(word, decimal), None))
        elif kind == "said":
            out.append(("num", word[0], word[1]))
        elif kind == "word" and out and out[-1][0] == "num" and (measure := _measure(word, found[at + 1:at + 3])):
            shown = f"{float(out[-1][1]):g}{'' if word in '%‰' else ' '}{word}" if out[-1][2] is None else None
            out[-1] = ("num", out[-1][1], (measure, shown))
        elif kind == "word" and word == "of" and out and out[-1][2] == "suffixed" and \
                _measure(found[at + 1][1] if at + 1 < len(found) else "", found[at + 2:at + 4]):
            continue                                                # "12.5 millions of bytes"
        elif kind == "word" and word in SUFFIXES and out and out[-1][0] == "num" and \
                out[-1][2] in (None, "suffixed"):                   # "12.5M", "125 hundred thousand"
            number, before = float(out[-1][1]), scaled.get(len(out) - 2)
            if before and before[1] == at - 2 and out[-1][2] is None and number.is_integer() and \
                    number * SUFFIXES[word] < before[0]:            # "12 million 500 thousand": one number
                out[-2:] = [("num", repr(float(out[-2][1]) + number * SUFFIXES[word]), "suffixed")]
            else:
                out[-1] = ("num", repr(number * SUFFIXES[word]), "suffixed")
            if number.is_integer():
                scaled[len(out) - 1] = (SUFFIXES[word], at)
        elif kind == "word" and word in WORD_OPERATORS and out and out[-1][0] in ("num", "close") and \
                at + 1 < len(found) and found[at + 1][0] in ("num", "open", "said"):
            out.append(("op", WORD_OPERATORS[word], None))
        elif kind == "word" and word in ("minus", "negative") and found[at + 1:at + 2] and \
                found[at + 1][0] in ("num", "said"):                # "minus 12.5": a sign
            out.append(("dash", "-", None))
        elif kind == "op":
            out.append(("op", {"**": "^", "+": "+", "/": "/", "^": "^"}.get(word, "*"), None))
        else:
            if kind == "open" and out and out[-1][0] in ("num", "close"):
                out.append(("stop", " ", None))     # "12.5M (5000 × 2500)": an aside, never a product
            out.append((kind, word, None))
    return out


def _goes_on(before, at, digits, found):
    """Whether a whole number of three digits at most ends the number said before it with thousands
    ("12 million 500 thousand 376"): `before` (scale, at) of a whole number said with a thousand
    just before it, and no scale word after this one."""
    number = float(digits)
    return bool(before) and before == (1e3, at - 1) and number.is_integer() and number < 1e3 and \
        not (at + 1 < len(found) and found[at + 1][1] in SUFFIXES)


def _said(found):
    """`found` with each number said in words as one ("said", (value text, "suffixed" or None));
    a single small word ("one", "two") only where the answer holds no other number."""
    runs = read_runs([word if kind == "word" or word == "," else "-" if word in "-\u2010\u2011" else ""
                      for kind, word in found])
    alone = not any(kind == "num" for kind, _ in found) and len(runs) == 1
    out, at = [], 0
    for start, stop, number, scaled, words in runs:
        if words > 1 or scaled or alone:
            out += found[at:start] + [("said", (repr(number), "suffixed" if scaled else None))]
            at = stop
    return out + found[at:]


def _measure(word, after):
    """What the word after a number makes it, when not a count: "a percentage", "a memory size",
    "a precision" ("12.5 (1 d.p.)", "to 3 s.f.": how it is rounded, never a second value)."""
    if word in ("per", "pro") and after and after[0][1] == "cent":
        word = "percent"
    if word in ("d", "s") and [text for _, text in after] in ([".", "p"], [".", "f"]):
        word += after[1][1]
    return MEASURES.get(word)


def _decimal_mark(numerals):
    """The decimal mark the answer's own numbers show, "," or ".", or None where they show none
    or both: a mark between groups of three repeated ("12.500.000") or before the other mark
    ("12,500.5") separates thousands, so the other is decimal; a mark followed by other than three
    digits ("12,5"), or after a leading zero or four digits ("0,125", "1250,125"), is decimal."""
    shown = set()
    for numeral in numerals:
        mantissa = numeral.split("e")[0]
        marks = re.findall(r"[.,]", mantissa)
        if len(set(marks)) == 2:
            shown.add(marks[-1])
        elif len(marks) >= 2:
            shown.add(({",", "."} - set(marks)).pop())
        elif marks and re.fullmatch(r"[1-9]\d{0,2}[.,]\d{3}", mantissa) is None:
            shown.add(marks[0])
    return shown.pop() if len(shown) == 1 else None


def _digits(text, decimal):
    """'12,500,000' -> '12500000.0', '12.500.000' -> '12500000.0', '12,5' -> '12.5'; '12,500' is
    12500 and '12.500' is 12.5, unless the answer's other numbers show the other `decimal` mark (or,
    for a comma, a scale word of a language that writes a decimal comma: "12,500 Mio")."""
    mantissa, _, exponent = text.partition("e")
    mantissa = re.sub(r"[ '’_]", "", mantissa)
    marks = re.findall(r"[.,]", mantissa)
    if len(set(marks)) == 2 or len(marks) >= 2:
        point = marks[-1] if len(set(marks)) == 2 else None
    elif marks and re.fullmatch(r"[1-9]\d{0,2}[.,]\d{3}", mantissa):        # "12,500" or "12.500"
        comma_decimal = decimal == "," or decimal == "comma words" and marks[0] == ","
        point = marks[0] if (marks[0] == ",") == comma_decimal else None
    else:
        point = marks[0] if marks else None
    whole, _, fraction = mantissa.rpartition(point) if point else (mantissa, "", "")
    number = re.sub(r"[.,]", "", whole) + ("." + fraction if point else "")
    return repr(float(number + ("e" + exponent if exponent else "")))


def _dashes(toks):
    """Each dash as an operator ("-"), a range ("range") or punctuation ("stop"), by what is beside it."""
    out = []
    for at, token in enumerate(toks):
        if token[0] != "dash":
            out.append(token)
            continue
        left = out[-1] if out else ("start", "")
        right = toks[at + 1] if at + 1 < len(toks) else ("end", "")
        operands = left[0] in ("num", "close") and right[0] in ("num", "open", "dash")
        if operands and (token[1] in "\u2012\u2013\u2014\u2015" or _rising(out, toks, at)):
            out.append(("range", token[1]))
        elif operands or right[0] in ("num", "open"):
            out.append(("op", "-"))
        else:
            out.append(("stop", token[1]))
    return out


def _rising(out, toks, at):
    """Whether "x - y" (an ASCII dash) stands alone between plain numbers with x < y: a range."""
    if not (len(out) >= 1 and out[-1][0] == "num" and at + 1 < len(toks) and toks[at + 1][0] == "num"):
        return False
    alone = (len(out) < 2 or out[-2][0] not in ("op", "open")) and \
        (at + 2 >= len(toks) or toks[at + 2][0] not in ("op", "close", "dash"))
    return alone and toks[at][1] == "-" and float(out[-1][1]) < float(toks[at + 1][1])


def _values(toks, unit):
    """[(value in the unit, mode, the words since the value before, the plain number or None, the
    measure it is given in or None)]."""
    found, mode, at, since, bound = [], "assert", 0, [], False
    words = [token[1] for token in toks]
    while at < len(toks):
        kind, word = toks[at][:2]
        length = next((len(b) for b in BOUNDS if tuple(words[at:at + len(b)]) == b), 0)
        if length and at + length < len(toks) and toks[at + length][0] == "num":
            bound = not (at and words[at - 1] in NEARLY)                # "just under 12.5M": about 12.5M
            at += length
            continue
        if kind in ("num", "open") or (kind == "op" and word == "-"):
            parsed = parse_at([token[:2] for token in toks], at, len(toks))
            if parsed:
                tree, stop = parsed
                number = value(tree, {})
                whats = [token[2] for token in toks[at:stop] if token[0] == "num" and token[2]]
                counted = "suffixed" in whats or abs(number) >= unit
                bare = all(token[0] in ("num", "open", "close") for token in toks[at:stop])    # "(50257)"
                plain = number if tree[0] == "num" and bare and not whats else None
                measure = next((what for what in whats[-1:] if isinstance(what, tuple)), None)
                if measure and stop > at + 1:
                    measure = (measure[0], None)
                share = "or" not in since and any(a in SHARES and b == "of" for a, b in zip(since, since[1:]))
                part = unit > 1 and 0 < number < 1 and not counted and words[stop:stop + 1] == ["of"] and \
                    any(value[1] == "assert" for value in found)      # "12.5M (1/3 of 37.5M)"
                whole = found and (found[-1][4] and found[-1][4][0] in ("a percentage", "a share")
                                   and [w for w in since if w not in ("the", "a", "an")] == ["of"] or share)
                kept = "explain" if whole or part else "bound" if bound and mode == "assert" else mode
                found.append((number / unit if unit > 1 and counted else number, kept,
                              since, plain, ("a share", None) if part else measure))   # "10% of 125M": 125M explains
                at, since, bound = stop, [], False
                continue
        if word in SENTENCE_ENDS or word in (",", "but"):
            mode = "assert" if mode == "negate" or word != "," else mode
        elif (word in VERDICTS or word == "not" and words[at + 1:at + 2] and words[at + 1] in DENIED or
              word == "no" and since[-1:] == [":"] and words[at + 1:at + 2] in ([], [";"], [","], ["\n"])) and found \
                and found[-1][1] == "assert" and set(since) <= COPULAS:        # "12.5 is wrong", "12.5 is a myth"
            found[-1], since = (found[-1][0], "denied", *found[-1][2:]), []    # "12.5 is wrong, 25" no chain
        elif length := negator_at(words, at) or 2 * (words[at:at + 2] == ["anything", "but"]):
            mode, at = "negate", at + length
            continue
        elif word in EXPLAINERS:
            mode = "explain"
        since.append("range" if kind == "range" else word)
        at += 1
    return found


def _chains(found, quoted):
    """Values joined by "=", "≈", "is", "so"... as one chain, whose last value is the one stated; a
    count and a measure never chain ("12.5M ≈ 50 MB" states both), nor does a name given a value
    ("12.5M with d = 512") or a number of the prompt quoted as it stands ("12.5M, each row is a
    512-dim vector": working), nor a value ruled out ("12.5 is not 25"); a verdict on a chain's
    last value rules out the chain ("5000 × 2500 = 12.5M is wrong")."""
    chains = []
    for number, mode, since, plain, measure in found:
        assigned = since[-1:] == ["="] and len(since) >= 2 and since[-2].isalpha()      # "12.5M with d = 512"
        if chains and set(since) & CHAINERS and bool(measure) == bool(chains[-1][4]) and not assigned \
                and plain not in quoted and mode != "negate":             # "12.5 is not 25": 25 ruled out
            chains[-1] = (number, "negate" if mode == "denied" else chains[-1][1], chains[-1][2], None, measure)
        else:
            chains.append((number, "negate" if mode == "denied" else mode, since, plain, measure))
    return chains


def read_number(question, raw):
    """The Reading of `raw` for a numeric question: its value in the question's unit."""
    unit = UNITS.get(question.unit, 1.0)
    found = _values(_dashes(_tokens(answered_no(raw))), unit)
    if any(not math.isfinite(number) for number, *_ in found):
        raise AnswerError(f"{_quoted(raw)} is not a number: type digits, e.g. 12.5")
    quoted = {float(token[1]) for token in _tokens(question.prompt) if token[0] == "num"}
    chains = _chains(found, quoted)
    bounds = [chain for chain in chains if chain[1] == "bound" and chain[3] not in quoted]
    if bounds:                                  # "over 12.5M", "at least 12.5"; "over 5000 rows" is working
        return Reading(None, f"a bound ({_shown(bounds[0][0], question)}) is not one number: give the one you mean")
    asserted = [chain for chain in chains if chain[1] == "assert"]
    measured = [chain for chain in asserted if chain[4]] if question.unit in UNITS else []
    asserted = [chain for chain in asserted if chain not in measured]
    if measured and not asserted:               # "12.5%", "12.5 GB": what it gives is not a count
        kind, shown = measured[-1][4]
        return Reading(None, f"it gives {kind}{f' ({shown})' if shown else ''}, not a count in {question.unit}s")
    working = [chain for chain in asserted if chain[3] is not None and chain[3] in quoted]
    if len(asserted) > len(working):            # the prompt's numbers quoted beside an answer
        asserted = [chain for chain in asserted if chain not in working]
    if not asserted:
        ruled_out = [chain for chain in chains if chain[1] == "negate"]
        if ruled_out:
            return Reading(None, f"it rules out {_shown(ruled_out[0][0], question)} but gives no number")
        raise AnswerError(f"{_quoted(raw)} is not a number: type digits, e.g. 12.5"
                          + (" (or 12.5M)" if unit > 1 else ""))
    values = [chain[0] for chain in asserted]
    if all(_agree(number, values[-1], question) for number in values):
        return Reading(values[-1])
    joined = {word for chain in asserted[1:] for word in chain[2]}
    if "range" in joined or joined & RANGES:
        return Reading(None, f"a range ({values[0]:g} to {_shown(values[-1], question)}) is not one number: "
                       "give the one you mean")
    shown = " and ".join(_shown(number, question) for number in values[:3])
    return Reading(None, f"it gives more than one number ({shown}); an answer commits to one")


def _agree(a, b, question):
    """Two values the same answer gives: equal up to the question's tolerance or rounding."""
    return math.isclose(a, b, rel_tol=5e-3, abs_tol=question.tolerance or 0.0)


def _shown(number, question):
    return f"{number:g}" + (f" {question.unit}" if question.unit else "")


def _quoted(raw):
    text = str(raw).strip()
    return repr(text if len(text) <= 40 else text[:40] + "…")
