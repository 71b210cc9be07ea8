"""Which choices an answer names, asserted or ruled out: by letter, by text, or both.

A letter is a choice's key standing as a letter: bracketed or before ")", ":", a dash or the end
("(d) Adam", "d)", "d - Adam", "d."), first before a bracket ("a (because…)"), after a cue
("option d", "the answer is a"), before a verdict ("a true, c is false") or a hedge ("c, a too"),
in a list of keys ("a, c and d", "a c d", "acd"), or alone ("d because..."); "a" and "i" need more than standing
alone, since they are words too. A choice is named by text when the answer holds one of its
`aliases`, enough of the words only it has (one of up to three, else two), or only words of it
("stochastic gradient descent"), a word of five letters or more one edit from one of theirs
counting as it ("stochastic gradeint descent"). In a sentence, what follows "not", "unlike",
"rather than", "none of"... up to the next comma is ruled out; what follows "because", "which"... up to the
sentence's end (or its bracket's close) explains and names nothing, not even what it rules out
("b (because, unlike a, it…)" names b), and so does a bracket that gives a reason rather than a
choice's name ("d (SGD would be slower)"; "d (SGD)" and "d (SGD works too)" name b); a letter's
text is only what is asserted after it; "b and e are false" rules out the mentions of its own
clause only ("a, c, d - b and e are false"; "a, b - the others are false" only the others), and so
does a "not" that names nothing ("d isn't it", "tying is not used"); a letter that echoes a false
verdict is ruled out with it ("b is wrong, d too", "so is d"); "false ones:" and "the wrong ones
are" rule out what follows, and "only b is false" keeps the rest; a dash or an arrow ends a
negation; after "all" or "anything" an "except" or "but" takes choices out of all of them. A
choice named by its own words while one of them is denied ("the matrix is never reused") is named
and ruled out; beside a letter, a clause of one choice's words alone names it ("d. SGD").

The reading: one choice named (single) or the set named (multiple) is the answer; two named for
one answer, a letter whose text is another choice's, only choices ruled out, or "x or y" for a
set is judged wrong with the reason; nothing named is an AnswerError that says what to type.
"""
from typing import NamedTuple

from grader.quiz import wording
from grader.quiz.wording import DASH, EXPLAINERS, SENTENCE_ENDS, STOPWORDS, fold, negator_at, one_edit, stem, tokens

CUES = {"option", "options", "choice", "choices", "answer", "answers", "letter", "letters", "pick", "picked",
        "choose", "chose", "chosen", "select", "selected", "go", "statement", "statements", "item", "items"}
WORDLIKE = {"a", "i"}                   # keys that are also words: a letter only where the context says so
JOINS = {"and", "or", "nor", "&", "/", "+", ",", "|"}
ALL = {"all", "every", "everything", "each", "anything"}
FALSE = {"false", "wrong", "incorrect", "untrue", "myth", "myths", "nonsense", "bogus", "fiction", "fictions", "trap",
         "traps", "distractor", "distractors"}
NOUNS = {"myth", "fiction", "trap", "distractor"}      # verdicts after an article: in "is a myth", "a" is no letter
TRUE = {"true", "correct", "right", "apply", "applies"}
AFFIRMS = {"or", "also", "too", "maybe", "perhaps", "possibly", "probably", "might", "could", "either", "both",
           "alternatively", "well", "equally", "same", "correct", "right", "true", "valid", "work", "works", "fine",
           "ok", "okay", "acceptable", "apply", "applies"}   # in a bracket: it names, never only explains
