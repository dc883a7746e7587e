"""Tests of the ctypes binding of the sliding core (ftslide/sliding/core.py).

The algorithms themselves are tested in C (sliding/core/tests); these tests
check that the binding passes arguments and results through faithfully and
turns every error into a one-line FtslideError.
"""

from __future__ import annotations

import random

import pytest

from ftslide.errors import FtslideError
from ftslide.sliding import core as sc
from ftslide.sliding.topology import parse_topology


def test_parse_grid_and_spares() -> None:
    assert sc.parse_grid("6x6x6") == sc.Grid((6, 6, 6), True)
    assert sc.parse_grid("mesh:4x5") == sc.Grid((4, 5), False)
    assert str(sc.parse_grid("mesh:4x5")) == "mesh:4x5"
    assert sc.parse_spares("x:1") == sc.Spares((("x", 1),))
    assert sc.parse_spares("y:2,x:1").dims == (("y", 2), ("x", 1))
    assert str(sc.parse_spares("none")) == "none"
    assert sc.parse_spares("").dims == ()


@pytest.mark.parametrize("text, code", [
    ("", sc.Status.EGRID_SYNTAX), ("6", sc.Status.EGRID_DIMS), ("6x6x6x6", sc.Status.EGRID_DIMS),
    ("0x4", sc.Status.EGRID_SIZE), ("ring:4x4", sc.Status.EGRID_SYNTAX), ("4x4 ", sc.Status.EGRID_SYNTAX),
    ("99999x99999x99999", sc.Status.EGRID_SIZE), ("4×4", sc.Status.EGRID_SYNTAX),
])
def test_bad_grid(text: str, code: int) -> None:
    with pytest.raises(FtslideError) as err:
        sc.parse_grid(text)
    assert err.value.code == code
    message = str(err.value)
    assert message.startswith(f"bad grid '{text}': ") and "\n" not in message


@pytest.mark.parametrize("text, code", [
    ("x", sc.Status.ESPARES_SYNTAX), ("x:0", sc.Status.ESPARES_COUNT), ("w:1", sc.Status.ESPARES_SYNTAX),
    ("x:1,x:1", sc.Status.ESPARES_DIM), ("x:1,y:1,z:1", sc.Status.ESPARES_DIM),
])
def test_bad_spares(text: str, code: int) -> None:
    with pytest.raises(FtslideError) as err:
        sc.parse_spares(text)
    assert err.value.code == code
    assert "e.g. 'x:1'" in str(err.value) or code != sc.Status.ESPARES_SYNTAX


def test_non_string_input() -> None:
    with pytest.raises(FtslideError, match="grid must be a string"):
        sc.parse_grid(6)  # type: ignore[arg-type]
    with pytest.raises(FtslideError, match="method must be a string"):
        sc.compute_map(("4x4", "x:1"), None, [])  # type: ignore[arg-type]


def test_layout_fields_and_mismatch() -> None:
    lay = sc.make_layout("mesh:4x4", "x:1")
    assert (lay.logical, lay.nodes, lay.ranks) == ((3, 4), 16, 12)
    assert lay.coords(13) == (3, 1)
    assert lay.node((1, 2)) == 6
    assert lay.is_spare(12) and not lay.is_spare(11)
    assert lay.hops(0, 15) == 6
    assert lay.initial_map() == list(range(12))
    with pytest.raises(FtslideError, match="does not fit grid mesh:4x4"):
        sc.make_layout("mesh:4x4", "z:1")
    with pytest.raises(FtslideError) as err:
        sc.make_layout("mesh:4x4", "x:4")
    assert err.value.code == sc.Status.ESPARES_COUNT
    with pytest.raises(FtslideError, match="outside grid"):
        lay.node((4, 0))
    with pytest.raises(FtslideError, match="outside grid"):
        lay.coords(16)
    # Grid / Spares objects are checked by the C parser too.
    assert sc.make_layout(sc.Grid((4, 4), False), sc.Spares((("x", 1),))) == lay
    with pytest.raises(FtslideError, match="bad grid 'mesh:0x4'"):
        sc.make_layout(sc.Grid((0, 4), False), "x:1")
    with pytest.raises(FtslideError, match="bad grid 'torus:2x2x2x2'"):
        sc.make_layout(sc.Grid((2, 2, 2, 2), True), "x:1")
    with pytest.raises(FtslideError, match="bad spare layout 'q:1'"):
        sc.make_layout("4x4", sc.Spares((("q", 1),)))
    with pytest.raises(FtslideError, match="make_layout takes"):
        sc.make_layout(None, "x:1")  # type: ignore[arg-type]


