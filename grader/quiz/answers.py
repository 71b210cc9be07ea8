"""What a learner may type, read into the key's form (an answers file's values are read alike).

  single    the letter, the choice's text or an alias, or both, in the forms people use ("d", "(d)",
            "d)", "d - Adam", "option d", "Adam", a sentence naming it): grader/quiz/choices.py
  multiple  the letters or texts, apart or together ("a, c and d", "acd", "options a, c, d"), "all",
            "all except b", "none": grader/quiz/choices.py
  numeric   a number in the question's unit, with a suffix, in words or as arithmetic ("12.5M",
            "12,500,000", "12.500.000", "twelve point five million", "1.25 × 10^7",
            "5000 * 2500 = 12,500,000"); "12.5%" or "12.5 GB" is no count: grader/quiz/numbers.py
  text      any words; grader/quiz/matching.py judges them
Markup around an answer is no part of it: HTML tags ("<b>d</b>", "10<sup>7</sup>" is 10^7),
terminal colour codes and other control characters are dropped; in a choice answer a line break
ends an item or a sentence ("a, c, d" then "b and e are false" on the next line), as ";" does.
An answer that hedges ("Adam or SGD", "12.5 or 25"), only rules out ("not Adam") or whose
letter and text disagree is read as written and judged wrong with the reason (`check`), in every
mode. One that names no choice, or holds no number, raises AnswerError saying what to type: the
terminal asks again, a file's answer is counted wrong with that reason.
"""
import re

from grader.quiz.choices import AnswerError, Choices, Reading

__all__ = ["UNITS", "AnswerError", "Reading", "parse_answer", "read", "in_key_form", "why_wrong"]
from grader.quiz.numbers import UNITS, read_number

LONGEST = 1000                          # characters: past this an answer is not "a short phrase"
HOW = {"single": "type the letter of one choice", "multiple": "type the letters that apply",
       "numeric": "type a number"}
_READY: dict = {}                       # a question's Choices, built once per question
TAGS = "b|i|u|s|em|strong|mark|small|big|p|br|hr|div|span|code|pre|tt|kbd|li|ul|ol|font|sub|script|style"
MARKUP = re.compile(rf"\x1b\[[0-9;?]*[A-Za-z]|<(/?)(sup|{TAGS})\b[^<>]*>|[\x00-\x08\x0b-\x1f\x7f]", re.I)
GOES_ON = re.compile(r"(?:[,:&/+(\[-]|\b(?:and|or|not|nor|but|because|since|as|unlike|than|whereas|while|which|that"
                     r"|the|an|of|to|in|on|by|for|from|with|is|are|it|its|their|like|instead|rather))$", re.I)
#                                           a line the next one continues: it ends in a word no sentence ends on


def _unmarked(raw):
    """`raw` without markup or control characters, a superscript tag read as a power."""
    power = lambda tag: ("^(" if not tag.group(1) else ")") if tag.group(2) and tag.group(2).lower() == "sup" else " "
    return MARKUP.sub(power, raw)


def _lines(text, choice):
    """`text` on one line: in a choice answer a line break not inside a sentence is a ";"."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    out = ""
    for line in filter(None, lines):
        out += ("" if not out else " " if not choice or GOES_ON.search(out) or out[-1] in ";.!?" else "; ") + line
    return out


def read(question, raw):
    """The Reading of the learner's `raw` answer (typed text, or a value from a file)."""
    if question.type == "multiple" and isinstance(raw, list):
        raw = ", ".join(map(str, raw))
    text = _lines(_unmarked(str(raw)), question.type in ("single", "multiple"))
    if question.type == "text":
        if not text:
            raise AnswerError("no answer given: type a word or short phrase")
        return Reading(text)
    if len(text) > LONGEST:
        raise AnswerError(f"{len(text):,} characters is not a {question.type} answer: {HOW[question.type]}")
    if not text.strip(" ,;.:-"):
        raise AnswerError(f"no {'number' if question.type == 'numeric' else 'choice'} given: {HOW[question.type]}")
    if question.type == "numeric":
        return read_number(question, text)
    key = (tuple(question.choices.items()), repr(getattr(question, "aliases", None)))
    if key not in _READY:
        _READY[key] = Choices(question)
    return _READY[key].read(text, many=question.type == "multiple")


def parse_answer(question, raw):
    """The answer in the key's form, or (judged wrong as written) its text; AnswerError when it has
    no answer to read."""
    reading = read(question, raw)
    if reading.value is not None or (question.type == "multiple" and reading.value == []):
        return reading.value
    return " ".join((", ".join(map(str, raw)) if isinstance(raw, list) else str(raw)).split())


def in_key_form(question, given):
    """Whether a parsed answer is in the key's form (else it is text judged wrong as written)."""
    if question.type == "single":
        return given in question.choices
    if question.type == "multiple":
        return isinstance(given, list)
    if question.type == "numeric":
        return isinstance(given, (int, float)) and not isinstance(given, bool)
    return True


def why_wrong(question, text):
    """Why an answer kept as written is wrong: the reader's reason, or what it could not read."""
    try:
        return read(question, text).why or "it is not in the form of an answer"
    except AnswerError as error:
        return f"not read: {error}"