CONDITIONS = {"if", "unless", "when", "provided"}   # a letter in a bracket with one is hedged, not explained
YES_NO = {"yes": "true", "no": "false"}   # after a letter: its verdict ("a: yes, c: no")
MAYBE = {"maybe", "perhaps", "possibly", "probably"}     # before a letter taken out: "all except c and maybe d"
HEDGED = {"too", "also", "maybe", "perhaps", "possibly", "probably"}   # after "a" or "i": a letter ("c, a too")
NOT_IT = {"it", "used", "fit", "fits", "valid", "relevant"}     # "d isn't it", "weight tying is not used"
SYMBOLIC = {"×", "*", "·", "⋅", "^", "_"}   # beside a key: maths ("vocab×d", "d_model"), never a letter
THEREFORE = {"→", "⇒", "⟹", "="}     # ends a negation as a dash does: "not a/b/c → d"
KINDS = {"ones", "one", "statements", "statement", "options", "option", "choices", "choice", "answers"}
REST = {"rest", "others", "remaining"}  # "c is false, the rest true"; "b, c - the others are false" ends there
SETS = {"of", "the", "above", "them", "options", "option", "choices", "choice", "statements", "statement", "are",
        "is", "true", "correct", "right", "apply", "applies", "these", "one", "two", "three", "four", "five", "six"}


class Reading(NamedTuple):
    value: object               # the answer in the key's form; None: judged wrong as written
    why: str = ""               # why it is wrong as written


class AnswerError(ValueError):
    """An answer not in the form its question expects; the message says what to type."""


def _letters(toks, keys):
    """Indices of the tokens that stand as letters (see the module's docstring), right to left."""
    found = set()
    words = [fold(text) if kind == "word" else text for kind, text in toks]
    for at in range(len(toks) - 1, -1, -1):
        if toks[at][0] != "word" or words[at] not in keys:
            continue
        before = toks[at - 1] if at else ("start", "")
        after = toks[at + 1] if at + 1 < len(toks) else ("end", "")
        operand = lambda i: 0 <= i < len(toks) and toks[i][0] == "word" and words[i] not in keys
        if before[1] in SYMBOLIC and operand(at - 2) or after[1] in SYMBOLIC and operand(at + 2):
            continue                                # "vocab×d", "d_model", "W^c": a symbol; "* d" is a bullet
        listed = (after[0] == "word" and at + 1 in found) or \
            (at + 2 < len(toks) and words[at + 1] in JOINS and at + 2 in found)
        formal = after[0] in ("close", "dash", "end", "glue") or after[1] in (":", ",", ";", ".", "!", "?") \
            or (before[0] == "open" and after[0] == "close") or (before[0] == "start" and after[0] == "open") \
            or _after_cue(words, at) or listed or _verdict_after(toks, words, at, found) \
            or words[at + 1:at + 2] and words[at + 1] in HEDGED or words[at + 1:at + 3] == ["as", "well"]
        if formal or (words[at] not in WORDLIKE and not _inside_word_run(toks, at, keys)):
            found.add(at)
    return found


def _unnumbered(toks, keys):
    """`toks` without the numbers of a numbered list of letters ("1) a 2) b 3) e", "1. a")."""
    numbered = lambda at: toks[at][1].isdigit() and at + 2 < len(toks) and toks[at + 1][1] in (")", ".") and \
        toks[at + 2][0] == "word" and fold(toks[at + 2][1]) in keys
    drop = {at + step for at in range(len(toks)) if numbered(at) for step in (0, 1)}
    return [token for at, token in enumerate(toks) if at not in drop]


def _yes_no(toks, keys):
    """`toks` with a "yes" or "no" that marks a letter ("a: yes, c: no", "a yes b yes c no", "a) no", "a. no")
    or a choice's name ("Adam: no, SGD: yes") read as "true" or "false": the letter or name starts
    the answer, a sentence or a clause, or follows another mark, and the mark ends its clause. A
    "no" before a letter still rules it out ("no RoPE, ALiBi"), and "d - no wait, c" changes its mind."""
    words = [fold(text) for _, text in toks]
    out = list(toks)
    for at, word in enumerate(words):
        if word not in YES_NO:
            continue
        key = at - 1 - (at >= 2 and words[at - 1] in (":", "-", "=", ")", ".") and toks[at - 1][0] != "word")
        starts = key == 0 or key > 0 and (toks[key - 1][0] == "stop" or words[key - 1] in YES_NO)
        ends = at + 1 == len(toks) or toks[at + 1][0] == "stop" or words[at + 1] in keys    # not "d - no wait, c"
        if key >= 0 and words[key] in keys and toks[key][0] == "word" and starts and ends:
            out[at] = ("word", YES_NO[word])
        elif ends and key >= 0 and _named_clause(toks, words, key):    # "RoPE: no, ALiBi: yes"
            out[at] = ("word", YES_NO[word])
    return out


