"""Network topologies for the slowdown simulations: spec strings, hosts, links and routes.

A topology is parsed from a spec string and knows three things:

* its **hosts**, numbered ``0..hosts-1`` exactly as SimGrid numbers the hosts of the
  generated cluster (``h0``, ``h1``, ...), so a host index here is a host name there;
* its **links**, as a NetworkX ``DiGraph`` whose edges are directed links
  (``graph()``), each with ``bw`` (bytes/s) and ``lat`` (s) attributes;
* the **route** SimGrid takes between two hosts (``route(a, b)``): a list of
  directed edges of that graph. Torus and mesh use SimGrid's dimension-order
  routing (first dimension first, the shorter way round, SimGrid's tie rule);
  the fat-tree uses SimGrid's up/down routing with its d-mod-k choice of up link.

Spec strings (validated, one-line errors naming the fix):

=================================  ===============================================
``torus:12x12x12``                 torus of any dimension count and size
``mesh:16x8x8``                    mesh (no wrap-around), any dimension count
``fattree:2;16,16;1,16;1,1``       SimGrid FAT_TREE parameters: levels; children
                                   per switch by level; parents per node by
                                   level; parallel links by level
``kary:4,3``                       k-ary n-tree shorthand (k=4, n=3): FAT_TREE
                                   ``3;4,4,4;1,4,4;1,1,1``, k^n hosts
``dragonfly:4,1;2,1;4,1;2``        SimGrid DRAGONFLY parameters: groups,links;
                                   chassis per group,links; routers per chassis,
                                   links; hosts per router (minimal routing)
=================================  ===============================================

A mesh is given to SimGrid as a torus with ``2n-1`` positions along each dimension
of size ``n >= 3`` of which only the first ``n`` hold used hosts: no shortest
route between used hosts then wraps around, so SimGrid's torus routing is exactly
dimension-order mesh routing (see docs/simulations.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

from ..errors import FtslideError

# A graph node: ("h", *coords) for a torus/mesh host, ("h", i) for fat-tree host i,
# ("s", level, position) for a fat-tree switch.
Node = tuple[object, ...]
# A directed link: (tail, head, key); the key tells parallel links apart.
Link = tuple[Node, Node, tuple[int, ...]]

MAX_HOSTS = 1 << 20

_SPEC_HELP = ("use torus:AxB[xC...], mesh:AxB[xC...], fattree:L;D1,..;U1,..;P1,.. "
              "(SimGrid FAT_TREE), kary:K,N or dragonfly:G,L;C,L;R,L;N")

# Dragonfly link kinds (the key of a link): host-router, green (routers of a
# chassis), black (same blade position across the chassis of a group), blue.
_DF_LOCAL, _DF_GREEN, _DF_BLACK, _DF_BLUE = 0, 1, 2, 3


class TopologyError(FtslideError):
    """A malformed or unsupported topology spec."""


@dataclass(frozen=True)
class Topology:
    """A parsed topology. ``kind`` is ``torus``, ``mesh``, ``fattree`` or ``dragonfly``.

    ``dims`` are the sizes of a torus or mesh (first dimension first); for a
    fat-tree ``levels``, ``down``, ``up`` and ``count`` are SimGrid's FAT_TREE
    parameters; for a dragonfly ``dragonfly`` is (groups, blue links, chassis,
    black links, routers per chassis, green links, hosts per router).
    """

    kind: str
    dims: tuple[int, ...] = ()
    levels: int = 0
    down: tuple[int, ...] = ()
    up: tuple[int, ...] = ()
    count: tuple[int, ...] = ()
    dragonfly: tuple[int, ...] = ()
    spec: str = field(default="", compare=False)

    # ---- shape ------------------------------------------------------------

    @property
    def hosts(self) -> int:
        """Number of used hosts (ranks can be placed on hosts 0..hosts-1)."""
        if self.kind == "fattree":
            return math.prod(self.down)
        if self.kind == "dragonfly":
            g, _, c, _, r, _, n = self.dragonfly
            return g * c * r * n
        return math.prod(self.dims)

    @property
    def sim_dims(self) -> tuple[int, ...]:
        """Torus sizes given to SimGrid (a mesh is embedded in a bigger torus)."""
        if self.kind == "mesh":
            return tuple(2 * n - 1 if n >= 3 else n for n in self.dims)
        return self.dims

    @property
    def sim_hosts(self) -> int:
        """Hosts SimGrid creates (more than ``hosts`` for an embedded mesh)."""
        if self.kind in ("fattree", "dragonfly"):
            return self.hosts
        return math.prod(self.sim_dims)

    def __str__(self) -> str:
        if self.kind == "fattree":
            return (f"fattree:{self.levels};{_csv(self.down)};{_csv(self.up)};"
                    f"{_csv(self.count)}")
        if self.kind == "dragonfly":
            return f"dragonfly:{self.sim_parameters()}"
        return f"{self.kind}:" + "x".join(map(str, self.dims))

    def sim_parameters(self) -> str:
        """SimGrid's topo_parameters for this topology."""
        if self.kind == "fattree":
            return f"{self.levels};{_csv(self.down)};{_csv(self.up)};{_csv(self.count)}"
        if self.kind == "dragonfly":
            g, lg, c, lc, r, lr, n = self.dragonfly
            return f"{g},{lg};{c},{lc};{r},{lr};{n}"
        return _csv(self.sim_dims)

    def capacity(self, link: Link) -> int:
        """Bandwidth of a link as a multiple of the configured link bandwidth.

        Dragonfly green/black/blue links bundle several cables (SimGrid multiplies
        the bandwidth); every other link is 1.
        """
        if self.kind != "dragonfly":
            return 1
        _, lg, _, lc, _, lr, _ = self.dragonfly
        return (1, lr, lc, lg)[link[2][0]]

    def coords(self, host: int) -> tuple[int, ...]:
        """Torus/mesh coordinates of a used host (first dimension fastest, as SimGrid)."""
        self._check_grid_kind()
        out = []
        for n in self.dims:
            out.append(host % n)
            host //= n
        return tuple(out)

    def host_at(self, coords: tuple[int, ...] | list[int]) -> int:
        """Used-host index of torus/mesh coordinates."""
        self._check_grid_kind()
        host, mult = 0, 1
        for c, n in zip(coords, self.dims):
            host += c * mult
            mult *= n
        return host

    def sim_host(self, host: int) -> int:
        """SimGrid host id (radical) of a used host."""
        if self.kind != "mesh":
            return host
        sid, mult = 0, 1
        for c, m in zip(self.coords(host), self.sim_dims):
            sid += c * mult
            mult *= m
        return sid

    def _check_grid_kind(self) -> None:
        if self.kind not in ("torus", "mesh"):
            raise TopologyError(f"{self} has no coordinates: only torus and mesh do")

    # ---- routing ----------------------------------------------------------

    def route(self, a: int, b: int) -> list[Link]:
        """Directed links of SimGrid's route from host ``a`` to host ``b`` (empty if a == b)."""
        if a == b:
            return []
        if self.kind == "fattree":
            return self._fattree_route(a, b)
        if self.kind == "dragonfly":
            return self._dragonfly_route(a, b)
        return self._torus_route(a, b)

    def _torus_route(self, a: int, b: int) -> list[Link]:
        # SimGrid's TorusZone: dimensions in order, each the shorter way round;
        # on an even ring with the target exactly half-way it goes + except when
        # the source sits at position n/2 (its rule), reproduced here.
        # Mesh: positions are in the embedding torus (sim_dims), never wrapping.
        src = list(self.coords(a))
        dst = self.coords(b)
        sizes = self.sim_dims
        links: list[Link] = []
        cur = list(src)
        for d, m in enumerate(sizes):
            my, target = src[d], dst[d]
            if my == target:
                continue
            half = m // 2
            plus = (my < target <= my + half) or (my > half and (my + half) % m >= target)
            step = 1 if plus else -1
            while cur[d] != target:
                nxt = (cur[d] + step) % m
                tail = tuple(cur)
                cur[d] = nxt
                links.append((("h", *tail), ("h", *cur), (d,)))
        return links

    # Fat-tree nodes: level 0 are hosts (position = host index); switches have
    # a level >= 1 and a position in their level. Labels as SimGrid builds them.
    @cached_property
    def _ft_nodes_by_level(self) -> tuple[int, ...]:
        out = [self.hosts]
        for i in range(self.levels):
            out.append(math.prod(self.up[: i + 1]) * math.prod(self.down[i + 1:]))
        return tuple(out)

    def _ft_label(self, level: int, position: int) -> tuple[int, ...]:
        # Mixed-radix counter, first digit fastest: digit j counts parents (up[j])
        # below the node's level and children (down[j]) from it on.
        label = []
        for j in range(self.levels):
            radix = self.down[j] if j + 1 > level else self.up[j]
            label.append(position % radix)
            position //= radix
        return tuple(label)

    def _ft_position(self, level: int, label: tuple[int, ...]) -> int:
        pos, mult = 0, 1
        for j in range(self.levels):
            radix = self.down[j] if j + 1 > level else self.up[j]
            pos += label[j] * mult
            mult *= radix
        return pos

    def _fattree_route(self, a: int, b: int) -> list[Link]:
        # Up until the current switch holds b in its subtree (label digits from
        # its level on equal b's), choosing parent port d = (b / prod below) mod
        # (up*count) as SimGrid's d-mod-k; port p reaches the parent whose digit
        # at this level is p mod up, over parallel cable p div up. Down: the
        # child whose digit is b's, over cable (a mod count).
        links: list[Link] = []
        dst_label = self._ft_label(0, b)
        level, label = 0, list(self._ft_label(0, a))
        node: Node = ("h", a)
        while not (level > 0 and all(label[i] == dst_label[i] for i in range(level, self.levels))):
            d = b
            for i in range(level):
                d //= self.up[i] * self.count[i]
            k = self.up[level] * self.count[level]
            port = d % k
            label[level] = port % self.up[level]
            cable = port // self.up[level]
            level += 1
            parent = ("s", level, self._ft_position(level, tuple(label)))
            links.append((node, parent, (cable,)))
            node = parent
        while level > 0:
            cable = a % self.count[level - 1]
            label[level - 1] = dst_label[level - 1]
            level -= 1
            child: Node = ("h", b) if level == 0 else ("s", level, self._ft_position(level, tuple(label)))
            links.append((node, child, (cable,)))
            node = child
        return links

    # Dragonfly: host i has coordinates (group, chassis, router, slot), group
    # slowest, as SimGrid numbers them; router (g, c, r) is graph node ("r", g, c, r).
    def _df_coords(self, host: int) -> tuple[int, int, int, int]:
        _, _, c, _, r, _, n = self.dragonfly
        return (host // (c * r * n), host // (r * n) % c, host // n % r, host % n)

    def _dragonfly_route(self, a: int, b: int) -> list[Link]:
        # SimGrid's minimal routing, step by step as it builds the route: to reach
        # group G, go to router G of the chassis (green), then to chassis 0 (black),
        # whose router G holds the blue link to group G; arrive at router (0, g) of
        # group G (g = source group); then the green link to the target router
        # position, then black to the target chassis. SimGrid takes the green link
        # in the current chassis but continues from chassis 0 (its code); the
        # links listed here are the ones it lists.
        sg, sc_, sr, _ = self._df_coords(a)
        tg, tc, tr, _ = self._df_coords(b)
        links: list[Link] = [(("h", a), ("r", sg, sc_, sr), (_DF_LOCAL,))]
        cur = (sg, sc_, sr)
        if (tg, tc, tr) != cur:
            if tg != sg:
                if cur[2] != tg:
                    nxt = (sg, sc_, tg)
                    links.append((("r", *cur), ("r", *nxt), (_DF_GREEN,)))
                    cur = nxt
                if cur[1] != 0:
                    nxt = (sg, 0, tg)
                    links.append((("r", *cur), ("r", *nxt), (_DF_BLACK,)))
                    cur = nxt
                nxt = (tg, 0, sg)
                links.append((("r", *cur), ("r", *nxt), (_DF_BLUE,)))
                cur = nxt
            if tr != cur[2]:
                links.append((("r", *cur), ("r", cur[0], cur[1], tr), (_DF_GREEN,)))
                cur = (tg, 0, tr)
            if tc != cur[1]:
                links.append((("r", *cur), ("r", cur[0], tc, cur[2]), (_DF_BLACK,)))
        links.append((("r", tg, tc, tr), ("h", b), (_DF_LOCAL,)))
        return links

    # ---- graph ------------------------------------------------------------

    def graph(self, bw: float = 1.0, lat: float = 0.0) -> nx.MultiDiGraph:
        """All directed links as a NetworkX MultiDiGraph (key = parallel-link index).

        Nodes: ``("h", *coords)`` for torus/mesh hosts (mesh: only used hosts),
        ``("h", i)`` for fat-tree hosts, ``("s", level, position)`` for switches.
        Edge attributes: ``bw`` and ``lat``. Cost O(links).
        """
        g = nx.MultiDiGraph(topology=str(self))
        for tail, head, key in self.links():
            g.add_edge(tail, head, key=key, bw=bw, lat=lat)
        return g

    def links(self) -> Iterator[Link]:
        """Every directed link once."""
        if self.kind == "fattree":
            yield from self._fattree_links()
            return
        if self.kind == "dragonfly":
            yield from self._dragonfly_links()
            return
        sizes = self.sim_dims
        for host in range(self.hosts):
            c = self.coords(host)
            for d, n in enumerate(self.dims):
                m = sizes[d]
                for step in (1, -1):
                    if self.kind == "mesh" and not 0 <= c[d] + step < n:
                        continue
                    if self.kind == "torus" and n == 1:
                        continue
                    nc = list(c)
                    nc[d] = (c[d] + step) % m
                    if self.kind == "torus" and n == 2 and step == -1:
                        # a ring of 2 has one link pair in SimGrid: the + link of
                        # each node, both routes use it in opposite directions
                        continue
                    yield (("h", *c), ("h", *nc), (d,))

    def _dragonfly_links(self) -> Iterator[Link]:
        g_, _, c_, _, r_, _, _ = self.dragonfly
        for host in range(self.hosts):
            g, c, r, _ = self._df_coords(host)
            yield (("h", host), ("r", g, c, r), (_DF_LOCAL,))
            yield (("r", g, c, r), ("h", host), (_DF_LOCAL,))
        for g in range(g_):
            for c in range(c_):
                for r in range(r_):
                    for r2 in range(r_):
                        if r2 != r:
                            yield (("r", g, c, r), ("r", g, c, r2), (_DF_GREEN,))
                    for c2 in range(c_):
                        if c2 != c:
                            yield (("r", g, c, r), ("r", g, c2, r), (_DF_BLACK,))
            for g2 in range(g_):
                if g2 != g:
                    # router number g2 of group g (chassis 0 since g2 < routers)
                    yield (("r", g, 0, g2), ("r", g2, 0, g), (_DF_BLUE,))

    def _fattree_links(self) -> Iterator[Link]:
        per_level = self._ft_nodes_by_level
        for level in range(self.levels):
            for pos in range(per_level[level]):
                label = list(self._ft_label(level, pos))
                node: Node = ("h", pos) if level == 0 else ("s", level, pos)
                for port in range(self.up[level] * self.count[level]):
                    plabel = list(label)
                    plabel[level] = port % self.up[level]
                    parent = ("s", level + 1, self._ft_position(level + 1, tuple(plabel)))
                    cable = port // self.up[level]
                    yield (node, parent, (cable,))
                    yield (parent, node, (cable,))


def _csv(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values))


