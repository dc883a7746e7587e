"""Which spare nodes to reserve, where, and with which method: the plans ``ftslide plan`` ranks.

A *plan* is a spare layout (``sliding.core`` syntax: whole planes ``x:1``, ``x:2``, ``x:1,y:1``, or
a spare set ``z:1/16:1``, one spare per leaf switch of 16 hosts) and a substitution method. For a
machine (a topology, the stencil's node grid on it), a number of failures to survive (or an MTBF
and a run length) and a budget of spare nodes, :func:`candidate_layouts` lists every layout of at
most that many spare nodes that the grid can hold; :func:`score` runs each layout with each method
through the sliding core on seeded random failure draws (the same draws for every method of a
layout) and prices the maps with the analytic model (``analytic``): the median slowdown of the
stencil, the phased stencil, the allreduce and the barrier after 1..F failures, and how often the
method ran out of spares (or, with an MTBF, the Poisson probability of more failures than spares).
:func:`confirm` simulates the best plans in SimGrid (``sweep.run_sweep``).

Spare sets are offered on networks with switches: per leaf switch (the hosts one switch serves)
and, on a dragonfly, per group (the hosts joined without a global link).

Errors: FtslideError (one line) for a budget smaller than the failures need, a grid the topology
cannot hold, no layout within the budget, bad counts. Cost: per layout and method, ``draws``
maps of F failures, plus F maps per draw for the curves of the plans shown (routed: about 0.1 s
per map of 8 failures at 1,728 nodes), and the model of four patterns per map (about 0.05 s).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FtslideError
from ..sliding import core as sc
from ..sliding.topology import Topology
from ..ui.output import new_figure, save_figure
from . import analytic
from .network import NetParams
from .placement import Placement, make_placement
from .sweep import SweepConfig, draw_failures, kernel_name, run_sweep

__all__ = ["PATTERNS", "PlanConfig", "Plan", "failures_to_survive", "block_sizes", "grid_of", "candidate_layouts",
           "score", "rank", "curves", "confirm", "plot", "as_dict"]

# The patterns a plan is priced on (sweep's names; stencil is stencil7 in 3D, stencil5 in 2D).
PATTERNS = ("stencil", "stencil-phased", "allreduce", "barrier")
# The failure count planned for from an MTBF: survive this share of runs.
SURVIVE = 0.99
# Draws behind the curves after 1..F failures (F maps per draw: routed's cost grows with F^2).
CURVE_DRAWS = 5


@dataclass(frozen=True)
class PlanConfig:
    """What ``ftslide plan`` is asked: the machine, the failures (a count, or an MTBF in hours and
    a run length in hours), the budget of spare nodes, what to try and how hard."""

    topology: str
    grid: str | None
    spare_nodes: int
    failures: int | None = None
    mtbf_hours: float | None = None
    run_hours: float | None = None
    route_order: str = ""
    layouts: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    draws: int = 20
    seed: int = 1
    net: NetParams = field(default_factory=NetParams)
    halo_bytes: int = 65536
    allreduce_bytes: int = 8


@dataclass
class Plan:
    """One layout with one method and what the draws gave: per pattern the median model slowdown
    after each failure count 1..F (``curve``; only the count F unless :func:`curves` filled it),
    the median max link load of the stencil after F, the share of draws the method could not
    place (``stuck``) and the probability of running out of spares (``p_out``); ``simulated``
    (per pattern, the SimGrid median after F) once :func:`confirm` ran."""

    spares: str
    method: str
    ranks: int
    spare_nodes: int
    idle_nodes: int
    failures: int
    slowdown: dict[str, float]
    load_max: float
    stuck: float
    p_out: float
    curve: dict[str, list[float | None]] = field(default_factory=dict)
    simulated: dict[str, float | None] | None = None

    @property
    def worst(self) -> float:
        """The highest of the model slowdowns after F (what a mix of the patterns waits for)."""
        return max(self.slowdown.values()) if self.slowdown else math.inf


def failures_to_survive(cfg: PlanConfig, job_nodes: int) -> int:
    """F: the failure count given, or the smallest count that ``SURVIVE`` of the runs stay within
    when failures of ``job_nodes`` nodes of MTBF ``mtbf_hours`` each arrive as a Poisson process
    over ``run_hours``. Raises FtslideError for bad or missing counts."""
    if cfg.failures is not None:
        if cfg.mtbf_hours is not None or cfg.run_hours is not None:
            raise FtslideError("give either --failures or --mtbf with --hours, not both")
        if cfg.failures < 1:
            raise FtslideError(f"--failures must be at least 1, not {cfg.failures}")
        return cfg.failures
    if cfg.mtbf_hours is None or cfg.run_hours is None:
        raise FtslideError("give the failures to survive: --failures F, or --mtbf HOURS with --hours H")
    if not (cfg.mtbf_hours > 0 and cfg.run_hours > 0):
        raise FtslideError("--mtbf and --hours must be positive numbers of hours")
    lam = job_nodes * cfg.run_hours / cfg.mtbf_hours
    f, cumulative = 0, 0.0
    while True:
        cumulative += _poisson(lam, f)
        if cumulative >= SURVIVE or f > 10 * lam + 100:
            return max(f, 1)
        f += 1


def _poisson(lam: float, k: int) -> float:
    return math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1)) if lam > 0 else float(k == 0)


def _p_more_than(lam: float, spares: int) -> float:
    return max(0.0, 1.0 - sum(_poisson(lam, k) for k in range(spares + 1)))


def block_sizes(topology: Topology) -> dict[str, int]:
    """The host blocks a spare set can follow: ``leaf`` (hosts served by one switch or router)
    and, on a dragonfly, ``group``; empty on a torus or mesh. Hosts are numbered block by block.
    Cost O(hosts x route length)."""
    if topology.is_grid or topology.hosts < 2:
        return {}
    out = {"leaf": 1 + sum(1 for h in range(1, topology.hosts) if topology.hops(0, h) == 2)}
    if topology.kind == "dragonfly":
        blue = {lk.id for lk in topology.all_links() if lk.kind == "blue"}
        out["group"] = sum(1 for h in range(topology.hosts) if not blue & set(topology.route(0, h)))
    return out


def grid_of(topology: Topology, grid: str | None) -> str:
    """The stencil's node grid: ``grid``, or the topology when it is a 2D/3D torus or mesh."""
    if grid:
        return grid
    if topology.kind in ("torus", "mesh") and len(topology.dims) in (2, 3):
        return str(topology)
    raise FtslideError(f"{topology} is not a 2D/3D torus or mesh: give the stencil's node grid with --grid "
                       "(e.g. torus:8x8x8)")


