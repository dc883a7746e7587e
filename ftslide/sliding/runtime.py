"""Build and run the runtime's example applications on a node grid: the resilient Jacobi stencil
(``sliding/examples/jacobi3d.{c,f90,py}``, a 2D or 3D grid) and the 2D heat stencil
(``sliding/examples/heat2d.{c,f90}``, a 2D grid only, its field not periodic even on a torus).

The example links the sliding runtime (``sliding/runtime``) and the substitution core
(``sliding/core``) from source with the build's mpicc: in C, in Fortran (with the module
``sliding/fortran``, by the build's mpifort) or in Python (numpy and the build's mpi4py, through the
binding ``sliding/python/sliding.py``); the three print the same lines and the same checksum. K
MPI processes run per node of the grid, spares included (K = 1 unless told: one process per node,
process n on node n); with K > 1 each node runs a block of the rank grid (``core.make_block``),
and on one machine every K consecutive processes form a node (``jacobi3d --emulate-nodes K``),
unless the nodes are the processes that share memory (an emulated cluster). A program prints one
``APP: EVENT KEY=VALUE ...`` line per event (``jacobi3d: done ...``, ``heat2d: recovered ...``; the
examples' header comments list them, the same protocol for both), which :func:`parse` reads.
jacobi3d takes the cube's side N and the checkpoint interval after ITERATIONS, heat2d the grid's NX
NY and the interval as the runtime's option ``--checkpoint-every``; heat2d also checks its own
result and says ``valid=yes|no`` on its done line (exit 4 when not).

The runtime's names are its own (``sliding/runtime/include/sliding_names.h``): :data:`Point`, its
kill points, and :data:`Status`, its status codes, are enumerations read from
``libslidenames.so`` the first time one of them is used (``runtime.Point``).

Typical use::

    prefix = require_prefix()
    run(prefix, "torus:3x2x2", "x:1", "hybrid", [(1, iteration_point(12))]).checksum
    run(prefix, "torus:3x2x2", "x:1", "hybrid", program=build(prefix, "fortran"))
    run(prefix, "mesh:4x3", "x:1", "hybrid", [(4, iteration_point(15))], app="heat2d",
        program=build(prefix, "c", "heat2d")).valid

Errors and cost: FtslideError (one line) for a bad layout, method, kill or application (heat2d on a
grid that is not 2D, in a language it is not written in) before anything starts,
a failed compile, or (Python) an mpi4py that is not built against the project's Open MPI; ``run``
raises ``mpi.MpirunTimeout`` for a run that hangs. The builds cost a
compile per change of the sources (seconds), ``run`` one ``mpirun`` (about a second for 12
processes), the rest O(size of their input) once the names are read (one ``dlopen``).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..errors import FtslideError
from ..toolchain import mpi, pympi
from ..toolchain.native import REPO, CEnum, bind_library, c_enum
from ..toolchain.ompi import cache_root
from .core import (SlideError, block_domains, block_text, buddy_shift, groups, make_block, make_layout, methods,
                   parse_domain_shape, parse_method, parse_redundancy)

# Point and Status are public too, but read from the library at first use (module __getattr__).
__all__ = ["Recovery", "RunError", "StencilRun", "NodeOptions", "LANGUAGES", "APPS", "app_languages",
           "check_app", "default_size", "build_library", "link_flags", "build", "python_environment",
           "runtime_methods", "runtime_points", "iteration_point", "parse_kill", "node_count", "node_options",
           "check_node_coords", "node_domains", "CheckpointOptions", "checkpoint_options", "run", "events", "parse",
           "HEADER_DIR"]

SLIDING = REPO / "sliding"
LIBRARY_SOURCES = (*sorted((SLIDING / "runtime" / "src").glob("*.c")), *sorted((SLIDING / "core" / "src").glob("*.c")))
LIBRARY_INCLUDE_DIRS = (SLIDING / "core" / "include", SLIDING / "core" / "src", SLIDING / "runtime" / "src")
# ISA-L, the erasure code of the checkpoints (sliding_erasure.c; Debian's libisal-dev, ftslide doctor checks it).
LIBRARY_LINK = ("-lisal",)
HEADER_DIR = SLIDING / "runtime" / "include"  # sliding.h: all an application includes
FLAGS = ("-O2", "-Wall", "-Wextra", "-Wshadow", "-Werror")
FORTRAN_FLAGS = ("-O2", "-Wall", "-Werror")  # mpifort's: the module, its C side and the program
FORTRAN_MODULE = (SLIDING / "fortran" / "sliding.f90", SLIDING / "fortran" / "sliding_fortran.c")
PYTHON_BINDING_DIR = SLIDING / "python"  # sliding.py
LANGUAGES = ("c", "fortran", "python")  # the examples' languages, jacobi3d.c, .f90 and .py
SOURCE_SUFFIX = {"c": ".c", "fortran": ".f90", "python": ".py"}
APPS = ("jacobi3d", "heat2d")  # the example applications, sliding/examples/APP.{c,f90,py}
EXAMPLES = SLIDING / "examples"
# The problem size an application takes before ITERATIONS (jacobi3d: N, the cube's side; heat2d: NX NY)
# and its default here: jacobi3d's is smaller than its program's own, heat2d's is its program's own
# (tiles that do not divide the domain).
DEFAULT_SIZE = {"jacobi3d": (8,), "heat2d": (50, 37)}
# The exit status of an application whose own check of its result failed (heat2d: valid=no, exit 4).
INVALID_EXIT = {"heat2d": 4}
# Applications that take the checkpoint interval as the runtime's option (sliding_create_args), not as
# their last argument.
CHECKPOINT_OPTION = {"heat2d": "--checkpoint-every"}
# The erasure code's chunks per code word (sliding_erasure.h, SLIDING_CODE_MAX_CHUNKS): groups of up to 2G - 1.
CODE_MAX_CHUNKS = 255
# Whether an application's halos wrap around a torus grid (heat2d's field is not periodic on any grid).
HALOS_WRAP = {"jacobi3d": True, "heat2d": False}

# sliding_kill.c's "killed at" line, "ftslide: node 4 killed at checkpoint#3 (world ranks 8,9; logical
# ranks 6,7)": node and point (as the FTSLIDE_KILL entry names it) only, since another process's output
# may cut the rest of the line.
_KILLED = re.compile(r"ftslide: node (\d+) killed at (\S+)")
_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "sliding_point_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sliding_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sliding_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "sliding_nodes_read": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int32),
                                          ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p),
                                          ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32)]),
    "sliding_nodes_read_domains": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int32),
                                                  ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p),
                                                  ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32),
                                                  ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32)]),
}


@lru_cache(maxsize=None)
def _lib() -> ctypes.CDLL:
    return bind_library("slidenames", _SIGNATURES, {}, "ftslide/sliding/runtime.py")


@lru_cache(maxsize=None)
def _names() -> dict[str, type[CEnum]]:
    lib = _lib()
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
    moved_bytes: int = 0   # checkpointed state sent node to node, and to re-establish the buddy copies
    buddy_bytes: int = 0
    guests: int = 0        # out of spares, degraded: guests running after it (two blocks on a node)


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
    recovery, each distinct error, where the kill points stopped nodes (node -> point), and the
    program's own check of its result (heat2d's ``valid=yes|no``, False also when it exits with
    INVALID_EXIT; None where the program does not check)."""

    returncode: int
    stdout: str
    stderr: str
    checksum: str | None
    recoveries: list[Recovery] = field(default_factory=list)
    errors: list[RunError] = field(default_factory=list)
    killed: dict[int, str] = field(default_factory=dict)
    valid: bool | None = None


