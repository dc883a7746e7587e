"""Slowdown sweeps: methods x failure counts x patterns x trials, simulated and modelled.

Slowdown of a (method, failures, trial, pattern) = simulated time of the kernel
with the map after those failures / simulated time with no failure and the same
spare reservation (the layout's initial map). Failures of a trial are the first
``f`` nodes of a random permutation of the nodes that hold a rank before any
failure (seeded by ``seed`` and the trial number), the same for every method, so
counts are nested within a trial and methods are compared on equal draws.

Identical placements (every method with 0 failures, repeated maps) are simulated
once; every simulation is cached by its configuration (``smpi.run_kernels``).

Errors and cost: ``validate`` raises FtslideError (one line) for anything wrong before any work
starts; the others raise it when a simulation fails. ``run_sweep`` costs one SimGrid run per
distinct placement and pattern (``jobs`` at a time), plus the analytic model for every trial.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import statistics
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

from ..sliding import core as sc
from ..errors import FtslideError
from ..sliding.topology import Topology, parse_topology
from . import analytic
from .network import NetParams
from .placement import Placement, make_placement
from .platform import hostfile, platform_xml
from .smpi import KernelRun, kill_running, run_kernels
from ..ui.output import new_figure, save_figure, write_text
from ..ui.progress import Bar

__all__ = ["SweepConfig", "Trial", "parse_failures", "kernel_name", "validate", "draw_failures", "run_sweep",
           "summarize", "write_outputs", "plot"]


@dataclass(frozen=True)
class SweepConfig:
    """What ``ftslide simulate`` sweeps: topology, grid and spares, methods x failure counts x
    patterns x trials, the network's figures, message sizes, and how to run (jobs, timeout, cache)."""

    topology: str
    grid: str | None
    spares: str
    methods: tuple[str, ...]
    failures: tuple[int, ...]
    patterns: tuple[str, ...]
    trials: int = 5
    seed: int = 1
    net: NetParams = field(default_factory=NetParams)
    halo_bytes: int = 65536
    allreduce_bytes: int = 8
    iters: int = 1
    jobs: int = 0
    timeout: float = 600.0
    simulate: bool = True
    use_cache: bool = True
    route_order: str = ""
    expect: int = 0
    ranks_per_node: int = 1      # K ranks on every node, a block of the rank grid
    block: str | None = None     # that block (None: the most even split of K)


@dataclass
class Trial:
    """One (method, failure count, trial): its failures, map and per-pattern results."""

    method: str
    failures: int
    trial: int
    failed_nodes: tuple[int, ...]
    hosts: tuple[int, ...] | None
    error: str | None = None
    times: dict[str, float] = field(default_factory=dict)
    model: dict[str, analytic.Congestion] = field(default_factory=dict)


def parse_failures(text: str) -> tuple[int, ...]:
    """'0..8' -> 0..8, '0,2,4' -> (0, 2, 4), '3' -> (3,)."""
    try:
        if ".." in text:
            lo, hi = text.split("..", 1)
            values = tuple(range(int(lo), int(hi) + 1))
        else:
            values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise FtslideError(f"bad failure counts '{text}': write a range such as 0..8 or a list "
                           f"such as 0,2,4") from None
    if not values or min(values) < 0:
        raise FtslideError(f"bad failure counts '{text}': give at least one count, none negative")
    return tuple(sorted(set(values)))


def kernel_name(pattern: str, ndims: int) -> str:
    """User pattern -> SMPI kernel name; FtslideError for unknown or mismatched ones.

    stencil7 / stencil5 (3D / 2D, or just stencil): the halo exchange with every neighbour at
    once; stencil7-phased / stencil5-phased (stencil-phased): one dimension after the other."""
    base, _, phase = pattern.partition("-")
    if base in ("stencil7", "stencil5", "stencil") and phase in ("", "phased"):
        want = "stencil7" if ndims == 3 else "stencil5"
        if base != "stencil" and base != want:
            raise FtslideError(f"pattern {pattern} does not fit a {ndims}D grid: use "
                               f"{want}{'-' if phase else ''}{phase}")
        return "phased" if phase else "stencil"
    if pattern in ("barrier", "allreduce"):
        return pattern
    raise FtslideError(f"unknown pattern '{pattern}': choose stencil7 (3D) or stencil5 (2D), "
                       f"stencil7-phased, barrier, allreduce")