def test_spare_sets() -> None:
    """A spare set (``z:1/16:1``: one spare per block of 16 node ids, a leaf switch): roles from the core,
    the spare count, and no method ever gives a rank to an unused node."""
    lay = sc.make_layout("torus:8x8x8", "z:1/16:1")
    assert str(lay.spares) == "z:1/16:1" and sc.parse_spares("z:1/16:1").block == 16
    assert (lay.ranks, lay.spare_nodes) == (448, 32)
    assert [lay.role(n).label for n in (6, 7, 15)] == ["rank", "unused", "spare"]
    assert [r.label for r in sc.Role] == ["rank", "spare", "unused"]
    failed = [9, 7, 100, 300, 15, 477]   # 7 is unused, 15 a spare
    for method in sc.methods():
        try:
            mapping = sc.compute_map(lay, method, failed)
        except sc.SlideError as exc:
            assert method.label in ("slide1d", "slide2d"), exc
            continue
        assert not set(mapping) & set(failed)
        assert all(lay.role(n) is not sc.Role.UNUSED for n in mapping) or method is sc.Method.SHRINK
    assert sc.compute_map(lay, "hybrid", [9, 7]) == sc.compute_map(lay, "hybrid", [9])
    with pytest.raises(FtslideError, match="1 <= K <= M"):
        sc.make_layout("torus:8x8x8", "z:1/4:5")


def test_hand_computed_maps() -> None:
    # Same example as the C tests: 4x4 mesh, spare column x=3, node 5 fails.
    lay = sc.make_layout("mesh:4x4", "x:1")
    assert sc.compute_map(lay, "simple", [5]) == [0, 1, 2, 3, 4, 13, 6, 7, 8, 9, 10, 11]
    assert sc.compute_map(lay, "slide1d", [5]) == [0, 1, 2, 3, 4, 9, 6, 7, 8, 13, 10, 11]
    assert sc.compute_map(lay, "hybrid", [5]) == sc.compute_map(lay, "slide2d", [5])
    assert sc.compute_map(lay, "hybrid", [5, 9]) == [0, 1, 2, 3, 4, 8, 10, 11, 12, 13, 14, 15]
    assert sc.compute_map(lay, "slide2d", [5]) == [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15]
    assert sc.compute_map(lay, "shrink", [5]) == [0, 1, 2, 3, 4, 1, 6, 7, 8, 9, 10, 11]
    assert sc.compute_map(("mesh:4x4", "x:1"), "slide1d", ()) == list(range(12))


def test_unknown_method_message() -> None:
    with pytest.raises(FtslideError) as err:
        sc.compute_map(("4x4", "x:1"), "foo", [1])
    assert str(err.value) == ("unknown method 'foo': choose simple, slide1d, slide2d, "
                              "hybrid, shrink or routed")
    assert [m.label for m in sc.methods()] == ["simple", "slide1d", "slide2d", "hybrid", "shrink", "routed"]
    assert [m.label for m in sc.methods() if m.one_rank_per_node] == ["simple", "slide1d", "slide2d", "hybrid",
                                                                      "routed"]
    assert [m.label for m in sc.methods() if m.chooses] == ["routed"]
    assert sc.Status(11).name == "ENOSPARE" and len(sc.Status) == 27
    assert err.value.code == sc.Status.EMETHOD


