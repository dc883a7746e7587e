"""How far a substitution method is from the best possible map: the exact optimum and a bound.

For a layout, the network's routing and a list of failed nodes, the optimum is the lowest max
directed-link load of the stencil over *every* rank-to-node map a recovery could produce (any
one-to-one map of the ranks onto the alive nodes of the job), then the fewest links above load 1,
then the fewest ranks off their initial node. The failures' order does not matter to it (a
recovery may move any rank): it is the best the final map can be.

:func:`optimum` solves it exactly with OR-Tools' CP-SAT solver on grids of at most
:data:`MAX_NODES` nodes whose network is the grid itself (a torus or mesh in dimension order), and
gives the best load found with the best proven lower bound when its time limit ends first. Above
that size it gives the proven bound of :func:`lower_bound` and the best of the maps it was handed.
``docs/sliding-methods.md`` ("How far from optimal") states the model and the arguments.

Errors: :class:`~ftslide.errors.FtslideError` (one line) for a network the model does not cover,
failures that leave fewer alive nodes than ranks, and a missing ``ortools`` package.
Cost: model building O(messages x nodes x route length) in Python (a few seconds at 64 nodes),
then the solver's time, at most ``time_limit`` seconds; :func:`lower_bound` and
:func:`product_map` O(nodes x failures).
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from typing import Sequence

from ..errors import FtslideError
from . import core
from .core import Layout

__all__ = ["MAX_NODES", "Optimum", "optimum", "lower_bound", "product_map"]

# Largest grid the exact model is built for: at 64 nodes (4x4x4) it has about 0.3 million
# clauses; 5x5x5 (125 nodes) already needs several GiB and more than 10 minutes.
MAX_NODES = 100


@dataclass(frozen=True)
class Optimum:
    """The best map for a layout after failures, or how close the search came.

    ``link_load_max`` is the lowest max load found (a map that has it exists: ``mapping``, or the
    map of a method handed in); ``lower_bound`` is proven: no map has a lower one; ``proven`` when
    they are equal. ``links_overloaded`` and ``ranks_moved`` are those of the map found, minimal
    among the maps with that load when ``tiebreak_proven``. ``how`` says what produced the answer
    ("solver", "product map", "bound") and ``note`` why it is not proven, if it is not.
    """

    link_load_max: int
    lower_bound: int
    proven: bool
    links_overloaded: int
    ranks_moved: int
    tiebreak_proven: bool
    mapping: list[int] | None
    how: str
    seconds: float
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"link_load_max": self.link_load_max, "lower_bound": self.lower_bound,
                "proven": self.proven, "links_overloaded": self.links_overloaded,
                "ranks_moved": self.ranks_moved, "tiebreak_proven": self.tiebreak_proven,
                "how": self.how, "seconds": round(self.seconds, 3), "note": self.note}


def _cp_model():  # type: ignore[no-untyped-def]
    try:
        from ortools.sat.python import cp_model
    except ImportError:
        raise FtslideError("the exact optimum needs OR-Tools: pip install 'ortools>=9.15' "
                           "(or run ./bootstrap setup)") from None
    return cp_model


def _grid_network(layout: Layout) -> bool:
    """The layout runs on its own grid (a torus or mesh of the same shape)."""
    net = layout.net
    return net.kind in ("torus", "mesh") and tuple(net.dims) == tuple(layout.grid.sizes) and \
        (net.kind == "torus") == layout.grid.periodic


def _job_nodes(layout: Layout, failed: Sequence[int]) -> list[int]:
    dead = set(failed)
    return [n for n in range(layout.nodes) if n not in dead and layout.role(n) is not core.Role.UNUSED]


# ---- product maps and the bound --------------------------------------------------------------


def _coverings(skips: dict[int, int], holes: list[tuple[int, ...]], limit: int = 100_000) -> list[dict[int, set[int]]] | None:
    """Every minimal way to choose, per dimension e, at most ``skips[e]`` skipped coordinates so
    that every hole has its coordinate skipped in some dimension (an exact search: each step takes
    the first hole not yet covered and tries each dimension with room left). None when the search
    passes ``limit`` steps (undecided). Cost O(dims ** sum(skips)), at most ``limit`` steps."""
    found: list[dict[int, set[int]]] = []
    seen: set[tuple[tuple[int, tuple[int, ...]], ...]] = set()
    steps = 0

    def walk(chosen: dict[int, set[int]]) -> bool:
        nonlocal steps
        steps += 1
        if steps > limit:
            return False
        open_hole = next((h for h in holes if not any(h[e] in chosen[e] for e in chosen)), None)
        if open_hole is None:
            key = tuple(sorted((e, tuple(sorted(c))) for e, c in chosen.items()))
            if key not in seen:
                seen.add(key)
                found.append({e: set(c) for e, c in chosen.items()})
            return True
        for e in chosen:
            if len(chosen[e]) < skips[e]:
                chosen[e].add(open_hole[e])
                ok = walk(chosen)
                chosen[e].discard(open_hole[e])
                if not ok:
                    return False
        return True

    return found if walk({e: set() for e, k in skips.items() if k > 0}) else None


def _ring_ok(kept: Sequence[int], n: int) -> bool:
    """Whether ranks on the coordinates ``kept`` of a ring of ``n`` (in cyclic order) reach their
    two neighbours on the ring through skipped coordinates only, each message the short way:
    every gap under half the ring, or exactly half from 0 up to n/2 (SimGrid's tie rule sends
    both ways through that gap, and through none other of half the ring)."""
    kept = sorted(kept)
    for a, b in zip(kept, kept[1:] + [kept[0] + n]):
        gap = b - a
        if 2 * gap > n or (2 * gap == n and (a, b) != (0, n // 2)):
            return False
    return True


# the product sets of _embeddings (an assignment of dimensions and the kept coordinates), and
# whether the search was complete
Embeddings = tuple[list[tuple[tuple[int, ...], dict[int, list[int]]]], bool]


def _embeddings(layout: Layout, failed: Sequence[int], limit: int = 100_000) -> Embeddings:
    """The product sets of nodes that avoid every failed and unused node and whose rings keep
    every neighbour message on skipped coordinates (:func:`_ring_ok`): per assignment of logical
    to physical dimensions (``perm[d]`` holds logical dimension d), the kept coordinates of each
    physical dimension, in order. Also whether the search was complete (``limit`` steps)."""
    sizes, logical = layout.grid.sizes, layout.logical
    ndims = len(sizes)
    dead = set(failed)
    holes = sorted({layout.coords(n) for n in range(layout.nodes)
                    if n in dead or layout.role(n) is core.Role.UNUSED})
    out, complete, seen = [], True, set()
    for perm in itertools.permutations(range(ndims)):
        if any(logical[d] > sizes[perm[d]] for d in range(ndims)):
            continue
        skips = {perm[d]: sizes[perm[d]] - logical[d] for d in range(ndims)}
        covers = _coverings(skips, holes, limit)
        if covers is None:
            complete = False
            continue
        for cover in covers:
            # complete each dimension's skipped coordinates in every way that keeps its ring whole
            choices = []
            for e in range(ndims):
                must = cover.get(e, set())
                rest = [c for c in range(sizes[e]) if c not in must]
                ways = []
                for extra in itertools.combinations(rest, skips[e] - len(must)):
                    kept = [c for c in rest if c not in extra]
                    if _ring_ok(kept, sizes[e]) or not layout.grid.periodic:
                        ways.append(kept)
                    if len(ways) > limit:
                        break
                choices.append(ways)
            if sum(len(w) for w in choices) > limit:
                complete = False
                continue
            for kept in itertools.product(*choices):
                key = (perm, tuple(map(tuple, kept)))
                if key not in seen:
                    seen.add(key)
                    out.append((perm, dict(enumerate(kept))))
                if len(out) > limit:
                    return out, False
    return out, complete


def product_map(layout: Layout, failed: Sequence[int], found: Embeddings | None = None) -> list[int] | None:
    """A rigid re-embedding that avoids every failed and unused node, if one exists: logical
    dimension d laid in order along a physical dimension of at least its size (any assignment of
    logical to physical dimensions), skipping whole planes that hold every failed or unused node,
    and on a torus with every neighbour message crossing skipped planes only (max load 1).
    Among such maps the one that moves the fewest ranks; None if there is none.
    Cost: :func:`_embeddings` (none when ``found``, its result, is given), then O(ranks) per product set."""
    sizes, logical = layout.grid.sizes, layout.logical
    ndims = len(sizes)
    initial = layout.initial_map()
    best: tuple[int, list[int]] | None = None
    for perm, place in (found or _embeddings(layout, failed))[0]:
        mapping = []
        for rank in range(layout.ranks):
            lc, rest = [], rank
            for d in range(ndims - 1, -1, -1):
                lc.append(rest % logical[d])
                rest //= logical[d]
            lc.reverse()
            pc = [0] * ndims
            for d in range(ndims):
                pc[perm[d]] = place[perm[d]][lc[d]]
            mapping.append(layout.node(pc))
        moved = sum(a != b for a, b in zip(mapping, initial))
        if best is None or moved < best[0]:
            best = (moved, mapping)
    return None if best is None else best[1]


def lower_bound(layout: Layout, failed: Sequence[int], found: Embeddings | None = None) -> tuple[int, str]:
    """A proven lower bound of the optimum's max load, and its reason.

    Every map of two or more ranks sends messages over links: 1. On a torus network that is the
    grid itself (sides >= 3, logical sides >= 3, periodic stencil, dimension-order routing in any
    order), a map of max load 1 lays the ranks on a product set of nodes (the theorem in
    docs/sliding-methods.md, "How far from optimal") whose rings pass messages through skipped
    coordinates only, so when no such product set avoids the failed and unused nodes, no map has
    load 1: the bound is 2. Cost: the covering search, O(dims ** skipped
    planes) per assignment of dimensions (undecided past 100,000 steps: bound 1); none when ``found``,
    the search's result, is given."""
    if layout.ranks < 2:
        return 0, "a single rank sends nothing"
    if _grid_network(layout) and _lemmas_hold(layout):
        embeddings, complete = found or _embeddings(layout, failed)
        if complete and not embeddings:
            return 2, ("a map of load 1 lays the ranks on a product set of nodes, and no product set "
                       "avoids the failed nodes with short enough gaps")
    return 1, "every neighbour pair's messages cross at least one link"


