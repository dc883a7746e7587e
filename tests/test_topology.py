"""The one topology model (sliding/core/include/slide_topo.h through ftslide.sliding.topology):
spec grammar, numbering, routes, and SimGrid's routes on the generated platforms, link for link.

The emulated cluster's forwarding is held against the same routes in tests/test_netcluster.py.
"""

from __future__ import annotations

import itertools
import random
import re
import subprocess
from pathlib import Path

import pytest

from ftslide.toolchain.native import native_program
from ftslide.simulation.network import NetParams
from ftslide.simulation.platform import platform_xml
from ftslide.sliding.topology import Topology, TopologyError, parse_topology

# ---- grammar -----------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [
    "torus:", "torus:4x0x4", "torus:4xx4", "mesh:4,4", "torus:2x2x2x2x2x2x2", "ring:4x4", "ring:",
    "star:0", "fattree:3", "fattree:2;4,4;1,2", "fattree:2;4;1,2;1,2", "fattree:2;4,4;0,2;1,2",
    "fattree:9;2,2,2,2,2,2,2,2,2;1,1,1,1,1,1,1,1,1;1,1,1,1,1,1,1,1,1", "kary:1,3", "kary:4",
    "kary:4,3,2", "dragonfly:4,1;2,1;4,1", "dragonfly:4,1;2;4,1;2", "dragonfly:5,1;2,1;4,1;2",
    "hypercube:4", "", ":", "torus:4×4", "torus:99999x99999x99999",
])
def test_malformed_spec_is_one_line_error(spec: str) -> None:
    with pytest.raises(TopologyError) as info:
        parse_topology(spec)
    message = str(info.value)
    assert "\n" not in message and f"'{spec}'" in message


@pytest.mark.parametrize("spec,canonical,hosts,switches", [
    ("torus:12x12x12", "torus:12x12x12", 1728, 0), ("12x12x12", "torus:12x12x12", 1728, 0),
    ("TORUS:2x3x4x5", "torus:2x3x4x5", 120, 0), ("mesh:16x8x8", "mesh:16x8x8", 1024, 0),
    ("ring:8", "ring:8", 8, 0), ("star:5", "star:5", 5, 1),
    ("fattree:4", "fattree:4", 16, 20), ("fattree:8", "fattree:8", 128, 80),
    ("kary:4,3", "fattree:3;4,4,4;1,4,4;1,1,1", 64, 48),
    ("fattree:2;16,32;1,16;1,1", "fattree:2;16,32;1,16;1,1", 512, 48),
    ("dragonfly:4,1;2,1;4,1;2", "dragonfly:4,1;2,1;4,1;2", 64, 32),
])
def test_specs_parse_to_canonical_shapes(spec: str, canonical: str, hosts: int,
                                         switches: int) -> None:
    t = parse_topology(spec)
    assert (t.spec, t.hosts, t.switches) == (canonical, hosts, switches)
    assert parse_topology(t.spec) == t


def test_numbering_is_row_major_last_dimension_fastest() -> None:
    t = parse_topology("torus:4x3x2")
    assert [t.coords(h) for h in (0, 1, 2, 23)] == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (3, 2, 1)]
    assert all(t.host_at(t.coords(h)) == h for h in range(t.hosts))


@pytest.mark.parametrize("spec,order,error", [
    ("torus:4x4x4", "xy", "permutation of 'xyz'"), ("torus:4x4x4", "xxz", "permutation"),
    ("torus:4x4", "zy", "permutation of 'xy'"), ("fattree:4", "xyz", "only a torus, mesh or ring"),
    ("torus:2x2x2x2", "xyzw", "permutation of '0123'"),
])
def test_bad_routing_order_is_one_line_error(spec: str, order: str, error: str) -> None:
    with pytest.raises(TopologyError, match=error):
        parse_topology(spec, order)


# ---- routes ------------------------------------------------------------------------------

ROUTED = [("torus:5x4x3", ""), ("torus:4x4", ""), ("torus:4x6x2", "zxy"), ("mesh:4x3x3", ""),
          ("mesh:5x2", "yx"), ("ring:6", ""), ("ring:2", ""), ("torus:3x2x2x2", "3102"),
          ("star:6", ""), ("fattree:4", ""), ("kary:3,3", ""), ("fattree:2;4,4;1,2;1,2", ""),
          ("fattree:2;4,2;2,2;2,1", ""), ("dragonfly:3,1;2,1;3,1;2", "")]


