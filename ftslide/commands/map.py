"""ftslide map: the rank-to-node map of substitution methods after failures, its metrics and a plot.

This module reads the command line and checks it; every map and metric comes from the C core
(``ftslide.sliding.core``) and every view of them from ``ftslide.sliding.mapview``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Sequence

from ..errors import FtslideError
from ..sliding import core, mapview, optimal
from ..sliding.core import Layout, SlideError, make_layout, parse_grid, strerror
from ..sliding.topology import GRAMMAR, parse_topology
from ..ui.output import check_figure_path
from ..ui.table import print_table
from . import add_block_options

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "map"
HELP = ("show where ranks run after node failures for one or several substitution methods: "
        "hops, link loads, migrations, and a plot of the moved ranks")



# ---- argument parsing ------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--grid", metavar="AxB[xC]",
                        help="node grid, spares included, e.g. 6x6x6 or 16x16 (a 'torus:'/'mesh:' "
                        "prefix is accepted); default: the --topology itself when it is a 2D or "
                        "3D torus or mesh")
    parser.add_argument("--topology", default=None, metavar="SPEC",
                        help=f"the network the grid's nodes run on, node i on host i: {GRAMMAR}; "
                        "or just torus (the default) or mesh: the --grid itself")
    parser.add_argument("--route-order", default="", metavar="ORDER",
                        help="dimension order of torus/mesh routing, a permutation such as xyz "
                        "(the default) or zyx")
    parser.add_argument("--spares", default="x:1", metavar="LAYOUT",
                        help="spare lines/planes at the high end of dimensions: x:1, x:2, x:1,y:1 or "
                        "none (default x:1); a suffix /M:K keeps K spares per block of M node ids "
                        "(z:1/16:1: one per leaf switch of 16 hosts), the planes' other nodes unused")
    parser.add_argument("--method", metavar="M[,M...]",
                        help="one substitution method or a comma list of them (docs/sliding-methods.md); "
                        "'all' for all of them (default hybrid)")
    parser.add_argument("--fail", default="", metavar="LIST",
                        help="ordered failed nodes: ids (40), ranges (40-43) or coordinates (1.0.4), "
                        "comma-separated; none: the failure-free map")
    parser.add_argument("--expect-failures", type=int, default=0, metavar="N",
                        help="routed's spare budget: keep a free spare node for each of the N "
                        "failures expected (default 0: no reservation)")
    parser.add_argument("--keep-going", action="store_true",
                        help="a method that cannot place every failure reports the map before the "
                        "failure it could not place and the command still exits 0")
    add_block_options(parser, "processes (ranks) per node: every node runs a block of K ranks of the rank grid "
                      "and moves with them; link loads count the K-rank faces between nodes and no message "
                      "inside a node (default 1)")
    parser.add_argument("--optimal", action="store_true",
                        help="also the best any substitution can do after these failures: the exact "
                        "optimum of the max load (OR-Tools CP-SAT) on grids of at most 100 nodes whose "
                        "network is the grid, else a proven lower bound beside the best method")
    parser.add_argument("--optimal-time", type=float, default=60.0, metavar="S",
                        help="seconds the solver may take (default 60); when they run out the best "
                        "load found and the best bound are shown, marked not proven")
    parser.add_argument("--redundancy", metavar="POLICY",
                        help="also place a checkpoint redundancy policy on each method's final map: buddy, "
                        "parity:G (groups of G, any one member may be lost) or rs:G,M (any M); shows each "
                        "group's node ranks and whether losing any one failure domain is survivable "
                        "(default buddy when --domains is given)")
    parser.add_argument("--domains", metavar="AxB[xC]",
                        help="failure domains as boxes of the node grid, e.g. 2x2x1: nodes in the same box "
                        "fail together (a board); default with --redundancy: every node its own domain")
    parser.add_argument("--on-no-spare", choices=("fail", "degrade"), default="fail",
                        help="when a method runs out of spares: fail (the default: the failure it cannot "
                        "place ends the map) or degrade (as the sliding runtime's option: each lost node rank "
                        "goes to the least loaded live node, nearest its stencil neighbours, as a guest "
                        "beside the rank it runs; the lines name the nodes that run two)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--with-map", action="store_true",
                        help="with --json: include the final rank->node map of each method")
    parser.add_argument("--plot", type=Path, metavar="FILE.png|FILE.svg",
                        help="draw a 2D slice of the node grid per method with the moved ranks")
    parser.add_argument("--slice", type=int, metavar="Z",
                        help="3D grids: the z plane to draw (default: the z of the first failed node, "
                        "else 0)")


def parse_methods(text: str) -> list[core.CEnum]:
    """'all' or a comma list of method names, each once, in the order given."""
    if text.strip() == "all":
        return list(core.methods())
    seen: list[core.CEnum] = []
    for name in (part.strip() for part in text.split(",")):
        try:
            method = core.parse_method(name)
        except SlideError:
            raise FtslideError(f"unknown method '{name or '(empty)'}' in --method: choose "
                               f"{', '.join(m.label for m in core.methods())} or all") from None
        if method in seen:
            raise FtslideError(f"method '{name}' is listed twice in --method")
        seen.append(method)
    return seen


def layout_from_args(grid: str | None, topology: str | None, spares: str,
                     order: str = "", expect: int = 0) -> Layout:
    """The layout of --grid/--spares on the network of --topology (the grammar of
    ``ftslide.sliding.topology``; a bare torus or mesh is the grid itself)."""
    if topology is None or topology.strip() in ("torus", "mesh"):
        if grid is None:
            raise FtslideError("give the node grid with --grid (e.g. --grid 6x6x6) or the "
                               "network with --topology (e.g. --topology torus:6x6x6)")
        spec = grid_string(grid, topology.strip() if topology else None)
        try:
            parse_grid(spec)
        except SlideError as exc:
            raise FtslideError(f"bad --grid '{grid}': {strerror(exc.code)}") from None
        return make_layout(spec, spares, parse_topology(spec, order), expect)
    return make_layout(grid, spares, parse_topology(topology, order), expect)


def grid_string(grid: str, topology: str | None) -> str:
    """The core's grid string from --grid and --topology (a prefix in --grid must agree)."""
    match = re.fullmatch(r"(torus:|mesh:)?(.*)", grid.strip())
    assert match is not None
    prefix = match[1][:-1] if match[1] else None
    if prefix and topology and prefix != topology:
        raise FtslideError(f"--grid {grid} says {prefix} but --topology says {topology}: "
                           "give the topology once")
    return f"{prefix or topology or 'torus'}:{match[2]}"