# ---- the exact model ---------------------------------------------------------------------------


def _score(layout: Layout, mapping: Sequence[int]) -> tuple[int, int, int]:
    m = core.measure(layout, mapping)
    return m.link_load_max, m.links_overloaded, m.ranks_moved


def optimum(layout: Layout, failed: Sequence[int], maps: Sequence[Sequence[int]] = (),
            time_limit: float = 60.0, workers: int = 0, tiebreaks: bool = True) -> Optimum:
    """The optimum after ``failed`` (see the module), or the best bound within ``time_limit``.

    Parameters
    ----------
    layout : a Layout whose network is its grid (``core.make_layout`` with no other topology).
    failed : the failed nodes (their order does not matter here).
    maps : maps known to be possible (the methods' maps): the search starts from the best, and
        above :data:`MAX_NODES` the answer is the best of them beside the bound.
    time_limit : seconds for the solver, over the three stages (load, links above 1, moves).
    workers : solver threads (0: the machine's cores).
    tiebreaks : also minimise the links above 1, then the moves (False: the max load alone).

    Returns an :class:`Optimum`. Raises FtslideError for another network, a layout with fewer alive
    job nodes than ranks, or a missing solver. Cost: see the module.
    """
    start = time.monotonic()
    if not _grid_network(layout):
        raise FtslideError(f"the exact optimum is for a torus or mesh network that is the grid itself; "
                           f"{layout.grid} runs on {layout.net}")
    alive = _job_nodes(layout, failed)
    if len(alive) < layout.ranks:
        raise FtslideError(f"{len(failed)} failures leave {len(alive)} alive nodes for {layout.ranks} ranks: "
                           "no map exists")
    known = [list(m) for m in maps]
    found = _embeddings(layout, failed)  # product_map and lower_bound share the one search
    embed = product_map(layout, failed, found)
    if embed is not None:
        known.append(embed)
    scored = sorted((_score(layout, m), i) for i, m in enumerate(known))
    best = scored[0][0] if scored else None
    best_map = known[scored[0][1]] if scored else None
    bound, why = lower_bound(layout, failed, found)

    if not tiebreaks and best is not None and best[0] <= bound:
        return Optimum(best[0], bound, True, best[1], best[2], False, best_map,
                       "product map" if embed is not None and best_map is embed else "bound",
                       time.monotonic() - start, "tie-breaks not asked")
    if layout.nodes > MAX_NODES:
        if best is None:
            raise FtslideError(f"the exact optimum is limited to grids of at most {MAX_NODES} nodes "
                               f"({layout.grid} has {layout.nodes}) and no map was given to compare")
        proven = best[0] <= bound
        return Optimum(best[0], bound, proven, best[1], best[2], False, best_map,
                       "product map" if embed is not None and best_map is embed else "bound",
                       time.monotonic() - start,
                       "" if proven else f"grid above {MAX_NODES} nodes: the solver is not run; "
                       f"lower bound: {why}")
    return _solve(layout, alive, best, best_map, bound, start, time_limit, workers, tiebreaks)