def _named_clause(toks, words, last):
    """Whether toks[..last] since the answer's or a clause's start are a few words, a name, and no
    more ("RoPE" in "RoPE: no", "rotary embeddings" in "rotary embeddings - yes")."""
    if toks[last][0] != "word":
        return False
    start = last
    while start > 0 and toks[start - 1][0] == "word" and words[start - 1] not in YES_NO:
        start -= 1
    opened = start == 0 or toks[start - 1][0] == "stop" and words[start - 1] != "?" or words[start - 1] in YES_NO
    named = words[start:last + 1]
    return opened and 0 < len(named) <= 4 and not set(named) & (STOPWORDS | {"not", "no", "never"})


def _verdict_after(toks, words, at, found):
    """Whether words[at] is followed by a verdict that ends its clause ("a true, b is false")."""
    verdict = at + 2 if words[at + 1:at + 2] in (["is"], ["are"], ["="]) else at + 1
    if words[at] in WORDLIKE and words[verdict:verdict + 1] and words[verdict] in NOUNS:
        return False
    ends = verdict + 1 >= len(toks) or toks[verdict + 1][0] in ("stop", "close", "dash") or verdict + 1 in found \
        or words[verdict + 1] in EXPLAINERS                     # "b is wrong since ...": its reason follows
    return verdict < len(toks) and words[verdict] in TRUE | FALSE and ends


def _heading(words, letters, at):
    """Whether the verdict words[at] heads what follows ("false: c, d", "false ones are c, d", "FALSE -
    c, d" at a clause's start, "a c d wrong: b e") rather than ends what came before ("c, d - false",
    "d is false: more heads…")."""
    ahead = words[at + 1] if at + 1 < len(words) else "."
    starts = at == 0 or words[at - 1] in SENTENCE_ENDS | {",", "/", "|"}
    listed = ahead in KINDS and words[at + 2:at + 3] in ([":"], ["are"], ["is"])     # not "c is the false one"
    return listed or (ahead == ":" or ahead in DASH) and starts or \
        ahead == ":" and at + 2 in letters and words[at - 1] not in ("is", "are")


def _claim(words, letters, at):
    """Whether the letter words[at], alone or as one of a list ("a, b, c change…"), begins a claim:
    the list's last letter is followed by a word, not a join, a bracket's close or a question."""
    while at + 2 < len(words) and words[at + 1] in JOINS and at + 2 in letters:
        at += 2
    return words[at + 1] not in JOINS | {")", "]", "?"} and at + 1 not in letters


def _list_ended(words, letters, comma):
    """Whether the letter before a comma ends a list joined otherwise ("a c d, b and e are false",
    "a, c and d, b..."): the comma joins no more letters to it."""
    at = comma - 1
    joined = " " if at - 1 in letters else words[at - 1] if at - 2 in letters and words[at - 1] in JOINS else None
    return joined not in (None, ",")


def _after_cue(words, at):
    """Whether words[at] follows a cue ("option d", "the answer is a", "I pick: c")."""
    for i in range(at - 1, max(-1, at - 4), -1):
        if words[i] in CUES:
            return True
        if words[i] not in {"is", ":", "=", "(", "the", "my", "was", "would", "be"}:
            return False
    return False


def _inside_word_run(toks, at, keys):
    """Whether a key-like token sits between two words that are not keys ("vitamin c tablet")."""
    side = lambda i: 0 <= i < len(toks) and toks[i][0] == "word" and fold(toks[i][1]) not in keys \
        and fold(toks[i][1]) not in STOPWORDS | CUES | EXPLAINERS
    return side(at - 1) and side(at + 1)


