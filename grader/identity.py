"""Who a name stands for: one normal form for the names of folders, zips, rosters, timestamps
and quiz exports, so that "José" typed on a Mac (NFD) and "José" exported by an LMS (NFC), or
"Ada" and "ada", are one student. Names are compared by `identity` and written by `shown`.
"""
import unicodedata

from grader.results import one_line


def shown(name):
    """A name as written for people: as the submission had it, less what no one can see or
    what could forge output (zero-width and bidirectional marks dropped, any other space made a
    space, control characters replaced)."""
    kept = (" " if c.isspace() else c for c in str(name) if unicodedata.category(c) != "Cf")
    return one_line("".join(kept))


def identity(name):
    """The form in which two names are one student's: `shown`, its spaces collapsed and
    trimmed, casefolded between canonical decomposition and composition (NFC), so that case and
    the encoding of accents do not matter. identity(shown(x)) == identity(x)."""
    text = " ".join(shown(name).split())
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())
