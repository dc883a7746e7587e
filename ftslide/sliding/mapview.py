"""Views of substitution maps: what ``ftslide map`` and ``ftslide demo`` show of each method's map.

:func:`run_method` gives one method's map after a list of failures, with its metrics and, for a
method that chooses (routed), its choice per failure, from one call into the core for the map and
one for the metrics; the rest lays such results out: the table of ``ftslide map`` (:func:`table_row`),
routed's choices (:func:`choice_rows`), the JSON document (:func:`json_document`, :func:`dumps`),
the short table of ``ftslide demo`` (:func:`brief_rows`) and the figure (:func:`draw`: one panel per
method, a 2D slice of the node grid with the moved ranks).

Every map and metric comes from the C core through :mod:`ftslide.sliding.core`; nothing here
computes one. Cost: run_method as :func:`~ftslide.sliding.core.explain` plus
:func:`~ftslide.sliding.core.measure`; the text views O(failures + methods); draw
O(nodes of the slice + ranks) plus matplotlib's rendering (about a second).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..ui.output import save_figure
from . import core
from .core import Choice, Layout, Metrics, SlideError, explain, measure

__all__ = ["MethodResult", "run_method", "describe_choice", "CHOICE_HEADERS", "choice_rows", "hist_short",
           "describe_node", "header_line", "describe_net", "TABLE_HEADERS", "table_row", "optimum_row", "optimum_line",
           "BRIEF_HEADERS",
           "brief_rows", "error_code_name", "json_document", "dumps", "stuck_message", "STATE_STYLE", "draw",
           "Placement", "place_redundancy", "placement_lines", "PLACEMENT_HEADERS", "placement_rows"]

# ---- one method's map -------------------------------------------------------------------


@dataclass(frozen=True)
class MethodResult:
    """One method's map after the failures it could place."""

    method: core.CEnum
    mapping: list[int]
    metrics: Metrics
    placed: int                  # failures handled (all of them unless error is set)
    error: SlideError | None     # why failure #placed+1 could not be placed
    choices: list[Choice] | None = None  # routed: what it did per failure
    degraded: core.Degraded | None = None  # --on-no-spare degrade: who runs each node rank


def guests_line(layout: Layout, result: MethodResult) -> str | None:
    """Where a degraded map put two blocks on a node, in words; None when nothing was degraded."""
    d = result.degraded
    if d is None or not d.hosts:
        return None
    shared: dict[int, list[int]] = {}
    for rank, node in enumerate(d.mapping):
        shared.setdefault(node, []).append(rank)
    nodes = ", ".join(f"node {node} runs node ranks {','.join(map(str, ranks))}"
                      for node, ranks in sorted(shared.items()) if len(ranks) > 1)
    return (f"{result.method.label}, degraded (out of spares): {nodes} "
            f"({_count(len(d.hosts), 'guest')} started in all)")


def run_method(layout: Layout, method: core.CEnum, failures: Sequence[int],
               block: Sequence[int] | None = None, degrade: bool = False) -> MethodResult:
    """One call into the core for the map (and a choosing method's choices), one for its metrics;
    with a ``block`` every node runs that block of ranks (K per node): the metrics count the ranks
    and the faces between nodes (``core.measure``). With ``degrade`` the map runs on when spares
    run out (``core.degrade_map``): two blocks on a node, measured where they run."""
    if degrade and method.one_rank_per_node:
        d = core.degrade_map(layout, method, failures)
        return MethodResult(method, d.mapping, measure(layout, d.mapping, block=block), len(failures), None,
                            None, d)
    try:
        mapping, choices = explain(layout, method, failures)
        placed, error = len(failures), None
    except SlideError as exc:
        # Only "this method cannot absorb failure #k" keeps a partial answer; bad node ids are
        # refused before, by parse_failures, for every method alike.
        if exc.index is None or exc.mapping is None:
            raise
        mapping, choices, placed, error = exc.mapping, exc.choices, exc.index, exc
    return MethodResult(method, mapping, measure(layout, mapping, block=block), placed, error, choices)