_ID = r"\d+"
_COORDS = r"\d+(?:\.\d+){1,2}"


def parse_failures(text: str, layout: Layout) -> list[int]:
    """Ordered node ids from ids, ranges (a-b, either direction) and coordinates (x.y[.z]).

    Checks that every id is in the grid and appears once, so that input errors
    are reported the same way for every method.
    """
    failures: list[int] = []
    for token in (t.strip() for t in text.split(",")) if text.strip() else ():
        if re.fullmatch(_ID, token):
            nodes = [int(token)]
        elif match := re.fullmatch(rf"({_ID})-({_ID})", token):
            lo, hi = int(match[1]), int(match[2])
            step = 1 if hi >= lo else -1
            if abs(hi - lo) >= layout.nodes:
                raise FtslideError(f"failure range '{token}' is larger than grid {layout.grid} "
                                   f"(node ids 0..{layout.nodes - 1})")
            nodes = list(range(lo, hi + step, step))
        elif re.fullmatch(_COORDS, token):
            coords = [int(c) for c in token.split(".")]
            if len(coords) != len(layout.grid.sizes):
                raise FtslideError(f"failure '{token}' has {len(coords)} coordinates but grid "
                                   f"{layout.grid} has {len(layout.grid.sizes)} dimensions")
            nodes = [layout.node(coords)]
        else:
            raise FtslideError(f"bad failure '{token or '(empty)'}' in --fail: use node ids (40), "
                               "ranges (40-43) or coordinates (x.y or x.y.z), comma-separated")
        for node in nodes:
            if not 0 <= node < layout.nodes:
                raise FtslideError(f"failed node {node} is outside grid {layout.grid}: node ids are "
                                   f"0..{layout.nodes - 1}")
            if node in failures:
                raise FtslideError(f"failed node {node} is listed twice in --fail "
                                   f"(as failure #{failures.index(node) + 1} and #{len(failures) + 1})")
            failures.append(node)
    return failures


def slice_z(layout: Layout, failures: Sequence[int], requested: int | None) -> int | None:
    """The z plane to draw (None for 2D grids)."""
    sizes = layout.grid.sizes
    if len(sizes) == 2:
        if requested is not None:
            raise FtslideError(f"--slice is for 3D grids; grid {layout.grid} is 2D")
        return None
    if requested is not None:
        if not 0 <= requested < sizes[2]:
            raise FtslideError(f"--slice {requested} is outside grid {layout.grid}: z is "
                               f"0..{sizes[2] - 1}")
        return requested
    return layout.coords(failures[0])[2] if failures else 0


