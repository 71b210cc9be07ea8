"""The one reader of times an instructor gives: due times, a timestamps file, a roster's own due
times, a form's timestamps.

A time is ISO 8601 (2026-10-01T14:05:00+01:00, or an IANA zone in brackets after it:
2026-10-01T14:05:00[Europe/London]), or as spreadsheets and forms write it, with its date in
slashes or dots (01/10/2026 2:05:00 PM, 1.10.2026 14:05). Whether such a date is day-first or
month-first is decided once for a whole column (`read_column`), never cell by cell: a UK form's
"01/10/2026" is 1 October when another row of it reads 25/09/2026. A column that no one order reads
is refused, naming a line of each kind; a column both orders read, and read differently, is
refused too, unless its reader can do with either (`Column.readings`).
"""
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from enum import Enum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grader.base.errors import UsageError
from grader.readers.identity import shown

YEARS = (1900, 2999)                            # a time's year, wherever a course could be due
ZONED = re.compile(r"(.*)\[([A-Za-z0-9_+\-/]+)\]")
SLASHED = re.compile(r"(?P<a>\d{1,4})(?P<sep>[/.\-])(?P<b>\d{1,2})(?P=sep)(?P<c>\d{2,4})"
                     r"(?:[ T,]+(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2})(?P<f>\.\d+)?)?"
                     r"\s*(?P<ampm>[AaPp]\.?[Mm]\.?)?)?"
                     r"\s*(?P<zone>.*)")
GMT = re.compile(r"(?:UTC|GMT)(?:([+-])(\d{1,2})(?::?(\d{2}))?)?", re.IGNORECASE)
EXAMPLE = "e.g. 2026-12-01T23:59:00+01:00 or 2026-12-01T23:59:00[Europe/Paris]"