def build_library(prefix: Path) -> Path:
    """libsliding.so (the runtime and the substitution core) built with this build's mpicc.

    It lives in ``<cache>/sliding/<prefix name>-<hash of the prefix's path>/`` (two prefixes
    of one name keep a library each) and is rebuilt when a source,
    a header, a flag, a library it links (LIBRARY_LINK: ISA-L) or the Open MPI
    build changes. Applications compile with
    ``-I sliding/runtime/include`` and link with :func:`link_flags` (``ftslide env``
    prints both). Raises FtslideError if the compiler fails. Cost: seconds when it
    compiles, a hash of the sources otherwise.
    """
    return mpi.compile_program(prefix, LIBRARY_SOURCES, flags=(*FLAGS, "-fPIC", "-shared",
                               "-Wl,-soname,libsliding.so"), include_dirs=(HEADER_DIR, *LIBRARY_INCLUDE_DIRS),
                               link=LIBRARY_LINK, output=cache_root() / "sliding" / prefix_folder(prefix) / "libsliding.so")


def prefix_folder(prefix: Path) -> str:
    """The cache folder of what is built against ``prefix``: its name and a hash of its resolved path."""
    return f"{prefix.name}-{hashlib.sha256(str(prefix.resolve()).encode()).hexdigest()[:8]}"