def redundancy_from_args(layout: Layout, policy: str | None,
                         shape: str | None) -> tuple[core.Redundancy, list[int] | None, str] | None:
    """(policy, domain of each node or None, a description of the domains) of --redundancy/--domains,
    None without either."""
    if policy is None and shape is None:
        return None
    try:
        chosen = core.parse_redundancy(policy if policy is not None else "buddy")
    except SlideError as exc:
        raise FtslideError(f"bad --redundancy '{policy}': {strerror(exc.code)}") from None
    if chosen.group > layout.ranks:
        raise FtslideError(f"--redundancy {chosen}: {strerror(core.Status.EGROUP_RANKS)} "
                           f"({chosen.group} > {layout.ranks} on grid {layout.grid} with spares {layout.spares})")
    if shape is None:
        return chosen, None, "one per node"
    try:
        domains, count = core.block_domains(layout, shape.strip())
    except SlideError as exc:
        raise FtslideError(f"bad --domains '{shape}' for grid {layout.grid}: {strerror(exc.code)}") from None
    return chosen, domains, f"{shape.strip()} boxes ({count} domain{'s' if count != 1 else ''})"


def blocks_from_args(layout: Layout, ranks_per_node: int, block: str | None) -> tuple[int, ...] | None:
    """The block of --ranks-per-node/--block (None: one rank per node, the map as it always was)."""
    if block is not None and ranks_per_node == 1 and block.strip() not in ("1x1", "1x1x1"):
        raise FtslideError(f"--block {block} needs --ranks-per-node (the ranks its sizes multiply to)")
    if ranks_per_node == 1 and block is None:
        return None
    return core.make_block(layout, ranks_per_node, block)


# ---- command ---------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    methods = parse_methods(args.method) if args.method is not None else [core.Method.HYBRID]
    if args.with_map and not args.json:
        raise FtslideError("--with-map only works with --json")
    layout = layout_from_args(args.grid, args.topology, args.spares, args.route_order,
                              args.expect_failures)
    failures = parse_failures(args.fail, layout)
    block = blocks_from_args(layout, args.ranks_per_node, args.block)
    z = slice_z(layout, failures, args.slice) if args.plot else None
    if args.slice is not None and not args.plot:
        raise FtslideError("--slice chooses the plane of --plot; add --plot FILE.png")
    plot = check_figure_path(args.plot) if args.plot else None

    if args.optimal and not args.optimal_time > 0:
        raise FtslideError(f"--optimal-time must be a positive number of seconds, not {args.optimal_time:g}")
    if args.optimal and block is not None:
        raise FtslideError("--optimal works on one rank per node; drop --ranks-per-node/--block")
    redundancy = redundancy_from_args(layout, args.redundancy, args.domains)
    degrade = args.on_no_spare == "degrade"
    results = [mapview.run_method(layout, m, failures, block, degrade) for m in methods]
    placements = [] if redundancy is None else \
        [mapview.place_redundancy(layout, r, redundancy[0], redundancy[1], redundancy[2]) for r in results]
    stuck = any(r.error is not None for r in results) and not args.keep_going
    best = None
    if args.optimal:
        complete = [r.mapping for r in results if r.error is None and r.method.one_rank_per_node]
        best = optimal.optimum(layout, failures, complete, time_limit=args.optimal_time)

    if args.json:
        document = mapview.json_document(layout, failures, results, args.with_map, block, best)
        for entry, placement in zip(document["methods"], placements):
            entry["redundancy"] = placement.as_dict()
        print(mapview.dumps(document), flush=True)
    else:
        print(mapview.header_line(layout, failures, block))
        rows = [mapview.table_row(r, len(failures)) for r in results]
        if best is not None:
            rows.append(mapview.optimum_row(layout, best))
        print_table(mapview.TABLE_HEADERS, rows)
        if best is not None:
            print(mapview.optimum_line(best))
        degraded = [line for r in results if (line := mapview.guests_line(layout, r))]
        if degraded:
            print("\n" + "\n".join(degraded))
        for r in results:
            if r.choices:
                print(f"\n{r.method.label}, failure by failure (the loads it compared: hybrid's map and the "
                      "direct replacement from the same map):")
                print_table(mapview.CHOICE_HEADERS, mapview.choice_rows(layout, failures, r.choices))
        for r, placement in zip(results, placements):
            title, verdict = mapview.placement_lines(layout, placement)
            print(f"\n{title}")
            rows = mapview.placement_rows(layout, placement, r.mapping, redundancy[1] if redundancy else None)
            if rows:
                print_table(mapview.PLACEMENT_HEADERS, rows)
            print(verdict)
    if stuck:
        raise FtslideError(mapview.stuck_message(results))
    if plot is not None:
        mapview.draw(plot, layout, failures, results, z)
        if not args.json:
            print(f"plot: {plot}")
    return 0
