"""How a lab's check declares what it is worth: `@pytest.mark.grade(points, tags, timeout=None)`,
read and validated once per check, and kept in the collected item's stash."""
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Grade:
    """A check's `@pytest.mark.grade(points, tags, timeout=None)`, read and validated once."""
    points: float
    tags: tuple[str, ...]           # the student functions it exercises; the first owns the points
    timeout: float | None = None    # seconds for each of its calls, if not the lab's

    @property
    def function(self):
        return self.tags[0]

    @classmethod
    def read(cls, item, functions):
        """The item's Grade; ValueError saying what a well-formed marker looks like."""
        marker = item.get_closest_marker("grade")
        kwargs = marker.kwargs if marker else {}
        points, tags, timeout = kwargs.get("points"), kwargs.get("tags"), kwargs.get("timeout")
        if not (isinstance(points, (int, float)) and points > 0 and tags and set(tags) <= set(functions)
                and set(kwargs) <= {"points", "tags", "timeout"}
                and (timeout is None or isinstance(timeout, (int, float)) and timeout > 0)):
            raise ValueError(f"needs @pytest.mark.grade(points=N > 0, tags=[functions of "
                             f"{', '.join(functions)}], timeout=None or seconds)")
        return cls(points, tuple(tags), timeout)


GRADE = pytest.StashKey[Grade]()


def grade_of(item):
    """The Grade of a collected check."""
    return item.stash[GRADE]
