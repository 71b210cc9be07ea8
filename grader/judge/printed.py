"""What student code printed, kept by the judge for the check whose call printed it."""
import threading

OUTPUT_LIMIT = 2000          # bytes of what a check's calls printed, kept for the report
OUTPUT_LINES = 12            # lines of it shown; -s: all of it, up to FULL_OUTPUT_LIMIT bytes
FULL_OUTPUT_LIMIT = 2**20


class Printed:
    """Output by check, from every child (the main ones, those of submitted calls), until that
    check takes it. What comes for a check that took its own already (a call it left running,
    a fixture's teardown) is dropped: it never reaches the check that happens to come next."""

    def __init__(self, show_all: bool = False) -> None:
        self.show_all = show_all
        self._kept: dict[str, list] = {}    # check -> [bytes kept, bytes cut]
        self._taken: set[str] = set()       # checks whose output is written: nothing more is kept for them
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        return FULL_OUTPUT_LIMIT if self.show_all else OUTPUT_LIMIT

    def keep(self, check: str, data: bytes, cut: int) -> None:
        """Add what one call made for `check` printed (`cut`: bytes the child's pipe already dropped)."""
        with self._lock:
            if check in self._taken:
                return
            kept = self._kept.setdefault(check, [b"", 0])
            room = max(0, self.limit - len(kept[0]))
            kept[:] = kept[0] + data[:room], kept[1] + cut + max(0, len(data) - room)

    def take(self, check: str) -> str:
        """What the calls made for `check` printed, once: its first lines and a count of what was
        cut, or with show_all everything kept."""
        with self._lock:
            self._taken.add(check)
            data, cut = self._kept.pop(check, (b"", 0))
        text = data.decode("utf-8", "replace")
        lines = text.splitlines()
        if len(lines) > OUTPUT_LINES and not self.show_all:
            text = "\n".join(lines[:OUTPUT_LINES]) + f"\n[... {len(lines) - OUTPUT_LINES} more lines: -s shows them]"
        if cut:
            text += f"\n[... {cut} more bytes of output cut]"
        return text