@pytest.mark.parametrize("spec,order", ROUTED)
def test_routes_are_paths_and_forwarding_follows_them(spec: str, order: str) -> None:
    """Every route is a chain of links from a to b (a dragonfly's may jump where SimGrid's does);
    torus/mesh routes are shortest; the rest of a route after any vertex is that vertex's own
    route (so next-hop forwarding tables follow the same paths; with parallel fat-tree links,
    the same switches)."""
    t = parse_topology(spec, order)
    for a, b in itertools.permutations(range(t.hosts), 2):
        links = [t.link(n) for n in t.route(a, b)]
        assert links and all(link is not None for link in links)
        assert len(links) == t.hops(a, b) <= t.route_max
        if t.kind == "dragonfly":
            assert links[0].tail == a and links[-1].head == b
            continue
        assert [links[0].tail] + [x.head for x in links] == \
            [links[0].tail] + [x.tail for x in links[1:]] + [b]
        assert links[0].tail == a
        parallel = t.kind == "fattree" and any(n > 1 for n in t._c.count[: t._c.levels])
        for i, link in enumerate(links):
            rest = [t.link(n) for n in t.route_from(link.tail, b)]
            if parallel:  # the same switches; the cable downwards depends on the source
                assert [x.head for x in rest] == [x.head for x in links[i:]]
            else:
                assert [x.id for x in rest] == [x.id for x in links[i:]]
        if t.is_grid:
            ca, cb = t.coords(a), t.coords(b)
            shortest = sum(abs(p - q) if not t.periodic else min(abs(p - q), n - abs(p - q))
                           for p, q, n in zip(ca, cb, t.dims))
            assert len(links) == shortest


def test_round_counts_loads_of_every_route() -> None:
    t = parse_topology("fattree:2;4,4;1,2;1,2")
    rng = random.Random(5)
    src = [rng.randrange(t.hosts) for _ in range(200)]
    dst = [rng.randrange(t.hosts) for _ in range(200)]
    r = t.route_round(src, dst)
    expect = [0] * t.links
    for a, b in zip(src, dst):
        for n in t.route(a, b):
            expect[n] += 1
    assert list(r.loads) == expect
    assert r.load_max == max(expect) and r.links_overloaded == sum(v > 1 for v in expect)
    assert list(r.hops) == [len(t.route(a, b)) for a, b in zip(src, dst)]
    assert all(w == max((expect[n] for n in t.route(a, b)), default=0)
               for w, a, b in zip(r.worst, src, dst))


# ---- SimGrid's routes --------------------------------------------------------------------

def _our_links_by_ends(t: Topology) -> dict[tuple[int, int], int]:
    return {(link.tail, link.head): link.id for link in t.all_links()}


def simgrid_link_numbers(t: Topology) -> dict[str, int]:
    """Our link number of every link name SimGrid gives the platform of ``t`` (split-duplex,
    names ending in _UP / _DOWN). Fat-tree and dragonfly names carry a creation counter:
    the links are listed here in SimGrid's creation order to read it."""
    c = t._c
    out: dict[str, int] = {}
    if t.is_grid:
        return out  # torus names carry both ends: read in simgrid_route()
    if t.kind in ("fattree", "star"):
        uid = 0
        for level in range(c.levels):
            ports = c.up[level] * c.count[level]
            first = c.level_first[level]
            for pos in range(c.level_first[level + 1] - first):
                # parents in increasing position: they differ in label digit `level` only
                for digit in range(c.up[level]):
                    for cable in range(c.count[level]):
                        port = digit + cable * c.up[level]
                        up = c.link_first[level] + (pos * ports + port) * 2
                        out[f"{uid}_UP"], out[f"{uid}_DOWN"] = up, up + 1
                        uid += 1
        return out
    g_, _, c_, _, r_, _, n_ = c.dragonfly
    base = c.link_first
    routers = g_ * c_ * r_
    uid = 0
    for rho in range(routers):
        for slot in range(n_):
            host = rho * n_ + slot
            out[f"{uid}_UP"], out[f"{uid}_DOWN"] = 2 * host, 2 * host + 1
            uid += 1
    for chassis in range(g_ * c_):
        for j in range(r_):
            for k in range(j + 1, r_):
                a, b = chassis * r_ + j, chassis * r_ + k
                out[f"{uid}_UP"], out[f"{uid}_DOWN"] = base[1] + a * r_ + k, base[1] + b * r_ + j
                uid += 1
    for g in range(g_):
        for j in range(c_):
            for k in range(j + 1, c_):
                for blade in range(r_):
                    a, b = (g * c_ + j) * r_ + blade, (g * c_ + k) * r_ + blade
                    out[f"{uid}_UP"], out[f"{uid}_DOWN"] = base[2] + a * c_ + k, base[2] + b * c_ + j
                    uid += 1
    for i in range(g_):
        for j in range(i + 1, g_):
            out[f"{uid}_UP"], out[f"{uid}_DOWN"] = base[3] + i * g_ + j, base[3] + j * g_ + i
            uid += 1
    return out