def link_flags(library: Path) -> list[str]:
    """Linker arguments for libsliding.so at ``library``."""
    return [f"-L{library.parent}", "-lsliding", f"-Wl,-rpath,{library.parent}"]


def app_languages(app: str) -> tuple[str, ...]:
    """The languages of LANGUAGES that application ``app`` is written in here (a source beside the
    others in ``sliding/examples``: heat2d has no Python version). FtslideError for an unknown app."""
    if app not in APPS:
        raise FtslideError(f"unknown application {app!r}: choose {', '.join(APPS)}")
    return tuple(lang for lang in LANGUAGES if (EXAMPLES / f"{app}{SOURCE_SUFFIX[lang]}").is_file())


def check_app(app: str, lang: str = "c", grid: str | None = None) -> None:
    """Whether ``app`` can run in ``lang`` (and on ``grid`` if given): one-line FtslideError before
    anything starts otherwise (heat2d runs on 2D grids only, as the program itself says)."""
    if lang not in LANGUAGES:
        raise FtslideError(f"unknown language {lang!r}: choose {', '.join(LANGUAGES)}")
    languages = app_languages(app)
    if lang not in languages:
        raise FtslideError(f"{app} is not written in {lang}: choose {', '.join(languages) or 'none'}")
    if app == "heat2d" and grid is not None:
        layout = make_layout(grid, "")  # a bad grid: the core's own one-line error
        if len(layout.grid.sizes) != 2:
            raise FtslideError(f"heat2d runs on a 2D grid such as mesh:4x3, not {grid}: its field is "
                               "two-dimensional")


def default_size(app: str) -> tuple[int, ...]:
    """The problem size ``run`` gives ``app`` unless told (DEFAULT_SIZE)."""
    if app not in DEFAULT_SIZE:
        raise FtslideError(f"unknown application {app!r}: choose {', '.join(APPS)}")
    return DEFAULT_SIZE[app]


def build(prefix: Path, lang: str = "c", app: str = "jacobi3d") -> list[str]:
    """Application ``app`` (one of APPS, jacobi3d unless told) in ``lang`` (one of LANGUAGES) for
    this build, as the argv that runs it: the binary linked with libsliding in C and Fortran
    (compiled once per source change), ``pympi.interpreter(prefix)`` and ``APP.py`` in Python (the
    environment's Python, checked to have an mpi4py built against ``prefix``, or for another Open MPI a
    side environment in the cache, made at the first use).
    FtslideError for an application not written in ``lang`` (app_languages)."""
    check_app(app, lang)
    source = EXAMPLES / f"{app}{SOURCE_SUFFIX[lang]}"
    if lang == "python":
        return [pympi.interpreter(prefix), str(source)]
    library = build_library(prefix)
    if lang == "c":
        return [str(mpi.compile_program(prefix, [source], name=app, flags=FLAGS,
                                        include_dirs=(HEADER_DIR,), link=link_flags(library)))]
    return [str(mpi.compile_program(prefix, [*FORTRAN_MODULE, source], name=f"{app}-f",
                                    flags=FORTRAN_FLAGS, include_dirs=(HEADER_DIR,), link=link_flags(library)))]


