"""ctypes binding of the sliding core (``sliding/core``, ``libslidecore.so``).

Every algorithm lives in C (``sliding/core/include/slide_core.h`` states the
rules); this module only converts arguments and results and turns the C status
codes into :class:`SlideError`, a :class:`~ftslide.errors.FtslideError` whose
message is one line saying what went wrong and what to do.

The names of the methods, of the status codes and of routed's choices are the
core's: :data:`Method`, :data:`Status` and :data:`ChoiceKind` are enumerations
read from the library the first time one of them is used (``core.Method``;
importing this module loads nothing).

Typical use::

    layout = make_layout("mesh:4x4", "x:1")
    mapping = compute_map(layout, "slide1d", [5])   # rank -> node
    stats = measure(layout, mapping)                # hops, link loads

Cost: the first call builds ``libslidecore.so`` with CMake if it is missing or
out of date (well under a second when it is up to date); every function then
costs what its C counterpart costs, plus O(size of its arguments).
"""

from __future__ import annotations

import ctypes
import math
from array import array
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Sequence

from ..errors import FtslideError
from ..toolchain.native import CEnum, bind_library, c_enum
from .topology import Topology, _CTopo, parse_topology

# Method, Status and ChoiceKind are public too, but read from the library at first use (module
# __getattr__): a star import loads nothing.
__all__ = ["SlideError", "Grid", "Spares", "Layout", "Metrics", "Choice",
           "methods", "parse_method", "strerror", "parse_grid", "parse_spares", "make_layout",
           "parse_block", "default_block", "make_block", "block_text", "rank_nodes",
           "stencil_messages", "compute_map", "explain", "measure", "Redundancy", "parse_redundancy",
           "parse_domain_shape", "block_domains", "Groups", "groups", "buddy_shift", "Degraded", "degrade_map",
           "DIM_NAMES", "HOPS_HIST"]

DIM_NAMES = "xyz"
HOPS_HIST = 16

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1


