"""Numbers written in English words, for the number reader (grader/quiz/numbers.py).

"twelve point five million" is 12.5e6, "three hundred and seventy-six" is 376, "a million" is
1e6, "twelve million four hundred ninety-one thousand three hundred twenty-two" is 12491322.
Words are read left to right as people say a number; where the next word cannot go on with the
number said so far ("eight thirty", "twenty twenty"), a new number starts.
"""
UNITS = {word: n for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
TENS = {word: 10 * n for n, word in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split())
        if word != "_"}
SCALES = {"thousand": 1e3, "million": 1e6, "millions": 1e6, "billion": 1e9, "billions": 1e9}


class Said:
    """A number being said: the finished scales (`total`), the part below a thousand being said
    (`group`), the digits after "point", and the kind of the last word, which decides what may
    follow it."""

    def __init__(self):
        self.total, self.group, self.fraction, self.last, self.scale, self.words = 0.0, 0, "", None, 0.0, 0

    def takes(self, word, ahead):
        """Whether `word` goes on with this number (`ahead`: the words after it)."""
        last, nxt = self.last, ahead[0] if ahead else None
        if last in ("point", "fraction") and word in UNITS:
            return UNITS[word] < 10
        if word in UNITS:
            return last in (None, "hundred", "scale", "and") or (last == "tens" and 0 < UNITS[word] < 10)
        if word in TENS:
            return last in (None, "hundred", "scale", "and")
        if word == "hundred":
            return last == "a" or (last == "unit" and self.group < 10)
        if word in SCALES:
            return last in ("unit", "tens", "hundred", "a", "fraction") and \
                (not self.scale or SCALES[word] < self.scale)
        if word == "point":
            return last in ("unit", "tens") and not self.scale and nxt in UNITS and UNITS[nxt] < 10
        if word == "and":                               # "three hundred and seventy-six"
            return last in ("hundred", "scale") and (nxt in UNITS or nxt in TENS) and \
                not (self.scale and _scale_ahead(ahead[1:]) >= self.scale)
        if word == "a":                                 # "a million", "a hundred"
            return last is None and (nxt == "hundred" or nxt in SCALES)
        return False

    def take(self, word):
        self.words += word not in ("and", "a")
        if self.last in ("point", "fraction"):
            if word in SCALES:
                self._scale(word)
            else:
                self.fraction, self.last = self.fraction + str(UNITS[word]), "fraction"
        elif word in UNITS:
            self.group, self.last = self.group + UNITS[word], "unit"
        elif word in TENS:
            self.group, self.last = self.group + TENS[word], "tens"
        elif word == "hundred":
            self.group, self.last = max(self.group, 1) * 100, "hundred"
        elif word in SCALES:
            self._scale(word)
        else:                                           # "point", "and", "a"
            self.last = word

    def _scale(self, word):
        said = (1 if self.last == "a" else self.group) + float(f"0.{self.fraction or 0}")
        self.total, self.group, self.fraction = self.total + said * SCALES[word], 0, ""
        self.last, self.scale = "scale", SCALES[word]

    def value(self):
        return self.total + self.group + float(f"0.{self.fraction or 0}")


def _scale_ahead(words):
    """The scale word the number words ahead reach (0.0 if none): "and" before "thirteen
    million" after "twelve million" joins two numbers, not the parts of one."""
    for word in words:
        if word in SCALES:
            return SCALES[word]
        if not (word in UNITS or word in TENS or word == "hundred" or word == "-"):
            return 0.0
    return 0.0


def read_runs(words):
    """[(start, stop, value, scaled, how many number words)] of the numbers said in `words`
    (casefolded tokens; a dash is "-": "twenty-two"; a comma "," may follow a scale word:
    "twelve million, five hundred…"). `scaled`: said with thousand, million or billion, so a
    count rather than a number in the question's unit. Where a scale word does not fall ("twelve
    million thirteen million"), the number ends at the scale word before it."""
    runs, at = [], 0
    while at < len(words):
        said, stop, kept = Said(), at, None
        while stop < len(words):
            word, ahead = words[stop], words[stop + 1:]
            if word == "-" and said.last == "tens" and 0 < UNITS.get(ahead[0] if ahead else "", 0) < 10 or \
                    word == "," and said.last == "scale" and ahead and said.takes(ahead[0], ahead[1:]):
                stop += 1                               # "twenty-two", "a million, two hundred…"
                continue
            if not said.takes(word, ahead):
                if word in SCALES and kept and said.last != "scale":
                    said, stop = kept
                break
            said.take(word)
            stop += 1
            if said.last == "scale":
                kept = (_copy(said), stop)
        if said.words:
            runs.append((at, stop, said.value(), bool(said.scale), said.words))
            at = stop
        else:
            at += 1
    return runs


def _copy(said):
    copy = Said()
    copy.__dict__.update(said.__dict__)
    return copy