def test_method_errors_carry_index_and_last_good_map() -> None:
    lay = sc.make_layout("mesh:4x4", "x:1")
    with pytest.raises(FtslideError) as err:
        sc.compute_map(lay, "slide1d", [5, 9])
    e = err.value
    assert e.code == sc.Status.ELINE and e.index == 1
    assert e.mapping == sc.compute_map(lay, "slide1d", [5])
    assert "failure #2 (node 9)" in str(e) and "hybrid" in str(e)
    with pytest.raises(FtslideError) as err:
        sc.compute_map(lay, "slide2d", [5, 0])
    assert err.value.code == sc.Status.EPLANE
    with pytest.raises(FtslideError) as err:
        sc.compute_map(lay, "simple", [0, 1, 2, 3, 4])
    assert err.value.code == sc.Status.ENOSPARE
    assert str(err.value).startswith("simple: cannot place failure #5 (node 4): out of spares")
    with pytest.raises(FtslideError) as err:
        sc.compute_map(lay, "shrink", list(range(12)))
    assert err.value.code == sc.Status.ENOSURVIVOR


@pytest.mark.parametrize("failed, code, fragment", [
    ([5, 16], sc.Status.ENODE, "failure #2 (node 16) is outside grid mesh:4x4"),
    ([-1], sc.Status.ENODE, "failure #1 (node -1) is outside"),
    ([2**40], sc.Status.ENODE, f"node {2**40}) is outside"),
    ([5, 5], sc.Status.EDUP, "listed twice"),
])
def test_bad_failed_nodes(failed: list[int], code: int, fragment: str) -> None:
    for method in sc.methods():
        with pytest.raises(FtslideError) as err:
            sc.compute_map(("mesh:4x4", "x:1"), method, failed)
        assert err.value.code == code and fragment in str(err.value)


def test_non_integer_failed_nodes() -> None:
    with pytest.raises(FtslideError, match="failed nodes must be integers"):
        sc.compute_map(("mesh:4x4", "x:1"), "simple", ["5"])  # type: ignore[list-item]
    with pytest.raises(FtslideError, match="failed nodes must be integers"):
        sc.compute_map(("mesh:4x4", "x:1"), "simple", [True])
    with pytest.raises(FtslideError, match="sequence of node ids"):
        sc.compute_map(("mesh:4x4", "x:1"), "simple", "5")  # type: ignore[arg-type]


def test_random_sequences_are_valid_and_deterministic() -> None:
    rng = random.Random(7)
    for grid, spares in [("torus:6x5x4", "x:1"), ("mesh:7x6", "x:1,y:1"), ("torus:5x5x6", "z:2")]:
        lay = sc.make_layout(grid, spares)
        for method in sc.methods():
            failed = rng.sample(range(lay.nodes), 6)
            try:
                mapping = sc.compute_map(lay, method, failed)
            except FtslideError as err:
                assert err.index is not None and err.mapping is not None
                failed, mapping = failed[: err.index], err.mapping
            assert mapping == sc.compute_map(lay, method, failed)
            assert not set(mapping) & set(failed)
            if method.one_rank_per_node:
                assert len(set(mapping)) == lay.ranks


def test_hybrid_slides_planes_first_then_lines() -> None:
    """12x12x12 torus, one spare plane: hybrid takes slide2d's map for the first failure (a whole slab
    moves, load 1) where slide1d shifts a few ranks of one line (load 5); slide2d is stuck at the second
    failure and hybrid goes on from its map with a 1D slide: two ranks more, not slide1d's map."""
    lay = sc.make_layout("torus:12x12x12", "x:1")
    one, two = [464], [464, 758]
    assert sc.compute_map(lay, "hybrid", one) == sc.compute_map(lay, "slide2d", one)
    assert sc.compute_map(lay, "hybrid", one) != sc.compute_map(lay, "slide1d", one)
    first = sc.measure(lay, sc.compute_map(lay, "hybrid", one))
    assert (first.link_load_max, first.ranks_moved) == (1, 576)
    assert sc.measure(lay, sc.compute_map(lay, "slide1d", one)).link_load_max == 5
    with pytest.raises(sc.SlideError):
        sc.compute_map(lay, "slide2d", two)
    hybrid_two = sc.compute_map(lay, "hybrid", two)
    assert hybrid_two != sc.compute_map(lay, "slide1d", two)
    moved = [r for r, (a, b) in enumerate(zip(sc.compute_map(lay, "hybrid", one), hybrid_two)) if a != b]
    assert len(moved) == 2