class SlideError(FtslideError):
    """A status code from the sliding core, with a one-line message.

    ``code`` is the C status (a value of :data:`Status`); for mapping errors
    ``index`` is the position in the failed list that could not be handled,
    ``mapping`` the rank-to-node map for the failures before it and, for a
    method that chooses, ``choices`` its choices for them (``None`` otherwise).
    """

    def __init__(self, message: str, code: int, index: int | None = None,
                 mapping: list[int] | None = None, choices: list[Choice] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.index = index
        self.mapping = mapping
        self.choices = choices


# ---- C structures (mirrors of slide_core.h, sizes checked at load) -----------

class _CGrid(ctypes.Structure):
    _fields_ = [("ndims", ctypes.c_int32), ("size", ctypes.c_int32 * 3),
                ("periodic", ctypes.c_int32)]


class _CSpares(ctypes.Structure):
    _fields_ = [("ndims", ctypes.c_int32), ("dim", ctypes.c_int32 * 2),
                ("count", ctypes.c_int32 * 2), ("block", ctypes.c_int32), ("per_block", ctypes.c_int32)]


class _CLayout(ctypes.Structure):
    _fields_ = [("grid", _CGrid), ("spares", _CSpares), ("spare_count", ctypes.c_int32 * 3),
                ("logical", ctypes.c_int32 * 3), ("stride", ctypes.c_int32 * 3),
                ("nodes", ctypes.c_int32), ("ranks", ctypes.c_int32), ("net", _CTopo),
                ("expect", ctypes.c_int32), ("spare_nodes", ctypes.c_int32)]


class _CChoice(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("dim", ctypes.c_int32), ("dir", ctypes.c_int32),
                ("lo", ctypes.c_int32 * 2), ("width", ctypes.c_int32 * 2),
                ("load_max", ctypes.c_int32), ("overloaded", ctypes.c_int32),
                ("spares", ctypes.c_int32), ("moved", ctypes.c_int32),
                ("candidates", ctypes.c_int32), ("hybrid_load_max", ctypes.c_int32),
                ("hybrid_overloaded", ctypes.c_int32), ("direct_load_max", ctypes.c_int32)]


class _CRedundancy(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("group", ctypes.c_int32), ("lose", ctypes.c_int32)]


class _CMetrics(ctypes.Structure):
    _fields_ = [("pairs", ctypes.c_int64), ("hops_sum", ctypes.c_int64),
                ("hops_max", ctypes.c_int32), ("hops_mean", ctypes.c_double),
                ("hops_hist", ctypes.c_int64 * HOPS_HIST), ("link_load_max", ctypes.c_int32),
                ("links_used", ctypes.c_int64), ("links_overloaded", ctypes.c_int64),
                ("ranks_per_node_max", ctypes.c_int32), ("ranks_moved", ctypes.c_int32)]


_P = ctypes.POINTER
_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "slide_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "slide_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "slide_method_name": (ctypes.c_char_p, [ctypes.c_int]),
    "slide_method_one_rank_per_node": (ctypes.c_int, [ctypes.c_int]),
    "slide_method_chooses": (ctypes.c_int, [ctypes.c_int]),
    "slide_choice_kind_name": (ctypes.c_char_p, [ctypes.c_int]),
    "slide_grid_parse": (ctypes.c_int, [ctypes.c_char_p, _P(_CGrid)]),
    "slide_spares_parse": (ctypes.c_int, [ctypes.c_char_p, _P(_CSpares)]),
    "slide_method_parse": (ctypes.c_int, [ctypes.c_char_p, _P(ctypes.c_int)]),
    "slide_layout_init": (ctypes.c_int, [_P(_CLayout), _P(_CGrid), _P(_CSpares)]),
    "slide_node_coords": (None, [_P(_CLayout), ctypes.c_int32, _P(ctypes.c_int32)]),
    "slide_node_index": (ctypes.c_int32, [_P(_CLayout), _P(ctypes.c_int32)]),
    "slide_is_spare": (ctypes.c_int, [_P(_CLayout), ctypes.c_int32]),
    "slide_node_role": (ctypes.c_int, [_P(_CLayout), ctypes.c_int32]),
    "slide_node_role_name": (ctypes.c_char_p, [ctypes.c_int]),
    "slide_hops": (ctypes.c_int32, [_P(_CLayout), ctypes.c_int32, ctypes.c_int32]),
    "slide_initial_map": (None, [_P(_CLayout), _P(ctypes.c_int32)]),
    "slide_map_workspace_bytes": (ctypes.c_size_t, [_P(_CLayout)]),
    "slide_map": (ctypes.c_int, [_P(_CLayout), ctypes.c_int, _P(ctypes.c_int32), ctypes.c_int32,
                                 _P(ctypes.c_int32), ctypes.c_void_p, ctypes.c_size_t,
                                 _P(ctypes.c_int32)]),
    "slide_degrade_workspace_bytes": (ctypes.c_size_t, [_P(_CLayout), ctypes.c_int32]),
    "slide_degrade_max_guests": (ctypes.c_int32, [_P(_CLayout)]),
    "slide_map_degrade": (ctypes.c_int, [_P(_CLayout), ctypes.c_int, _P(ctypes.c_int32), ctypes.c_int32,
                                         _P(ctypes.c_int32), _P(ctypes.c_int32), ctypes.c_int32,
                                         _P(ctypes.c_int32), ctypes.c_void_p, ctypes.c_size_t,
                                         _P(ctypes.c_int32)]),
    "slide_measure_workspace_bytes": (ctypes.c_size_t, [_P(_CLayout)]),
    "slide_measure": (ctypes.c_int, [_P(_CLayout), _P(ctypes.c_int32), ctypes.c_int,
                                     _P(_CMetrics), ctypes.c_void_p, ctypes.c_size_t]),
    "slide_layout_place": (ctypes.c_int, [_P(_CLayout), _P(_CTopo)]),
    "slide_layout_set_expect": (ctypes.c_int, [_P(_CLayout), ctypes.c_int32]),
    "slide_map_explain": (ctypes.c_int, [_P(_CLayout), _P(ctypes.c_int32), ctypes.c_int32,
                                         _P(ctypes.c_int32), ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_size_t, _P(ctypes.c_int32)]),
    "slide_stencil_messages": (ctypes.c_int64, [_P(_CLayout), ctypes.c_int, ctypes.c_int,
                                                _P(ctypes.c_int32), _P(ctypes.c_int32),
                                                ctypes.c_int64]),
    "slide_struct_size": (ctypes.c_size_t, [ctypes.c_int]),
    "slide_block_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int32, _P(ctypes.c_int32)]),
    "slide_block_default": (ctypes.c_int, [ctypes.c_int32, ctypes.c_int32, _P(ctypes.c_int32)]),
    "slide_block_ranks": (ctypes.c_int64, [_P(_CLayout), _P(ctypes.c_int32)]),
    "slide_block_rank_nodes": (ctypes.c_int, [_P(_CLayout), _P(ctypes.c_int32), _P(ctypes.c_int32),
                                              _P(ctypes.c_int32)]),
    "slide_block_stencil_messages": (ctypes.c_int64, [_P(_CLayout), _P(ctypes.c_int32), ctypes.c_int,
                                                      ctypes.c_int, _P(ctypes.c_int32), _P(ctypes.c_int32),
                                                      ctypes.c_int64]),
    "slide_block_measure_workspace_bytes": (ctypes.c_size_t, [_P(_CLayout), _P(ctypes.c_int32)]),
    "slide_block_measure": (ctypes.c_int, [_P(_CLayout), _P(ctypes.c_int32), _P(ctypes.c_int32), ctypes.c_int,
                                           _P(_CMetrics), ctypes.c_void_p, ctypes.c_size_t]),
    "slide_redundancy_parse": (ctypes.c_int, [ctypes.c_char_p, _P(_CRedundancy)]),
    "slide_redundancy_kind_name": (ctypes.c_char_p, [ctypes.c_int]),
    "slide_domain_shape_parse": (ctypes.c_int, [_P(_CLayout), ctypes.c_char_p, _P(ctypes.c_int32)]),
    "slide_domains_block": (ctypes.c_int, [_P(_CLayout), _P(ctypes.c_int32), _P(ctypes.c_int32),
                                           _P(ctypes.c_int32)]),
    "slide_groups": (ctypes.c_int, [_P(_CLayout), _P(ctypes.c_int32), _P(ctypes.c_int32), ctypes.c_int32,
                                    ctypes.c_int32, _P(ctypes.c_int32), _P(ctypes.c_int32), _P(ctypes.c_int32),
                                    _P(ctypes.c_int32)]),
    "slide_buddy_shift": (ctypes.c_int, [_P(_CLayout), _P(ctypes.c_int32), _P(ctypes.c_int32),
                                         _P(ctypes.c_int32)]),
}


@lru_cache(maxsize=None)
def _lib() -> ctypes.CDLL:
    """libslidecore.so (built first if needed) with its API declared."""
    return bind_library("slidecore", _SIGNATURES, {0: _CGrid, 1: _CSpares, 2: _CLayout, 3: _CMetrics,
                                                  6: _CChoice, 7: _CRedundancy}, "ftslide/sliding/core.py")


def strerror(code: int) -> str:
    """The core's one-line message for a status code (``"unknown status"`` for others). Cost O(1)."""
    return str(_lib().slide_strerror(code).decode())


# ---- names of the core ---------------------------------------------------------

class _Method(CEnum):
    @property
    def one_rank_per_node(self) -> bool:
        """Whether every rank keeps a node of its own (all but shrink): what a run of one process
        per node can use, and what needs a spare node per failure."""
        return bool(_lib().slide_method_one_rank_per_node(self) == 1)

    @property
    def chooses(self) -> bool:
        """Whether the method chooses among candidates at each failure (routed): :func:`explain`
        then reports its choices."""
        return bool(_lib().slide_method_chooses(self) == 1)


