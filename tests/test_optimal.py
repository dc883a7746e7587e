"""The optimum of a map after failures (ftslide.sliding.optimal) and ``ftslide map --optimal``.

The bound's theorem (docs/sliding-methods.md, "How far from optimal"): on a torus network that is the
grid itself, a map of max load 1 exists exactly when a product set of nodes avoids the failed ones with
every ring gap under half a ring (or the half from 0 to n/2). The cases below were worked out by hand:
- torus 4x4x4, spares x:1 (logical 3x4x4), failure 43 = (2,2,3): the logical 3 must lie on a ring of
  4 skipping one coordinate; only skipping 1 keeps the gaps legal ({0,2,3}: 0->2 is the half from 0),
  and node 43 has x = 2, y = 2 (y and z keep all 4): no product set, bound 2.
- the same grid, failures 5 = (0,1,1) and 22 = (1,1,2): skipping y = 1 (logical x along y: {0,2,3})
  avoids both: load 1 is possible.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ftslide.errors import FtslideError
from ftslide.simulation.placement import make_placement
from ftslide.simulation.sweep import draw_failures
from ftslide.sliding import core as sc
from ftslide.sliding import optimal as op
from ftslide.sliding.topology import parse_topology

REPO = Path(__file__).resolve().parent.parent


def ftslide_map(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ftslide", "map", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, cwd=REPO, timeout=300)


def valid(layout: sc.Layout, failed: list[int], mapping: list[int]) -> bool:
    """One rank per alive job node, none on a failed or unused node."""
    return len(mapping) == layout.ranks and len(set(mapping)) == layout.ranks and \
        not set(mapping) & set(failed) and all(layout.role(n) is not sc.Role.UNUSED for n in mapping)


def test_ring_gaps() -> None:
    assert op._ring_ok([0, 2, 3], 4) and not op._ring_ok([0, 1, 2], 4) and not op._ring_ok([1, 2, 3], 4)
    assert not op._ring_ok([0, 1, 3], 4)          # the half from 1 to 3 is not the one from 0
    assert op._ring_ok([0, 2, 4], 5) and not op._ring_ok([0, 1, 2], 6) and op._ring_ok(list(range(12)), 12)


def test_lower_bound_and_product_map() -> None:
    lay = sc.make_layout("torus:4x4x4", "x:1")
    assert op.lower_bound(lay, [43])[0] == 2
    assert op.product_map(lay, [43]) is None
    assert op.lower_bound(lay, [5, 22])[0] == 1
    embed = op.product_map(lay, [5, 22])
    assert embed is not None and valid(lay, [5, 22], embed) and sc.measure(lay, embed).link_load_max == 1
    # 12^3, one spare plane: 8 random failures never lie in one plane (bound 2); 8 in the plane x = 3 do
    k = make_placement(parse_topology("torus:12x12x12"), None, "x:1")
    for draw in draw_failures(k, 8, 5, 1):
        assert op.lower_bound(k.layout, draw)[0] == 2
    plane = [k.layout.node((3, y, (5 * y) % 12)) for y in range(8)]
    assert op.lower_bound(k.layout, plane)[0] == 1
    embed = op.product_map(k.layout, plane)
    assert embed is not None and valid(k.layout, plane, embed) and sc.measure(k.layout, embed).link_load_max == 1
    # a mesh (no theorem) and a single rank
    assert op.lower_bound(sc.make_layout("mesh:5x4", "x:1"), [9, 7, 11])[0] == 1


def test_the_bound_holds_against_every_method() -> None:
    """Over seeded small cases, no method's map goes under the bound, a product map meets load 1, and
    routed reaches 1 wherever the bound is 1."""
    import random
    rng = random.Random(30)
    for grid, spares, order in (("torus:4x4", "x:1", ""), ("torus:5x4", "x:1", "yx"), ("torus:6x5", "x:2", ""),
                                ("torus:4x4x3", "x:1", ""), ("torus:4x4x4", "y:1", "zyx")):
        lay = sc.make_layout(grid, spares, parse_topology(grid, order) if order else None)
        for _ in range(20):
            failed = rng.sample(lay.initial_map(), rng.randint(1, 3))
            bound, _ = op.lower_bound(lay, failed)
            for method in ("simple", "hybrid", "routed"):
                assert sc.measure(lay, sc.compute_map(lay, method, failed)).link_load_max >= bound
            if bound == 1:   # routed's product and rigid surfaces find a product map whenever one exists
                assert sc.measure(lay, sc.compute_map(lay, "routed", failed)).link_load_max == 1, (grid, failed)
            embed = op.product_map(lay, failed)
            assert (embed is None) == (bound == 2)
            if embed is not None:
                assert valid(lay, failed, embed) and sc.measure(lay, embed).link_load_max == 1


def test_solver_finds_the_optimum_below_routed() -> None:
    """mesh 5x4, spares x:1, failures 9, 7, 11: routed reaches load 3, the solver proves 2 (a case
    routed misses) and its map is a real map of load 2."""
    lay = sc.make_layout("mesh:5x4", "x:1")
    failed = [9, 7, 11]
    routed = sc.compute_map(lay, "routed", failed)
    assert sc.measure(lay, routed).link_load_max == 3
    best = op.optimum(lay, failed, [routed], time_limit=200, workers=1, tiebreaks=False)
    assert best.proven and best.link_load_max == best.lower_bound == 2 and best.how == "solver"
    assert best.mapping is not None and valid(lay, failed, best.mapping)
    assert sc.measure(lay, best.mapping).link_load_max == 2


def test_two_failures_on_one_line_do_not_force_load_3() -> None:
    """torus 8x6, spares x:1, failures 8 = (1,2) and 26 = (4,2): one x line keeps 6 nodes for 7
    ranks, so no surface exists and routed stays at 3; the solver does not decide it within 10
    minutes. The map below (found by an annealing search outside the project, see
    docs/sliding-methods.md) is neither a surface nor a product map and has load 2, the bound:
    so the bound is reached here by a map none of routed's candidate families generates."""
    lay = sc.make_layout("torus:8x6", "x:1")
    failed = [8, 26]
    found = [0, 1, 43, 42, 47, 5, 3, 2, 44, 45, 46, 4, 9, 14, 32, 39, 40, 10, 15, 21, 27, 33, 34, 16, 18, 19,
             25, 24, 28, 22, 12, 13, 31, 30, 29, 23, 6, 7, 37, 36, 41, 11]
    assert valid(lay, failed, found) and sc.measure(lay, found).link_load_max == 2
    rows = [sum(lay.coords(node)[1] == y for node in found) for y in range(6)]
    assert rows == [8, 8, 4, 8, 8, 6]  # ranks per x line: a surface along x has 7 on each
    assert sc.measure(lay, sc.compute_map(lay, "routed", failed)).link_load_max == 3
    best = op.optimum(lay, failed, [found], time_limit=10, workers=1, tiebreaks=False)
    assert best.proven and best.link_load_max == best.lower_bound == 2