def validate(cfg: SweepConfig) -> tuple[Topology, Placement]:
    """Check everything that can be checked before any work; one-line errors."""
    topology = parse_topology(cfg.topology, cfg.route_order)
    placement = make_placement(topology, cfg.grid, cfg.spares, cfg.expect, cfg.ranks_per_node, cfg.block)
    if not cfg.methods:
        raise FtslideError("no method given: choose from " + ", ".join(m.label for m in sc.methods()))
    methods = [sc.parse_method(m) for m in cfg.methods]
    if not cfg.patterns:
        raise FtslideError("no pattern given: choose stencil7, barrier, allreduce")
    for p in cfg.patterns:
        kernel_name(p, len(placement.layout.grid.sizes))
    if len({kernel_name(p, len(placement.layout.grid.sizes)) for p in cfg.patterns}) != \
            len(cfg.patterns):
        raise FtslideError("a pattern is listed twice: list each once")
    fmax = max(cfg.failures)
    spare = placement.spare_nodes
    if fmax > placement.layout.ranks:
        raise FtslideError(f"{fmax} failures but only {placement.layout.ranks} nodes hold ranks: "
                           f"lower --failures")
    if fmax > spare and any(m.one_rank_per_node for m in methods):
        raise FtslideError(f"{fmax} failures but the layout {placement.layout.grid} spares "
                           f"{placement.layout.spares} has only {spare} spare nodes: lower "
                           f"--failures or add spares (e.g. --spares x:2)")
    if cfg.trials < 1:
        raise FtslideError("--trials must be at least 1")
    if cfg.iters < 1:
        raise FtslideError("--iters must be at least 1")
    if cfg.jobs < 0:
        raise FtslideError(f"--jobs must be 0 (one per core) or more, not {cfg.jobs}")
    if not cfg.timeout > 0:
        raise FtslideError(f"--timeout must be a positive number of seconds, not {cfg.timeout:g}")
    return topology, placement


def draw_failures(placement: Placement, fmax: int, trials: int, seed: int) -> list[list[int]]:
    """Per trial, ``fmax`` distinct rank-holding nodes in random order."""
    candidates = sorted(placement.layout.initial_map())
    out = []
    for t in range(trials):
        rng = random.Random(f"ftslide-simulate:{seed}:{t}")
        out.append(rng.sample(candidates, fmax))
    return out