DIM_NAMES = "xyz"


def describe_choice(layout: Layout, choice: Choice) -> str:
    """One routed decision in words: 'block x+ y 10..11 z all', 'cross x- via y+1', ..."""
    kinds = core.ChoiceKind
    if choice.kind is kinds.NONE:
        return "none: the node held no rank"
    if choice.kind is kinds.HYBRID:
        return f"{choice.kind.label}'s map"
    if choice.kind is kinds.DIRECT:
        return "direct to the nearest free node"
    if choice.kind is kinds.SURFACE:
        if choice.dim < 0:
            return "surface: whole planes skipped (a product map)"
        (_, pieces0), (_, pieces1) = choice.lines
        sides = [layout.grid.sizes[d] if d < len(layout.grid.sizes) else 1 for d in range(3) if d != choice.dim]
        if (pieces0, pieces1) == tuple(sides) and pieces0 > 1:
            tiles = "a skipped node chosen line by line"
        else:
            tiles = "one skipped plane" if pieces0 * pieces1 == 1 else f"{pieces0}x{pieces1} tiles"
        return f"surface: logical {DIM_NAMES[choice.dir]} along {DIM_NAMES[choice.dim]} lines, {tiles}"
    along = f"{DIM_NAMES[choice.dim]}{'+' if choice.dir > 0 else '-'}"
    if choice.kind is kinds.CROSS:
        (dim, steps), _ = choice.lines
        return f"cross {DIM_NAMES[dim]}{steps:+d}, then {along}"
    others = [d for d in range(3) if d != choice.dim]
    parts = []
    for d, (lo, width) in zip(others, choice.lines):
        n = layout.grid.sizes[d] if d < len(layout.grid.sizes) else 1
        if n == 1:
            continue
        hi = (lo + width - 1) % n
        parts.append(f"{DIM_NAMES[d]} " + ("all" if width == n else str(lo) if width == 1
                                            else f"{lo}..{hi}"))
    return f"block {along} " + " ".join(parts)


CHOICE_HEADERS = ("#", "failed node", "routed chose", "max load", "links >1", "spares", "moved",
                  "compared", "hybrid's load", "direct's load")


def choice_rows(layout: Layout, failures: Sequence[int], choices: Sequence[Choice]) -> list[list[object]]:
    """Rows under CHOICE_HEADERS: one per failure, what the method chose and the loads it compared."""
    rows: list[list[object]] = []
    for k, (node, c) in enumerate(zip(failures, choices), 1):
        rows.append([k, f"{node} ({describe_node(layout, node)})", describe_choice(layout, c),
                     c.load_max, c.overloaded, c.spares, c.moved, c.candidates,
                     "-" if c.hybrid_load_max is None else c.hybrid_load_max,
                     "-" if c.direct_load_max is None else c.direct_load_max])
    return rows


# ---- text and JSON ---------------------------------------------------------------


def hist_short(hist: Sequence[int]) -> str:
    """'1:12 2:5' for the non-empty buckets of a hop histogram (last bucket '15+')."""
    last = len(hist) - 1
    parts = [f"{h if h < last else f'{last}+'}:{n}" for h, n in enumerate(hist) if n]
    return " ".join(parts) or "-"


def describe_node(layout: Layout, node: int) -> str:
    """A node's coordinates written x.y[.z]."""
    return ".".join(map(str, layout.coords(node)))