def python_environment(prefix: Path) -> dict[str, str]:
    """What a Python program of the runtime needs in its environment: the binding and the kill
    points on PYTHONPATH, SLIDING_LIBRARY naming libsliding (``ftslide env`` prints the same)."""
    path = [str(PYTHON_BINDING_DIR), str(mpi.PYTHON_KILLPOINT_DIR)]
    return {"PYTHONPATH": os.pathsep.join(path), "SLIDING_LIBRARY": str(build_library(prefix))}


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
    """``NODE@POINT`` or ``NODE@ITER`` (a bare number means the start of that iteration), either
    with ``#N`` for the Nth time the node reaches the point (``1@checkpoint#3``, ``2@12#2``: the
    second start of iteration 12, after a rollback); without it, the first time.

    Returns (node, point), the point with ``#N`` if given (N without leading zeros), as the
    "killed at" line will name it. Raises FtslideError naming the points for anything else.
    """
    node, _, point = text.partition("@")
    point, hash_, occurrence = point.partition("#")
    if point.isdigit():
        point = iteration_point(int(point))
    name, equals, number = point.partition("=")
    if equals:
        valid = point == iteration_point(int(number)) if number.isdigit() else False
    else:
        valid = point in runtime_points()
    if hash_:
        valid = valid and occurrence.isascii() and occurrence.isdigit() and int(occurrence) >= 1
    if not node.isdigit() or not valid:
        raise FtslideError(f"invalid kill {text!r}: use NODE@ITERATION (2@12) or NODE@POINT with POINT one of "
                           f"{_names()['Point'].ITER.label}=I, {', '.join(runtime_points())}; add #N for the "
                           "Nth time the node reaches it (1@checkpoint#3, N >= 1)")
    return int(node), point + (f"#{int(occurrence)}" if hash_ else "")


def node_count(grid: str, spares: str, method: str) -> int:
    """Nodes of the grid, spares included; raises FtslideError on a bad layout or method."""
    if not parse_method(method).one_rank_per_node:
        raise FtslideError(f"method {method!r} cannot run: choose {', '.join(m.label for m in runtime_methods())} "
                           f"({method} puts several ranks on one node, which one process per node cannot run: "
                           "it is a simulation baseline)")
    return make_layout(grid, spares).nodes


@dataclass(frozen=True)
class NodeOptions:
    """How a run's processes form nodes: ``ranks_per_node`` (K) processes on each, running a ``block``
    of the rank grid (None: the runtime's default split of K), nodes of ``emulate`` consecutive
    processes on one machine or, if False, the processes that share memory (an emulated cluster's
    namespaces), placed on the grid by the ``coords`` file (None: in the order of their lowest rank).
    The default is one process per node, the runtime's original model."""

    ranks_per_node: int = 1
    block: tuple[int, ...] | None = None
    emulate: bool = True
    coords: Path | None = None
    sizes: tuple[int, ...] = ()  # the block in effect (``block``, or the runtime's default split of K)

    def program_options(self) -> list[str]:
        """The examples' options for these nodes (none for one process per node); jacobi3d and heat2d
        take the same."""
        out: list[str] = []
        if self.block is not None:
            out += ["--block", block_text(self.block)]
        if self.ranks_per_node > 1 and self.emulate:
            out += ["--emulate-nodes", str(self.ranks_per_node)]
        if self.coords is not None:
            out += ["--node-coords", str(self.coords)]
        return out


def node_options(grid: str, spares: str, ranks_per_node: int = 1, block: str | None = None,
                 emulate: bool = True, coords: str | Path | None = None,
                 names: Sequence[str] | None = None) -> NodeOptions:
    """Check K, the block and the coordinate file before anything starts; the runtime's own checks
    (``core.make_block``, ``sliding_nodes_read``), one line each. ``names`` are the nodes' names as
    the job will know them (default: the node keys 0..nodes-1 of ``--emulate-nodes``). Raises
    FtslideError. Cost O(nodes) and one read of the file."""
    layout = make_layout(grid, spares)
    sizes = make_block(layout, ranks_per_node, block)
    path = None
    if coords is not None:
        path = Path(coords)
        check_node_coords(path, layout, names if names is not None else [str(n) for n in range(layout.nodes)])
    return NodeOptions(ranks_per_node, sizes if block is not None else None, emulate, path, sizes)