def test_measure() -> None:
    lay = sc.make_layout("mesh:4x4", "x:1")
    m0 = sc.measure(lay, lay.initial_map())
    assert (m0.pairs, m0.hops_sum, m0.hops_max, m0.link_load_max, m0.links_overloaded) == \
        (17, 17, 1, 1, 0)
    m1 = sc.measure(lay, sc.compute_map(lay, "slide1d", [5]))
    assert (m1.hops_sum, m1.hops_max, m1.link_load_max, m1.links_overloaded, m1.ranks_moved) == \
        (22, 2, 3, 4, 2)
    assert m1.hops_hist[:3] == (0, 12, 5) and len(m1.hops_hist) == sc.HOPS_HIST
    assert m1.hops_mean == pytest.approx(22 / 17)
    shrink = sc.measure(lay, sc.compute_map(lay, "shrink", [5]))
    assert shrink.ranks_per_node_max == 2
    torus = sc.make_layout("torus:6x4x4", "x:2")
    assert sc.measure(torus, torus.initial_map()).hops_max == 3
    assert sc.measure(torus, torus.initial_map(), stencil_periodic=False).hops_max == 1


def test_measure_bad_input() -> None:
    lay = sc.make_layout("mesh:4x4", "x:1")
    with pytest.raises(FtslideError, match="a node for each of the 12 ranks"):
        sc.measure(lay, [0, 1])
    bad = list(range(12))
    bad[3] = 99
    with pytest.raises(FtslideError, match="rank 3 is 99, outside grid"):
        sc.measure(lay, bad)
    with pytest.raises(FtslideError, match="stencil_periodic"):
        sc.measure(lay, list(range(12)), stencil_periodic=2)  # type: ignore[arg-type]
    with pytest.raises(FtslideError, match="mapping entries must be integers"):
        sc.measure(lay, [0.5] * 12)  # type: ignore[list-item]


def test_large_grid_round_trip() -> None:
    lay = sc.make_layout("torus:48x47x47", "x:1")
    mapping = sc.compute_map(lay, "hybrid", [lay.node((10, 20, 30)), lay.node((11, 20, 30))])
    assert len(mapping) == 47 ** 3
    m = sc.measure(lay, mapping)
    assert m.ranks_moved > 0 and m.hops_max <= 3


# ---- routed ------------------------------------------------------------------------

ROUTED_LAYOUTS = [("torus:7x6x5", "x:1", ""), ("torus:6x6x4", "x:1", "zyx"), ("mesh:6x5x4", "x:1", ""),
                  ("torus:6x6x5", "x:1,y:1", ""), ("mesh:5x5x4", "y:1,z:1", "yzx"),
                  ("torus:8x7", "x:1", ""), ("mesh:7x6", "x:1,y:1", ""), ("torus:6x6", "y:2", "yx"),
                  ("torus:3x2x2", "x:1", ""), ("mesh:4x2x3", "x:1,z:1", "zxy")]