_INT = re.compile(r"[1-9][0-9]{0,6}")


def _ints(text: str, sep: str, what: str, spec: str) -> tuple[int, ...]:
    parts = text.split(sep)
    if not all(_INT.fullmatch(p) for p in parts):
        raise TopologyError(f"bad topology '{spec}': {what} must be positive integers "
                            f"separated by '{sep}'; {_SPEC_HELP}")
    return tuple(int(p) for p in parts)


def parse_topology(spec: str) -> Topology:
    """Parse and validate a topology spec; TopologyError (one line) if malformed."""
    if not isinstance(spec, str) or ":" not in spec:
        raise TopologyError(f"bad topology '{spec}': missing kind; {_SPEC_HELP}")
    kind, _, rest = spec.strip().partition(":")
    kind = kind.lower()
    if kind in ("torus", "mesh"):
        dims = _ints(rest, "x", "sizes", spec)
        if kind == "torus" and all(n == 1 for n in dims):
            raise TopologyError(f"bad topology '{spec}': a torus needs a size of at least 2")
        topo = Topology(kind, dims=dims, spec=spec)
    elif kind in ("fattree", "fat-tree", "fat_tree"):
        parts = rest.split(";")
        if len(parts) != 4:
            raise TopologyError(f"bad topology '{spec}': a fat-tree needs 4 ';'-separated fields "
                                f"(levels;down;up;count), e.g. fattree:2;16,16;1,16;1,1")
        (levels,) = _ints(parts[0], ",", "the level count", spec)
        down = _ints(parts[1], ",", "children per switch", spec)
        up = _ints(parts[2], ",", "parents per node", spec)
        count = _ints(parts[3], ",", "parallel links", spec)
        if not len(down) == len(up) == len(count) == levels:
            raise TopologyError(f"bad topology '{spec}': each of down, up and count needs "
                                f"{levels} values (one per level)")
        topo = Topology("fattree", levels=levels, down=down, up=up, count=count, spec=spec)
    elif kind in ("kary", "k-ary"):
        k, n = (_ints(rest, ",", "K,N", spec) + (0, 0))[:2] if "," in rest else (0, 0)
        if k < 2 or n < 1 or len(rest.split(",")) != 2:
            raise TopologyError(f"bad topology '{spec}': write kary:K,N with K >= 2 ports "
                                f"down/up and N >= 1 levels, e.g. kary:4,3")
        topo = Topology("fattree", levels=n, down=(k,) * n, up=(1,) + (k,) * (n - 1),
                        count=(1,) * n, spec=spec)
    elif kind == "dragonfly":
        parts = rest.split(";")
        if len(parts) != 4 or [len(p.split(",")) for p in parts] != [2, 2, 2, 1]:
            raise TopologyError(f"bad topology '{spec}': a dragonfly is groups,links;chassis,links;"
                                f"routers,links;hosts (SimGrid DRAGONFLY), e.g. "
                                f"dragonfly:4,1;2,1;4,1;2")
        g, lg = _ints(parts[0], ",", "groups and links", spec)
        c, lc = _ints(parts[1], ",", "chassis and links", spec)
        r, lr = _ints(parts[2], ",", "routers and links", spec)
        (n,) = _ints(parts[3], ",", "hosts per router", spec)
        if g > r:
            raise TopologyError(f"bad topology '{spec}': SimGrid's dragonfly connects group i "
                                f"through router i of each group, so it needs groups <= routers "
                                f"per chassis ({g} > {r})")
        topo = Topology("dragonfly", dragonfly=(g, lg, c, lc, r, lr, n), spec=spec)
    else:
        raise TopologyError(f"bad topology '{spec}': unknown kind '{kind}'; {_SPEC_HELP}")
    if topo.sim_hosts > MAX_HOSTS:
        raise TopologyError(f"topology '{spec}' has {topo.sim_hosts} hosts; the simulations "
                            f"support at most {MAX_HOSTS}")
    return topo