@dataclass(frozen=True)
class CheckpointOptions:
    """How a run keeps its checkpoints (sliding_create_info's keys; None: the runtime's default):
    the ``redundancy`` policy (``buddy``, ``parity:G``, ``rs:G,M``), failure ``domains`` as a box of
    the node grid (``2x2x1``), the file level's ``directory`` and ``file_every`` (every Nth committed
    checkpoint to files), and whether the run goes on ``degrade``d when spares run out (guests: two
    blocks on a node) instead of ending with ERR_NO_SPARE. The default is the runtime's: buddy copies,
    no domains, no files, no degrading."""

    redundancy: str | None = None
    domains: str | None = None
    directory: Path | None = None
    file_every: int | None = None
    degrade: bool = False

    def program_options(self) -> list[str]:
        """The examples' options for these checkpoints (none for the runtime's defaults); jacobi3d and
        heat2d take the same (sliding_create_args)."""
        out: list[str] = []
        if self.redundancy is not None:
            out += ["--redundancy", self.redundancy]
        if self.domains is not None:
            out += ["--domains", self.domains]
        if self.directory is not None:
            out += ["--checkpoint-dir", str(self.directory)]
        if self.file_every is not None:
            out += ["--file-every", str(self.file_every)]
        if self.degrade:
            out += ["--on-no-spare", "degrade"]
        return out

    def with_directory(self, directory: Path | None) -> "CheckpointOptions":
        """The same options writing the file level into ``directory`` (None: no file level)."""
        return CheckpointOptions(self.redundancy, self.domains, directory, self.file_every, self.degrade)


def checkpoint_options(grid: str, spares: str, redundancy: str | None = None, domains: str | None = None,
                       directory: str | Path | None = None, file_every: int | None = None,
                       nodes_as: "NodeOptions | None" = None, need_directory: bool = True,
                       degrade: bool = False) -> CheckpointOptions:
    """Check a run's checkpoint options before anything starts, as the runtime will
    (SLIDING_ERR_REDUNDANCY, SLIDING_ERR_CHECKPOINT_DIR), one line each: the policy
    (core.parse_redundancy: M >= G, G < 2), a group larger than the node ranks, the domain box
    (core.parse_domain_shape), domains given both as a box and by the coordinate file of
    ``nodes_as``, domains in which no placement survives the loss of one (core.groups or
    core.buddy_shift on the first map), ``file_every`` below 1, and (``need_directory``) a
    directory that is not a writable folder. Raises FtslideError. Cost O(ranks log ranks) and a
    read of the coordinate file."""
    layout = make_layout(grid, spares)
    policy = parse_redundancy(redundancy) if redundancy is not None else None
    if policy is not None and policy.kind != "buddy" and policy.group > layout.ranks:
        raise FtslideError(f"--redundancy {redundancy}: a group of {policy.group} nodes is larger than the "
                           f"{layout.ranks} nodes holding ranks on {grid} with spares {spares}: choose G <= "
                           f"{layout.ranks}")
    if policy is not None and policy.kind != "buddy" and 2 * policy.group - 1 > CODE_MAX_CHUNKS:
        raise FtslideError(f"--redundancy {redundancy}: groups of up to {2 * policy.group - 1} nodes exceed the "
                           f"erasure code's {CODE_MAX_CHUNKS} chunks: choose G <= {(CODE_MAX_CHUNKS + 1) // 2}")
    domain_of_node = None
    if domains is not None:
        if nodes_as is not None and nodes_as.coords is not None and \
                node_domains(nodes_as.coords, layout, [str(n) for n in range(layout.nodes)]) is not None:
            raise FtslideError(f"--domains {domains}: the node coordinate file {nodes_as.coords} already names "
                               "domains (domain=LABEL): give one or the other")
        domain_of_node = block_domains(layout, parse_domain_shape(layout, domains))[0]
    elif nodes_as is not None and nodes_as.coords is not None:
        found = node_domains(nodes_as.coords, layout, [str(n) for n in range(layout.nodes)])
        domain_of_node = found[0] if found is not None else None
    if domain_of_node is not None:
        where = f"--domains {domains}" if domains is not None else f"the domains of {nodes_as.coords}"
        initial = layout.initial_map()
        try:
            if policy is None or policy.kind == "buddy":
                if layout.ranks > 1:
                    buddy_shift(layout, initial, domain_of_node)
            else:
                groups(layout, initial, domain_of_node, policy.group, policy.lose)
        except SlideError as exc:
            raise FtslideError(f"{where} with {policy or 'buddy'}: {exc}") from None
    if file_every is not None and (isinstance(file_every, bool) or not isinstance(file_every, int)
                                   or file_every < 1):
        raise FtslideError(f"--file-every must be a count of at least 1, not {file_every!r}")
    path = Path(directory) if directory is not None else None
    if path is not None and need_directory:
        if not path.is_dir():
            raise FtslideError(f"--checkpoint-dir {path}: no such folder: create it first")
        if not os.access(path, os.W_OK | os.X_OK):
            raise FtslideError(f"--checkpoint-dir {path}: the folder is not writable: choose another")
    return CheckpointOptions(redundancy, domains, path, file_every, degrade)


