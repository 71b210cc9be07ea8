"""The one reader of times (grader/readers/times.py): day-first or month-first is decided once for a whole
column, never cell by cell, in every reader of times: the timestamps file, a roster's own due
times, a form's timestamps."""
from datetime import datetime, timezone

import pytest

from grader.base.errors import QuizError, UsageError
from grader.instructor.deadlines import read_timestamps
from grader.instructor.roster import read_roster
from grader.quiz.model import load_quiz
from grader.quiz.responses import read_class
from grader.readers.manifest import find_lab
from grader.readers.times import Order, orders, parse_time, read_column

UTC = timezone.utc


def at(line):
    return f"f.csv line {line}, column t" if line else "f.csv, column t"


@pytest.mark.parametrize("text, readable", [
    ("01/10/2026", set(Order)), ("25/09/2026", {Order.DAY_FIRST}), ("09/25/2026", {Order.MONTH_FIRST}),
    ("31/31/2026", set()), ("2026/10/01 2:05:00 PM", set(Order)), ("2026-10-01T14:05:00Z", set(Order))])
def test_the_orders_a_date_allows(text, readable):
    assert orders(text) == readable


@pytest.mark.parametrize("text, when", [
    ("2026-10-01T14:05:00+01:00", datetime(2026, 10, 1, 13, 5, tzinfo=UTC)),
    ("1.10.2026 14:05 +01:00", datetime(2026, 10, 1, 13, 5, tzinfo=UTC)),
    ("10/1/26 2:05:33 PM GMT+1", datetime(2026, 10, 1, 13, 5, 33, tzinfo=UTC)),
    ("01/10/2026 12:00 AM UTC", datetime(2026, 10, 1, 0, 0, tzinfo=UTC)),
    ("01/10/2026 14:05[Europe/London]", datetime(2026, 10, 1, 13, 5, tzinfo=UTC))])
def test_a_time_as_spreadsheets_write_it(text, when):
    order = Order.MONTH_FIRST if text.startswith("10/1/26") else Order.DAY_FIRST
    assert parse_time(text, "x", order) == when


@pytest.mark.parametrize("text, year", [("31/12/99 10:00Z", 1999), ("31/12/30 10:00Z", 1930), ("31/12/29 10:00Z", 2029),
                                        ("31/12/00 10:00Z", 2000), ("29/02/00 10:00Z", 2000)])
def test_a_two_digit_year_is_read_as_a_spreadsheet_reads_it(text, year):
    """Excel's rule: 00-29 are 2000-2029, 30-99 are 1930-1999 (99 once read 2099, late by 73 years)."""
    assert parse_time(text, "x").year == year
    assert orders(text) == {Order.DAY_FIRST}


def test_a_date_whose_order_is_left_open_is_refused_alone():
    with pytest.raises(UsageError, match="'01/10/2026 14:05Z' is 01/10 day-first, 10/01 month-first; write it as ISO"):
        parse_time("01/10/2026 14:05Z", "--due")
    assert parse_time("25/09/2026 14:05Z", "--due") == datetime(2026, 9, 25, 14, 5, tzinfo=UTC)


def test_a_column_is_read_in_the_one_order_that_reads_all_of_it():
    column = read_column([(2, "01/10/2026 10:00"), (3, "25/09/2026 10:00"), (4, "")], at, zoned=False)
    assert column.one(at) == {2: datetime(2026, 10, 1, 10), 3: datetime(2026, 9, 25, 10), 4: None}
    with pytest.raises(UsageError, match="f.csv, column t: line 3 is day-first, line 2 month-first; one column"):
        read_column([(2, "01/13/2026 10:00"), (3, "25/09/2026 10:00")], at, zoned=False)
    both = read_column([(2, "01/10/2026 10:00"), (3, "02/09/2026 10:00")], at, zoned=False)
    assert set(both.readings) == set(Order)
    with pytest.raises(UsageError, match="f.csv line 2, column t: its dates read both day-first and month-first"):
        both.one(at)
    alike = read_column([(2, "10/10/2026 10:00"), (3, "2026-09-02 10:00")], at, zoned=False)
    assert alike.one(at)[2] == datetime(2026, 10, 10, 10)