@lru_cache(maxsize=None)
def _names() -> dict[str, type[CEnum]]:
    lib = _lib()
    return {"Method": c_enum("Method", lib.slide_method_name, _Method),
            "Status": c_enum("Status", lib.slide_status_name),
            "ChoiceKind": c_enum("ChoiceKind", lib.slide_choice_kind_name),
            "Role": c_enum("Role", lib.slide_node_role_name)}


def __getattr__(name: str) -> type[CEnum]:
    """``Method`` (``Method.ROUTED.label == "routed"``), ``Status`` (``Status.ENOSPARE``),
    ``ChoiceKind`` and ``Role`` (what a node is to a layout: rank, spare, unused): the core's
    enumerations, read from the library at first use."""
    if name in ("Method", "Status", "ChoiceKind", "Role"):
        return _names()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _status() -> type[CEnum]:
    return _names()["Status"]


def methods() -> tuple[CEnum, ...]:
    """Every substitution method of the core, in the order of ``slide_method``. Cost O(1) after the
    first call."""
    return tuple(_names()["Method"])


def parse_method(name: str) -> CEnum:
    """The method called ``name`` (exact, lower case): the one place where a method name is checked.

    Returns a member of :data:`Method`. Raises SlideError (code ``Status.EMETHOD``) naming every
    method when there is none of that name. Cost O(1).
    """
    value = ctypes.c_int()
    rc = _lib().slide_method_parse(_text(name, "method"), ctypes.byref(value))
    if rc != 0:
        names = [m.label for m in methods()]
        raise SlideError(f"unknown method '{name}': choose {', '.join(names[:-1])} or {names[-1]}", rc)
    return methods()[value.value]


# ---- grids, spares, layouts --------------------------------------------------

@dataclass(frozen=True)
class Grid:
    """Node grid, spares included. ``sizes`` has 2 or 3 entries (x, y[, z])."""

    sizes: tuple[int, ...]
    periodic: bool

    def __str__(self) -> str:
        return ("torus:" if self.periodic else "mesh:") + "x".join(map(str, self.sizes))

    def _c(self) -> _CGrid:
        sizes = list(self.sizes) + [1] * (3 - len(self.sizes))
        return _CGrid(len(self.sizes), (ctypes.c_int32 * 3)(*sizes), int(self.periodic))


@dataclass(frozen=True)
class Spares:
    """Spare layout: ``(dimension name, count)`` pairs, primary first; ``block``, ``per_block``
    for a spare set (``z:1/16:1``: one spare per block of 16 node ids), 0 for whole planes."""

    dims: tuple[tuple[str, int], ...]
    block: int = 0
    per_block: int = 0

    def __str__(self) -> str:
        planes = ",".join(f"{d}:{k}" for d, k in self.dims) or "none"
        return f"{planes}/{self.block}:{self.per_block}" if self.block else planes

    def _c(self) -> _CSpares:
        dims = [DIM_NAMES.index(d) for d, _ in self.dims] + [-1, -1]
        counts = [k for _, k in self.dims] + [0, 0]
        return _CSpares(len(self.dims), (ctypes.c_int32 * 2)(*dims[:2]),
                        (ctypes.c_int32 * 2)(*counts[:2]), self.block, self.per_block)


