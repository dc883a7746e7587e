"""The network a job runs on: the ctypes binding of ``sliding/core/include/slide_topo.h``.

One spec grammar, one numbering and one routing for every command: the mapping
metrics and the substitution methods, the analytic model and the SimGrid
platforms of ``ftslide simulate``, the protocol simulations and the emulated
cluster all get their routes from the C core through this module, so a hot link
is the same link everywhere. The header states the rules; this module converts
arguments and results and turns C status codes into one-line errors.

Spec grammar (``parse_topology``):

=================================  ===============================================
``torus:12x12x12`` (or ``12x12x12``)  torus of 1 to 6 dimensions
``mesh:16x8x8``                    mesh (no wrap-around)
``ring:8``, ``star:16``            a ring (= torus:8); hosts on one switch
``fattree:4``                      3-level fat-tree of 4-port switches (16 hosts)
``fattree:2;16,32;1,16;1,1``       SimGrid's FAT_TREE: levels; children per switch;
                                   parents per node; parallel links, per level
``kary:4,3``                       k-ary n-tree
``dragonfly:4,1;2,1;4,1;2``        SimGrid's DRAGONFLY (minimal routing)
=================================  ===============================================

Numbering: hosts ``0..hosts-1`` then switches; torus/mesh hosts row-major with
the last dimension fastest (``host = (x * B + y) * C + z``), as ``MPI_Cart_rank``
and the sliding core's node grid, so node i of a grid runs on host i.
Routing on a torus or mesh is dimension order, in ``order`` (default ``xyz``).

Examples::

    >>> t = parse_topology("torus:4x4x4")
    >>> t.hosts, t.coords(17)
    (64, (1, 0, 1))
    >>> [t.link(l).head for l in t.route(0, 21)]
    [16, 20, 21]
"""

from __future__ import annotations

import ctypes
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..toolchain.native import bind_library
from ..errors import FtslideError

__all__ = ["Link", "Round", "Topology", "TopologyError", "parse_topology", "KINDS", "GRAMMAR"]

KINDS = ("torus", "mesh", "ring", "star", "fattree", "dragonfly")
LINK_KINDS = {0: "dim", 1: "up", 2: "down", 3: "host", 4: "green", 5: "black", 6: "blue"}
GRAMMAR = ("torus:AxB[xC..], mesh:AxB[xC..], ring:N, star:N, fattree:K, "
           "fattree:L;D,..;U,..;P,.., kary:K,N or dragonfly:G,L;C,L;R,L;N")
MAX_DIMS, MAX_LEVELS = 6, 8


class TopologyError(FtslideError):
    """A malformed topology spec or routing order, or a host outside the topology."""


class _CTopo(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("ndims", ctypes.c_int32),
                ("size", ctypes.c_int32 * MAX_DIMS), ("stride", ctypes.c_int32 * MAX_DIMS),
                ("order", ctypes.c_int32 * MAX_DIMS), ("levels", ctypes.c_int32),
                ("down", ctypes.c_int32 * MAX_LEVELS), ("up", ctypes.c_int32 * MAX_LEVELS),
                ("count", ctypes.c_int32 * MAX_LEVELS),
                ("level_first", ctypes.c_int32 * (MAX_LEVELS + 2)),
                ("link_first", ctypes.c_int32 * (MAX_LEVELS + 1)), ("fattree_k", ctypes.c_int32),
                ("dragonfly", ctypes.c_int32 * 7), ("hosts", ctypes.c_int32),
                ("vertices", ctypes.c_int32), ("links", ctypes.c_int32),
                ("route_max", ctypes.c_int32)]


class _CRoundStats(ctypes.Structure):
    _fields_ = [("messages", ctypes.c_int64), ("hops_sum", ctypes.c_int64),
                ("hops_max", ctypes.c_int32), ("load_max", ctypes.c_int32),
                ("links_used", ctypes.c_int64), ("links_overloaded", ctypes.c_int64)]