def _modes(toks, letters):
    """Each token's mode: "assert", "negate" (ruled out), "explain" (names nothing) or "exclude"
    (taken out of all the choices). A negation lasts to the next comma, then the mode before it
    goes on; a colon ends it even before a letter ("not a, not b: c"; "false: c, d" is a list).
    Within an explanation nothing is named, not even what it rules out ("c (because, unlike a, it
    is tied)"); a bracket's modes end at its close."""
    words = [fold(text) if kind == "word" else text for kind, text in toks]
    modes, mode, before, seen_all, at, outside = [], "assert", "assert", False, 0, []
    while at < len(toks):
        word = words[at]
        if word in SENTENCE_ENDS:
            mode, seen_all, outside = "assert", False, []
        elif word in ("(", "["):
            outside.append((mode, before))
        elif word in (")", "]") and outside:
            mode, before = outside.pop()
        elif mode == "negate" and (word in (",", ":") and at + 1 not in letters or
                                   toks[at][0] == "dash" and words[at - 1] not in FALSE or
                                   word == ":" and words[at - 1] not in FALSE and
                                   not (words[at - 1] in KINDS and at >= 2 and words[at - 2] in FALSE) or
                                   word in THEREFORE):
            mode = before                                       # "not RoPE — ALiBi", "not c: d", "not c → d"
        elif mode == "explain" and word != "but":
            pass
        elif (length := negator_at(words, at)) or (word == "but" and seen_all):
            before = mode if mode in ("assert", "explain") else before
            mode = "exclude" if seen_all and word in ("except", "but", "excluding", "apart", "other", "save") \
                else "negate"
            modes += [mode] * (length or 1)
            at += length or 1
            continue
        elif word == "but":
            mode = "assert"
        elif word in EXPLAINERS and mode != "exclude":
            mode = "explain"
        elif word in FALSE and _heading(words, letters, at):
            mode = "negate"                                     # "false: c, d", "false ones are", "FALSE - c"
        seen_all = seen_all or word in ALL or word == "any" and words[at + 1:at + 2] in (["but"], ["except"])
        modes.append(mode)
        at += 1
    return _echoed(words, letters, _ruled_out_after(words, letters, modes))


def _echoed(words, letters, modes):
    """`modes` with a letter that echoes the verdict before it ("c is wrong, d too", "c is wrong; so
    is d", "same for d", "d as well") ruled out when that verdict is false."""
    for at in sorted(letters):
        ends = lambda i: i >= len(words) or words[i] in SENTENCE_ENDS | {",", ")", "]"}     # "d also works" names d
        echo = words[at + 1:at + 2] in (["too"], ["also"]) and ends(at + 2) or \
            words[at + 1:at + 3] == ["as", "well"] and ends(at + 3) or ends(at + 1) and \
            (words[max(0, at - 2):at] in (["so", "is"], ["so", "are"], ["same", "for"]) or
             words[at - 1:at] == ["likewise"])
        back = at - 1
        while echo and back >= 0 and words[back] not in TRUE | FALSE:
            back -= 1
        if echo and back >= 0 and words[back] in FALSE and modes[back] != "explain" and modes[at] == "assert":
            modes[at] = "negate"
    return modes


def _ruled_out_after(words, letters, modes):
    """Mentions ruled out by what follows them in their clause: "c and d are false", "(c is wrong)",
    "c: false", "c and d are not", "c and d don't". The clause starts after a sentence's end, a
    bracket, "but", ":", an explanation, a verdict ("a, c are true and b, d are false"), a dash
    before a letter or a comma that does not join two letters (nor any comma before one letter that
    "is" false: "a, b, d is false" rules out d alone; nor one after a list joined otherwise: "a c d,
    b and e are false", "a, c and d, b and e are false"): in "a, c, d - b and e are false" only b and e
    are; in "d - plain SGD - is false" d is."""
    for at, word in enumerate(words):
        ahead = words[at + 1] if at + 1 < len(words) else "."
        after = words[at + 2] if at + 2 < len(words) else "."
        after_not = word == "not" and (ahead in TRUE | SENTENCE_ENDS | NOT_IT | {",", ")", "]"} or
                                       ahead == "the" and after in TRUE | {"answer", "case", "one"})
        if word not in FALSE and not after_not or modes[at] == "explain" or _heading(words, letters, at):
            continue                                # "false ones: c", "right: a c d wrong: b e": what follows
        back = at - 1
        if words[at - 1:at] == ["("] and ahead == ")":
            back -= 1                               # "c d (false)": the bracket is the letters' verdict
        marked = lambda i: words[i] == "." and i - 1 in letters and (i < 2 or words[i - 2] in SENTENCE_ENDS)
        while back >= 0 and (words[back] in (":", ")", "]", "-", "=", "is", "are", "do", "does") or marked(back)):
            back -= 1                               # "c: false", "c) false", "c is false", "c. false"
        one = words[back + 1:at] == ["is"] and back in letters      # "c, d is wrong": d alone
        wrapped = lambda i: words[i] == "(" and words[i + 2:i + 3] == [")"] and i + 1 in letters or \
            words[i] == ")" and words[i - 2:i - 1] == ["("] and i - 1 in letters       # "(c) and (d) are false"
        while back >= 0 and not (words[back] in SENTENCE_ENDS | TRUE | FALSE | {"(", ")", "[", "]", "but", ":"}
                                 and not wrapped(back) or words[back] in DASH and back + 1 in letters or
                                 modes[back] == "explain" or words[back] in REST or
                                 words[back] == "," and (one or _list_ended(words, letters, back) or
                                                         not (back - 1 in letters and back + 1 in letters))):
            if modes[back] == "assert":
                modes[back] = "negate"
            back -= 1
    return modes