def test_a_timestamps_file_in_a_uk_locale_is_read_day_first(tmp_path):
    (tmp_path / "t.csv").write_text("student,submitted_at\nada,01/10/2026 10:00 +01:00\nbob,25/09/2026 10:00 +01:00\n")
    times = read_timestamps(tmp_path / "t.csv")
    assert times["ada"] == datetime(2026, 10, 1, 9, tzinfo=UTC) and times["bob"].month == 9
    (tmp_path / "t.csv").write_text("student,submitted_at\nada,09/25/2026 10:00Z\nbob,25/09/2026 10:00Z\n")
    with pytest.raises(UsageError, match="t.csv, column submitted_at: line 3 is day-first, line 2 month-first"):
        read_timestamps(tmp_path / "t.csv")


def test_a_roster_s_own_due_times_share_their_column_s_order(tmp_path):
    (tmp_path / "r.csv").write_text("student,extension\nada,01/10/2026 23:59 +01:00\nbob,48\ncy,25/09/2026 23:59Z\n")
    roster = read_roster(tmp_path / "r.csv")
    assert roster["ada"].extension == datetime(2026, 10, 1, 22, 59, tzinfo=UTC) and roster["bob"].extension == 48
    (tmp_path / "r.csv").write_text("student,extension\nada,09/25/2026 23:59Z\ncy,25/09/2026 23:59Z\n")
    with pytest.raises(UsageError, match="r.csv, column extension: line 3 is day-first, line 2 month-first"):
        read_roster(tmp_path / "r.csv")


RETAKE = ("student,Completion time,table-size,order,methods,rope-score,tied\n"
          "ada,25/09/2026 09:00:00,1,c,a,m + n,a\n"             # her first try: 0 of 5, on 25 September
          "ada,01/10/2026 10:00:00,38.6,a b e,d,m - n,c\n"      # the retake: 5 of 5, on 1 October
          "bob,13/09/2026 10:00:00,38.6,a b e,d,m - n,c\n")


@pytest.fixture(scope="module")
def quiz():
    return load_quiz(find_lab("lab2").quiz)


def test_a_uk_forms_export_counts_the_retake(tmp_path, quiz):
    """Read month-first cell by cell, 01/10/2026 was 10 January: the first try counted."""
    (tmp_path / "r.csv").write_text(RETAKE)
    answers = read_class(tmp_path / "r.csv", quiz, "lab2")
    assert answers.get("ada").row == 3 and answers.get("ada").result.score == 5
    assert "the latest by timestamp" in answers.get("ada").notes[-1]


def test_a_forms_export_whose_order_decides_which_try_counts_is_refused(tmp_path, quiz):
    swapped = RETAKE.replace("25/09/2026", "02/10/2026").replace("01/10/2026", "10/01/2026")
    (tmp_path / "r.csv").write_text(swapped.replace("13/09", "12/09"))
    with pytest.raises(QuizError, match="column completion time: its dates read both day-first and month-first, and"):
        read_class(tmp_path / "r.csv", quiz, "lab2")
    (tmp_path / "r.csv").write_text(RETAKE.replace("13/09/2026", "09/13/2026"))
    with pytest.raises(QuizError, match="line 4 is day-first|line 2 is day-first"):
        read_class(tmp_path / "r.csv", quiz, "lab2")
    ok = RETAKE.replace("25/09/2026", "02/10/2026").replace("01/10/2026", "03/10/2026").replace("13/09", "12/09")
    (tmp_path / "r.csv").write_text(ok)                  # either order counts the retake: no need to ask
    assert read_class(tmp_path / "r.csv", quiz, "lab2").get("ada").row == 3