def _lemmas_hold(layout: Layout) -> bool:
    """The load-1 lemmas need a torus of sides >= 3 whose every rank has 2 x ndims distinct
    neighbours (a periodic stencil with logical sides >= 3)."""
    return layout.grid.periodic and all(n >= 3 for n in layout.grid.sizes) and \
        all(n >= 3 for n in layout.logical)


def _flat_map(layout: Layout, alive: list[int], time_limit: float, workers: int,
              fewest_moves: bool = False) -> tuple[bool | None, list[int] | None]:
    """Is there a map of max load 1? By the load-1 lemmas (docs/sliding-methods.md) exactly when
    every neighbour pair lies on one physical axis line with only nodes without a rank between
    them on both its routes: a pure satisfiability model, far smaller than the load model.
    (True, map), (False, None), or (None, None) when the time limit ends first. With
    ``fewest_moves`` the map moves the fewest ranks, and True means proven so."""
    cp_model = _cp_model()
    net = layout.net
    coords = {a: layout.coords(a) for a in alive}
    ranks = range(layout.ranks)
    model = cp_model.CpModel()
    x = {(r, a): model.NewBoolVar("") for r in ranks for a in alive}
    free = {a: model.NewBoolVar("") for a in alive}
    for r in ranks:
        model.AddExactlyOne(x[r, a] for a in alive)
    for a in alive:
        model.AddExactlyOne([x[r, a] for r in ranks] + [free[a]])
    src, dst = core.stencil_messages(layout)
    pairs = sorted({(min(s, t), max(s, t)) for s, t in zip(src, dst)})
    ends = {}   # link -> its head host
    for a in alive:
        line = [b for b in alive if b != a and sum(p != q for p, q in zip(coords[a], coords[b])) == 1]
        between = {}
        for b in line:
            inner = set()
            for u, v in ((a, b), (b, a)):
                for lk in net.route(u, v):
                    if lk not in ends:
                        ends[lk] = net.link(lk).head  # type: ignore[union-attr]
                    if ends[lk] != v and ends[lk] in free:
                        inner.add(ends[lk])
            between[b] = sorted(inner)
        for r, q in pairs:
            for one, other in ((r, q), (q, r)):
                model.AddBoolOr([x[one, a].Not()] + [x[other, b] for b in line])
            for b in line:
                for c in between[b]:
                    model.AddBoolOr([x[r, a].Not(), x[q, b].Not(), free[c]])
                    model.AddBoolOr([x[q, a].Not(), x[r, b].Not(), free[c]])
    if fewest_moves:
        initial = layout.initial_map()
        model.Minimize(layout.ranks - sum(x[r, initial[r]] for r in ranks if (r, initial[r]) in x))
    elif layout.grid.periodic:   # logical translations keep every load: alive[0] holds rank 0 or none
        for r in ranks:
            if r:
                model.Add(x[r, alive[0]] == 0)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers or (os.cpu_count() or 1)
    solver.parameters.max_time_in_seconds = max(time_limit, 0.1)
    status = solver.Solve(model)
    if status == cp_model.FEASIBLE and fewest_moves:
        return None, _extract(solver, x, ranks, alive)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return True, _extract(solver, x, ranks, alive)
    if status == cp_model.INFEASIBLE:
        return False, None
    return None, None