def _failure_sets(lay: sc.Layout, rng: random.Random, count: int) -> list[list[int]]:
    """Random failure sequences that hit ranks, spares and nodes that earlier failures moved
    ranks onto (the hybrid map of the prefix tells where those are)."""
    out = []
    for _ in range(count):
        k = rng.randint(1, lay.nodes - lay.ranks)
        failed: list[int] = []
        alive = [n for n in range(lay.nodes)]
        while len(failed) < k:
            pick = rng.random()
            moved = []
            if pick < 0.3 and failed:
                mapping = sc.compute_map(lay, "hybrid", failed)
                init = lay.initial_map()
                moved = [n for r, n in enumerate(mapping) if n != init[r]]
            pool = moved or ([n for n in alive if lay.is_spare(n)] if pick < 0.45 else alive)
            node = rng.choice(pool)
            if node in failed:
                continue
            failed.append(node)
            alive.remove(node)
        out.append(failed)
    return out


@pytest.mark.parametrize("grid,spares,order", ROUTED_LAYOUTS)
def test_routed_is_never_worse_than_hybrid(grid: str, spares: str, order: str) -> None:
    """Hundreds of seeded random failure sequences per layout (about 3,000 in all) on 2D and 3D
    tori and meshes, spares on one or two dimensions, failures on ranks, on spares and on nodes
    that hold moved ranks: routed's map is valid (ranks on distinct alive nodes), the same at every
    call, and its max link load is never above hybrid's for the same failures."""
    lay = sc.make_layout(grid, spares, parse_topology(grid, order))
    rng = random.Random(f"routed:{grid}:{spares}:{order}")
    checked = 0
    for failed in _failure_sets(lay, rng, 300):
        mapping = sc.compute_map(lay, "routed", failed)
        assert len(set(mapping)) == lay.ranks and not set(mapping) & set(failed), failed
        assert sc.compute_map(lay, "routed", failed) == mapping
        hybrid = sc.compute_map(lay, "hybrid", failed)
        assert sc.measure(lay, mapping).link_load_max <= sc.measure(lay, hybrid).link_load_max, failed
        checked += 1
    assert checked == 300


def test_routed_explains_its_choices() -> None:
    """12x12x12, one spare plane, two failures: the first takes a whole plane (load 1, as hybrid);
    the second shifts a block of lines that keeps the load at 2 where hybrid's map has 5."""
    lay = sc.make_layout("torus:12x12x12", "x:1")
    failed = [lay.node((5, 5, 9)), lay.node((6, 11, 1))]
    mapping, choices = sc.explain(lay, "routed", failed)
    assert mapping == sc.compute_map(lay, "routed", failed)
    first, second = choices
    assert (first.kind.label, first.load_max, first.overloaded) == ("block", 1, 0)
    assert first.lines == ((0, 12), (0, 12)) and first.moved == 144 * 6   # planes x=5..10
    assert second.kind == sc.ChoiceKind.BLOCK and second.load_max == 2 and second.hybrid_load_max == 5
    assert second.candidates > 20 and second.load_max == sc.measure(lay, mapping).link_load_max


def test_routed_labelled_and_product_surfaces() -> None:
    """Two surface candidates of issue 30. 12x12x12 x:1, 8 failures (draw 20 of
    bench/sliding_optimal): no stripe or 2 x 2 tiling keeps the load at 2, so the last failure
    takes a labelled surface (every y line its own skipped node, a tile per line) and routed ends
    at 2, the proven bound. torus:6x5 x:2, failures 3, 1, 6: load 1 needs two skipped planes (a
    product map; here logical x along y), which one-plane surfaces never give."""
    k = sc.make_layout("torus:12x12x12", "x:1")
    mapping, choices = sc.explain(k, "routed", [534, 1558, 297, 158, 1329, 318, 411, 145])
    last = choices[-1]
    assert (last.kind, last.dim, last.lines) == (sc.ChoiceKind.SURFACE, 1, ((0, 12), (0, 12)))
    assert sc.measure(k, mapping).link_load_max == 2 and sorted(mapping) == sorted(set(mapping))
    small = sc.make_layout("torus:6x5", "x:2")
    mapping, choices = sc.explain(small, "routed", [3, 1, 6])
    assert (choices[-1].kind, choices[-1].dim, choices[-1].dir) == (sc.ChoiceKind.SURFACE, -1, -1)
    assert sc.measure(small, mapping).link_load_max == 1
    used = [small.coords(n) for n in mapping]   # a product set: here x = 0 and y = 1 skipped
    assert len({c[0] for c in used}) * len({c[1] for c in used}) == len(set(used)) == small.ranks


