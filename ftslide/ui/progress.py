"""Progress for long work: a live line on a terminal, a line every half minute otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


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
