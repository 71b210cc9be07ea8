"""Who a name stands for: one normal form for the names of folders, zips, rosters, timestamps
and quiz exports, so that "José" typed on a Mac (NFD) and "José" exported by an LMS (NFC), or
"Ada" and "ada", are one student. Names are compared by `identity` and written by `shown`;
names of different identities that still render alike ("Ada" in Latin letters and "Аda" with a
Cyrillic А) are found by `look_alikes`, so that a caller reports them instead of grading two
students who look like one.
"""
import unicodedata
from collections.abc import Iterable

from grader.base.text import one_line

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), less what "Cf" already holds,
# and the code points that render as nothing but are letters or symbols (Hangul fillers, braille blank).
IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2065, 0x2065),
             (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
             (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))

# Letters of other scripts that render as a Latin letter (a part of Unicode's confusables.txt,
# UTS #39): Cyrillic, Greek, Armenian, Cherokee and Lisu, and the Latin letters that pass for others.
CONFUSABLE = dict(zip(
    "аеорсухіјѕԁԛԝһӏүɡɑıαοινϳօսոցհզ"              # small letters that look like small Latin ones
    "АВЕКМНОРСТХЅІЈԚԜѴӀΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"           # capitals that look like Latin capitals
    "ᎪᏴᏟᎠᎬᏀᎻᎫᏦᏞᎷᏢᏒᏚᎢᏙᏔᏃ"                        # Cherokee
    "ꓮꓐꓚꓓꓰꓝꓖꓧꓲꓙꓗꓡꓟꓠꓳꓑꓣꓢꓔꓴꓦꓪꓫꓬꓜ",                # Lisu
    "aeopcyxijsdqwhlygaiaoivjounghq"
    "ABEKMHOPCTXSIJQWVIABEZHIKMNOPTYX"
    "ABCDEGHJKLMPRSTVWZ"
    "ABCDEFGHIJKLMNOPRSTUVWXYZ"))


def _ignorable(char):
    code = ord(char)
    return unicodedata.category(char) == "Cf" or any(low <= code <= high for low, high in IGNORABLE)


def shown(name: object) -> str:
    """A name as written for people: as the submission had it, less what no one can see or
    what could forge output (zero-width, bidirectional and other default-ignorable marks and
    blank letters such as a Hangul filler dropped, any other space made a space, control
    characters replaced)."""
    kept = (" " if c.isspace() else c for c in str(name) if not _ignorable(c))
    return one_line("".join(kept))


def identity(name: object) -> str:
    """The form in which two names are one student's: `shown`, its spaces collapsed and
    trimmed, casefolded between canonical decomposition and composition (NFC), so that case and
    the encoding of accents do not matter. identity(shown(x)) == identity(x)."""
    text = " ".join(shown(name).split())
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())


def skeletons(name: object) -> set[str]:
    """How the name's identity may render, small and in capitals, in its compatibility form and
    with Latin letters for another script's that look alike (UTS #39's skeleton, on a small
    table): two identities sharing one render alike."""
    key = unicodedata.normalize("NFKC", identity(name))      # compatibility forms too: Ａｄａ, ﬁ
    return {unicodedata.normalize("NFC", "".join(CONFUSABLE.get(c, c) for c in unicodedata.normalize("NFD", text)))
            .casefold() for text in (key, key.upper())}


def look_alikes(names: Iterable[str]) -> list[list[str]]:
    """The groups of `names` (in the given order) that hold different identities rendering alike,
    linked through any shared skeleton: each such group is one collision to report."""
    names = list(dict.fromkeys(names))
    parent = list(range(len(names)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, name in enumerate(names):
        for skeleton in skeletons(name):
            parent[root(i)] = root(first.setdefault(skeleton, i))
    groups: dict[int, list[str]] = {}
    for i, name in enumerate(names):
        groups.setdefault(root(i), []).append(name)
    return [group for group in groups.values() if len({identity(name) for name in group}) > 1]


def foreign_letters(name: object) -> str:
    """'its А is Cyrillic' for the letters of `name` that look Latin but are not: what tells two
    look-alike names apart, in words (empty when there is none)."""
    odd = dict.fromkeys(c for c in unicodedata.normalize("NFD", shown(name)) if c in CONFUSABLE)
    scripts = {c: unicodedata.name(c).split()[0] for c in odd}
    return ", ".join(f"its {c} is " + (f"U+{ord(c):04X}" if script == "LATIN" else script.capitalize())
                     for c, script in scripts.items())


def as_read(name: object) -> str:
    """A name quoted as people read it (never Python's escapes: 'José', not 'Jos\\xe9'), with what
    sets apart a name that looks like another."""
    letters = foreign_letters(name)
    return repr(shown(name)) + (f" ({letters})" if letters else "")


def how_alike(one: str, other: str) -> str:
    """Why two names of one identity that differ are one: 'one name in another Unicode form' where
    they read the same ('José' composed and decomposed), else in another case or spacing."""
    def nfc(text: str) -> str:
        return unicodedata.normalize("NFC", shown(text))
    if nfc(one) == nfc(other):
        return "one name, its letters encoded in another Unicode form" if one != other else "one name"
    if " ".join(nfc(one).split()) == " ".join(nfc(other).split()):
        return "one name, spaced otherwise"
    return "one name in another case, spacing or Unicode form"