def header_line(layout: Layout, failures: Sequence[int], block: Sequence[int] | None = None) -> str:
    """The line above ``ftslide map``'s table: grid, ranks, spares, failures, stencil and network;
    with a ``block``, the ranks per node and the rank grid."""
    points = 5 if len(layout.grid.sizes) == 2 else 7
    stencil = "periodic" if layout.grid.periodic else "open"
    spare_nodes = layout.spare_nodes
    if not failures:
        failed = "no failure"
    elif len(failures) <= 8:
        failed = "failures " + ", ".join(f"{n} ({describe_node(layout, n)})" for n in failures)
    else:
        failed = f"{len(failures)} failures {','.join(map(str, failures))}"
    ranks = f"{layout.ranks} ranks"
    if block is not None:
        per_node = math.prod(block)
        grid = "x".join(str(n * b) for n, b in zip(layout.logical, block))
        ranks = (f"{layout.ranks * per_node} ranks ({per_node} per node, blocks of {core.block_text(block)}: "
                 f"rank grid {grid})")
    return (f"grid {layout.grid}, logical {'x'.join(map(str, layout.logical))}: {ranks} "
            f"on {layout.nodes} nodes, spares {layout.spares} ({spare_nodes} nodes); {failed}; "
            f"{points}-point {stencil} stencil routed on {describe_net(layout)}")


def describe_net(layout: Layout) -> str:
    """The network a layout runs on, with its dimension order when it has one."""
    net = layout.net
    return f"{net} (dimension order {net.order})" if net.order else str(net)


TABLE_HEADERS = ("method", "placed", "moved", "max hops", "mean hops", "hops:pairs", "max load",
                 "links >1", "ranks/node")


def table_row(result: MethodResult, total: int) -> list[object]:
    """A row under TABLE_HEADERS: failures placed (of ``total``), moves, hops, loads."""
    m = result.metrics
    placed = f"{result.placed}/{total}"
    if result.error is not None:
        placed += f" (stuck at #{result.placed + 1})"
    return [result.method.label, placed, m.ranks_moved, m.hops_max, f"{m.hops_mean:.3f}",
            hist_short(m.hops_hist), m.link_load_max, m.links_overloaded, m.ranks_per_node_max]

BRIEF_HEADERS = ("method", "ranks moved", "max hops", "mean hops", "max link load", "links with load > 1")


def brief_rows(results: Sequence[MethodResult]) -> list[list[object]]:
    """``ftslide demo``'s rows: a method that could not place every failure shows dashes (its
    error is the caller's to print)."""
    rows: list[list[object]] = []
    for r in results:
        m = r.metrics
        rows.append([r.method.label, "-", "-", "-", "-", "-"] if r.error is not None else
                    [r.method.label, m.ranks_moved, m.hops_max, f"{m.hops_mean:.2f}", m.link_load_max,
                     m.links_overloaded])
    return rows


def optimum_row(layout: Layout, best: Any) -> list[object]:
    """The optimum's row under TABLE_HEADERS (``best`` an :class:`~ftslide.sliding.optimal.Optimum`):
    its map's metrics when it has one; the max load with its proven bound when not proven."""
    load = str(best.link_load_max) if best.proven else f"{best.link_load_max} (>= {best.lower_bound})"
    if best.mapping is None:
        return ["optimum", "-", best.ranks_moved, "-", "-", "-", load, best.links_overloaded, 1]
    m = measure(layout, best.mapping)
    return ["optimum", "-", m.ranks_moved, m.hops_max, f"{m.hops_mean:.3f}", hist_short(m.hops_hist), load,
            m.links_overloaded, m.ranks_per_node_max]


def optimum_line(best: Any) -> str:
    """One line on how the optimum was found and whether it is proven."""
    what = f"max load {best.link_load_max}, " + ("proven optimal" if best.proven else
                                                 f"not proven (lower bound {best.lower_bound})")
    ties = "links >1 and moves minimal too" if best.tiebreak_proven else "links >1 and moves not proven minimal"
    note = f"; {best.note}" if best.note else ""
    return f"optimum ({best.how}, {best.seconds:.1f} s): {what}; {ties}{note}"


def error_code_name(code: int) -> str:
    """The core's name of a status code (``ENOSPARE``)."""
    return core.Status(code).name