def _solve(layout: Layout, alive: list[int], best: tuple[int, int, int] | None,
           best_map: list[int] | None, bound: int, start: float, time_limit: float,
           workers: int, tiebreaks: bool = True) -> Optimum:
    cp_model = _cp_model()
    if (best is None or best[0] > 1) and bound < 2 and _lemmas_hold(layout):
        flat, found_map = _flat_map(layout, alive, time_limit - (time.monotonic() - start), workers)
        if flat is False:
            bound = max(bound, 2)
        elif flat:
            best_map = found_map
            best = _score(layout, found_map)  # type: ignore[arg-type]
    net = layout.net
    ndims = len(layout.grid.sizes)
    order = [ord(c) - ord("x") for c in net.order] if net.order else list(range(ndims))
    src, dst = core.stencil_messages(layout)
    messages = list(zip(src, dst))
    ranks = range(layout.ranks)
    coords = {a: layout.coords(a) for a in alive}
    model = cp_model.CpModel()
    x = {(r, a): model.NewBoolVar(f"x{r}_{a}") for r in ranks for a in alive}
    free = {a: model.NewBoolVar(f"f{a}") for a in alive}
    for r in ranks:
        model.AddExactlyOne(x[r, a] for a in alive)
    for a in alive:
        model.AddExactlyOne([x[r, a] for r in ranks] + [free[a]])

    # Projections of a rank's node onto the routing order's prefixes and suffixes of dimensions:
    # the links of a route along the i-th routed dimension depend on the target's coordinates in
    # the dimensions routed before and at it, and on the source's in that dimension and after.
    def projection(dims: tuple[int, ...]) -> dict[tuple[int, tuple[int, ...]], object]:
        if len(dims) == ndims:
            return {(r, tuple(coords[a][d] for d in dims)): x[r, a] for r in ranks for a in alive}
        groups: dict[tuple[int, ...], list[int]] = {}
        for a in alive:
            groups.setdefault(tuple(coords[a][d] for d in dims), []).append(a)
        out = {}
        for key, nodes in groups.items():
            for r in ranks:
                v = model.NewBoolVar("")
                model.Add(v == sum(x[r, a] for a in nodes))
                out[r, key] = v
        return out

    prefix = [tuple(order[: i + 1]) for i in range(ndims)]
    suffix = [tuple(sorted(order[i:])) for i in range(ndims)]
    proj = {dims: projection(dims) for dims in set(prefix + suffix)}

    # Route segments: for each routed dimension i, the links of route(a, b) along it, keyed by
    # (target prefix, source suffix).
    segments: list[dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]]] = [{} for _ in range(ndims)]
    link_dim = {}
    for a in alive:
        for b in alive:
            if a == b:
                continue
            for lk in net.route(a, b):
                if lk not in link_dim:
                    link_dim[lk] = net.link(lk).dim  # type: ignore[union-attr]
                i = order.index(link_dim[lk])
                key = (tuple(coords[b][d] for d in prefix[i]), tuple(coords[a][d] for d in suffix[i]))
                seg = segments[i].setdefault(key, [])
                if lk not in seg:
                    seg.append(lk)
    used: dict[tuple[int, int], object] = {}
    loads: dict[int, list[object]] = {}
    for m, (s, t) in enumerate(messages):
        for i in range(ndims):
            pt, ps = proj[prefix[i]], proj[suffix[i]]
            for (tkey, skey), links in segments[i].items():
                lt, ls = pt.get((t, tkey)), ps.get((s, skey))
                if lt is None or ls is None:
                    continue
                for lk in links:
                    u = used.get((m, lk))
                    if u is None:
                        u = used[m, lk] = model.NewBoolVar("")
                        loads.setdefault(lk, []).append(u)
                    model.AddBoolOr([lt.Not(), ls.Not(), u])  # type: ignore[attr-defined]
    top = max(len(v) for v in loads.values()) if loads else 0
    ub = best[0] if best else top
    load = model.NewIntVar(bound, max(bound, ub), "load")
    for us in loads.values():
        model.Add(sum(us) <= load)

    # Logical translations keep every load (periodic stencil): node alive[0] holds rank 0 or none.
    # Valid for the load and the links above 1, not for the moves: assumed until then.
    symmetric = model.NewBoolVar("symmetric")
    if layout.grid.periodic:
        for r in ranks:
            if r:
                model.AddImplication(symmetric, x[r, alive[0]].Not())
    if best_map is not None:
        for r, node in enumerate(best_map):
            for a in alive:
                model.AddHint(x[r, a], node == a)

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers or (os.cpu_count() or 1)

    def remaining() -> float:
        return time_limit - (time.monotonic() - start)

    def run(objective: object) -> int:
        model.Minimize(objective)
        solver.parameters.max_time_in_seconds = max(remaining(), 0.1)
        return solver.Solve(model)

    # Stage 1: the max load (nothing to search when a known map meets the bound).
    model.AddAssumption(symmetric)
    if best is not None and best_map is not None and best[0] <= bound:
        found, mapping = best[0], best_map
    else:
        status = run(load)
        lb = max(bound, int(round(solver.BestObjectiveBound()))) if status != cp_model.INFEASIBLE else bound
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            mapping = _extract(solver, x, ranks, alive)
            if best is None or _score(layout, mapping) < best:
                best, best_map = _score(layout, mapping), mapping
        if status != cp_model.OPTIMAL:
            if best is None or best_map is None:
                raise FtslideError(f"the solver found no map within {time_limit:g} s: raise the time limit")
            return Optimum(best[0], lb, best[0] <= lb, best[1], best[2], False, best_map, "solver",
                           time.monotonic() - start, f"time limit {time_limit:g} s reached")
        found = int(solver.Value(load))
    if not tiebreaks:
        sc = _score(layout, mapping)
        return Optimum(found, found, True, sc[1], sc[2], False, mapping, "solver", time.monotonic() - start,
                       "tie-breaks not asked")
    proven_ties = True
    # Stage 2: the links above load 1, at that load.
    model.Add(load == found)
    model.ClearHints()
    for r, node in enumerate(mapping):
        for a in alive:
            model.AddHint(x[r, a], node == a)
    if found > 1 and remaining() > 0:
        over = [model.NewBoolVar("") for _ in loads]
        for o, us in zip(over, loads.values()):
            model.Add(sum(us) <= 1 + (found - 1) * o)
        status = run(sum(over))
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            found_map = _extract(solver, x, ranks, alive)
            if _score(layout, found_map) <= _score(layout, mapping):
                mapping = found_map
            proven_ties = status == cp_model.OPTIMAL
            model.Add(sum(over) <= _score(layout, mapping)[1])
        else:
            proven_ties = False
    # Stage 3: the ranks moved, without the symmetry (it does not keep the moves).
    if proven_ties and found == 1 and _lemmas_hold(layout) and remaining() > 0:
        done, flat_map = _flat_map(layout, alive, remaining(), workers, fewest_moves=True)
        if flat_map is not None and _score(layout, flat_map) <= _score(layout, mapping):
            mapping = flat_map
        proven_ties = bool(done)
    elif proven_ties and remaining() > 0:
        model.ClearHints()
        for r, node in enumerate(mapping):
            for a in alive:
                model.AddHint(x[r, a], node == a)
        model.ClearAssumptions()
        initial = layout.initial_map()
        stay = [x[r, initial[r]] for r in ranks if (r, initial[r]) in x]
        status = run(layout.ranks - sum(stay))
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            found_map = _extract(solver, x, ranks, alive)
            if _score(layout, found_map) <= _score(layout, mapping):
                mapping = found_map
            proven_ties = status == cp_model.OPTIMAL
        else:
            proven_ties = False
    else:
        proven_ties = False
    sc = _score(layout, mapping)
    assert sc[0] == found, (sc, found)
    return Optimum(found, found, True, sc[1], sc[2], proven_ties, mapping, "solver",
                   time.monotonic() - start,
                   "" if proven_ties else f"time limit {time_limit:g} s reached before the tie-breaks")


def _extract(solver: object, x: dict, ranks: range, alive: list[int]) -> list[int]:
    out = []
    for r in ranks:
        out.append(next(a for a in alive if solver.BooleanValue(x[r, a])))  # type: ignore[attr-defined]
    return out
