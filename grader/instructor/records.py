"""The records of a class's batch: a row per student (its score, time, lateness and final score),
what each student's folder keeps, and the batch's summary (OUT/rows.json, summary.json)."""
from datetime import datetime
from typing import Literal, get_args

from pydantic import BaseModel, model_validator

from grader.base.kinds import Timing
from grader.core.results import LabResults

RowStatus = Literal["graded", "incomplete", "broken_code", "empty", "rejected", "regrade", "pending"]
TimeSource = Literal["", "timestamps", "gradescope", "unknown"]  # the instructor's file, Gradescope's metadata
SCORED = ("graded", "incomplete", "broken_code")   # rows the grader scored: the class statistics


class Adjustment(BaseModel):
    """Points an instructor gave or took after grading (grade.py adjust): who, what, why, when."""
    student: str                            # as the instructor wrote it (grader.readers.identity.shown)
    points: float                           # added to the score after the late policy
    reason: str
    at: datetime                            # when it was recorded
    source: str = ""                        # where it was given: "--student", "adjustments.csv line 3"


class BatchRow(BaseModel):
    """One student's line of the gradebook.

    status: graded; incomplete (graded, some student files missing: the stubs stood in);
    broken_code (graded, a student file is not valid Python); empty (no student file found);
    rejected (an unsafe or unreadable submission, not graded); regrade (the grader failed, not the
    submission: no score, and the next run grades it again); pending (not graded yet: the batch was
    interrupted).
    """
    student: str
    status: RowStatus
    detail: str = ""                        # what is wrong, in words, unless plainly graded
    score: float | None = None
    max_score: float | None = None
    passed: bool = False                    # every check passed
    functions: dict[str, float] = {}        # points per student function
    incidents: list[str] = []               # "f: timed out", "g: crashed"
    seconds: float = 0.0
    reused: bool = False                    # unchanged since graded: taken from the last run
    collision: list[str] = []               # the entries that are one student (rejected: keep one)
    # When it came in and what that costs (grader/instructor/deadlines.py): a time only from a
    # source the student cannot write, else unknown and no penalty unless the instructor chose one.
    submitted_at: datetime | None = None
    time_source: TimeSource = ""            # "": the lateness was not worked out (a row being graded)
    late_by_hours: float | None = None      # past the (extended) due time + grace; None: on time or unknown
    penalty_percent: float | None = None    # of the lab's points, under its late policy
    final_score: float | None = None        # the score after the penalty; None: no mark (time unknown)
    timing: str = ""                        # all of it in words: "1 d 10.0 h late: -20%", "time unknown: ..."
    timing_kind: Timing | None = None       # where it stands under the late policy; None: none applied
    extension: float | datetime | None = None   # the roster's: hours, or the student's own due time
    adjustments: list[Adjustment] = []      # the instructor's, in final_score (grader/instructor/record.py)

    @model_validator(mode="before")
    @classmethod
    def _untrusted_times(cls, data):
        """A row written before times were trusted (zip, files, a metadata file in the student's
        folder): its time was the student's word, so it is unknown."""
        if isinstance(data, dict) and data.get("time_source") not in (None, *get_args(TimeSource)):
            data = {**data, "time_source": "unknown", "submitted_at": None}
        return data

    @model_validator(mode="before")
    @classmethod
    def _timing_kind_of_older_rows(cls, data):
        """A row written before timing_kind existed: its kind, read from the words it was written with."""
        if isinstance(data, dict) and "timing_kind" not in data and data.get("timing"):
            words = str(data["timing"])
            assumed = words.removeprefix(f"{Timing.UNKNOWN}, ").split(":")[0]
            kind = Timing(assumed) if assumed in (Timing.ASSUMED_ON_TIME, Timing.ASSUMED_LATE) else \
                Timing.UNKNOWN if words.startswith(Timing.UNKNOWN.value) else \
                Timing.ON_TIME if words == Timing.ON_TIME.value else Timing.LATE
            data = {**data, "timing_kind": kind}
        return data

    @property
    def percent(self) -> float | None:
        return 100 * self.score / self.max_score if self.score is not None and self.max_score else None

    @property
    def adjusted(self) -> float:
        """The points the instructor's adjustments add up to (0.0 where none)."""
        return sum(a.points for a in self.adjustments) + 0.0


class StudentRecord(BaseModel):
    """OUT/<student>/graded.json: what was graded (a content hash) and how it went."""
    hash: str
    row: BatchRow
    results: LabResults | None = None


class ScoreBin(BaseModel):
    low: float                              # percent, inclusive
    high: float                             # percent, exclusive (the last bin includes 100)
    students: int


class CheckRate(BaseModel):
    name: str
    test: str
    function: str
    passed: int
    graded: int                             # passed or failed: those who reached the check
    not_attempted: int = 0                  # the function's stub left as it was
    not_run: int = 0                        # blocked by another function, or the time budget

    @property
    def rate(self) -> float:
        return self.passed / self.graded if self.graded else 0.0


class Mistake(BaseModel):
    hint: str                               # the first wording seen
    function: str
    students: list[str]
    id: str = ""                            # Check.mistake, where the check named one


class BatchSummary(BaseModel):
    """OUT/summary.json: where the class stands and struggles."""
    lab: str
    title: str
    students: int
    statuses: dict[str, int]                # status -> students
    graded_now: int                         # graded by this run (the rest reused or not gradable)
    max_score: float | None
    functions: dict[str, float]             # student function -> its points
    mean_percent: float | None
    median_percent: float | None
    histogram: list[ScoreBin]
    checks: list[CheckRate]                 # worst pass rate first
    mistakes: list[Mistake]                 # most common diagnosed mistakes first
    problems: list[BatchRow]                # not plainly graded, or crashed / timed out somewhere
    workers: int
    seconds: float
    interrupted: bool = False
    counted: int = 0                        # students in the statistics: scored by the grader
    ignored: list[str] = []                 # entries of the class folder that are not submissions
    timing: dict[Timing, int] = {}          # on time, late, time unknown -> students, under a late policy