def run_sweep(cfg: SweepConfig, progress: bool = True,
              stream: TextIO | None = None) -> tuple[dict[str, object], list[Trial]]:
    """Run a sweep; returns (summary dict with rows, raw trials)."""
    topology, placement = validate(cfg)
    layout = placement.layout
    ndims = len(layout.grid.sizes)
    kernels = {p: kernel_name(p, ndims) for p in cfg.patterns}
    fmax = max(cfg.failures)
    draws = draw_failures(placement, fmax, cfg.trials, cfg.seed)

    trials: list[Trial] = []
    for method in cfg.methods:
        for f in cfg.failures:
            for t in range(cfg.trials):
                failed = tuple(draws[t][:f])
                try:
                    mapping = sc.compute_map(layout, method, list(failed))
                    trials.append(Trial(method, f, t, failed, placement.hosts(mapping)))
                except sc.SlideError as exc:
                    trials.append(Trial(method, f, t, failed, None, error=str(exc)))
    baseline_hosts = placement.initial_hosts()

    # Distinct placements: the baseline first, then every map a trial produced.
    unique: dict[tuple[int, ...], int] = {baseline_hosts: 0}
    for tr in trials:
        if tr.hosts is not None and tr.hosts not in unique:
            unique[tr.hosts] = len(unique)
    placements = list(unique)

    sizes = {"stencil": cfg.halo_bytes, "phased": cfg.halo_bytes, "barrier": 0,
             "allreduce": cfg.allreduce_bytes}
    periodic = placement.stencil_periodic
    dims = placement.stencil_dims()
    plat = platform_xml(topology, cfg.net)
    args = tuple(f"{k}:{sizes[k]}" if k != "barrier" else k for k in kernels.values())
    models: list[dict[str, analytic.Congestion]] = [{} for _ in placements]
    sim: list[dict[str, float] | None] = [None] * len(placements)
    errors: list[str | None] = [None] * len(placements)
    model_lock = threading.Lock()

    def job(i: int) -> None:
        # The model is Python (serialised by the lock); smpirun runs in its own
        # process, so the models of some placements overlap others' simulations.
        with model_lock:
            models[i] = {p: analytic.pattern_congestion(layout, placements[i], k, sizes[k],
                                                        cfg.net, placement.block)
                         for p, k in kernels.items()}
        if not cfg.simulate:
            return
        run = KernelRun(plat, hostfile(placements[i]), dims, periodic, args,
                        cfg.iters, cfg.net)
        try:
            sim[i] = run_kernels(run, timeout=cfg.timeout, use_cache=cfg.use_cache)
        except FtslideError as exc:
            errors[i] = str(exc)

    workers = cfg.jobs or os.cpu_count() or 1
    bar = Bar(len(placements), "simulate" if cfg.simulate else "model", stream) if progress else None
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = {pool.submit(job, i) for i in range(len(placements))}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    fut.result()
                    if bar:
                        bar.step()
        except BaseException:
            for fut in pending:
                fut.cancel()
            kill_running()
            raise
    if cfg.simulate and errors[0] is not None:
        raise FtslideError(f"the failure-free baseline could not be simulated: {errors[0]}")

    for tr in trials:
        if tr.hosts is None:
            continue
        i = unique[tr.hosts]
        tr.model = models[i]
        if cfg.simulate:
            result = sim[i]
            if result is None:
                tr.error = errors[i]
            else:
                tr.times = {p: result[k] for p, k in kernels.items()}

    base_sim = {p: sim[0][k] for p, k in kernels.items()} if cfg.simulate and sim[0] else {}
    base_model = models[0]
    rows = summarize(cfg, trials, base_sim, base_model)
    summary: dict[str, object] = {
        "config": _config_dict(cfg, placement),
        "baseline": {p: {"time": base_sim.get(p), "model": asdict(base_model[p])}
                     for p in cfg.patterns},
        "simulations": len(placements) if cfg.simulate else 0,
        "rows": rows,
    }
    return summary, trials


def _config_dict(cfg: SweepConfig, placement: Placement) -> dict[str, object]:
    d = asdict(cfg)
    d["net"] = asdict(cfg.net)
    d["topology"] = str(placement.topology)
    d["route_order"] = placement.topology.order
    d["grid"] = str(placement.layout.grid)
    d["ranks"] = placement.layout.ranks * placement.ranks_per_node
    d["spare_nodes"] = placement.spare_nodes
    if placement.block is None:  # one rank per node: the document as it always was
        d.pop("ranks_per_node")
        d.pop("block")
    else:
        d["block"] = list(placement.block)
        d["node_ranks"] = placement.layout.ranks
    for k in ("jobs", "timeout", "use_cache"):
        d.pop(k, None)
    return d


