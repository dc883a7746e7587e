"""Build and run the resilient Jacobi example (``sliding/examples/jacobi3d.c``) on a 2D or 3D node grid.

The example links the sliding runtime (``sliding/runtime``) and the substitution core
(``sliding/core``) from source with the build's mpicc. One MPI process runs per node of the
grid, spares included. The program prints one ``jacobi3d: EVENT KEY=VALUE ...`` line per event
(its header comment lists them), which :func:`parse` reads.

The runtime's names are its own (``sliding/runtime/include/sliding_names.h``): :data:`Point`, its
kill points, and :data:`Status`, its status codes, are enumerations read from
``libslidenames.so`` the first time one of them is used (``runtime.Point``).

Typical use::

    prefix = require_prefix()
    run(prefix, "torus:3x2x2", "x:1", "hybrid", [(1, iteration_point(12))]).checksum

Errors and cost: FtslideError (one line) for a bad layout, method or kill before anything starts,
or a failed compile; ``run`` raises ``mpi.MpirunTimeout`` for a run that hangs. The builds cost a
compile per change of the sources (seconds), ``run`` one ``mpirun`` (about a second for 12
processes), the rest O(size of their input) once the names are read (one ``dlopen``).
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..errors import FtslideError
from ..toolchain import mpi
from ..toolchain.native import REPO, CEnum, bind_library, c_enum
from ..toolchain.ompi import cache_root
from .core import make_layout, methods, parse_method

# Point and Status are public too, but read from the library at first use (module __getattr__).
__all__ = ["Recovery", "RunError", "StencilRun", "build_library", "link_flags", "build",
           "runtime_methods", "runtime_points", "iteration_point", "parse_kill", "node_count", "run",
           "events", "parse", "HEADER_DIR"]

SLIDING = REPO / "sliding"
LIBRARY_SOURCES = (*sorted((SLIDING / "runtime" / "src").glob("*.c")), *sorted((SLIDING / "core" / "src").glob("*.c")))
LIBRARY_INCLUDE_DIRS = (SLIDING / "core" / "include", SLIDING / "core" / "src")
HEADER_DIR = SLIDING / "runtime" / "include"  # sliding.h: all an application includes
FLAGS = ("-O2", "-Wall", "-Wextra", "-Wshadow", "-Werror")

_KILLED = re.compile(r"ftslide: rank (\d+) killed at (\S+)")  # the line of ftslide_killpoint.h
_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "sliding_point_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sliding_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sliding_strerror": (ctypes.c_char_p, [ctypes.c_int]),
}


@lru_cache(maxsize=None)
def _names() -> dict[str, type[CEnum]]:
    lib = bind_library("slidenames", _SIGNATURES, {}, "ftslide/sliding/runtime.py")
    return {"Point": c_enum("Point", lib.sliding_point_name), "Status": c_enum("Status", lib.sliding_status_name)}


def __getattr__(name: str) -> type[CEnum]:
    """``Point`` (``Point.RECOVERY_MAP.label == "recovery_map"``) and ``Status``
    (``Status.ERR_NO_SPARE``): the runtime's enumerations, read from its library at first use."""
    if name in ("Point", "Status"):
        return _names()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Recovery:
    """One recovery as reported by logical rank 0; times in milliseconds, in the order the program
    prints them (agree, map, rebuild, state, commit, total)."""

    resume_iteration: int
    failed: list[int]
    attempts: int
    times: dict[str, float]


@dataclass(frozen=True)
class RunError:
    """A process's reason for giving up: the step, the runtime's status (a :data:`Status`, or None
    for the program's own errors) and the runtime's message."""

    step: str
    status: CEnum | None
    message: str

    def __str__(self) -> str:
        return f"{self.step}: {self.message}"


@dataclass
class StencilRun:
    """What a run printed and how it ended: the final checksum (None if it did not finish), each
    recovery, each distinct error, and where the kill points stopped nodes (node -> point)."""

    returncode: int
    stdout: str
    stderr: str
    checksum: str | None
    recoveries: list[Recovery] = field(default_factory=list)
    errors: list[RunError] = field(default_factory=list)
    killed: dict[int, str] = field(default_factory=dict)


def build_library(prefix: Path) -> Path:
    """libsliding.so (the runtime and the substitution core) built with this build's mpicc.

    It lives in ``<cache>/sliding/<prefix name>/`` and is rebuilt when a source,
    a flag or the Open MPI build changes. Applications compile with
    ``-I sliding/runtime/include`` and link with :func:`link_flags` (``ftslide env``
    prints both). Raises FtslideError if the compiler fails. Cost: seconds when it
    compiles, a hash of the sources otherwise.
    """
    return mpi.compile_program(prefix, LIBRARY_SOURCES, flags=(*FLAGS, "-fPIC", "-shared",
                               "-Wl,-soname,libsliding.so"), include_dirs=(HEADER_DIR, *LIBRARY_INCLUDE_DIRS),
                               output=cache_root() / "sliding" / prefix.name / "libsliding.so")


def link_flags(library: Path) -> list[str]:
    """Linker arguments for libsliding.so at ``library``."""
    return [f"-L{library.parent}", "-lsliding", f"-Wl,-rpath,{library.parent}"]


def build(prefix: Path) -> Path:
    """The jacobi3d binary for this build, linked with libsliding (compiled once per source change)."""
    library = build_library(prefix)
    return mpi.compile_program(prefix, [SLIDING / "examples" / "jacobi3d.c"], name="jacobi3d", flags=FLAGS,
                               include_dirs=(HEADER_DIR,), link=link_flags(library))