def candidate_layouts(topology: Topology, grid: str, budget: int,
                      explicit: Sequence[str] = ()) -> list[Placement]:
    """The layouts to try: ``explicit`` ones (each must fit, else FtslideError), or every whole-plane
    layout (one or two planes of one dimension, one plane of each of two) and, where the network
    has switches, every spare set of one plane with 1, 2, 4, ... spares in every block (leaf switch,
    dragonfly group; sets that leave some blocks without spares are not offered), with at most
    ``budget`` spare nodes. FtslideError when none fits."""
    if explicit:
        out = []
        for spares in explicit:
            placement = make_placement(topology, grid, spares)
            if placement.spare_nodes > budget:
                raise FtslideError(f"layout {spares} has {placement.spare_nodes} spare nodes, above "
                                   f"--spare-nodes {budget}")
            out.append(placement)
        return out
    make_placement(topology, grid, "none")   # the grid itself must fit the topology (one-line error)
    ndims = len(sc.parse_grid(grid).sizes)
    names = "xyz"[:ndims]
    specs = [f"{d}:{k}" for d in names for k in (1, 2)]
    specs += [f"{d}:1,{e}:1" for d in names for e in names if d < e]
    blocks = sorted(set(block_sizes(topology).values()))
    specs += [f"{d}:1/{m}:{k}" for d in names for m in blocks for k in (1, 2, 4, 8) if k < m]
    fits, smallest = [], None
    seen: set[tuple[int, ...]] = set()
    for spares in specs:
        try:
            placement = make_placement(topology, grid, spares)
        except FtslideError:
            continue   # more planes than the dimension has, or a set without any spare in it
        roles = tuple(int(placement.layout.role(n)) for n in range(placement.layout.nodes))
        block = placement.layout.spares.block
        if block and len({roles[i:i + block].count(int(sc.Role.SPARE)) for i in range(0, len(roles), block)}) > 1:
            continue   # a spare set is offered when it spreads the spares evenly over every block
        if smallest is None or placement.spare_nodes < smallest[1]:
            smallest = (spares, placement.spare_nodes)
        if placement.spare_nodes <= budget and roles not in seen:
            seen.add(roles)
            fits.append(placement)
    if not fits:
        hint = f": the smallest, {smallest[0]}, has {smallest[1]}" if smallest else ""
        raise FtslideError(f"no spare layout of at most {budget} spare nodes fits grid {grid} on {topology}"
                           f"{hint}; raise --spare-nodes")
    return fits