def _q(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(cfg: SweepConfig, trials: list[Trial], base_sim: dict[str, float],
              base_model: dict[str, analytic.Congestion]) -> list[dict[str, object]]:
    """One row per (method, failure count, pattern): medians and ranges of the simulated and modelled
    slowdowns over the trials (None where no trial placed the failures), and the first error."""
    rows: list[dict[str, object]] = []
    for method in cfg.methods:
        for f in cfg.failures:
            group = [t for t in trials if t.method == method and t.failures == f]
            for p in cfg.patterns:
                ok = [t for t in group if t.error is None and t.model]
                sd = [t.times[p] / base_sim[p] for t in ok if p in t.times and base_sim.get(p)]
                model_sd = [t.model[p].time / base_model[p].time for t in ok
                            if base_model[p].time > 0]
                err = next((t.error for t in group if t.error), None)
                row: dict[str, object] = {
                    "method": method, "failures": f, "pattern": p,
                    "trials": len(group), "trials_ok": len(sd) if cfg.simulate else len(ok),
                    "slowdown_median": round(statistics.median(sd), 4) if sd else None,
                    "slowdown_min": round(min(sd), 4) if sd else None,
                    "slowdown_max": round(max(sd), 4) if sd else None,
                    "slowdown_q25": round(_q(sd, 0.25), 4) if sd else None,
                    "slowdown_q75": round(_q(sd, 0.75), 4) if sd else None,
                    "model_slowdown_median": round(statistics.median(model_sd), 4) if model_sd else None,
                    "load_max_median": statistics.median([t.model[p].load_max for t in ok]) if ok else None,
                    "collisions_median": statistics.median([t.model[p].collisions for t in ok]) if ok else None,
                    "hops_max_median": statistics.median([t.model[p].hops_max for t in ok]) if ok else None,
                    "error": err,
                }
                rows.append(row)
    return rows


# ---- outputs -------------------------------------------------------------------

CSV_FIELDS = ("method", "failures", "pattern", "trials", "trials_ok", "slowdown_median",
              "slowdown_min", "slowdown_max", "slowdown_q25", "slowdown_q75",
              "model_slowdown_median", "load_max_median", "collisions_median",
              "hops_max_median", "error")


def write_outputs(out: Path, summary: dict[str, object], trials: list[Trial],
                  platform: str) -> list[Path]:
    """slowdown.csv, slowdown.json, slowdown-<pattern>.png, platform.xml (atomically)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FtslideError(f"cannot create output directory {out}: {exc.strerror}; "
                           f"choose another --out") from None
    rows = summary["rows"]
    assert isinstance(rows, list)
    written: list[Path] = []

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in CSV_FIELDS})
    csv_text = buf.getvalue()
    raw = [{"method": t.method, "failures": t.failures, "trial": t.trial,
            "failed_nodes": list(t.failed_nodes), "error": t.error, "times": t.times,
            "model": {p: asdict(c) for p, c in t.model.items()}} for t in trials]
    json_text = json.dumps({**summary, "trials": raw}, indent=1)
    for name, text in (("slowdown.csv", csv_text), ("slowdown.json", json_text),
                       ("platform.xml", platform)):
        path = out / name
        write_text(path, text)
        written.append(path)
    written += plot(out, summary)
    return written


def plot(out: Path, summary: dict[str, object]) -> list[Path]:
    """One PNG per pattern: median slowdown against failures per method, min-max bars."""
    cfg = summary["config"]
    rows = summary["rows"]
    assert isinstance(cfg, dict) and isinstance(rows, list)
    simulated = bool(cfg.get("simulate"))
    key = "slowdown_median" if simulated else "model_slowdown_median"
    paths = []
    for pattern in cfg["patterns"]:
        fig = new_figure(6.4, 4.2)
        ax = fig.add_subplot()
        for method in cfg["methods"]:
            pts = [r for r in rows if r["method"] == method and r["pattern"] == pattern
                   and r[key] is not None]
            if not pts:
                continue
            xs = [r["failures"] for r in pts]
            ys = [r[key] for r in pts]
            if simulated:
                lo = [r[key] - r["slowdown_min"] for r in pts]
                hi = [r["slowdown_max"] - r[key] for r in pts]
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=method)
            else:
                ax.plot(xs, ys, marker="o", label=method)
        ax.set_xlabel("failures")
        ax.set_ylabel("slowdown (x failure-free)" + ("" if simulated else ", analytic model"))
        ax.set_title(f"{pattern} on {cfg['topology']}, spares {cfg['spares']}")
        ax.axhline(1.0, color="grey", linewidth=0.5)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out / f"slowdown-{pattern}.png"
        save_figure(fig, path)
        paths.append(path)
    return paths