def test_routed_spare_budget() -> None:
    """With a budget of 140 expected failures the first failure must leave 139 of the 144 spare
    nodes free, so routed cannot take hybrid's whole plane: it shifts a small block instead."""
    lay = sc.make_layout("torus:12x12x12", "x:1", expect=140)
    mapping, (choice,) = sc.explain(lay, "routed", [lay.node((5, 5, 9))])
    spare_nodes_used = sum(1 for n in mapping if lay.is_spare(n))
    assert choice.kind.label in ("block", "cross", "direct") and spare_nodes_used <= 144 - 139
    with pytest.raises(FtslideError, match="spare budget"):
        sc.make_layout("torus:12x12x12", "x:1", expect=145)


def test_blocks_of_ranks_per_node():
    """K ranks per node: the block's grammar, its default and the face loads come from the core."""
    layout = sc.make_layout("torus:3x2x2", "x:1")
    assert sc.make_block(layout, 1) == (1, 1, 1) and sc.make_block(layout, 4) == (2, 2, 1)
    assert sc.make_block(layout, 2, "1x2x1") == (1, 2, 1)
    for text, phrase in (("2x1", "bad block '2x1'"), ("2x2x1", "holds 4 ranks but a node runs 2"),
                         ("0x2x1", "bad block '0x2x1'")):
        with pytest.raises(FtslideError) as err:
            sc.make_block(layout, 2, text)
        assert phrase in str(err.value) and "\n" not in str(err.value)
    # the ranks of a block share their node; the unit block is the node-rank map itself
    assert sc.rank_nodes(layout, layout.initial_map(), (2, 1, 1)) == [0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7]
    assert sc.rank_nodes(layout, layout.initial_map()) == layout.initial_map()
    # mesh:3x2 with 2x1 blocks: a y link carries the two ranks of a face, three pairs per row stay inside
    flat = sc.make_layout("mesh:3x2", "none")
    m = sc.measure(flat, flat.initial_map(), block=(2, 1))
    assert (m.pairs, m.hops_hist[0], m.link_load_max, m.ranks_per_node_max) == (16, 6, 2, 2)
    assert sc.measure(layout, layout.initial_map(), block=(1, 1, 1)) == sc.measure(layout, layout.initial_map())
    assert len(sc.stencil_messages(layout, block=(2, 2, 1))[0]) == 160


# ---- redundancy across failure domains (slide_core.h; the rules are tested in C) ----------------

def test_redundancy_policies() -> None:
    assert sc.parse_redundancy("buddy") == sc.Redundancy("buddy", 2, 1)
    assert sc.parse_redundancy("parity:8") == sc.Redundancy("parity", 8, 1)
    assert sc.parse_redundancy("rs:8,2") == sc.Redundancy("rs", 8, 2)
    assert [str(sc.parse_redundancy(t)) for t in ("buddy", "parity:4", "rs:8,2")] == ["buddy", "parity:4", "rs:8,2"]


@pytest.mark.parametrize("text, code", [
    ("parity", "EREDUNDANCY"), ("rs:8", "EREDUNDANCY"), ("raid5", "EREDUNDANCY"), ("parity:4 ", "EREDUNDANCY"),
    ("rs:4,4", "EGROUP"), ("parity:1", "EGROUP"), ("rs:4,0", "EGROUP"),
])
def test_bad_redundancy_policy(text: str, code: str) -> None:
    with pytest.raises(FtslideError) as err:
        sc.parse_redundancy(text)
    assert err.value.code == sc.Status[code] and "\n" not in str(err.value)
    assert str(err.value).startswith(f"bad redundancy policy '{text}': ")