def test_time_limit_gives_a_bound_marked_not_proven() -> None:
    lay = sc.make_layout("torus:4x4x4", "x:1")
    failed = [43, 21, 1]
    simple = sc.compute_map(lay, "simple", failed)
    best = op.optimum(lay, failed, [simple], time_limit=0.1, workers=1)
    assert not best.proven and best.lower_bound < best.link_load_max and "time limit" in best.note
    assert best.mapping is not None and valid(lay, failed, best.mapping)


def test_bad_input() -> None:
    with pytest.raises(FtslideError, match="torus or mesh network that is the grid itself"):
        op.optimum(sc.make_layout("torus:4x4", "x:1", parse_topology("fattree:4")), [1])
    with pytest.raises(FtslideError, match="no map exists"):
        op.optimum(sc.make_layout("torus:4x4", "x:1"), [0, 1, 2, 3, 5])
    big = sc.make_layout("torus:12x12x12", "x:1")
    with pytest.raises(FtslideError, match=f"at most {op.MAX_NODES} nodes"):
        op.optimum(big, [big.node((i, i, i)) for i in range(3)])   # no product set, no map given


def test_map_optimal_cli() -> None:
    result = ftslide_map("--grid", "4x4x4", "--spares", "x:1", "--method", "hybrid,routed", "--fail", "43",
                         "--optimal", "--optimal-time", "8", "--json")  # the load is proven at once; the rest is tie-breaks
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["optimal"]["link_load_max"] == 2 and doc["optimal"]["proven"] is True
    assert doc["optimal"]["lower_bound"] == 2
    # above the solver's limit: the bound and the best method, marked not proven when they differ
    result = ftslide_map("--grid", "12x12x12", "--spares", "x:1", "--method", "routed",
                         "--fail", "464,758,768,258,395,1443,89,174", "--optimal")
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("optimum ("))
    assert ("proven optimal" in line) or (f"above {op.MAX_NODES} nodes" in line and "not proven" in line), line
    for args, phrase in ((["--topology", "fattree:4", "--grid", "4x4"], "grid itself"),
                         (["--grid", "4x4", "--optimal-time", "0"], "--optimal-time must be a positive"),
                         (["--grid", "4x4", "--ranks-per-node", "2"], "--optimal works on one rank per node")):
        result = ftslide_map(*args, "--spares", "x:1", "--method", "routed", "--fail", "1", "--optimal")
        assert result.returncode == 1 and phrase in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