class NotATime(UsageError):
    """A cell or an option that holds no time: its sentence says where, and why; `line`: the
    cell's, where read_column read it."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class Order(Enum):
    """How a date in slashes is read."""
    DAY_FIRST = "day-first"
    MONTH_FIRST = "month-first"


def parse_time(text: str, where: str, order: Order | None = None, zoned: bool = True) -> datetime:
    """One time (see the module). A date in slashes whose order it leaves open needs `order`;
    a time without a zone is refused where `zoned` (its zone would be a guess)."""
    text = shown(text).strip()
    iso, zone = _iso(text, where, order)
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
        named = ZoneInfo(zone) if zone else None
    except (ValueError, ZoneInfoNotFoundError):
        raise NotATime(f"{where}: {text!r} is not a time; expected ISO 8601 with a zone, {EXAMPLE}") from None
    if not YEARS[0] <= when.year <= YEARS[1]:          # else a clock in another zone may not hold it
        raise NotATime(f"{where}: {text!r}: expected a year from {YEARS[0]} to {YEARS[1]}")
    if named is not None:
        local = when.replace(tzinfo=named)
        if local.astimezone(timezone.utc).astimezone(named).replace(tzinfo=None) != when.replace(tzinfo=None):
            # in the hour summer time skips: no clock there shows it
            raise NotATime(f"{where}: {text!r}: {zone}'s clocks skip that time (they are put forward); give a time "
                           f"its clocks show, {EXAMPLE}")
        if when.tzinfo is not None:         # in the hour summer time repeats, either offset is the zone's
            same = next((t for t in (local, local.replace(fold=1)) if t.utcoffset() == when.utcoffset()), None)
            if same is None:
                raise NotATime(f"{where}: {text!r}: the offset is not {zone}'s at that time")
            return same
        return local
    if when.tzinfo is None and zoned:
        raise NotATime(f"{where}: {text!r} has no time zone; add one, e.g. {text}+00:00")
    return when


def orders(text: str) -> set[Order]:
    """The Orders that read `text` as a real date: both where its date is ISO, or in slashes
    that either order reads alike (10/10/2026); none where it is no date in slashes."""
    match = SLASHED.fullmatch(shown(text).strip())
    if match is None:
        return set(Order)
    a, b, c = (int(match.group(k)) for k in "abc")
    if len(match.group("a")) == 4:
        return set(Order) if _real(a, b, c) else set()
    year = _year(match.group("c"))
    return {order for order, (day, month) in ((Order.DAY_FIRST, (a, b)), (Order.MONTH_FIRST, (b, a)))
            if _real(year, month, day)}


def _year(text):
    """The year of a date's last part: two digits as spreadsheets read them (00-29: 2000-2029,
    30-99: 1930-1999), else as written."""
    year = int(text)
    return year + (2000 if year < 30 else 1900) if len(text) == 2 else year


def _real(year, month, day):
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def _iso(text, where, order):
    """(ISO 8601 text, IANA zone or None) for a time as written."""
    match = ZONED.fullmatch(text)
    body, zone = (match.group(1), match.group(2)) if match else (text, None)
    slashed = SLASHED.fullmatch(body)
    if slashed is None or (len(slashed.group("a")) == 4 and slashed.group("sep") == "-"):
        return body, zone
    a, b, c = (int(slashed.group(k)) for k in "abc")
    if len(slashed.group("a")) == 4:
        year, month, day = a, b, c
    else:
        year = _year(slashed.group("c"))
        readable = orders(body)
        if order is None and len(readable) > 1 and a != b:
            raise NotATime(f"{where}: {text!r} is {a:02d}/{b:02d} day-first, {b:02d}/{a:02d} month-first; write "
                           f"it as ISO 8601, {EXAMPLE}")
        order = order if order is not None else next(iter(readable), Order.DAY_FIRST)
        day, month = (a, b) if order is Order.DAY_FIRST else (b, a)
    hour, minute = int(slashed.group("h") or 0), slashed.group("m") or "00"
    ampm = (slashed.group("ampm") or "").replace(".", "").lower()
    if ampm and not 1 <= hour <= 12:
        raise NotATime(f"{where}: {text!r} is not a time: hour {hour} with {ampm.upper()}")
    hour = hour % 12 + (12 if ampm == "pm" else 0) if ampm else hour
    rest = slashed.group("zone").strip()
    offset = GMT.fullmatch(rest)
    if offset:
        sign, hours, minutes = offset.groups()
        rest = f"{sign}{int(hours):02d}:{minutes or '00'}" if sign else "+00:00"
    seconds = f":{slashed.group('s')}{slashed.group('f') or ''}" if slashed.group("s") else ":00"
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute}{seconds}{rest}", zone


@dataclass(frozen=True)
class Column:
    """A column of times, read under each Order that reads all of it: {Order: {line: time}}.
    Empty cells are no time (None)."""
    readings: dict[Order, dict[int, datetime | None]]

    def one(self, at: Callable[[int | None], str]) -> dict[int, datetime | None]:
        """{line: time} where the orders that read the column read it alike; else UsageError."""
        first, *others = self.readings.values()
        for other in others:
            line = next((n for n in first if first[n] != other[n]), None)
            if line is not None:
                raise UsageError(f"{at(line)}: its dates read both day-first and month-first, differently "
                                 f"(no row has a day over 12); write them as ISO 8601, {EXAMPLE}")
        return first


def read_column(cells: Sequence[tuple[int, str]], at: Callable[[int | None], str], zoned: bool = True,
                strict: bool = True) -> Column:
    """The Column of `cells` ([(line, text)]): each cell read by the same order of day and month.
    UsageError naming a cell that no time is, or a line of each order where no one order reads all;
    `at(line)` says where a line's cell is, `at(None)` where the column is. Not `strict`: a cell
    that is no time is None, as an empty one (a form's column the reader can do without)."""
    fits = set(Order)
    needs: dict[Order, int] = {}            # an order -> the first line that needs it
    for line, text in cells:
        if text.strip() and (strict or _readable(text, zoned)):
            readable = orders(text)
            if not readable:
                raise NotATime(f"{at(line)}: {shown(text)!r} is no date, day-first or month-first", line)
            if len(readable) == 1:
                needs.setdefault(next(iter(readable)), line)
            fits &= readable
    if not fits:
        day, month = needs[Order.DAY_FIRST], needs[Order.MONTH_FIRST]
        raise UsageError(f"{at(None)}: line {day} is day-first, line {month} month-first; one column holds dates "
                         "in one order: correct one of them, or write each as ISO 8601")
    return Column({order: {line: _cell(text, line, at, order, zoned) if strict or _readable(text, zoned) else None
                           for line, text in cells}
                   for order in sorted(fits, key=lambda o: o.value)})


def _readable(text, zoned):
    """Whether some order reads `text` as a time."""
    for order in orders(text):
        try:
            parse_time(text, "", order, zoned)
        except NotATime:
            continue
        return True
    return False


def _cell(text, line, at, order, zoned):
    if not text.strip():
        return None
    try:
        return parse_time(text, at(line), order, zoned)
    except NotATime as error:
        raise NotATime(str(error), line) from None