class Choices:
    """A choice question's choices made ready to read answers with."""

    def __init__(self, question):
        self.choices = question.choices
        self.keys = {key.casefold(): key for key in question.choices}
        self.words = {k: {stem(t) for kind, t in tokens(text) if kind == "word" and fold(t) not in STOPWORDS}
                      for k, text in question.choices.items()}
        self.own = {k: ws - set().union(*(self.words[j] for j in self.words if j != k)) for k, ws in self.words.items()}
        self.aliases = {k: [tuple(stem(t) for kind, t in tokens(a) if kind == "word" and fold(t) not in STOPWORDS)
                            for a in (getattr(question, "aliases", None) or {}).get(k, [])] for k in self.choices}
        self.vocabulary = set().union(*self.words.values(), *(alias for k in self.aliases for alias in self.aliases[k]))

    def mended(self, word):
        """`word`, or the one word of the choices and aliases it is a typo of (one edit, both five
        letters or more, so that no letter or short word is taken for another)."""
        if len(word) < 5 or word in self.vocabulary:
            return word
        near = [known for known in self.vocabulary if len(known) >= 5 and one_edit(word, known)]
        return near[0] if len(near) == 1 else word

    def shown(self, key):
        text = self.choices[key]
        return f"{key}) {text if len(text) <= 40 else text[:40] + '…'}"

    def named_by_text(self, stems, aliases_only=False):
        """{key} of the choices `stems` ([(index, stem)] of one mode) name by an alias or, unless
        `aliases_only`, by enough of their own words."""
        found, seen = set(), [s for _, s in stems]
        for key in self.choices:
            alias = any(a and any(tuple(seen[i:i + len(a)]) == a for i in range(len(seen))) for a in self.aliases[key])
            hits, own = self.own[key] & set(seen), self.own[key]
            if alias or (not aliases_only and hits and len(hits) >= min(1 if len(own) <= 3 else 2, len(own))):
                found.add(key)
        return found

    def read(self, raw, many):
        """The Reading of `raw`: a key (many=False) or a sorted list of keys; AnswerError when it names none."""
        toks = _yes_no(_unnumbered(tokens(wording.answered_no(raw)), self.keys), self.keys)
        letters = _letters(toks, self.keys)
        if many and not letters and len(toks) == 1 and len(toks[0][1]) > 1 and \
                all(c.casefold() in self.keys for c in toks[0][1]) and len(set(toks[0][1])) == len(toks[0][1]):
            toks = [("word", c) for c in toks[0][1]]         # "acd": the letters together
            letters = set(range(len(toks)))
        self._refuse_unknown_letters(toks, letters, many)
        modes = self._reasons(toks, letters, _modes(toks, letters))
        named = {mode: {self.keys[fold(toks[i][1])] for i in letters if modes[i] == mode}
                 for mode in ("assert", "negate", "exclude")}
        content = [(i, self.mended(stem(text))) for i, (kind, text) in enumerate(toks)
                   if kind == "word" and i not in letters and fold(text) not in STOPWORDS | CUES
                   and modes[i] != "explain"]
        conflict = self._text(named, content, modes, letters, toks)
        whole = {fold(text) for kind, text in toks if kind == "word"}
        if many and whole and whole <= ALL | SETS and whole & ALL and not named["exclude"]:
            return Reading(list(self.choices))
        if whole and whole <= {"none", "nothing", "neither", "no"} | SETS and whole & {"none", "nothing"}:
            return Reading([] if many else None, "" if many else "it chooses none of the choices")
        hedged = [i for i in letters if modes[i] == "exclude" and i and fold(toks[i - 1][1]) in MAYBE]
        if hedged:                                      # "all except c and maybe d"
            return Reading(None, f"it hedges on {self.shown(self.keys[fold(toks[hedged[0]][1])])}: "
                           f"{'list every choice that applies' if many else 'name one choice'}")
        if named["exclude"]:
            named["assert"] |= set(self.choices) - named["exclude"]
        if many and named["negate"] and (whole & REST or "only" in whole and not named["assert"]):
            named["assert"] |= set(self.choices) - named["negate"]     # "c is false, the rest true", "only c is false"
        return self._verdict(named, conflict, many, toks, letters)

    def _reasons(self, toks, letters, modes):
        """`modes` with each bracket that gives a reason made "explain": one with no word that
        hedges or affirms ("or", "also", "correct"...), whose words are not all one choice's ("d
        (SGD would be slower)"; "d (SGD)" names b, "d (SGD works too)" hedges), and whose letters,
        if any, each begin a claim about their choice, unconditional ("d (c rotates instead)", "c (b
        is from word2vec)"; "b, c (and d)" and "b, c, d (a if ids are sorted)" name theirs)."""
        words = [fold(text) if kind == "word" else text for kind, text in toks]
        at = 0
        while at < len(toks):
            close = next((i for i in range(at + 1, len(toks)) if words[i] in (")", "]", "(", "[")), None) \
                if words[at] in ("(", "[") else None
            if close is None or words[close] not in (")", "]"):
                at += 1
                continue
            inside = range(at + 1, close)
            stems = {self.mended(stem(toks[i][1])) for i in inside
                     if toks[i][0] == "word" and words[i] not in STOPWORDS | CUES}
            gloss = any(stems <= self.words[k] | {w for alias in self.aliases[k] for w in alias} for k in self.choices)
            said = [i for i in inside if i in letters]
            claims = all(_claim(words, letters, i) for i in said) and \
                not any(words[i] in CONDITIONS for i in inside)          # "d (c rotates instead)"
            if stems and not gloss and claims and not any(words[i] in AFFIRMS for i in inside):
                modes[at:close + 1] = ["explain"] * (close + 1 - at)
            at = close + 1
        return modes

    def _text(self, named, content, modes, letters, toks):
        """Add the choices named by text to `named`; returns (letter, key its text names) where a
        letter's own words name another choice, else None. A choice whose letter is ruled out is
        not named by its alias ("not d: more heads don't help" is the reason it is false)."""
        conflict = None
        if letters:                     # with letters, words count only beside a letter or as an alias
            for at in sorted(letters):
                segment = []
                for i in range(at + 1, len(toks)):
                    if i in letters or toks[i][0] == "stop" and toks[i][1] != ":" or modes[i] == "explain":
                        break
                    segment += [(j, s) for j, s in content if j == i and modes[j] == "assert"]
                key, others = self.keys[fold(toks[at][1])], self.named_by_text(segment)
                if others and key not in others and conflict is None:
                    conflict = (key, sorted(others)[0])
            denied = set(named["negate"])           # "not d: more heads don't help": the letter's verdict holds
            for mode in named:
                found = self.named_by_text([c for c in content if modes[c[0]] == mode], aliases_only=True)
                named[mode] |= found - denied if mode == "assert" else found
            named["assert"] |= self._clauses_of_one(toks, letters, content, modes) - denied
            return conflict
        for mode in named:
            named[mode] |= self.named_by_text([c for c in content if modes[c[0]] == mode])
        denied = {s for i, s in content if modes[i] == "negate"}
        named["negate"] |= {key for key in named["assert"] if self.own[key] & denied}    # "the matrix is never reused"
        if not any(named.values()) and all(modes[i] == "assert" for i, _ in content):   # "never reused": no fit
            stems = {s for i, s in content if modes[i] == "assert"}
            fits = [k for k in self.choices
                    if stems and stems <= self.words[k] | {w for a in self.aliases[k] for w in a}]
            if len(fits) > 1:
                raise AnswerError(f"{_quoted(toks)} fits choices {', '.join(fits[:-1])} and {fits[-1]}: "
                                  "type the letter of one")
            named["assert"] |= set(fits)
        return conflict

    def _clauses_of_one(self, toks, letters, content, modes):
        """{key} of the choices a clause with no letter names by its words alone, every word its
        choice's ("d. Adam": Adam is named beside d, as "d. adaptive moments" names it by alias)."""
        clause, stems, found = 0, {}, set()
        for at, (kind, _) in enumerate(toks):
            clause += kind == "stop"
            stems.setdefault(clause, set())
            if at in letters:
                stems[clause] = None                    # a letter's clause is read with the letter
        for at, stem_ in content:
            clause = sum(kind == "stop" for kind, _ in toks[:at])
            if stems[clause] is not None and modes[at] == "assert":
                stems[clause].add(stem_)
        for words in stems.values():
            fits = [k for k in self.choices if words and words <= self.words[k] | set().union(*self.aliases[k])
                    and len(words & self.own[k]) >= min(1 if len(self.own[k]) <= 3 else 2, len(self.own[k]))]
            found |= set(fits) if len(fits) == 1 else set()
        return found

    def _verdict(self, named, conflict, many, toks, letters):
        asserted, negated = named["assert"], named["negate"]
        both = sorted(asserted & negated)
        if both:
            return Reading(None, f"it both names and rules out {self.shown(both[0])}")
        by_letter = {self.keys[fold(toks[i][1])] for i in letters}
        if conflict and not (many and conflict[1] in by_letter):   # "b, d (attention mixes tokens)" glosses d
            letter, other = conflict
            return Reading(None, f"its letter names {self.shown(letter)}, but its words name {self.shown(other)}")
        if not asserted and negated:
            return Reading(None, f"it rules out {', '.join(map(self.shown, sorted(negated)))} but names no choice")
        if not asserted:
            raise AnswerError(f"{_quoted(toks)} is not a choice: type {'the keys that apply' if many else 'one'} of "
                              f"{', '.join(self.choices)} (or the choice's text)")
        ordered = [key for key in self.choices if key in asserted]
        if many:
            if len(ordered) == 2 and _only_or_between(toks, letters):
                return Reading(None, f"'or' offers {ordered[0]} or {ordered[1]}: list every choice that applies")
            return Reading(ordered)
        if len(ordered) > 1:
            return Reading(None, f"it names more than one choice ({' and '.join(map(self.shown, ordered))}); "
                           "this question takes one")
        return Reading(ordered[0])

    def _refuse_unknown_letters(self, toks, letters, many):
        """An answer shaped as a list of letters ("a x") with one that is no key: say so."""
        words = [fold(text) for kind, text in toks if kind == "word"]
        shaped = words and all(len(w) == 1 or w in ("and", "or") for w in words)
        unknown = [w for w in words if len(w) == 1 and w not in self.keys]
        if shaped and unknown:
            keys = ", ".join(self.choices)
            how = f"type the keys that apply from {keys}, separated by spaces or commas" if many else \
                f"type one of {keys} (or the choice's text)"
            raise AnswerError(f"{unknown[0]!r} is not a choice: {how}")


def _only_or_between(toks, letters):
    """Whether the answer is two letters with "or" between them and no comma: a hedge."""
    first, last = min(letters, default=0), max(letters, default=0)
    between = [fold(text) for _, text in toks[first + 1:last]]
    return "or" in between and "," not in between


def _quoted(toks):
    text = " ".join(text for _, text in toks)
    return repr(text if len(text) <= 40 else text[:40] + "…")
