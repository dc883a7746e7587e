"""Progress for long work: phases with a live line (Progress), or a bar over a known count of jobs (Bar).

On a terminal one line is rewritten in place; in a log (CI) lines are printed sparingly.

Nothing here raises; each update costs O(1) and prints at most one line.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress", "Bar"]


class Progress:
    """Reports phases and a running count (files compiled, checks done, ...).

    On a terminal one status line is rewritten in place; in a log (CI) a line is
    printed at each phase change and at most every ``interval`` seconds.
    """

    def __init__(self, label: str, stream: TextIO | None = None, interval: float = 30.0) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.interval = interval
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.last_print = 0.0
        self.current = ""

    def _elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}m{seconds % 60:02d}s"

    def _emit(self, text: str, final: bool = False) -> None:
        line = f"[{self.label} {self._elapsed()}] {text}"
        if self.tty:
            end = "\n" if final else ""
            self.stream.write(f"\r\033[K{line}{end}")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.last_print = time.monotonic()

    def phase(self, name: str) -> None:
        if self.tty and self.current:
            self.stream.write("\n")
        self.current = name
        self._emit(name)

    def update(self, phase: str, count: int) -> None:
        if self.tty or time.monotonic() - self.last_print >= self.interval:
            self._emit(f"{phase}: {count}")

    def note(self, text: str) -> None:
        self._emit(text, final=True)

    def done(self, text: str) -> None:
        if self.tty and self.current:
            self.stream.write("\n")
        self.current = ""
        self._emit(text, final=True)


class Bar:
    """A one-line progress bar on stderr (a line per 10% when not a terminal)."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self.total, self.label = total, label
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.monotonic()
        self.done_count = 0
        self.last_decile = -1
        self.lock = threading.Lock()

    def step(self) -> None:
        with self.lock:
            self.done_count += 1
            n, total = self.done_count, max(self.total, 1)
            elapsed = time.monotonic() - self.start
            eta = elapsed / n * (total - n) if n else 0.0
            width = 30
            fill = int(width * n / total)
            line = (f"[{self.label}] [{'#' * fill}{'.' * (width - fill)}] {n}/{total} "
                    f"{elapsed:5.0f}s elapsed, ~{eta:.0f}s left")
            if self.tty:
                self.stream.write("\r\033[K" + line + ("\n" if n >= total else ""))
            elif n * 10 // total != self.last_decile:
                self.last_decile = n * 10 // total
                self.stream.write(line + "\n")
            self.stream.flush()