def _price(layout: sc.Layout, mapping: Sequence[int], cfg: PlanConfig) -> dict[str, float]:
    ndims = len(layout.grid.sizes)
    sizes = {"stencil": cfg.halo_bytes, "phased": cfg.halo_bytes, "barrier": 0,
             "allreduce": cfg.allreduce_bytes}
    out = {}
    for pattern in PATTERNS:
        kernel = kernel_name(pattern, ndims)
        out[pattern] = analytic.pattern_congestion(layout, mapping, kernel, sizes[kernel], cfg.net).time
    return out


def score(cfg: PlanConfig, placement: Placement, methods: Sequence[str], failures: int,
          progress: Callable[[], None] | None = None) -> list[Plan]:
    """One Plan per method on ``cfg.draws`` seeded draws of ``failures`` failures of the layout's
    rank nodes: the model's median slowdowns after F against the layout's own failure-free map,
    the median max link load, the share of draws the method could not place."""
    layout = placement.layout
    base = _price(layout, layout.initial_map(), cfg)
    draws = draw_failures(placement, failures, cfg.draws, cfg.seed)
    lam = None
    if cfg.mtbf_hours is not None and cfg.run_hours is not None:
        lam = layout.ranks * cfg.run_hours / cfg.mtbf_hours
    plans = []
    for method in methods:
        times: dict[str, list[float]] = {p: [] for p in PATTERNS}
        loads, stuck = [], 0
        for draw in draws:
            try:
                mapping = sc.compute_map(layout, method, draw)
            except sc.SlideError:
                stuck += 1
                continue
            priced = _price(layout, mapping, cfg)
            for p in PATTERNS:
                times[p].append(priced[p] / base[p] if base[p] > 0 else 1.0)
            loads.append(sc.measure(layout, mapping).link_load_max)
            if progress:
                progress()
        share = stuck / len(draws)
        p_out = share if lam is None else max(share, _p_more_than(lam, placement.spare_nodes))
        plans.append(Plan(str(layout.spares), method, layout.ranks, placement.spare_nodes,
                          layout.nodes - layout.ranks, failures,
                          {p: statistics.median(v) for p, v in times.items() if v},
                          statistics.median(loads) if loads else math.inf, share, p_out))
    return plans


def rank(plans: Sequence[Plan]) -> list[Plan]:
    """Best first: least likely to run out of spares, then the lowest worst-pattern slowdown, the
    lowest stencil slowdown, the fewest idle nodes."""
    return sorted(plans, key=lambda p: (round(p.p_out, 3), p.stuck > 0, round(p.worst, 3),
                                        round(p.slowdown.get("stencil", math.inf), 3), p.idle_nodes,
                                        p.spares, p.method))