def runtime_methods() -> tuple[CEnum, ...]:
    """The methods a run can use: those that keep one rank per node (a process cannot run two)."""
    return tuple(m for m in methods() if m.one_rank_per_node)


def runtime_points() -> tuple[str, ...]:
    """The runtime's own kill points, in the order a run meets them (every point but the
    application's iteration point)."""
    point = _names()["Point"]
    return tuple(p.label for p in point if p is not point.ITER)


def iteration_point(iteration: int) -> str:
    """The kill point at the start of ``iteration`` (``iter=12``)."""
    return f"{_names()['Point'].ITER.label}={iteration}"


def parse_kill(text: str) -> tuple[int, str]:
    """``NODE@POINT`` or ``NODE@ITER`` (a bare number means the start of that iteration).

    Returns (node, point). Raises FtslideError naming the points for anything else.
    """
    node, _, point = text.partition("@")
    if point.isdigit():
        point = iteration_point(int(point))
    name, equals, number = point.partition("=")
    if equals:
        valid = point == iteration_point(int(number)) if number.isdigit() else False
    else:
        valid = point in runtime_points()
    if not node.isdigit() or not valid:
        raise FtslideError(f"invalid kill {text!r}: use NODE@ITERATION (2@12) or NODE@POINT with POINT one of "
                           f"{_names()['Point'].ITER.label}=I, {', '.join(runtime_points())}")
    return int(node), point


def node_count(grid: str, spares: str, method: str) -> int:
    """Processes the run needs (one per node); raises FtslideError on a bad layout or method."""
    if not parse_method(method).one_rank_per_node:
        raise FtslideError(f"method {method!r} cannot run: choose {', '.join(m.label for m in runtime_methods())} "
                           f"({method} puts several ranks on one node, which one process per node cannot run: "
                           "it is a simulation baseline)")
    return make_layout(grid, spares).nodes


def run(prefix: Path, grid: str, spares: str, method: str, kills: Sequence[tuple[int, str]] = (),
        n: int = 8, iterations: int = 40, checkpoint_every: int = 5, timeout: float = 120,
        binary: Path | None = None, stacks_on_timeout: bool = False,
        env: dict[str, str] | None = None, wrap: Callable[[list[str]], list[str]] | None = None,
        mpirun_options: Sequence[str] = ()) -> StencilRun:
    """Run the example with SIGKILL at the named (node, point) pairs.

    ``env`` adds to the launch's environment, ``mpirun_options`` go to mpirun, and ``wrap``
    turns the mpirun argv into the one to run (mpi.run). Returns what :func:`parse` reads.
    Raises FtslideError for a bad layout, method or kill before anything starts, and
    mpi.MpirunTimeout if the run outlives ``timeout`` seconds.
    """
    nodes = node_count(grid, spares, method)
    for node, point in kills:
        if node >= nodes:
            raise FtslideError(f"kill {node}@{point}: the grid has nodes 0..{nodes - 1}")
    if len({node for node, _ in kills}) != len(kills):
        raise FtslideError("each node can be killed once")
    binary = binary or build(prefix)
    env = dict(env or {})
    if kills:
        env["FTSLIDE_KILL"] = ",".join(f"{node}@{point}" for node, point in kills)
    result = mpi.run(prefix, [*mpirun_options, "-np", str(nodes), str(binary), grid, spares, method, str(n),
                              str(iterations), str(checkpoint_every)], timeout=timeout, env=env,
                     stacks_on_timeout=stacks_on_timeout, wrap=wrap)
    return parse(result.returncode, result.stdout, result.stderr)


def events(text: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(event, fields) of every ``jacobi3d: EVENT KEY=VALUE ...`` line of ``text``, in order.

    Values hold no blank but the last one's, ``message``, which runs to the end of the line.
    Cost O(len(text)).
    """
    for line in text.splitlines():
        start = line.find("jacobi3d: ")  # not always at the start: the processes' outputs interleave
        if start < 0:
            continue
        event, *words = line[start + len("jacobi3d: "):].split(" ")
        fields: dict[str, str] = {}
        for k, word in enumerate(words):
            key, _, value = word.partition("=")
            if key == "message":
                fields[key] = " ".join([value, *words[k + 1:]])
                break
            if key:
                fields[key] = value
        yield event, fields


def parse(returncode: int, stdout: str, stderr: str) -> StencilRun:
    """A run's outcome from the lines the processes printed: jacobi3d's events, and the
    ``ftslide: rank N killed at POINT`` lines of ftslide_killpoint.h."""
    out = StencilRun(returncode, stdout, stderr, None)
    for event, f in events(stdout):
        if event == "recovered":
            times = {key[: -len("_ms")]: float(value) for key, value in f.items() if key.endswith("_ms")}
            out.recoveries.append(Recovery(int(f["iteration"]), [int(x) for x in f["failed"].split(",") if x],
                                           int(f["attempts"]), times))
        elif event == "done":
            out.checksum = f["checksum"]
    status = _names()["Status"].__members__
    errors = {RunError(f.get("step", "?"), status.get(f.get("status", "")), f.get("message", ""))
              for event, f in events(stderr) if event == "error"}
    out.errors = sorted(errors, key=str)
    for match in _KILLED.finditer(stderr):  # anywhere in a line: the processes' outputs interleave
        out.killed[int(match[1])] = match[2]
    return out