def json_document(layout: Layout, failures: Sequence[int], results: Sequence[MethodResult],
                  with_map: bool, block: Sequence[int] | None = None, best: Any = None) -> dict[str, Any]:
    """``ftslide map --json``: the layout, the failures and per method its metrics, its error,
    its choices (a choosing method) and, ``with_map``, its rank -> node map (node ranks); with a
    ``block``, also the ranks per node and the block (the metrics then count ranks of the rank grid);
    with ``best`` (an Optimum) the ``optimal`` object."""
    methods = []
    for r in results:
        m = r.metrics
        entry: dict[str, Any] = {
            "method": r.method.label,
            "placed": r.placed,
            "error": None,
            "ranks_moved": m.ranks_moved,
            "pairs": m.pairs,
            "hops_max": m.hops_max,
            "hops_mean": round(m.hops_mean, 6),
            "hops_sum": m.hops_sum,
            "hops_hist": list(m.hops_hist),
            "link_load_max": m.link_load_max,
            "links_used": m.links_used,
            "links_overloaded": m.links_overloaded,
            "ranks_per_node_max": m.ranks_per_node_max,
        }
        if r.error is not None:
            entry["error"] = {"failure": r.placed + 1, "node": failures[r.placed],
                              "code": error_code_name(r.error.code), "message": str(r.error)}
        if r.choices is not None:
            entry["choices"] = [{"failure": k + 1, "node": failures[k], "kind": c.kind.label,
                                 "choice": describe_choice(layout, c), "load_max": c.load_max,
                                 "links_overloaded": c.overloaded, "spares": c.spares,
                                 "moved": c.moved, "candidates": c.candidates,
                                 "hybrid_load_max": c.hybrid_load_max,
                                 "direct_load_max": c.direct_load_max}
                                for k, c in enumerate(r.choices)]
        if r.degraded is not None:
            entry["guests"] = r.degraded.hosts
        if with_map:
            entry["map"] = r.mapping
            if r.degraded is not None:
                entry["serving"] = r.degraded.serving
        methods.append(entry)
    doc: dict[str, Any] = {
        "grid": str(layout.grid),
        "topology": str(layout.net),
        "route_order": layout.net.order,
        "logical": list(layout.logical),
        "spares": str(layout.spares),
        "nodes": layout.nodes,
        "ranks": layout.ranks,
        "spare_nodes": layout.spare_nodes,
        "failures": list(failures),
        "stencil_points": 5 if len(layout.grid.sizes) == 2 else 7,
        "stencil_periodic": layout.grid.periodic,
        "methods": methods,
    }
    if block is not None:
        per_node = math.prod(block)
        doc.update(ranks_per_node=per_node, block=list(block), node_ranks=layout.ranks,
                   ranks=layout.ranks * per_node)
    if best is not None:
        doc["optimal"] = best.as_dict()
        if with_map:
            doc["optimal"]["map"] = best.mapping
    return doc