_TORUS_LINK = re.compile(r"ftsim_link_from_(\d+)_to_(\d+)_(UP|DOWN)")
_COUNTED_LINK = re.compile(r".*_(\d+_(?:UP|DOWN))")


def simgrid_routes(t: Topology, tmp: Path, pairs: list[tuple[int, int]]) -> dict[tuple[int, int],
                                                                                list[int]]:
    """SimGrid's route of each pair, as our link numbers (ftroutes on the generated platform)."""
    platform = tmp / "platform.xml"
    platform.write_text(platform_xml(t, NetParams()))
    result = subprocess.run([str(native_program("ftroutes")), str(platform),
                             *(f"{a}:{b}" for a, b in pairs)],
                            capture_output=True, text=True, timeout=120, check=True)
    host_of = {t.sim_position(h): h for h in range(t.hosts)}
    by_ends = _our_links_by_ends(t) if t.is_grid else {}
    by_name = simgrid_link_numbers(t)
    routes = {}
    for line in result.stdout.splitlines():
        a, b, *names = line.split()
        numbers = []
        for name in names:
            m = _TORUS_LINK.fullmatch(name)
            if m:
                p, q = host_of[int(m[1])], host_of[int(m[2])]
                numbers.append(by_ends[(p, q) if m[3] == "UP" else (q, p)])
            else:
                m = _COUNTED_LINK.fullmatch(name)
                assert m, name
                numbers.append(by_name[m[1]])
        routes[(int(a), int(b))] = numbers
    return routes


SIMGRID_CASES = [("torus:5x4x3", ""), ("torus:4x4x4", ""), ("torus:6x4x2", "zyx"),
                 ("torus:4x6", "yx"), ("torus:2x3x2x2", "2031"), ("ring:6", ""), ("ring:2", ""),
                 ("mesh:4x3x5", ""), ("mesh:5x4", "yx"), ("mesh:2x3x3", "zxy"), ("star:5", ""),
                 ("fattree:4", ""), ("kary:3,3", ""), ("fattree:2;4,4;1,2;1,2", ""),
                 ("fattree:3;2,2,3;1,2,2;2,1,2", ""), ("dragonfly:3,1;2,1;3,1;2", ""),
                 ("dragonfly:2,2;3,1;2,3;1", "")]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("spec,order", SIMGRID_CASES)
def test_simgrid_routes_are_the_model_routes(spec: str, order: str, tmp_path: Path) -> None:
    """SimGrid, on the platform ftslide generates, routes every pair of hosts over exactly the
    links the model routes it over: odd and even tori in several routing orders, meshes (embedded
    in bigger tori), fat-trees with parallel links, dragonflies."""
    t = parse_topology(spec, order)
    pairs = list(itertools.permutations(range(t.hosts), 2))
    if len(pairs) > 4000:
        pairs = random.Random(spec).sample(pairs, 4000)
    theirs = simgrid_routes(t, tmp_path, pairs)
    assert len(theirs) == len(pairs)
    for a, b in pairs:
        assert theirs[(a, b)] == t.route(a, b), (a, b)