def test_block_domains() -> None:
    lay = sc.make_layout("torus:4x4x2", "x:1")
    assert sc.parse_domain_shape(lay, "2x2x1") == (2, 2, 1)
    domains, count = sc.block_domains(lay, "2x2x1")
    assert count == 8 and len(domains) == lay.nodes
    assert all(domains[n] == ((x // 2) * 2 + y // 2) * 2 + z
               for n in range(lay.nodes) for x, y, z in [lay.coords(n)])
    assert sc.block_domains(lay, (4, 4, 2)) == ([0] * lay.nodes, 1)
    for bad in ("2x2", "5x1x1", "0x1x1", "2x2x1x1", "two"):
        with pytest.raises(FtslideError) as err:
            sc.parse_domain_shape(lay, bad)
        assert err.value.code == sc.Status.EDOMAIN_SHAPE and "\n" not in str(err.value)
    with pytest.raises(FtslideError):
        sc.block_domains(lay, (1, 1, 3))


def test_groups_across_domains() -> None:
    """mesh:4x4 x:1 in 2x2 boxes, parity:3: the worked example of slide_core.h's rule, and the
    contract on a map after failures."""
    lay = sc.make_layout("mesh:4x4", "x:1")
    domains, _ = sc.block_domains(lay, "2x2")
    g = sc.groups(lay, lay.initial_map(), domains, 3, 1)
    assert g.group_of_rank == [0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 2, 3]
    assert g.member_of_rank == [0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 2, 2] and g.sizes == [3, 3, 3, 3]
    assert g.members(0) == [0, 2, 8]
    mapping = sc.compute_map(lay, "hybrid", [5, 10])
    for size, lose in ((2, 1), (3, 1), (4, 2), (6, 3)):
        g = sc.groups(lay, mapping, domains, size, lose)
        assert sorted(r for k in range(len(g.sizes)) for r in g.members(k)) == list(range(lay.ranks))
        for k in range(len(g.sizes)):
            per_domain = [domains[mapping[r]] for r in g.members(k)]
            assert max(per_domain.count(d) for d in per_domain) <= lose
        assert g == sc.groups(lay, list(mapping), list(domains), size, lose)  # deterministic
    assert sc.groups(lay, mapping, None, 12, 11).sizes == [12]


@pytest.mark.parametrize("size, lose, domains, code", [
    (1, 1, None, "EGROUP"), (4, 0, None, "EGROUP"), (4, 4, None, "EGROUP"), (13, 1, None, "EGROUP_RANKS"),
    (2, 1, "one", "ENOPLACEMENT"), (4, 1, "boxes", "ENOPLACEMENT"),
])
def test_group_errors(size: int, lose: int, domains: str | None, code: str) -> None:
    lay = sc.make_layout("mesh:4x4", "x:1")
    doms = {None: None, "one": [0] * lay.nodes, "boxes": sc.block_domains(lay, "2x2")[0]}[domains]
    with pytest.raises(FtslideError) as err:
        sc.groups(lay, lay.initial_map(), doms, size, lose)
    assert err.value.code == sc.Status[code] and "\n" not in str(err.value)
    if code == "EGROUP_RANKS":
        assert "group size larger than the node ranks" in str(err.value)


def test_buddy_shift_across_domains() -> None:
    lay = sc.make_layout("mesh:4x4", "x:1")
    domains, _ = sc.block_domains(lay, "2x2")
    assert sc.buddy_shift(lay, lay.initial_map(), domains) == 6
    small = sc.make_layout("mesh:3x2", "x:1")  # node ranks 0..3 on nodes 0..3
    assert sc.buddy_shift(small, small.initial_map(), [0, 1, 0, 1, 2, 2]) == 1  # 0 and 2 share a domain
    with pytest.raises(FtslideError) as err:
        sc.buddy_shift(small, small.initial_map(), [0, 0, 0, 0, 1, 1])
    assert err.value.code == sc.Status.ENOPLACEMENT
    with pytest.raises(FtslideError):
        sc.buddy_shift(small, small.initial_map(), [0, 1])  # not one domain per node