def dumps(value: Any, indent: str = "") -> str:
    """JSON with objects indented and lists of numbers kept on one line."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {dumps(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + dumps(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value)


def stuck_message(results: Sequence[MethodResult]) -> str:
    """The one-line error of ``ftslide map`` when methods could not place every failure."""
    stuck = [r for r in results if r.error is not None]
    if len(stuck) == 1:
        return f"{stuck[0].error} (shown: the map before it; --keep-going to accept it)"
    parts = [f"{r.method.label} at failure #{r.placed + 1} ({error_code_name(r.error.code)})"
             for r in stuck if r.error is not None]
    return (f"{len(stuck)} methods could not place every failure: {', '.join(parts)}; "
            "the table shows the map before that failure (--keep-going to accept it)")


# ---- plot ------------------------------------------------------------------------

STATE_STYLE: dict[str, tuple[str, str]] = {
    # state: (face colour, legend label)
    "stayed": ("#cfd8e3", "worker, rank never moved"),
    "moved": ("#f5a623", "worker hosting a moved rank"),
    "spare": ("#8fd18f", "unused spare"),
    "vacated": ("#ffffff", "free (vacated) node"),
    "dead": ("#3a3a3a", "dead node"),
    "unused": ("#eeeeee", "not in the job (spare set)"),
}


def _node_states(layout: Layout, result: MethodResult, failures: Sequence[int]) -> dict[int, str]:
    initial = layout.initial_map()
    dead = set(failures[: result.placed])
    hosted: dict[int, list[int]] = {}
    for rank, node in enumerate(result.mapping):
        hosted.setdefault(node, []).append(rank)
    states: dict[int, str] = {}
    for node in range(layout.nodes):
        if node in dead:
            states[node] = "dead"
        elif node in hosted:
            moved = any(initial[r] != node for r in hosted[node])
            states[node] = "moved" if moved else "stayed"
        else:
            role = layout.role(node)
            states[node] = "spare" if role is core.Role.SPARE else "unused" if role is core.Role.UNUSED \
                else "vacated"
    return states


def _wrap_delta(a: int, b: int, size: int, periodic: bool) -> int:
    """Displacement from a to b along one dimension, the short way round on a torus."""
    d = b - a
    if periodic and abs(d) * 2 > size:
        d -= size if d > 0 else -size
    return d


EDGE = 0.8  # arrows through the wrap-around stop this far outside the node centres of the rim


def _edge_fraction(p: tuple[int, int], delta: tuple[int, int], sizes: tuple[int, int],
                   leaving: bool) -> float:
    """Fraction of delta from p (leaving) or back from p (entering) that reaches the drawn edge."""
    fractions = []
    for c, d, n in zip(p, delta, sizes):
        if 0 <= c + (d if leaving else -d) < n:
            continue  # this dimension does not go through the wrap-around
        toward_low = (d < 0) == leaving
        fractions.append((c + EDGE if toward_low else n - 1 + EDGE - c) / abs(d))
    return min(fractions)


def draw(path: Path, layout: Layout, failures: Sequence[int], results: Sequence[MethodResult],
         z: int | None) -> None:
    """One panel per method: the slice of the node grid, states, moves, failures."""
    from matplotlib.collections import PatchCollection
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.lines import Line2D

    nx, ny = layout.grid.sizes[0], layout.grid.sizes[1]
    periodic = layout.grid.periodic
    # Inches per node: 0.5 for small grids, less for big ones and for many panels (<= ~20 in wide).
    cell = min(0.5, 5.0 / max(nx, ny), (20.0 / len(results) - 1.0) / nx)
    panel_w, panel_h = max(3.2, nx * cell + 1.0), max(3.0, ny * cell + 1.0)
    fig = Figure(figsize=(max(7.5, panel_w * len(results)), panel_h + 1.3), dpi=100,
                 layout="constrained")
    axes = fig.subplots(1, len(results), squeeze=False)[0]
    show_ranks = max(nx, ny) <= 12
    font = max(4.5, min(8.0, 80.0 / max(nx, ny)))

    def node_at(x: int, y: int) -> int:
        return layout.node((x, y) if z is None else (x, y, z))

    def in_slice(node: int) -> tuple[int, int] | None:
        c = layout.coords(node)
        return (c[0], c[1]) if z is None or c[2] == z else None

    initial = layout.initial_map()
    order = {node: i + 1 for i, node in enumerate(failures)}
    for ax, result in zip(axes, results):
        states = _node_states(layout, result, failures)
        hosted: dict[int, list[int]] = {}
        for rank, node in enumerate(result.mapping):
            hosted.setdefault(node, []).append(rank)
        squares, colors = [], []
        for x in range(nx):
            for y in range(ny):
                node = node_at(x, y)
                squares.append(Rectangle((x - 0.4, y - 0.4), 0.8, 0.8))
                colors.append(STATE_STYLE[states[node]][0])
                if node not in order and not (show_ranks and node in hosted):
                    continue
                if node in order and order[node] <= result.placed:
                    ax.plot([x - 0.3, x + 0.3], [y - 0.3, y + 0.3], color="#e02020", lw=1.6, zorder=3)
                    ax.plot([x - 0.3, x + 0.3], [y + 0.3, y - 0.3], color="#e02020", lw=1.6, zorder=3)
                    ax.text(x, y + 0.47, f"#{order[node]}", ha="center", va="bottom",
                            fontsize=font, color="#e02020", zorder=5, fontweight="bold")
                elif order.get(node) == result.placed + 1:  # the failure it could not place
                    ax.add_patch(Rectangle((x - 0.4, y - 0.4), 0.8, 0.8, fill=False,
                                           edgecolor="#e02020", linewidth=2.0, linestyle="--",
                                           zorder=3))
                    ax.text(x, y + 0.47, f"#{order[node]}?", ha="center", va="bottom",
                            fontsize=font, color="#e02020", zorder=5, fontweight="bold")
                if show_ranks and node in hosted:
                    ranks = hosted[node]
                    label = (",".join(map(str, ranks)) if len(ranks) <= 3
                             else f"{ranks[0]}+{len(ranks) - 1}")
                    ax.text(x, y + 0.36, label, ha="center", va="top", fontsize=font, zorder=2,
                            color="#222222")
        ax.add_collection(PatchCollection(squares, facecolors=colors, edgecolors="#555555",
                                          linewidths=0.6 if max(nx, ny) <= 24 else 0.3, zorder=1))
        # Arrows: each moved rank, from its initial node to its node now (both in the slice).
        for rank, (src, dst) in enumerate(zip(initial, result.mapping)):
            if src == dst:
                continue
            a, b = in_slice(src), in_slice(dst)
            if a is None or b is None:
                continue
            dx = _wrap_delta(a[0], b[0], nx, periodic)
            dy = _wrap_delta(a[1], b[1], ny, periodic)
            Point = tuple[float, float]
            segments: list[tuple[Point, Point]] = [(a, (a[0] + dx, a[1] + dy))]
            if (a[0] + dx, a[1] + dy) != b:
                # Through the wrap-around: leave the drawn grid at one edge, re-enter at the other.
                t_out = _edge_fraction(a, (dx, dy), (nx, ny), leaving=True)
                t_in = _edge_fraction(b, (dx, dy), (nx, ny), leaving=False)
                segments = [(a, (a[0] + dx * t_out, a[1] + dy * t_out)),
                            ((b[0] - dx * t_in, b[1] - dy * t_in), b)]
            for (x0, y0), (x1, y1) in segments:
                ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=4,
                            arrowprops={"arrowstyle": "-|>", "color": "#1f4fd1", "lw": 1.4,
                                        "shrinkA": 6, "shrinkB": 6, "mutation_scale": 10})
        ax.set_xlim(-0.9, nx - 0.1)
        ax.set_ylim(-0.9, ny - 0.1)
        ax.set_aspect("equal")
        step = 1 if max(nx, ny) <= 16 else (max(nx, ny) + 7) // 8
        ax.set_xticks(range(0, nx, step))
        ax.set_yticks(range(0, ny, step))
        ax.tick_params(labelsize=8, length=0)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        for side in ax.spines.values():
            side.set_visible(False)
        stuck = "" if result.error is None else f", stuck at #{result.placed + 1}"
        ax.set_title(f"{result.method.label}: max link load {result.metrics.link_load_max}, "
                     f"max hops {result.metrics.hops_max}\n{_count(result.metrics.ranks_moved, 'rank')} moved"
                     f"{stuck}", fontsize=9)
    failed = ",".join(map(str, failures)) if failures else "none"
    if len(failed) > 60:
        failed = failed[:57] + "..."
    where = "" if z is None else f", slice z={z}"
    methods = ", ".join(r.method.label for r in results)
    fig.suptitle(f"{layout.grid}, spares {layout.spares}, {methods}: failed nodes {failed}{where}",
                 fontsize=10)
    handles: list[Any] = [Patch(facecolor=STATE_STYLE[s][0], edgecolor="#555555", label=STATE_STYLE[s][1])
                          for s in STATE_STYLE if s != "unused" or layout.spares.block]
    handles.append(Line2D([], [], color="#e02020", marker="x", linestyle="none", markersize=7,
                          label="failed node (#order)"))
    handles.append(Line2D([], [], color="#1f4fd1", marker=">", lw=1.4, markersize=5,
                          label="rank move: initial node -> node now"))
    if any(r.error is not None for r in results):
        handles.append(Patch(fill=False, edgecolor="#e02020", linestyle="--", linewidth=1.5,
                             label="failure the method could not place (#k?)"))
    ncol = 4 if fig.get_figwidth() >= 9.5 else 3
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize=8,
               frameon=False)
    save_figure(fig, path)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# ---- redundancy placed across failure domains (ftslide map --redundancy/--domains) ------------------


@dataclass(frozen=True)
class Placement:
    """Where a redundancy policy puts a method's final map's redundancy: the groups (parity, rs) or the
    buddy shift, and whether losing any one failure domain is survivable."""

    method: core.CEnum
    policy: core.Redundancy
    domains: str                     # "2x2x1 boxes (8 domains)" or "one per node"
    groups: core.Groups | None       # parity, rs: None when no placement exists
    shift: int | None                # buddy: node rank r's copy on node rank (r + shift) mod ranks
    survivable: bool
    reason: str                      # why (not) survivable, one line

    def as_dict(self) -> dict[str, Any]:
        return {"policy": str(self.policy), "domains": self.domains, "survivable": self.survivable,
                "reason": self.reason, "shift": self.shift,
                "groups": None if self.groups is None else [self.groups.members(k)
                                                           for k in range(len(self.groups.sizes))]}


def place_redundancy(layout: Layout, result: MethodResult, policy: core.Redundancy,
                     domain_of_node: Sequence[int] | None, domains: str) -> Placement:
    """The policy's placement on ``result``'s map (slide_groups() or slide_buddy_shift() in the core). A
    domain too crowded for any placement is an answer (not survivable), not an error; other core errors
    (a group larger than the node ranks) raise SlideError."""
    mapping = result.mapping
    try:
        if policy.kind == "buddy":
            shift = core.buddy_shift(layout, mapping, domain_of_node)
            return Placement(result.method, policy, domains, None, shift, True,
                             "no node rank shares a domain with its buddy")
        found = core.groups(layout, mapping, domain_of_node, policy.group, policy.lose)
        return Placement(result.method, policy, domains, found, None, True,
                         f"no group has more than {policy.lose} member{'s' if policy.lose > 1 else ''} "
                         "in one domain")
    except SlideError as exc:
        if exc.code != core.Status.ENOPLACEMENT:
            raise
        if policy.kind == "buddy":
            reason = "every buddy shift pairs two node ranks in one domain"
        else:
            most = policy.lose * (layout.ranks // policy.group)
            reason = (f"a domain holds more than {most} of the {layout.ranks} node ranks, so some group of "
                      f"{policy.group} has more than {policy.lose} member{'s' if policy.lose > 1 else ''} in it")
        return Placement(result.method, policy, domains, None, None, False, reason)


PLACEMENT_HEADERS = ["group", "node ranks", "nodes", "domains"]


def placement_rows(layout: Layout, placement: Placement, mapping: Sequence[int],
                   domain_of_node: Sequence[int] | None) -> list[list[str]]:
    """One row per group: its node ranks (member order), their nodes and the nodes' domains."""
    if placement.groups is None:
        return []
    rows = []
    for k in range(len(placement.groups.sizes)):
        members = placement.groups.members(k)
        nodes = [mapping[r] for r in members]
        doms = [domain_of_node[n] if domain_of_node is not None else n for n in nodes]
        rows.append([str(k), " ".join(map(str, members)), " ".join(map(str, nodes)), " ".join(map(str, doms))])
    return rows


def placement_lines(layout: Layout, placement: Placement) -> tuple[str, str]:
    """(the title line before the groups, the verdict line after them)."""
    title = (f"{placement.method.label}: redundancy {placement.policy}, failure domains {placement.domains}, "
             "on the final map")
    if placement.shift is not None:
        title += (f": node rank r keeps its copy on node rank (r + {placement.shift}) mod {layout.ranks}")
    elif placement.groups is not None:
        title += f": {len(placement.groups.sizes)} groups"
    verdict = ("losing any one domain: " + ("survivable" if placement.survivable else "NOT survivable")
               + f" ({placement.reason})")
    return title, verdict