def check_node_coords(path: Path, layout, names: Sequence[str]) -> list[int]:
    """The grid node of each named node according to the coordinate file at ``path``
    (sliding_nodes.h, read by the runtime's own C reader; a file with ``domain=LABEL`` fields reads
    too). Raises FtslideError naming the line or the node at fault. Cost O(file size + nodes^2)."""
    return _read_node_coords(path, layout, names)[0]


def node_domains(path: Path, layout, names: Sequence[str]) -> tuple[list[int], int] | None:
    """The failure domains the coordinate file at ``path`` gives: ``(domain_of_node, ndomains)`` with
    ``domain_of_node[n]`` the domain of grid node id ``n`` (labels numbered in the order they first
    appear), or None when its lines have no ``domain=LABEL`` field. Checks the file as
    :func:`check_node_coords` does (sliding_nodes_read_domains()); raises FtslideError naming the line
    or the node at fault. Cost O(file size + nodes^2 + nodes x domains)."""
    _, domains, count = _read_node_coords(path, layout, names)
    return (domains, count) if count > 0 else None


def _read_node_coords(path: Path, layout, names: Sequence[str]) -> tuple[list[int], list[int], int]:
    sizes = (ctypes.c_int32 * 3)(*(list(layout.grid.sizes) + [1] * (3 - len(layout.grid.sizes))))
    cnames = (ctypes.c_char_p * len(names))(*(n.encode() for n in names))
    out = (ctypes.c_int32 * len(names))()
    domains = (ctypes.c_int32 * len(names))()
    count = ctypes.c_int32(0)
    where = ctypes.c_int32(0)
    rc = _lib().sliding_nodes_read_domains(str(path).encode(), len(layout.grid.sizes), sizes, len(names), cnames,
                                           out, domains, ctypes.byref(count), ctypes.byref(where))
    if rc != 0:
        message = _lib().sliding_strerror(rc).decode()
        if where.value > 0:
            raise FtslideError(f"node coordinate file {path}, line {where.value}: {message}"
                               f"{_domain_hint(path)}")
        if where.value < 0:
            raise FtslideError(f"node coordinate file {path} does not name node {names[-where.value - 1]!r}: "
                               f"{message}")
        raise FtslideError(f"cannot read node coordinate file {path}: give a readable file ({message})")
    return list(out), list(domains), count.value


def _domain_hint(path: Path) -> str:
    """What a file with domain fields must also respect (the runtime's message predates them)."""
    try:
        uses_domains = "domain=" in Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "; a domain=LABEL field (a non-empty label) ends every line or none" if uses_domains else ""