def _text(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise SlideError(f"{what} must be a string, not {type(value).__name__}", _status().EINVAL)
    try:
        return value.encode("ascii")
    except UnicodeEncodeError:
        return b"\xff"  # never valid: the parser reports a syntax error


def parse_grid(text: str) -> Grid:
    """Parse ``[torus:|mesh:]AxB[xC]`` (no prefix: torus), e.g. ``mesh:6x6x6``.

    Returns a Grid; raises SlideError (code EGRID_*) naming the grammar. Cost O(len(text)).
    """
    out = _CGrid()
    rc = _lib().slide_grid_parse(_text(text, "grid"), ctypes.byref(out))
    if rc != 0:
        raise SlideError(f"bad grid '{text}': {strerror(rc)}", rc)
    return Grid(tuple(out.size[: out.ndims]), bool(out.periodic))


def parse_spares(text: str) -> Spares:
    """Parse a spare layout ``none``, ``x:1``, ``x:2``, ``x:1,y:1``, ``z:1/16:1`` ...

    Returns Spares; raises SlideError (code ESPARES_*) naming the grammar. Cost O(len(text)).
    """
    out = _CSpares()
    rc = _lib().slide_spares_parse(_text(text, "spare layout"), ctypes.byref(out))
    if rc != 0:
        raise SlideError(f"bad spare layout '{text}': {strerror(rc)}", rc)
    return Spares(tuple((DIM_NAMES[out.dim[i]], out.count[i]) for i in range(out.ndims)),
                  out.block, out.per_block)


@dataclass(frozen=True)
class Layout:
    """A validated grid + spare layout (see slide_core.h for the numbering), and the
    network ``net`` it runs on: node i of the grid runs on host i of ``net``."""

    grid: Grid
    spares: Spares
    logical: tuple[int, ...]
    nodes: int
    ranks: int
    net: Topology
    _c: _CLayout = field(repr=False, compare=False)

    def coords(self, node: int) -> tuple[int, ...]:
        """Coordinates of a node (x, y[, z])."""
        self._check_node(node)
        out = (ctypes.c_int32 * 3)()
        _lib().slide_node_coords(ctypes.byref(self._c), node, out)
        return tuple(out[: len(self.grid.sizes)])

    def node(self, coords: Sequence[int]) -> int:
        """Node id of coordinates (row-major, last dimension fastest)."""
        if len(coords) != len(self.grid.sizes):
            raise SlideError(f"expected {len(self.grid.sizes)} coordinates, got {len(coords)}",
                             _status().EINVAL)
        if not all(_I32_MIN <= int(c) <= _I32_MAX for c in coords):
            raise SlideError(f"coordinates {tuple(coords)} are outside grid {self.grid}", _status().ENODE)
        c = list(map(int, coords)) + [0] * (3 - len(coords))
        node = _lib().slide_node_index(ctypes.byref(self._c), (ctypes.c_int32 * 3)(*c))
        if node < 0:
            raise SlideError(f"coordinates {tuple(coords)} are outside grid {self.grid}", _status().ENODE)
        return int(node)

    @property
    def spare_nodes(self) -> int:
        """Spare nodes of the layout (``nodes - ranks`` unless a spare set leaves nodes unused)."""
        return int(self._c.spare_nodes)

    def is_spare(self, node: int) -> bool:
        self._check_node(node)
        return bool(_lib().slide_is_spare(ctypes.byref(self._c), node))

    def role(self, node: int) -> CEnum:
        """What the node is to the layout: a member of :data:`Role` (rank, spare, unused)."""
        self._check_node(node)
        return _names()["Role"](_lib().slide_node_role(ctypes.byref(self._c), node))

    def hops(self, a: int, b: int) -> int:
        """Hop distance between two nodes of the grid (the methods' notion of near)."""
        self._check_node(a)
        self._check_node(b)
        return int(_lib().slide_hops(ctypes.byref(self._c), a, b))

    def initial_map(self) -> list[int]:
        """Rank-to-node map before any failure."""
        out = (ctypes.c_int32 * self.ranks)()
        _lib().slide_initial_map(ctypes.byref(self._c), out)
        return list(out)

    def _check_node(self, node: int) -> None:
        if not isinstance(node, int) or not 0 <= node < self.nodes:
            raise SlideError(f"node {node!r} is outside grid {self.grid} "
                             f"(node ids 0..{self.nodes - 1})", _status().ENODE)


def make_layout(grid: Grid | str | None, spares: Spares | str, net: Topology | None = None,
                expect: int = 0) -> Layout:
    """Validate a grid and a spare layout, and lay the grid onto a network.

    Parameters
    ----------
    grid : the node grid, spares included (``torus:6x6x6``, ``mesh:4x4``, ...); None for
        ``net`` itself, which must then be a 2D or 3D torus or mesh.
    spares : the spare layout (``x:1``, ``x:1,y:1``, ``none``).
    net : the network the nodes run on, node i on host i (``parse_topology``); None for
        the grid itself, routed x first. On a torus or mesh of the grid's shape node and host
        numbering agree; on another network the grid fills the first hosts.
    expect : routed's spare budget: failures to keep spare nodes for (0: none; see
        slide_layout_set_expect() in slide_core.h).

    Returns a Layout. Grid and Spares objects go through their string form, so the C parser
    checks them exactly as it checks strings. Raises SlideError (one line). Cost O(1).
    """
    if grid is None and net is not None:
        try:
            grid = parse_grid(str(net))
        except SlideError:
            raise SlideError(f"topology {net} is not a 2D or 3D torus or mesh: give the stencil's node "
                             "grid (--grid), e.g. torus:8x8x8", _status().EINVAL) from None
    if not isinstance(grid, (Grid, str)) or not isinstance(spares, (Spares, str)):
        raise SlideError("make_layout takes a Grid (or grid string) and Spares (or spare string)",
                         _status().EINVAL)
    g = parse_grid(str(grid))
    s = parse_spares(str(spares))
    c = _CLayout()
    cg, cs = g._c(), s._c()
    rc = _lib().slide_layout_init(ctypes.byref(c), ctypes.byref(cg), ctypes.byref(cs))
    if rc != 0:
        raise SlideError(f"spare layout '{s}' does not fit grid {g}: {strerror(rc)}", rc)
    if net is None:
        net = parse_topology(str(g))
    elif _lib().slide_layout_place(ctypes.byref(c), ctypes.byref(net._c)) != 0:
        raise SlideError(f"grid {g} has {c.nodes} nodes but topology {net} has only {net.hosts} "
                         f"hosts: use a smaller grid or a larger topology", _status().ETOPO_FIT)
    if isinstance(expect, bool) or not isinstance(expect, int) or \
            _lib().slide_layout_set_expect(ctypes.byref(c), expect) != 0:
        raise SlideError(f"the spare budget must be a count of failures from 0 to the "
                         f"{c.spare_nodes} spare nodes, not {expect!r}", _status().EINVAL)
    return Layout(g, s, tuple(c.logical[: len(g.sizes)]), c.nodes, c.ranks, net, c)


# ---- ranks per node: blocks -----------------------------------------------------

def _c_block(layout: Layout, block: Sequence[int] | None) -> "ctypes.Array[ctypes.c_int32]":
    """The C form of a block (None: one rank per node); SlideError if it does not fit the layout."""
    sizes = list(block) if block is not None else [1] * len(layout.grid.sizes)
    if len(sizes) != len(layout.grid.sizes) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                       for v in sizes):
        raise SlideError(f"block {block!r} needs {len(layout.grid.sizes)} integer sizes for grid {layout.grid}",
                         _status().EBLOCK)
    c = (ctypes.c_int32 * 3)(*(sizes + [1] * (3 - len(sizes))))
    if _lib().slide_block_ranks(ctypes.byref(layout._c), c) < 0:
        raise SlideError(f"block {block_text(sizes)} on grid {layout.grid}: {strerror(_status().EBLOCK)}",
                         _status().EBLOCK)
    return c


def block_text(block: Sequence[int]) -> str:
    """``2x2x1`` for the block (2, 2, 1). Cost O(1)."""
    return "x".join(map(str, block))


