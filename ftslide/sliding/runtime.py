"""Build and run the resilient Jacobi example (sliding/examples/jacobi3d.c) on a 2D or 3D node grid.

The example links the sliding runtime (sliding/runtime) and the substitution
core (sliding/core) from source with the build's mpicc. One MPI process runs
per node of the grid, spares included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..toolchain import mpi
from ..errors import FtslideError
from ..toolchain.native import REPO
from ..toolchain.ompi import cache_root
from ..toolchain.native import CEnum
from .core import make_layout, methods, parse_method

SLIDING = REPO / "sliding"
LIBRARY_SOURCES = (SLIDING / "runtime" / "src" / "sliding.c", *sorted((SLIDING / "core" / "src").glob("*.c")))
LIBRARY_INCLUDE_DIRS = (SLIDING / "core" / "include", SLIDING / "core" / "src")
HEADER_DIR = SLIDING / "runtime" / "include"  # sliding.h: all an application includes
FLAGS = ("-O2", "-Wall", "-Wextra", "-Wshadow", "-Werror")
# Places where a node can be killed (docs/sliding-runtime.md): "iter=I" (start of
# iteration I, workers) and the runtime's own points, in the order a run meets them.
RUNTIME_POINTS = ("checkpoint", "waiting", "recovery_start", "recovery_agree", "recovery_map",
                  "recovery_rebuild", "recovery_state", "recovery_commit", "promoted")
KILL_POINT = re.compile(r"iter=\d+|" + "|".join(RUNTIME_POINTS))

_RECOVERED = re.compile(r"jacobi3d: recovered at iteration (\d+): failed nodes ([\d,]*); attempts (\d+); "
                        r"times ms agree ([\d.]+) map ([\d.]+) rebuild ([\d.]+) state ([\d.]+) "
                        r"commit ([\d.]+) total ([\d.]+)")
_DONE = re.compile(r"jacobi3d: done: (\d+) iterations, (\d+)\^3 per rank, checksum (0x[0-9a-f]+)")
_ERROR = re.compile(r"jacobi3d: (.*)")


@dataclass
class Recovery:
    """One recovery as reported by logical rank 0; times in milliseconds."""

    resume_iteration: int
    failed: list[int]
    attempts: int
    times: dict[str, float]


@dataclass
class StencilRun:
    returncode: int
    stdout: str
    stderr: str
    checksum: str | None
    recoveries: list[Recovery] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    killed: dict[int, str] = field(default_factory=dict)


def build_library(prefix: Path) -> Path:
    """libsliding.so (the runtime and the substitution core) built with this build's mpicc.

    It lives in ``<cache>/sliding/<prefix name>/`` and is rebuilt when a source,
    a flag or the Open MPI build changes. Applications compile with
    ``-I sliding/runtime/include`` and link with :func:`link_flags` (``ftslide env``
    prints both).
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


def parse_kill(text: str) -> tuple[int, str]:
    """``NODE@POINT`` or ``NODE@ITER`` (a bare number means the start of that iteration)."""
    node, _, point = text.partition("@")
    if point.isdigit():
        point = f"iter={point}"
    if not node.isdigit() or not KILL_POINT.fullmatch(point):
        raise FtslideError(f"invalid kill {text!r}: use NODE@ITERATION (2@12) or NODE@POINT with POINT one of "
                           f"iter=I, {', '.join(RUNTIME_POINTS)}")
    return int(node), point


def runtime_methods() -> tuple[CEnum, ...]:
    """The methods a run can use: those that keep one rank per node (a process cannot run two)."""
    return tuple(m for m in methods() if m.one_rank_per_node)


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
    """Run the example with SIGKILL at the named (node, point) pairs (mpi.MpirunTimeout if it hangs);
    ``env`` adds to the launch's environment, ``mpirun_options`` go to mpirun, and ``wrap`` turns
    the mpirun argv into the one to run (mpi.run)."""
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


def parse(returncode: int, stdout: str, stderr: str) -> StencilRun:
    done = _DONE.search(stdout)
    out = StencilRun(returncode, stdout, stderr, done[3] if done else None)
    for match in _RECOVERED.finditer(stdout):
        names = ("agree", "map", "rebuild", "state", "commit", "total")
        out.recoveries.append(Recovery(int(match[1]), [int(x) for x in match[2].split(",") if x],
                                       int(match[3]), {k: float(v) for k, v in zip(names, match.groups()[3:])}))
    out.errors = sorted({m[1] for m in _ERROR.finditer(stderr)})
    for match in re.finditer(r"ftslide: rank (\d+) killed at (\S+)", stderr):
        out.killed[int(match[1])] = match[2]
    return out