def curves(cfg: PlanConfig, placement: Placement, plan: Plan) -> None:
    """Fill ``plan.curve``: per pattern, the median model slowdown after each count 1..F over the
    first ``CURVE_DRAWS`` draws (None where no draw could be placed)."""
    layout = placement.layout
    base = _price(layout, layout.initial_map(), cfg)
    draws = draw_failures(placement, plan.failures, min(cfg.draws, CURVE_DRAWS), cfg.seed)
    plan.curve = {p: [] for p in PATTERNS}
    for f in range(1, plan.failures + 1):
        times: dict[str, list[float]] = {p: [] for p in PATTERNS}
        for draw in draws:
            try:
                mapping = sc.compute_map(layout, plan.method, draw[:f])
            except sc.SlideError:
                continue
            priced = _price(layout, mapping, cfg)
            for p in PATTERNS:
                times[p].append(priced[p] / base[p] if base[p] > 0 else 1.0)
        for p in PATTERNS:
            plan.curve[p].append(round(statistics.median(times[p]), 4) if times[p] else None)


def confirm(cfg: PlanConfig, plan: Plan, trials: int, jobs: int = 0, timeout: float = 600.0) -> None:
    """Simulate the plan in SimGrid (``trials`` draws of F failures, the first ``trials`` of the
    Monte Carlo draws) and set ``plan.simulated``: per pattern the median slowdown after F."""
    sweep = SweepConfig(topology=cfg.topology, grid=cfg.grid, spares=plan.spares, methods=(plan.method,),
                        failures=(0, plan.failures), patterns=PATTERNS, trials=trials, seed=cfg.seed,
                        net=cfg.net, halo_bytes=cfg.halo_bytes, allreduce_bytes=cfg.allreduce_bytes,
                        jobs=jobs, timeout=timeout, route_order=cfg.route_order)
    summary, _ = run_sweep(sweep, progress=False)
    rows = summary["rows"]
    assert isinstance(rows, list)
    plan.simulated = {r["pattern"]: r["slowdown_median"] for r in rows if r["failures"] == plan.failures}


def plot(path: Path, plans: Sequence[Plan], title: str, ndims: int) -> None:
    """One panel per pattern: the model slowdown after 1..F failures of each plan given (their
    ``curve``), written atomically to ``path`` (.png or .svg)."""
    fig = new_figure(11, 3.4)
    axes = fig.subplots(1, len(PATTERNS))
    for ax, pattern in zip(axes, PATTERNS):
        for plan in plans:
            ys = plan.curve.get(pattern, [])
            xs = [f for f, y in zip(range(1, len(ys) + 1), ys) if y is not None]
            ax.plot([0] + xs, [1.0] + [y for y in ys if y is not None], marker="o", markersize=3,
                    label=f"{plan.spares} {plan.method}")
        ax.set_title(pattern.replace("stencil", "stencil7" if ndims == 3 else "stencil5"), fontsize=9)
        ax.set_xlabel("failures")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("slowdown (model)")
    axes[-1].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)


def as_dict(plan: Plan, position: int) -> dict[str, object]:
    """A plan as ``ftslide plan --json`` writes it."""
    return {"rank": position, "spares": plan.spares, "method": plan.method, "ranks": plan.ranks,
            "spare_nodes": plan.spare_nodes, "idle_nodes": plan.idle_nodes, "failures": plan.failures,
            "slowdown": {p: round(v, 4) for p, v in plan.slowdown.items()},
            "worst": round(plan.worst, 4) if math.isfinite(plan.worst) else None,
            "load_max": plan.load_max if math.isfinite(plan.load_max) else None,
            "stuck": round(plan.stuck, 4), "p_out": round(plan.p_out, 6),
            "curve": plan.curve or None, "simulated": plan.simulated}