def parse_block(text: str, ndims: int) -> tuple[int, ...]:
    """Parse a block of ranks per node, ``AxB`` (2D grid) or ``AxBxC`` (3D), one size >= 1 per dimension.

    Returns the sizes (``ndims`` of them). Raises SlideError (code ``Status.EBLOCK``) naming the
    grammar. Cost O(len(text)).
    """
    out = (ctypes.c_int32 * 3)()
    rc = _lib().slide_block_parse(_text(text, "block"), int(ndims), out)
    if rc != 0:
        raise SlideError(f"bad block '{text}': {strerror(rc)}", rc)
    return tuple(out[:ndims])


def default_block(ranks_per_node: int, ndims: int) -> tuple[int, ...]:
    """The block of ``ranks_per_node`` ranks the runtime takes unless told: the most even split over
    the ``ndims`` dimensions, larger sizes first (2 -> 2x1x1, 4 -> 2x2x1, 8 -> 2x2x2). Raises SlideError
    for a count below 1 or above 2^20. Cost O(ranks_per_node)."""
    out = (ctypes.c_int32 * 3)()
    if isinstance(ranks_per_node, bool) or not isinstance(ranks_per_node, int) or \
            _lib().slide_block_default(ranks_per_node, int(ndims), out) != 0:
        raise SlideError(f"--ranks-per-node must be a count from 1 to 1048576, not {ranks_per_node!r}",
                         _status().EINVAL)
    return tuple(out[:ndims])


def make_block(layout: Layout, ranks_per_node: int, text: str | None = None) -> tuple[int, ...]:
    """The block of ``ranks_per_node`` ranks each node of ``layout`` runs: ``text`` (``2x2x1``) when
    given, which must multiply to ``ranks_per_node``, else :func:`default_block`. Raises SlideError
    (one line) otherwise. Cost O(ranks_per_node)."""
    ndims = len(layout.grid.sizes)
    if text is None:
        block = default_block(ranks_per_node, ndims)
    else:
        block = parse_block(text, ndims)
        product = math.prod(block)
        if product != ranks_per_node:
            raise SlideError(f"block {text} holds {product} rank{'s' if product != 1 else ''} but a node runs "
                             f"{ranks_per_node}: give a block whose sizes multiply to {ranks_per_node}",
                             _status().EBLOCK)
    _c_block(layout, block)
    return block


def rank_nodes(layout: Layout, mapping: Sequence[int], block: Sequence[int] | None = None) -> list[int]:
    """The node of every rank of the rank grid when each node rank of ``mapping`` (a map of
    :func:`compute_map`) runs a ``block`` of ranks: what a hostfile lists, one line per rank
    (slide_block_rank_nodes() in slide_core.h). Raises SlideError for a bad block or map length.
    Cost O(ranks)."""
    cb = _c_block(layout, block)
    if isinstance(mapping, (str, bytes)) or len(mapping) != layout.ranks:
        raise SlideError(f"mapping must list a node for each of the {layout.ranks} node ranks", _status().EINVAL)
    n = _lib().slide_block_ranks(ctypes.byref(layout._c), cb)
    ma = _int32_array(mapping, "mapping entries")
    out = (ctypes.c_int32 * n)()
    _lib().slide_block_rank_nodes(ctypes.byref(layout._c), cb, (ctypes.c_int32 * len(ma)).from_buffer(ma), out)
    return list(out)


def stencil_messages(layout: Layout, stencil_periodic: bool | None = None,
                     dim: int | None = None, block: Sequence[int] | None = None) -> tuple[list[int], list[int]]:
    """(source ranks, destination ranks) of one halo exchange of the 5/7-point stencil:
    every neighbour pair both ways (see slide_measure() in slide_core.h), or only those
    along logical dimension ``dim`` (0 = x). ``stencil_periodic`` None follows the grid.
    With a ``block`` the ranks are those of the rank grid, each node rank running a block
    (slide_block_stencil_messages()). Cost O(ranks)."""
    periodic = -1 if stencil_periodic is None else int(bool(stencil_periodic))
    d = -1 if dim is None else dim
    cb = _c_block(layout, block)
    n = _lib().slide_block_stencil_messages(ctypes.byref(layout._c), cb, periodic, d, None, None, 0)
    if n < 0:
        raise SlideError(f"dimension {dim} is not one of grid {layout.grid}", _status().EINVAL)
    src, dst = (ctypes.c_int32 * max(n, 1))(), (ctypes.c_int32 * max(n, 1))()
    _lib().slide_block_stencil_messages(ctypes.byref(layout._c), cb, periodic, d, src, dst, n)
    return list(src[:n]), list(dst[:n])


def _layout(layout: Layout | tuple[str, str]) -> Layout:
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, tuple) and len(layout) == 2:
        return make_layout(*layout)
    raise SlideError("expected a Layout from make_layout() or a (grid, spares) pair", _status().EINVAL)


def _int32_array(values: Iterable[object], what: str) -> "array[int]":
    out = array("i")
    if out.itemsize != 4:  # pragma: no cover - every Linux/macOS target has 4-byte int
        out = array("l")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise SlideError(f"{what} must be integers, got {v!r}", _status().EINVAL)
        out.append(v if _I32_MIN <= v <= _I32_MAX else -1)
    return out


