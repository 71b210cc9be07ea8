"""The text-answer matching rule: whether a learner's words say what a text question's key says.

A text question's `answer` lists accepted forms, each a phrase ("relative size") or an expression
("a - b"), and `reject` optionally lists forms that make an answer wrong even beside an accepted one
(a hedge such as "a + b or a - b"). Answer and forms are normalised alike: case folded; dashes and
the minus sign read as "-", and the words "minus" and "plus" as "-" and "+"; brackets, operators
(- + * /) and runs of letters or digits are tokens, all other punctuation and spacing is dropped; a
word longer than three letters loses a plural "s". The answer is right when it contains an accepted
form as a run of whole tokens, not extended by an operator on either side ("a-b+1" does not contain
"a - b"; "(a - b) * c" does), and contains no rejected form. So "a − b.", "(a - b)", "a minus b" and
"the relative sizes" all contain "a - b" or "relative size". List the words a right answer would
use; a wrong one must not contain any.
"""
import re

DASHES = "\u2212\u2010\u2011\u2012\u2013\u2014\u2015\ufe63\uff0d"   # minus sign, hyphens, dashes
OPERATORS = set("-+*/")


def tokens_of(text):
    """A text answer as the matching rule reads it (see this module's docstring)."""
    text = str(text).casefold()
    for dash in DASHES:
        text = text.replace(dash, "-")
    text = re.sub(r"\bminus\b", "-", re.sub(r"\bplus\b", "+", text))
    tokens = re.findall(r"[^\W_]+|[-+*/()]", text)
    return [t[:-1] if len(t) > 3 and t.endswith("s") and not t.endswith("ss") and t.isalpha() else t
            for t in tokens]


def _contains(tokens, form):
    """Whether `form`'s tokens occur in `tokens`, not extended by an operator on either side."""
    for start in range(len(tokens) - len(form) + 1):
        if tokens[start:start + len(form)] == form:
            before = tokens[start - 1] if start else None
            after = tokens[start + len(form)] if start + len(form) < len(tokens) else None
            if before not in OPERATORS and after not in OPERATORS:
                return True
    return False


def text_matches(answer, accepted, reject=()):
    """The text-answer rule: contains an accepted form, and no rejected one."""
    tokens = tokens_of(answer)
    return any(_contains(tokens, tokens_of(form)) for form in accepted) and \
        not any(_contains(tokens, tokens_of(form)) for form in reject)
