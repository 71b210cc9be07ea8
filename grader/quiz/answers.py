"""What a learner may type, read into the key's form (an answers file's values are read alike).

  single    the letter ("d", "D", "(d)", "d)", "option d") or the choice's text, or enough of its
            words to name one choice only ("Adam" for "b: Adam (adaptive moments)")
  multiple  the letters, apart or together: "a, c and d", "a c d", "A,C,D", "a & d", "acd"
  numeric   a number in the question's unit, with what people add: in millions "12.5", "12.5M",
            "12.5 million", "~12.5", "12,500,000" or "1.25e7" or "1.25 × 10^7" (a plain count, read
            in the unit), "12,5" (a decimal comma), and words after it ("12.5M parameters")
  text      any words; grader/quiz/matching.py judges them
A form that cannot be read raises AnswerError saying what to type: the terminal asks again, a
class's cell costs that answer.
"""
import re

from grader.quiz.matching import ARTICLES, lex

LONGEST = 200                           # characters: more is no choice and no number
HOW = {"single": "type the letter of one choice", "multiple": "type the letters that apply",
       "numeric": "type a number"}
UNITS = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
SUFFIXES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mio": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9,
            "g": 1e9, "billion": 1e9}
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
NUMBER = re.compile(r"""(?:about|approximately|approx\.?|around|roughly|~|≈|=)?\s*
    (?P<digits>[+-]?(?:\d{1,3}(?:[,\u00a0\u202f _']\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?|\.\d+)(?:e[+-]?\d+)?)
    \s*(?:(?:[x×*·]|times)\s*10\s*(?:\^|\*\*)?\s*(?P<power>[+-]?\d+))?
    \s*(?P<suffix>[^\W\d_]+)?\.?(?P<rest>(?:\s+[^\W\d_]+)*)\s*\.?""", re.X)


class AnswerError(ValueError):
    """An answer not in the form its question expects; the message says what to type."""


def _quoted(text):
    """The learner's text as an error message shows it: quoted, and cut when long."""
    return repr(text if len(text) <= 40 else text[:40] + "…")


def parse_answer(question, raw):
    """The learner's `raw` answer (typed text, or a value from a file) in the key's form."""
    if question.type != "text" and len(str(raw)) > LONGEST:
        raise AnswerError(f"{len(str(raw)):,} characters is not a {question.type} answer: "
                          f"{HOW[question.type]}")
    if question.type == "single":
        return _single(question, str(raw).strip())
    if question.type == "multiple":
        return _multiple(question, raw)
    if question.type == "numeric":
        return _number(raw, UNITS.get(question.unit, 1.0))
    text = " ".join(str(raw).split())
    if not text:
        raise AnswerError("no answer given: type a word or short phrase")
    return text


def _letter(question, text):
    """The choice key `text` names as a letter ("d", "(D)", "d)", "option d"), or None."""
    match = re.fullmatch(r"(?:option|choice|answer)?\s*:?\s*\(?\s*(\w+)\s*\)?\s*[.)]?", text.casefold())
    keys = {key.casefold(): key for key in question.choices}
    return keys.get(match.group(1)) if match else None


def _content(text):
    return {word for kind, word in lex(text) if kind in ("word", "num") and word not in ARTICLES}


def _single(question, text):
    keys = list(question.choices)
    key = _letter(question, text)
    if key is not None:
        return key
    words = _content(text)
    named = [key for key, choice in question.choices.items() if words and words <= _content(choice)]
    if len(named) == 1:
        return named[0]
    if named:
        raise AnswerError(f"{_quoted(text)} fits choices {' and '.join(named)}: type the letter of one")
    raise AnswerError(f"{_quoted(text)} is not a choice: type one of {', '.join(keys)} (or the choice's text)")


def _multiple(question, raw):
    keys = list(question.choices)
    if isinstance(raw, list):
        items = [str(item) for item in raw]
    else:
        items = re.split(r"[\s,;/&+]+|\band\b", str(raw).strip().casefold())
    items = [item.strip("().") for item in items if item.strip("().")]
    if len(items) == 1 and len(items[0]) <= len(keys) and _letter(question, items[0]) is None \
            and all(len(key) == 1 for key in keys):
        items = list(items[0])                  # "acd": the letters together
    picked = [_letter(question, item) for item in items]
    unknown = [item for item, key in zip(items, picked) if key is None]
    if unknown or not picked:
        seen = f"{_quoted(unknown[0])} is not a choice" if unknown else "no choice given"
        raise AnswerError(f"{seen}: type the keys that apply from {', '.join(keys)}, "
                          f"separated by spaces or commas, e.g. {keys[0]} {keys[-1]}")
    return sorted(set(picked), key=keys.index)


def _number(raw, unit):
    """A number in the question's unit (`unit`: 1e6 for millions); see this module's docstring."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        number, counted = float(raw), False
    else:
        text = str(raw).strip().casefold().translate(SUPERSCRIPTS)
        match = NUMBER.fullmatch(text)
        suffix = match and match.group("suffix")
        if not match or (suffix and suffix not in SUFFIXES and match.group("power")):
            raise AnswerError(f"{_quoted(str(raw).strip())} is not a number: type digits, e.g. 12.5"
                              + (" (or 12.5M)" if unit > 1 else ""))
        digits = match.group("digits")
        digits = re.sub(r"[,\u00a0\u202f _'](?=\d{3})", "", digits) if re.search(r"\d[,\s_']\d{3}", digits) \
            else digits.replace(",", ".")
        number = float(digits) * 10 ** int(match.group("power") or 0)
        if suffix in SUFFIXES:
            return number * SUFFIXES[suffix] / unit
        counted = bool(match.group("power")) or "e" in digits
    if number != number or abs(number) == float("inf"):
        raise AnswerError(f"{_quoted(str(raw))} is not a number: type digits, e.g. 12.5")
    return number / unit if unit > 1 and (counted or abs(number) >= unit) else number
