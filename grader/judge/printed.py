"""What student code printed, kept by the judge for the checks whose calls printed it."""
import threading

OUTPUT_LIMIT = 2000          # bytes of what a check's calls printed, kept for the report
OUTPUT_LINES = 12            # lines of it shown; -s: all of it, up to FULL_OUTPUT_LIMIT bytes
FULL_OUTPUT_LIMIT = 2**20


class Printed:
    """Output by student function, from every child (the main one, those of submitted calls), until
    a check of that function takes it."""

    def __init__(self, show_all=False):
        self.show_all = show_all
        self._kept = {}             # function -> [bytes kept, bytes cut]
        self._lock = threading.Lock()

    @property
    def limit(self):
        return FULL_OUTPUT_LIMIT if self.show_all else OUTPUT_LIMIT

    def keep(self, function, data, cut):
        """Add what one call of `function` printed (`cut`: bytes the child's pipe already dropped)."""
        with self._lock:
            kept = self._kept.setdefault(function, [b"", 0])
            room = max(0, self.limit - len(kept[0]))
            kept[:] = kept[0] + data[:room], kept[1] + cut + max(0, len(data) - room)

    def take(self, functions):
        """What calls of `functions` printed since the last take: its first lines and a count of
        what was cut, or with show_all everything kept."""
        with self._lock:
            taken = [self._kept.pop(f) for f in functions if f in self._kept]
        data = b"".join(data for data, _ in taken)
        cut = sum(cut for _, cut in taken) + max(0, len(data) - self.limit)
        text = data[:self.limit].decode("utf-8", "replace")
        lines = text.splitlines()
        if len(lines) > OUTPUT_LINES and not self.show_all:
            text = "\n".join(lines[:OUTPUT_LINES]) + f"\n[... {len(lines) - OUTPUT_LINES} more lines: -s shows them]"
        if cut:
            text += f"\n[... {cut} more bytes of output cut]"
        return text