def _workspace(nbytes: int) -> "ctypes.Array[ctypes.c_uint64]":
    try:
        return (ctypes.c_uint64 * ((nbytes + 7) // 8))()
    except MemoryError:
        raise SlideError(f"not enough memory for the core's {nbytes / 2**20:.0f} MiB workspace: "
                         "the grid is too large for this machine", _status().EINVAL) from None


# ---- mappings ------------------------------------------------------------------

def compute_map(layout: Layout | tuple[str, str], method: CEnum | str,
                failed: Sequence[int]) -> list[int]:
    """Rank-to-node map after the ordered failures ``failed`` (node ids).

    Parameters
    ----------
    layout : a Layout from :func:`make_layout`, or a (grid, spares) pair.
    method : a member of :data:`Method`, or its name (checked by :func:`parse_method`).
    failed : node ids in the order they failed.

    Returns ``result`` with ``result[r]`` the node of rank ``r``.

    Raises SlideError for an unknown method, bad node ids, duplicates and when the
    method cannot handle a failure (out of spares, full line, no spare plane); then
    ``error.index`` is the failure at fault and ``error.mapping`` the map before it.

    Cost: slide_map()'s (``slide_core.h``: microseconds to a millisecond for the fixed
    rules, milliseconds to a second for routed on large grids) plus O(nodes).
    """
    return explain(layout, method, failed)[0]


def explain(layout: Layout | tuple[str, str], method: CEnum | str,
            failed: Sequence[int]) -> tuple[list[int], list[Choice] | None]:
    """The map of :func:`compute_map` and, for a method that chooses (``method.chooses``:
    routed), what it chose at each failure and the scores it compared; ``None`` for the
    fixed rules. One call into the core either way.

    Parameters and errors as :func:`compute_map`; a SlideError of a method that chooses also
    carries ``error.choices`` for the failures before the one it could not place.
    """
    lay = _layout(layout)
    chosen = method if isinstance(method, _Method) else parse_method(method)  # type: ignore[arg-type]
    if isinstance(failed, (str, bytes)):
        raise SlideError("failed nodes must be a sequence of node ids", _status().EINVAL)
    failed_list = list(failed)
    fa = _int32_array(failed_list, "failed nodes")
    out = (ctypes.c_int32 * lay.ranks)()
    nbytes = _lib().slide_map_workspace_bytes(ctypes.byref(lay._c))
    work = _workspace(nbytes)
    err = ctypes.c_int32(-1)
    cfailed = (ctypes.c_int32 * max(len(fa), 1)).from_buffer(fa) if fa else None
    cchoices = (_CChoice * max(len(fa), 1))() if chosen.chooses else None
    if cchoices is not None:
        rc = _lib().slide_map_explain(ctypes.byref(lay._c), cfailed, len(fa), out, cchoices, work, nbytes,
                                      ctypes.byref(err))
    else:
        rc = _lib().slide_map(ctypes.byref(lay._c), int(chosen), cfailed, len(fa), out, work, nbytes,
                              ctypes.byref(err))
    placed = len(fa) if rc == 0 else max(err.value, 0)
    choices = None if cchoices is None else [_choice(c) for c in cchoices[:placed]]
    if rc == 0:
        return list(out), choices
    i = err.value
    if i < 0:
        raise SlideError(f"{chosen.label}: {strerror(rc)}", rc)
    where = f"failure #{i + 1} (node {failed_list[i]})"
    if rc == _status().ENODE:
        msg = f"{where} is outside grid {lay.grid}: node ids are 0..{lay.nodes - 1}"
    elif rc == _status().EDUP:
        msg = f"{where} is listed twice: each failed node may appear once"
    else:
        msg = f"{chosen.label}: cannot place {where}: {strerror(rc)}"
    raise SlideError(msg, rc, i, list(out), choices)


@dataclass(frozen=True)
class Degraded:
    """The map of :func:`degrade_map`: ``serving[r]`` runs node rank r (a node, or guest
    ``nodes + g``); ``hosts[g]`` is the node guest g runs on."""

    serving: list[int]
    hosts: list[int]
    nodes: int

    @property
    def mapping(self) -> list[int]:
        """The node each node rank runs on (a guest's host): what the metrics measure."""
        return [n if n < self.nodes else self.hosts[n - self.nodes] for n in self.serving]


def degrade_map(layout: Layout | tuple[str, str], method: CEnum | str, failed: Sequence[int],
                max_guests: int | None = None) -> Degraded:
    """The map when spares run out and the job runs on (slide_map_degrade() of ``slide_core.h``):
    the method's map while it copes, then each lost rank on the least loaded live node, as a guest
    where that node runs a rank already. ``failed`` may name guests (``nodes + g``).
    ``max_guests`` defaults to the runtime's (slide_degrade_max_guests: twice the nodes).

    Raises SlideError as :func:`compute_map` (index, no partial map) for bad ids, duplicates, no
    live node left, or more guests than ``max_guests``. Cost: slide_map()'s plus O(nodes x ranks)
    per degraded failure.
    """
    lay = _layout(layout)
    chosen = method if isinstance(method, _Method) else parse_method(method)  # type: ignore[arg-type]
    failed_list = list(failed)
    fa = _int32_array(failed_list, "failed nodes")
    cap = _lib().slide_degrade_max_guests(ctypes.byref(lay._c)) if max_guests is None else max_guests
    serving = (ctypes.c_int32 * lay.ranks)()
    hosts = (ctypes.c_int32 * max(cap, 1))()
    nguests, err = ctypes.c_int32(0), ctypes.c_int32(-1)
    nbytes = _lib().slide_degrade_workspace_bytes(ctypes.byref(lay._c), cap)
    work = _workspace(nbytes)
    cfailed = (ctypes.c_int32 * max(len(fa), 1)).from_buffer(fa) if fa else None
    rc = _lib().slide_map_degrade(ctypes.byref(lay._c), int(chosen), cfailed, len(fa), serving, hosts, cap,
                                  ctypes.byref(nguests), work, nbytes, ctypes.byref(err))
    if rc != 0:
        i = err.value
        where = f"failure #{i + 1} (node {failed_list[i]})" if 0 <= i < len(failed_list) else "the failures"
        raise SlideError(f"{chosen.label}, degrading: cannot place {where}: {strerror(rc)}", rc,
                         i if i >= 0 else None)
    return Degraded(list(serving), list(hosts[:nguests.value]), lay.nodes)


# ---- metrics -------------------------------------------------------------------

@dataclass(frozen=True)
class Metrics:
    """Metrics of a rank-to-node map (see slide_measure() in slide_core.h)."""

    pairs: int
    hops_sum: int
    hops_max: int
    hops_mean: float
    hops_hist: tuple[int, ...]  # pairs with h hops; the last bucket counts >= 15
    link_load_max: int
    links_used: int
    links_overloaded: int
    ranks_per_node_max: int
    ranks_moved: int


def measure(layout: Layout | tuple[str, str], mapping: Sequence[int],
            stencil_periodic: bool | None = None, block: Sequence[int] | None = None) -> Metrics:
    """Neighbour hops and 5/7-point stencil link loads of a rank-to-node map.

    ``mapping[r]`` is rank r's node; ``stencil_periodic`` None follows the grid (torus: the
    logical grid wraps). With a ``block`` (K ranks per node) every node rank runs that block of
    the rank grid: links carry one message per rank of the faces between nodes, pairs inside a node
    use none, and pairs and ranks count ranks of the rank grid (slide_block_measure()). Returns
    Metrics. Raises SlideError for a map of the wrong length, a node outside the grid or a bad
    block. Cost O(nodes + ranks x route length) (slide_measure()).
    """
    lay = _layout(layout)
    cb = _c_block(lay, block)
    if isinstance(mapping, (str, bytes)) or len(mapping) != lay.ranks:
        raise SlideError(f"mapping must list a node for each of the {lay.ranks} ranks "
                         f"(got {len(mapping) if not isinstance(mapping, (str, bytes)) else 'a string'})",
                         _status().EINVAL)
    ma = _int32_array(mapping, "mapping entries")
    if stencil_periodic is None:
        periodic = -1
    elif isinstance(stencil_periodic, bool):
        periodic = int(stencil_periodic)
    else:
        raise SlideError("stencil_periodic must be True, False or None", _status().EINVAL)
    nbytes = _lib().slide_block_measure_workspace_bytes(ctypes.byref(lay._c), cb)
    work = _workspace(nbytes)
    out = _CMetrics()
    cmap = (ctypes.c_int32 * len(ma)).from_buffer(ma)
    rc = _lib().slide_block_measure(ctypes.byref(lay._c), cb, cmap, periodic, ctypes.byref(out), work,
                                    nbytes)
    if rc == _status().EMAP:
        bad = next(i for i, v in enumerate(ma) if not 0 <= v < lay.nodes)
        raise SlideError(f"mapping entry for rank {bad} is {mapping[bad]}, outside grid "
                         f"{lay.grid} (node ids 0..{lay.nodes - 1})", rc)
    if rc != 0:
        raise SlideError(f"measure: {strerror(rc)}", rc)
    return Metrics(out.pairs, out.hops_sum, out.hops_max, out.hops_mean, tuple(out.hops_hist),
                   out.link_load_max, out.links_used, out.links_overloaded,
                   out.ranks_per_node_max, out.ranks_moved)


# ---- routed's choices ------------------------------------------------------------

@dataclass(frozen=True)
class Choice:
    """What routed did for one failure (slide_choice in slide_core.h)."""

    kind: CEnum                    # a ChoiceKind: none (no rank on the node), block, direct, hybrid, cross,
                                   # surface
    dim: int                       # block, cross: slide dimension (0 = x); surface: the lines' dimension
                                   # (-1: a product map, whole planes skipped)
    dir: int                       # block, cross: direction (+1 / -1); surface: the logical dimension on them
    lines: tuple[tuple[int, int], ...]  # block: (first, count) in the two other dimensions;
                                        # cross: ((dimension crossed, signed steps), _);
                                        # surface: ((_, pieces), (_, pieces)) the tiles per side
                                        # (a labelled surface: the sides' sizes, a tile per line)
    load_max: int                  # the map after this failure
    overloaded: int
    spares: int                    # spare-layout nodes newly occupied
    moved: int                     # ranks moved
    candidates: int                # candidates compared
    hybrid_load_max: int | None    # hybrid's map for the same failures, if it has one
    hybrid_overloaded: int | None
    direct_load_max: int | None    # the direct replacement from the same map


def _choice(c: _CChoice) -> Choice:
    return Choice(_names()["ChoiceKind"](c.kind), c.dim, c.dir, tuple((c.lo[k], c.width[k]) for k in range(2)),
                  c.load_max, c.overloaded, c.spares, c.moved, c.candidates,
                  None if c.hybrid_load_max < 0 else c.hybrid_load_max,
                  None if c.hybrid_load_max < 0 else c.hybrid_overloaded,
                  None if c.direct_load_max < 0 else c.direct_load_max)


# ---- redundancy across failure domains ----------------------------------------------

@dataclass(frozen=True)
class Redundancy:
    """A redundancy policy (slide_redundancy in slide_core.h): ``kind`` is ``buddy``, ``parity`` or
    ``rs``; ``group`` the nodes per group (2 for buddy), ``lose`` the members a group may lose."""

    kind: str
    group: int
    lose: int

    def __str__(self) -> str:
        return {"buddy": "buddy", "parity": f"parity:{self.group}"}.get(self.kind, f"rs:{self.group},{self.lose}")


def parse_redundancy(text: str) -> Redundancy:
    """Parse ``buddy``, ``parity:G`` or ``rs:G,M`` (G >= 2, 1 <= M < G). Raises SlideError (code
    ``Status.EREDUNDANCY`` or ``Status.EGROUP``) in one line. Cost O(len(text))."""
    out = _CRedundancy()
    rc = _lib().slide_redundancy_parse(_text(text, "redundancy policy"), ctypes.byref(out))
    if rc != 0:
        raise SlideError(f"bad redundancy policy '{text}': {strerror(rc)}", rc)
    return Redundancy(_lib().slide_redundancy_kind_name(out.kind).decode(), out.group, out.lose)


def parse_domain_shape(layout: Layout, text: str) -> tuple[int, ...]:
    """Parse a failure-domain box ``AxB`` (2D grid) or ``AxBxC`` (3D), each size from 1 to the grid's
    along that dimension. Returns the sizes; raises SlideError (code ``Status.EDOMAIN_SHAPE``).
    Cost O(len(text))."""
    out = (ctypes.c_int32 * 3)()
    rc = _lib().slide_domain_shape_parse(ctypes.byref(layout._c), _text(text, "domain box"), out)
    if rc != 0:
        raise SlideError(f"bad domain box '{text}' for grid {layout.grid}: {strerror(rc)}", rc)
    return tuple(out[: len(layout.grid.sizes)])


def block_domains(layout: Layout, shape: Sequence[int] | str) -> tuple[list[int], int]:
    """Failure domains as boxes of the node grid (slide_domains_block()): ``(domain_of_node,
    ndomains)``, node n in box ``coords[d] // shape[d]``, boxes numbered row-major; spares included.
    ``shape`` is a box string (``2x2x1``) or its sizes. Raises SlideError. Cost O(nodes)."""
    sizes = parse_domain_shape(layout, shape) if isinstance(shape, str) else tuple(shape)
    if len(sizes) != len(layout.grid.sizes) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                       for v in sizes):
        raise SlideError(f"domain box {sizes!r} needs {len(layout.grid.sizes)} integer sizes for grid "
                         f"{layout.grid}", _status().EDOMAIN_SHAPE)
    c = (ctypes.c_int32 * 3)(*(list(sizes) + [1] * (3 - len(sizes))))
    out = (ctypes.c_int32 * layout.nodes)()
    count = ctypes.c_int32(0)
    rc = _lib().slide_domains_block(ctypes.byref(layout._c), c, out, ctypes.byref(count))
    if rc != 0:
        raise SlideError(f"domain box {block_text(sizes)} on grid {layout.grid}: {strerror(rc)}", rc)
    return list(out), count.value


@dataclass(frozen=True)
class Groups:
    """Redundancy groups of the node ranks (slide_groups()): ``group_of_rank[r]``, ``member_of_rank[r]``
    (its place among its group's node ranks, ascending) and the groups' ``sizes``."""

    group_of_rank: list[int]
    member_of_rank: list[int]
    sizes: list[int]

    def members(self, group: int) -> list[int]:
        """The node ranks of ``group``, ascending."""
        return [r for r, g in enumerate(self.group_of_rank) if g == group]


def _map_and_domains(lay: Layout, mapping: Sequence[int], domains: Sequence[int] | None):
    if isinstance(mapping, (str, bytes)) or len(mapping) != lay.ranks:
        raise SlideError(f"mapping must list a node for each of the {lay.ranks} node ranks", _status().EINVAL)
    ma = _int32_array(mapping, "mapping entries")
    cmap = (ctypes.c_int32 * len(ma)).from_buffer(ma)
    if domains is None:
        return cmap, None, ma
    if isinstance(domains, (str, bytes)) or len(domains) != lay.nodes:
        raise SlideError(f"domains must give a domain for each of the {lay.nodes} nodes of grid {lay.grid}",
                         _status().EINVAL)
    da = _int32_array(domains, "domains")
    return cmap, (ctypes.c_int32 * len(da)).from_buffer(da), (ma, da)


def groups(layout: Layout | tuple[str, str], mapping: Sequence[int], domains: Sequence[int] | None,
           group: int, lose: int = 1) -> Groups:
    """Deal the node ranks of ``mapping`` into ``ranks // group`` groups so that no group has more than
    ``lose`` members on one failure domain (``domains[n]`` per node, None: every node its own);
    the rule and its exact condition are slide_groups()'s in slide_core.h. Raises SlideError (one
    line; ``Status.ENOPLACEMENT`` when a domain holds more than ``lose * ngroups`` node ranks).
    Cost O(ranks log ranks)."""
    lay = _layout(layout)
    for value, what in ((group, "group size"), (lose, "members a group may lose")):
        if isinstance(value, bool) or not isinstance(value, int) or not _I32_MIN <= value <= _I32_MAX:
            raise SlideError(f"the {what} must be an integer, not {value!r}", _status().EGROUP)
    cmap, cdom, _keep = _map_and_domains(lay, mapping, domains)
    g_of, m_of = (ctypes.c_int32 * lay.ranks)(), (ctypes.c_int32 * lay.ranks)()
    sizes = (ctypes.c_int32 * max(lay.ranks // max(group, 1), 1))()
    count = ctypes.c_int32(0)
    rc = _lib().slide_groups(ctypes.byref(lay._c), cmap, cdom, group, lose, g_of, m_of, sizes, ctypes.byref(count))
    if rc != 0:
        raise SlideError(f"groups of {group} losing at most {lose} on {lay.ranks} node ranks: {strerror(rc)}", rc)
    return Groups(list(g_of), list(m_of), list(sizes[: count.value]))


def buddy_shift(layout: Layout | tuple[str, str], mapping: Sequence[int], domains: Sequence[int] | None) -> int:
    """The shift h for which node rank r's buddy is node rank (r + h) mod ranks and no pair shares a
    failure domain: ranks // 2 when it works, else the smallest (slide_buddy_shift()). Raises
    SlideError (``Status.ENOPLACEMENT`` when no shift works). Cost O(ranks) to O(ranks^2)."""
    lay = _layout(layout)
    cmap, cdom, _keep = _map_and_domains(lay, mapping, domains)
    out = ctypes.c_int32(0)
    rc = _lib().slide_buddy_shift(ctypes.byref(lay._c), cmap, cdom, ctypes.byref(out))
    if rc != 0:
        raise SlideError(f"buddies on {lay.ranks} node ranks: {strerror(rc)}", rc)
    return out.value