_P = ctypes.POINTER
_I32P = _P(ctypes.c_int32)
_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "slide_topo_parse": (ctypes.c_int, [ctypes.c_char_p, _P(_CTopo)]),
    "slide_topo_parse_detail": (ctypes.c_char_p, [ctypes.c_char_p]),
    "slide_topo_set_order": (ctypes.c_int, [_P(_CTopo), ctypes.c_char_p]),
    "slide_topo_format": (ctypes.c_int, [_P(_CTopo), ctypes.c_char_p, ctypes.c_size_t]),
    "slide_topo_format_order": (ctypes.c_int, [_P(_CTopo), ctypes.c_char_p, ctypes.c_size_t]),
    "slide_topo_link": (ctypes.c_int, [_P(_CTopo), ctypes.c_int32, _I32P, _I32P, _I32P, _I32P]),
    "slide_topo_route": (ctypes.c_int32, [_P(_CTopo), ctypes.c_int32, ctypes.c_int32, _I32P,
                                          ctypes.c_int32]),
    "slide_topo_hops": (ctypes.c_int32, [_P(_CTopo), ctypes.c_int32, ctypes.c_int32]),
    "slide_topo_round": (ctypes.c_int, [_P(_CTopo), _I32P, _I32P, ctypes.c_int64,
                                        _P(ctypes.c_uint32), _I32P, _P(ctypes.c_double),
                                        _P(_CRoundStats)]),
    "slide_topo_sim_kind": (ctypes.c_char_p, [_P(_CTopo)]),
    "slide_topo_sim_parameters": (ctypes.c_int, [_P(_CTopo), ctypes.c_char_p, ctypes.c_size_t]),
    "slide_topo_sim_hosts": (ctypes.c_int64, [_P(_CTopo)]),
    "slide_topo_sim_host": (ctypes.c_int64, [_P(_CTopo), ctypes.c_int32]),
    "slide_struct_size": (ctypes.c_size_t, [ctypes.c_int]),
}


@lru_cache(maxsize=None)
def _lib() -> ctypes.CDLL:
    return bind_library("slidecore", _SIGNATURES, {4: _CTopo, 5: _CRoundStats}, "ftslide/sliding/topology.py")


def _text(fn_name: str, c: _CTopo) -> str:
    fn = getattr(_lib(), fn_name)
    need = fn(ctypes.byref(c), None, 0)
    buf = ctypes.create_string_buffer(need + 1)
    fn(ctypes.byref(c), buf, need + 1)
    return buf.value.decode()


def _int32s(values: Sequence[int]) -> "ctypes.Array[ctypes.c_int32]":
    data = array("i", values)
    return (ctypes.c_int32 * max(len(data), 1)).from_buffer(data) if data else \
        (ctypes.c_int32 * 1)()


@dataclass(frozen=True)
class Link:
    """One directed link: its number, kind (dim, up, down, host, green, black, blue), ends
    (vertices: hosts first, then switches or routers), dimension or level, and capacity
    (physical links it bundles)."""

    id: int
    kind: str
    tail: int
    head: int
    dim: int
    capacity: int


@dataclass(frozen=True)
class Round:
    """One round of messages routed together (``Topology.route_round``)."""

    loads: "array[int]"          # messages per link number
    hops: tuple[int, ...]        # route length of each message
    worst: tuple[float, ...]     # largest load / capacity on each message's route
    load_max: int
    links_used: int
    links_overloaded: int
    hops_max: int
    hops_sum: int