def run(prefix: Path, grid: str, spares: str, method: str, kills: Sequence[tuple[int, str]] = (),
        n: int = 8, iterations: int = 40, checkpoint_every: int = 5, timeout: float = 120,
        program: Sequence[str] | None = None, stacks_on_timeout: bool = False,
        env: dict[str, str] | None = None, wrap: Callable[[list[str]], list[str]] | None = None,
        mpirun_options: Sequence[str] = (), nodes_as: NodeOptions = NodeOptions(), app: str = "jacobi3d",
        size: Sequence[int] | None = None, checkpoints: CheckpointOptions = CheckpointOptions()) -> StencilRun:
    """Run example ``app`` with SIGKILL at the named (node, point) pairs; each kill takes the whole node.

    ``size`` is the problem size the application takes before ITERATIONS (jacobi3d: N, default
    ``(n,)``; heat2d: NX NY, default DEFAULT_SIZE). ``program`` is the argv of :func:`build` for
    ``app`` (default: its C program); a Python one gets
    :func:`python_environment`, exported to every node with mpirun's ``-x``. ``nodes_as`` says how
    many processes run per node and how they form nodes (one per node unless told), ``checkpoints``
    how the runtime keeps its checkpoints (checkpoint_options checks them; the runtime's defaults
    unless told); ``env`` adds to
    the launch's environment, ``mpirun_options`` go to mpirun, and ``wrap`` turns the mpirun argv
    into the one to run (mpi.run). Returns what :func:`parse` reads.
    Raises FtslideError for a bad layout, method, kill, size or application (check_app) before
    anything starts, and mpi.MpirunTimeout if the run outlives ``timeout`` seconds.
    """
    check_app(app, grid=grid)
    size = tuple(size) if size is not None else (n,) if app == "jacobi3d" else default_size(app)
    if len(size) != len(default_size(app)) or not all(isinstance(x, int) and x >= 1 for x in size):
        raise FtslideError(f"{app} takes {len(default_size(app))} sizes of at least 1, not {list(size)}")
    nodes = node_count(grid, spares, method)
    for node, point in kills:
        if node >= nodes:
            raise FtslideError(f"kill {node}@{point}: the grid has nodes 0..{nodes - 1}")
    if len({node for node, _ in kills}) != len(kills):
        raise FtslideError("each node can be killed once")
    program = list(program or build(prefix, app=app))
    env = dict(env or {})
    if pympi.is_python(program[0]):
        python = python_environment(prefix)
        env.update(python)
        mpirun_options = [*mpirun_options, *(arg for name in python for arg in ("-x", name))]
    if kills:
        env["FTSLIDE_KILL"] = ",".join(f"{node}@{point}" for node, point in kills)
    runtime_options = [*nodes_as.program_options(), *checkpoints.program_options()]
    if app in CHECKPOINT_OPTION:
        options, last = [*runtime_options, CHECKPOINT_OPTION[app], str(checkpoint_every)], []
    else:
        options, last = runtime_options, [str(checkpoint_every)]
    result = mpi.run(prefix, [*mpirun_options, "-np", str(nodes * nodes_as.ranks_per_node), *program,
                              *options, grid, spares, method, *map(str, size), str(iterations), *last],
                     timeout=timeout, env=env, stacks_on_timeout=stacks_on_timeout, wrap=wrap)
    return parse(result.returncode, result.stdout, result.stderr, app)


def events(text: str, app: str = "jacobi3d") -> Iterator[tuple[str, dict[str, str]]]:
    """(event, fields) of every ``APP: EVENT KEY=VALUE ...`` line of ``text`` (APP: ``app``, the
    program's name: ``jacobi3d: done ...``), in order.

    Values hold no blank but the last one's, ``message``, which runs to the end of the line.
    Cost O(len(text)).
    """
    tag = f"{app}: "
    for line in text.splitlines():
        start = line.find(tag)  # not always at the start: the processes' outputs interleave
        if start < 0:
            continue
        event, *words = line[start + len(tag):].split(" ")
        fields: dict[str, str] = {}
        for k, word in enumerate(words):
            key, _, value = word.partition("=")
            if key == "message":
                fields[key] = " ".join([value, *words[k + 1:]])
                break
            if key:
                fields[key] = value
        yield event, fields


def parse(returncode: int, stdout: str, stderr: str, app: str = "jacobi3d") -> StencilRun:
    """A run's outcome from the lines the processes printed: the events of application ``app``
    (``jacobi3d: done ...``; heat2d's done line also says ``valid=yes|no``), and the runtime's
    ``ftslide: node N killed at POINT (world ranks ...; logical ranks ...)`` lines (sliding_kill.c),
    POINT as the kill named it (``checkpoint#3``)."""
    out = StencilRun(returncode, stdout, stderr, None)
    for event, f in events(stdout, app):
        if event == "recovered":
            times = {key[: -len("_ms")]: float(value) for key, value in f.items() if key.endswith("_ms")}
            out.recoveries.append(Recovery(int(f["iteration"]), [int(x) for x in f["failed"].split(",") if x],
                                           int(f["attempts"]), times, int(f.get("moved_bytes", 0)),
                                           int(f.get("buddy_bytes", 0)), int(f.get("guests", 0))))
        elif event == "done":
            out.checksum = f["checksum"]
            if "valid" in f:
                out.valid = f["valid"] == "yes"
    if app in INVALID_EXIT and returncode == INVALID_EXIT[app]:
        out.valid = False
    status = _names()["Status"].__members__
    errors = {RunError(f.get("step", "?"), status.get(f.get("status", "")), f.get("message", ""))
              for event, f in events(stderr, app) if event == "error"}
    out.errors = sorted(errors, key=str)
    for match in _KILLED.finditer(stderr):  # anywhere in a line: the processes' outputs interleave
        out.killed[int(match[1])] = match[2]  # a node's K processes may each print it: the same point
    return out
