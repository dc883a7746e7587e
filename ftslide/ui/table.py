"""Plain-text tables for the CLI and the benchmarks.

Nothing here raises for sequences of printable cells; cost O(cells).
"""

from __future__ import annotations

import sys
from typing import Sequence, TextIO

__all__ = ["format_table", "print_table"]


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell; numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in cells[1:]) and len(cells) > 1 for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def _is_number(text: str) -> bool:
    try:
        float(text.rstrip("x%"))
        return True
    except ValueError:
        return text in ("-", "")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], stream: TextIO | None = None) -> None:
    """``format_table`` on ``stream`` (stdout by default), flushed."""
    print(format_table(headers, rows), file=stream or sys.stdout, flush=True)