@dataclass(frozen=True)
class Topology:
    """A parsed topology: use ``parse_topology``. ``spec`` is canonical, ``order`` the
    routing order of a torus or mesh ("" for other kinds)."""

    spec: str
    order: str
    kind: str
    dims: tuple[int, ...]
    hosts: int
    vertices: int
    links: int
    route_max: int
    _c: _CTopo = field(repr=False, compare=False)

    def __str__(self) -> str:
        return self.spec

    @property
    def is_grid(self) -> bool:
        """True for a torus, mesh or ring: hosts have coordinates."""
        return self.kind in ("torus", "mesh", "ring")

    @property
    def periodic(self) -> bool:
        return self.kind in ("torus", "ring")

    @property
    def switches(self) -> int:
        """Vertices that are not hosts (switches or routers)."""
        return self.vertices - self.hosts

    # ---- hosts and links --------------------------------------------------

    def _host(self, host: object) -> int:
        if isinstance(host, bool) or not isinstance(host, int) or not 0 <= host < self.hosts:
            raise TopologyError(f"host {host!r} is outside {self} (hosts 0..{self.hosts - 1})")
        return host

    def coords(self, host: int) -> tuple[int, ...]:
        """Coordinates of a torus/mesh host (first dimension first)."""
        if not self.is_grid:
            raise TopologyError(f"{self} has no coordinates: only a torus, mesh or ring does")
        self._host(host)
        out = []
        for n, stride in zip(self.dims, self._c.stride):
            out.append(host // stride % n)
        return tuple(out)

    def host_at(self, coords: Sequence[int]) -> int:
        """Host number of torus/mesh coordinates (row-major, last dimension fastest)."""
        if not self.is_grid or len(coords) != len(self.dims) or \
                not all(0 <= c < n for c, n in zip(coords, self.dims)):
            raise TopologyError(f"coordinates {tuple(coords)} are not a host of {self}")
        return sum(c * s for c, s in zip(coords, self._c.stride))

    def link(self, link: int) -> Link | None:
        """The link numbered ``link``, or None if the number names no link."""
        a, b, d, cap = (ctypes.c_int32() for _ in range(4))
        kind = _lib().slide_topo_link(ctypes.byref(self._c), link, ctypes.byref(a),
                                      ctypes.byref(b), ctypes.byref(d), ctypes.byref(cap))
        if kind < 0:
            return None
        return Link(link, LINK_KINDS[kind], a.value, b.value, d.value, cap.value)

    def all_links(self) -> Iterator[Link]:
        """Every link, in number order. Cost O(links)."""
        for number in range(self.links):
            found = self.link(number)
            if found is not None:
                yield found

    # ---- routing ------------------------------------------------------------

    def route(self, a: int, b: int) -> list[int]:
        """Link numbers of the route from host ``a`` to host ``b`` (empty when a == b)."""
        self._host(a)
        return self.route_from(a, b)

    def route_from(self, vertex: int, host: int) -> list[int]:
        """Link numbers of the route from any vertex (a host or a switch) to a host."""
        self._host(host)
        buf = (ctypes.c_int32 * max(self.route_max, 1))()
        n = _lib().slide_topo_route(ctypes.byref(self._c), vertex, host, buf, len(buf))
        if n < 0:
            raise TopologyError(f"no route from vertex {vertex} of {self}: routes start at hosts"
                                + ("" if self.kind == "dragonfly" else " and switches"))
        return list(buf[:n])

    def hops(self, a: int, b: int) -> int:
        """Length in links of the route from host a to host b."""
        return int(_lib().slide_topo_hops(ctypes.byref(self._c), self._host(a), self._host(b)))

    def route_round(self, src_hosts: Sequence[int], dst_hosts: Sequence[int]) -> Round:
        """Route messages src_hosts[i] -> dst_hosts[i] together: loads of every link, each
        message's route length and the worst load / capacity on its route.
        Cost O(messages x route length + links), in C."""
        if len(src_hosts) != len(dst_hosts):
            raise TopologyError("route_round needs as many sources as destinations")
        n = len(src_hosts)
        src, dst = _int32s(src_hosts), _int32s(dst_hosts)
        loads = array("I", bytes(4 * max(self.links, 1)))
        cloads = (ctypes.c_uint32 * len(loads)).from_buffer(loads)
        hops = (ctypes.c_int32 * max(n, 1))()
        worst = (ctypes.c_double * max(n, 1))()
        stats = _CRoundStats()
        rc = _lib().slide_topo_round(ctypes.byref(self._c), src, dst, n, cloads, hops, worst,
                                     ctypes.byref(stats))
        if rc != 0:  # with the arrays given, the one error left is a host out of range (slide_topo.h)
            raise TopologyError(f"a message's host is outside {self} (hosts 0..{self.hosts - 1})")
        return Round(loads, tuple(hops[:n]), tuple(worst[:n]), stats.load_max,
                     stats.links_used, stats.links_overloaded, stats.hops_max, stats.hops_sum)

    # ---- SimGrid ----------------------------------------------------------

    @property
    def sim_kind(self) -> str:
        """SimGrid cluster topology: TORUS, FAT_TREE or DRAGONFLY."""
        return str(_lib().slide_topo_sim_kind(ctypes.byref(self._c)).decode())

    @property
    def sim_parameters(self) -> str:
        """SimGrid's topo_parameters (a torus's dimensions in routing order, a mesh embedded
        in a torus of 2n - 1 positions)."""
        return _text("slide_topo_sim_parameters", self._c)

    @property
    def sim_hosts(self) -> int:
        """Hosts SimGrid creates (more than ``hosts`` for an embedded mesh)."""
        return int(_lib().slide_topo_sim_hosts(ctypes.byref(self._c)))

    def sim_position(self, host: int) -> int:
        """SimGrid's position of a host in its cluster (first dimension routed fastest)."""
        return int(_lib().slide_topo_sim_host(ctypes.byref(self._c), self._host(host)))


def parse_topology(spec: str, order: str | None = None) -> Topology:
    """Parse and validate a topology spec and routing order.

    Parameters
    ----------
    spec : a spec of the grammar above, e.g. ``torus:12x12x12`` or ``fattree:4``.
    order : routing order of a torus or mesh, a permutation of the dimension names
        (``xyz``, ``zyx``, ... or digits ``0``..``5`` past three dimensions); None or ""
        for the default (first dimension first).

    Returns a Topology; raises TopologyError (one line naming the fix) when malformed.
    Cost O(len(spec)).
    """
    if not isinstance(spec, str):
        raise TopologyError(f"a topology spec must be a string, not {type(spec).__name__}")
    try:
        raw = spec.strip().encode("ascii")
    except UnicodeEncodeError:
        raw = b"\xff"
    c = _CTopo()
    rc = _lib().slide_topo_parse(raw, ctypes.byref(c))
    if rc != 0:
        detail = _lib().slide_topo_parse_detail(raw).decode() or "malformed"
        raise TopologyError(f"bad topology '{spec}': {detail}"
                            + (f"; use {GRAMMAR}" if detail.startswith("missing kind") else ""))
    if order:
        try:
            raw_order = order.encode("ascii")
        except UnicodeEncodeError:
            raw_order = b"\xff"
        if _lib().slide_topo_set_order(ctypes.byref(c), raw_order) != 0:
            if c.kind > 2:
                raise TopologyError(f"routing order '{order}': only a torus, mesh or ring has "
                                    f"one, {spec} does not")
            names = "xyz"[: c.ndims] if c.ndims <= 3 else "".join(map(str, range(c.ndims)))
            raise TopologyError(f"bad routing order '{order}': give a permutation of "
                                f"'{names}' (the dimensions of {spec}), e.g. '{names[::-1]}'")
    kind = ("torus", "mesh", "ring", "star", "fattree", "dragonfly")[c.kind]
    dims = tuple(c.size[: c.ndims]) if c.kind <= 2 else ()
    return Topology(_text("slide_topo_format", c), _text("slide_topo_format_order", c), kind,
                    dims, c.hosts, c.vertices, c.links, c.route_max, c)
