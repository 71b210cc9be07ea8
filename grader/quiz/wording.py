"""How answers are worded, for the choice and number readers: tokens with their original case,
dashes read by context, crude stems, and the words that rule out, explain or hedge.

A dash (any of - ‐ ‑ ‒ – — ― − ﹣ －) joining two words of two letters or more is a hyphen
("mini-batch" is "mini batch"); elsewhere it is a token of its own, which each reader reads by
what stands beside it (an operator between numbers, punctuation after a word: "d - Adam").
"""
import re
import unicodedata

DASH = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"
HYPHEN = re.compile(rf"(?<=[^\W\d_]{{2}})[{DASH}](?=[^\W\d_]{{2}})")
ABBREVIATIONS = re.compile(r"\b(?:e\.\s?g|i\.\s?e|etc|vs|cf)\.", re.I)
TOKEN = re.compile(rf"(?P<word>[^\W_]+(?:['’][^\W_]+)*)|(?P<open>[(\[{{])|(?P<close>[)\]}}])|"
                   rf"(?P<stop>[,;:.!?\n])|(?P<glue>[/&+|])|(?P<dash>[{DASH}])|(?P<other>[^\s\w])")
STOPWORDS = set("""a an the of to in on at by for from with and or is are be it its it's this that these those
    as into than then so such there their them they which who what when where how do does did has have had
    i my me we our you your one ones only just also very can could would should will may might must same
    each every any all other others""".split())
NEGATORS = [("not",), ("no",), ("never",), ("nor",), ("neither",), ("without",), ("except",), ("excluding",),
            ("unlike",), ("rather", "than"), ("instead", "of"), ("other", "than"), ("apart", "from"),
            ("but", "not"), ("save", "for"), ("exclude",), ("eliminate",), ("rule", "out"), ("rules", "out"),
            ("ruled", "out"), ("ruling", "out"), ("opposed", "to"), ("contrary", "to"), ("none", "of")]
EXPLAINERS = {"because", "since", "cause", "whereas", "while", "which", "given", "compared", "than",
              "whereby"}
SENTENCE_ENDS = {".", "!", "?", ";", "\n"}
IDEOGRAPHIC = str.maketrans("、。", ",.")   # the comma and full stop of Chinese and Japanese input: "a、c、d"
QUOTES = set("'\"`‘’“”«»")


def tokens(text):
    """[(kind, text as written)] of an answer: word, open, close, stop, glue, dash, other."""
    text = unicodedata.normalize("NFKC", str(text)).translate(IDEOGRAPHIC)
    text = HYPHEN.sub(" ", ABBREVIATIONS.sub(",", text))
    return [(match.lastgroup, match.group()) for match in TOKEN.finditer(text)
            if match.group() not in QUOTES]             # "'d'", "“Adam”": quotes are not part of an answer


DENIED_LAST = re.compile(r"(?:\?|:|\s[-–—]|\()\s*no\s*\)?\s*[.!]*\s*$", re.I)


def answered_no(text):
    """`text` with a closing "? no" (": no", "- no", "(no)") read as the verdict it is: "d? no" is "d
    are wrong" (asked, then refused); "d? no, c" changes its mind and is left as it is."""
    return DENIED_LAST.sub(" are wrong", str(text))


def fold(word):
    """A word as compared: case folded, "n't" as not, 's and quotes dropped."""
    word = word.casefold().replace("’", "'")
    if word.endswith("n't") or word in ("isnt", "doesnt", "dont", "cant", "arent", "wont"):
        return "not"
    return word.removesuffix("'s").replace("'", "")


def stem(word):
    """A crude stem, so that 'reused', 'reuses' and 'reusing' compare alike."""
    word = fold(word)
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith(("ss", "us", "is")):
            return word[:-len(suffix)]
    return word


def negator_at(words, at):
    """The length of the negating phrase ("not", "rather than"...) at words[at], or 0; "no" before
    punctuation ("d? no, c") answers what came before and rules nothing out after it."""
    if words[at] == "no" and (at + 1 == len(words) or words[at + 1] in {",", ".", "!", "?", ";", ":", "wait"}):
        return 0
    return next((len(phrase) for phrase in NEGATORS if tuple(words[at:at + len(phrase)]) == phrase), 0)


def one_edit(typed, word):
    """Whether `typed` is `word` with one letter added, dropped, changed or two neighbours swapped."""
    if typed == word or abs(len(typed) - len(word)) > 1:
        return False
    if len(typed) == len(word):
        differ = [i for i, (a, b) in enumerate(zip(typed, word)) if a != b]
        return len(differ) == 1 or (len(differ) == 2 and differ[1] == differ[0] + 1 and
                                    typed[differ[0]] == word[differ[1]] and typed[differ[1]] == word[differ[0]])
    short, long = sorted((typed, word), key=len)
    at = next((i for i, (a, b) in enumerate(zip(short, long)) if a != b), len(short))
    return short[at:] == long[at + 1:]
