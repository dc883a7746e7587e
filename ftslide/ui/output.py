"""Files the commands write, whole or not at all, and the figures they draw.

Every result file (CSV, JSON, PNG/SVG, job scripts, state) goes through
:func:`write_atomically`: it is written under a temporary name in the same
folder and renamed when complete, so an error or an interrupt never leaves a
half-written file or the temporary one behind.

Errors and cost: FtslideError when a file cannot be written (the temporary file is removed);
O(size) for text, matplotlib's rendering for figures.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable

from ..errors import FtslideError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["write_atomically", "write_text", "check_figure_path", "new_figure", "save_figure"]

FIGURE_FORMATS = (".png", ".svg")


def write_atomically(path: Path, write: Callable[[IO[bytes]], None], mode: int = 0o644) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it to ``path``.

    An OSError becomes an FtslideError naming the path; nothing is left behind.
    """
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise FtslideError(f"cannot write {path}: it is a folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise FtslideError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise FtslideError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def write_text(path: Path, text: str, mode: int = 0o644) -> None:
    """``text`` (UTF-8) into ``path``, atomically."""
    write_atomically(path, lambda out: out.write(text.encode()), mode)


def check_figure_path(path: Path, option: str = "--plot") -> Path:
    """``path`` if a figure can be written there (a .png or .svg name in a writable folder), else
    FtslideError naming ``option``; checked before any work so that nothing is half done."""
    if path.suffix.lower() not in FIGURE_FORMATS:
        raise FtslideError(f"{option} {path}: the file name must end in .png or .svg")
    folder = path.parent
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist; create it first"
        raise FtslideError(f"{option} {path}: folder '{folder}' {what}")
    if path.is_dir():
        raise FtslideError(f"{option} {path} is a folder; give a file name ending in .png or .svg")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FtslideError(f"{option} {path}: folder '{folder}' is not writable")
    return path


def new_figure(width: float, height: float) -> "Figure":
    """A matplotlib figure of ``width`` x ``height`` inches, without pyplot's global state."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def save_figure(fig: "Figure", path: Path, dpi: int = 100) -> None:
    """Save ``fig`` atomically, in the format of the path's suffix (.png or .svg)."""
    fmt = path.suffix.lower().lstrip(".") or "png"
    write_atomically(path, lambda out: fig.savefig(out, format=fmt, dpi=dpi))
