"""Scale simulation of the protocol cores with SimGrid (``ftproto_sim``).

The C++ driver (simulations/protocols/ftproto_sim.cpp) runs the BMG broadcast
or the ERA agreement cores unchanged, one SimGrid actor per process, and prints
one JSON summary line. This module builds platforms (through
``ftslide.topology`` and ``ftslide.simulation.platform``), runs the driver,
checks its summaries, sweeps P and F, and fits the agreement's cost.

Failure scenarios (``F`` failures):

* ``during`` (default): for the agreement, the current root (the lowest live
  rank) is killed the moment it decides, F times, so that every failure is
  discovered during the operation and forces another round over the P - f
  survivors; for the broadcast, F random non-root ranks crash at random times
  within the failure-free latency.
* ``before``: F random ranks are dead before the operation starts; the others
  learn of them ``detect`` seconds in.

Errors and cost: the parsers raise FtslideError for bad input (O(len(text))); ``run_driver``
raises DriverError (an FtslideError) when the driver fails or times out and costs one SimGrid run
(milliseconds to minutes, about linear in P x rounds); ``sweep`` costs one run per (P, F) plus one
allreduce per P; ``check_memory`` raises FtslideError when a run would not fit in memory.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..errors import FtslideError
from ..units import parse_time
from ..sliding.topology import Topology, TopologyError, parse_topology

__all__ = ["PROTOS", "AGREEMENTS", "TREES", "ORDERS", "DriverError", "parse_p_list", "parse_failures",
           "parse_detect", "auto_topology", "topology_for", "write_platform", "driver_path",
           "memory_estimate", "available_memory", "largest_p", "check_memory", "run_driver", "Point", "Fit",
           "SweepResult", "torus_order", "crash_schedule", "sum_log", "fit_sum_log", "sweep", "write_outputs"]

PROTOS = ("era", "era-early", "bmg", "bmg-lean")
AGREEMENTS = ("era", "era-early")
TREES = ("binomial", "binary", "knomial4")
ORDERS = ("rank", "torus")
MAX_P = 1 << 20  # a sanity bound; what fits is decided by the memory estimate
# Memory the driver needs, measured on the auto-sized torus (docs/protocols.md,
# "Scale"): the cores keep O(failures + log P) words per process (sorted rank
# arrays, no P-entry array), so the driver's footprint is SimGrid's: ~27 KB
# per actor (16 KB stacks, mailboxes, the platform), 1.88 GB for an agreement
# at P = 65,536. The first crash makes the driver start one waker actor per
# live process (16 KB stack each), kept for the later crashes: 3.57 GB at the
# peak with 8 failures at P = 65,536, ~26 KB more per process.
_BYTES_PER_PROC = {"era": 30e3, "era-early": 30e3, "bmg": 30e3, "bmg-lean": 30e3, "allreduce": 30e3}
_BYTES_PER_PROC_WITH_FAILURES = 27e3


class DriverError(FtslideError):
    """The SimGrid driver failed or printed an inconsistent summary."""


# ---- input parsing ------------------------------------------------------------


def parse_p_list(text: str) -> tuple[int, ...]:
    """'1024,4096' -> (1024, 4096); each 2..MAX_P (whether it fits in memory is checked later)."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or not all(re.fullmatch(r"[0-9]+", p) for p in parts):
        raise FtslideError(f"bad process counts '{text}': write a comma-separated list such as 1024,4096")
    values = tuple(sorted(set(int(p) for p in parts)))
    if values[0] < 2 or values[-1] > MAX_P:
        raise FtslideError(f"bad process counts '{text}': each must be between 2 and {MAX_P}")
    return values


def parse_failures(text: str) -> tuple[int, ...]:
    """'0..16' -> 0..16, '0,2,4' -> (0, 2, 4), '3' -> (3,)."""
    text = str(text).strip()
    m = re.fullmatch(r"([0-9]+)\.\.([0-9]+)", text)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        values: tuple[int, ...] = tuple(range(lo, hi + 1))
    elif re.fullmatch(r"[0-9]+(,[0-9]+)*", text):
        values = tuple(int(v) for v in text.split(","))
    else:
        values = ()
    if not values:
        raise FtslideError(f"bad failure counts '{text}': write a range such as 0..16 or a list such as 0,2,4")
    return tuple(sorted(set(values)))


def parse_detect(text: str) -> float:
    """'1us', '500ns', '2e-6' -> seconds (>= 0), in the grammar of ``ftslide.units``."""
    return parse_time(text, "detection delay")


# ---- platforms -----------------------------------------------------------------


def _near_cube(p: int) -> tuple[int, int, int]:
    best = (1, 1, p)
    for a in range(1, int(round(p ** (1 / 3))) + 2):
        if p % a:
            continue
        for b in range(a, int(math.isqrt(p // a)) + 1):
            if (p // a) % b == 0:
                c = p // a // b
                if min(a, b, c) > min(best):
                    best = (a, b, c)
    return best


def auto_topology(kind: str, p: int) -> Topology:
    """A torus (near-cubic, 3D when P factors) or a k-ary fat-tree (16 ports) of exactly P hosts."""
    if kind == "torus":
        dims = tuple(sorted((d for d in _near_cube(p) if d > 1), reverse=True)) or (p,)
        return parse_topology("torus:" + "x".join(map(str, dims)))
    down: list[int] = []
    rest = p
    while rest > 16 and rest % 16 == 0:
        down.append(16)
        rest //= 16
    down.append(rest)
    up = [1] + down[:-1]
    return parse_topology(f"fattree:{len(down)};{','.join(map(str, down))};"
                          f"{','.join(map(str, up))};{','.join('1' for _ in down)}")


def topology_for(spec: str, p: int) -> Topology:
    """``torus`` / ``fattree`` (sized for P) or an explicit spec with at least P hosts."""
    kind = spec.strip().lower()
    if kind in ("torus", "fattree", "fat-tree"):
        return auto_topology("torus" if kind == "torus" else "fattree", p)
    topo = parse_topology(spec)
    if topo.kind not in ("torus", "ring", "fattree", "star"):
        raise TopologyError(f"topology '{spec}': the protocol simulation supports torus and fattree")
    if topo.hosts < p:
        raise TopologyError(f"topology '{spec}' has {topo.hosts} hosts, fewer than P = {p}: "
                            f"give a bigger one or just 'torus' / 'fattree' (sized for each P)")
    return topo


def write_platform(topo: Topology, path: Path) -> Path:
    """SimGrid platform XML of the topology (shared generator of ``ftslide simulate``)."""
    from .network import NetParams
    from .platform import platform_xml

    path.write_text(platform_xml(topo, NetParams()))
    return path


# ---- the driver --------------------------------------------------------------------


def driver_path() -> Path:
    """Path of the SimGrid driver ``ftproto_sim``, built with CMake if needed; FtslideError if it
    cannot be built (no SimGrid)."""
    from ..toolchain.native import native_program

    try:
        return native_program("ftproto_sim")
    except FtslideError:
        raise FtslideError("the SimGrid driver ftproto_sim is not built: install libsimgrid-dev "
                           "and run 'cmake --build build'") from None


def memory_estimate(proto: str, p: int, failures: int = 0) -> float:
    """Bytes the driver needs for P processes and F failures (measured constants, see docs/protocols.md)."""
    return (_BYTES_PER_PROC[proto] + (_BYTES_PER_PROC_WITH_FAILURES if failures else 0.0)) * p


def available_memory() -> float:
    """MemAvailable of /proc/meminfo in bytes (8e9 if unreadable)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 8e9


def largest_p(proto: str, budget: float, failures: int = 0) -> int:
    """Largest power of two P whose estimate fits in ``budget`` bytes."""
    p = 2
    while p * 2 <= MAX_P and memory_estimate(proto, p * 2, failures) <= budget:
        p *= 2
    return p


def check_memory(proto: str, p: int, fraction: float = 0.4, failures: int = 0) -> None:
    """FtslideError, naming the largest P that fits, when ``proto`` at ``p`` processes and
    ``failures`` failures needs more than ``fraction`` of the free memory (``memory_estimate``)."""
    budget = available_memory() * fraction
    need = memory_estimate(proto, p, failures)
    if need > budget:
        raise FtslideError(f"{proto} at P = {p} with {failures} failures needs about {need / 1e9:.1f} GB "
                           f"(about {need / p / 1e3:.0f} KB per simulated process), more than the {budget / 1e9:.1f} GB "
                           f"a run may take here ({fraction:.0%} of the free memory): the largest P that fits "
                           f"is {largest_p(proto, budget, failures)}")


def run_driver(platform: Path, proto: str, p: int, crashes: Sequence[tuple[int, float]] = (),
               adversary: int = 0, detect: float = 1e-6, dump: bool = False,
               timeout: float = 600.0, extra: Sequence[str] = (), tree: str = "binomial",
               torus: Sequence[int] = ()) -> dict:
    """Run one simulation; return the summary (plus ``decisions`` with ``dump``).

    ``torus``: the agreement tree over the folded torus order of these
    dimensions (first fastest, as ``era_set_torus`` takes them; see
    ``torus_order``). Raises DriverError if the driver fails or its own checks
    fail (exit 1: some live process undecided or two live processes decided
    differently).
    """
    if tree not in TREES:
        raise FtslideError(f"unknown tree '{tree}': use one of {', '.join(TREES)}")
    cmd = [str(driver_path()), str(platform), "--proto", proto, "--p", str(p),
           "--detect", repr(detect), "--tree", tree, *extra]
    for rank, t in crashes:
        cmd += ["--crash", f"{rank}@{t!r}"]
    if adversary:
        cmd += ["--adversary", str(adversary)]
    if dump:
        cmd.append("--dump")
    if torus:
        cmd += ["--torus-order", "x".join(map(str, torus))]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DriverError(f"{proto} at P = {p} did not finish within {timeout:.0f} s") from None
    lines = proc.stdout.strip().splitlines()
    summary_line = next((line for line in reversed(lines) if line.startswith("{")), None)
    if summary_line is None or proc.returncode not in (0, 1):
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise DriverError(f"ftproto_sim ({proto}, P = {p}) failed with exit {proc.returncode}: {err}")
    out = json.loads(summary_line)
    out["ok"] = proc.returncode == 0
    if dump:
        out["decisions"] = [dict(kv.split("=", 1) for kv in line.split()[1:])
                            for line in lines if line.startswith("decision ")]
    if not out["ok"]:
        raise DriverError(f"{proto} at P = {p}: {out['decided']} of {out['alive']} live processes decided, "
                          f"{out['distinct_decisions']} distinct decisions")
    if proto in AGREEMENTS and not set(out["crashed_before"]) <= set(out["failed"]):
        raise DriverError(f"{proto} at P = {p}: processes dead before the start are missing from the "
                          f"agreed failed set")
    return out


# ---- sweeps ----------------------------------------------------------------------


@dataclass
class Point:
    """One simulation: latency (s), messages and bytes of one operation at P processes with F
    failed, the driver's wall time, and how many processes it saw fail."""

    proto: str
    p: int
    f: int
    latency: float
    messages: int
    bytes: int
    wall: float
    failed: int


@dataclass
class Fit:
    """latency(F) = a + b * sum over f <= F of log2(P - f), and the fit's R^2."""

    a: float
    b: float
    r2: float


@dataclass
class SweepResult:
    """A sweep of ``sweep()``: its parameters, every point, the binomial allreduce's latency per P
    and the fit per P."""

    proto: str
    topology: str
    when: str
    detect: float
    tree: str = "binomial"
    order: str = "rank"
    points: list[Point] = field(default_factory=list)
    allreduce: dict[int, float] = field(default_factory=dict)  # P -> latency
    fits: dict[int, Fit] = field(default_factory=dict)


def torus_order(topo: Topology, p: int) -> tuple[int, ...]:
    """Dimensions for ``era_set_torus`` (first fastest) of a torus of exactly P hosts.

    The topology model numbers hosts with the last dimension fastest, so the
    dimensions are handed over reversed.
    """
    if topo.kind not in ("torus", "ring") or topo.hosts != p:
        raise FtslideError(f"--order torus needs a torus of exactly P = {p} hosts, not {topo}: "
                           f"use --topology torus (sized for each P) or --order rank")
    return tuple(reversed(topo.dims))


def crash_schedule(proto: str, p: int, f: int, when: str, baseline: float, seed: int) -> tuple[list[tuple[int, float]], int]:
    """(static crashes, adversary count) for F failures."""
    if f == 0:
        return [], 0
    rng = random.Random(seed * 1_000_003 + p * 31 + f)
    if when == "before":
        return [(r, 0.0) for r in rng.sample(range(p), f)], 0
    if proto in AGREEMENTS:
        return [], f
    victims = rng.sample(range(1, p), f)  # rank 0 broadcasts
    return [(r, rng.uniform(0.05, 0.95) * baseline) for r in victims], 0


def sum_log(p: int, f: int) -> float:
    """Sum over g = 1..f of log2(P - g)."""
    return sum(math.log2(p - g) for g in range(1, f + 1))


def fit_sum_log(p: int, fs: Sequence[int], latency: Sequence[float]) -> Fit:
    """Least squares of latency(F) = a + b * sum_{f<=F} log2(P - f)."""
    import numpy as np

    x = np.array([sum_log(p, f) for f in fs])
    y = np.array(latency, dtype=float)
    A = np.vstack([np.ones_like(x), x]).T
    (a, b), *_ = np.linalg.lstsq(A, y, rcond=None)
    pred = a + b * x
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float(((y - pred) ** 2).sum()) / ss_tot if ss_tot > 0 else 1.0
    return Fit(float(a), float(b), r2)


def sweep(proto: str, ps: Sequence[int], fs: Sequence[int], topology: str, workdir: Path,
          when: str = "during", detect: float = 1e-6, seed: int = 1, timeout: float = 600.0,
          progress: Callable[[str], None] | None = None, tree: str = "binomial",
          order: str = "rank") -> SweepResult:
    """Run proto for every P and F (plus the allreduce per P); fit the agreement's cost.

    ``order`` = ``torus``: the agreement's tree (and the adversary's root) over
    the folded torus order; the allreduce stays the binomial one in rank order.
    """
    if proto not in PROTOS:
        raise FtslideError(f"unknown protocol '{proto}': use one of {', '.join(PROTOS)}")
    if when not in ("during", "before"):
        raise FtslideError(f"unknown failure timing '{when}': use during or before")
    if tree not in TREES:
        raise FtslideError(f"unknown tree '{tree}': use one of {', '.join(TREES)}")
    if order not in ORDERS:
        raise FtslideError(f"unknown order '{order}': use one of {', '.join(ORDERS)}")
    if order == "torus" and proto not in AGREEMENTS:
        raise FtslideError("--order torus applies to the agreement (era, era-early)")
    for p in ps:
        if max(fs) >= p:
            raise FtslideError(f"{max(fs)} failures among P = {p} processes: at least one must survive")
        topo = topology_for(topology, p)  # validate every P before running anything
        if order == "torus":
            torus_order(topo, p)
        check_memory(proto, p, failures=max(fs))
    workdir.mkdir(parents=True, exist_ok=True)
    res = SweepResult(proto, topology, when, detect, tree, order)
    for p in ps:
        topo = topology_for(topology, p)
        plat = write_platform(topo, workdir / f"platform-{p}.xml")
        dims = torus_order(topo, p) if order == "torus" else ()
        if progress:
            progress(f"P = {p} on {topo}: allreduce")
        res.allreduce[p] = run_driver(plat, "allreduce", p, timeout=timeout)["latency"]
        baseline = 0.0
        for f in sorted(set([0, *fs])):
            if progress:
                progress(f"P = {p} on {topo}: {proto}, F = {f}")
            crashes, adv = crash_schedule(proto, p, f, when, baseline, seed)
            out = run_driver(plat, proto, p, crashes, adv, detect, timeout=timeout, tree=tree, torus=dims)
            if f == 0:
                baseline = out["latency"]
            if f in fs:
                res.points.append(Point(proto, p, f, out["latency"], out["messages"], out["bytes"],
                                        out["wall"], len(out["failed"])))
        if proto in AGREEMENTS and len(fs) >= 2:
            pts = [pt for pt in res.points if pt.p == p]
            res.fits[p] = fit_sum_log(p, [pt.f for pt in pts], [pt.latency for pt in pts])
    return res


def write_outputs(res: SweepResult, out: Path) -> list[Path]:
    """CSV, JSON and PNG plots (latency vs F with the fit, the fit's residuals, messages vs F)."""
    import csv

    out.mkdir(parents=True, exist_ok=True)
    stem = (f"protocols-{res.proto}-{res.when}" + ("" if res.tree == "binomial" else f"-{res.tree}")
            + ("" if res.order == "rank" else f"-{res.order}"))
    csv_path = out / f"{stem}.csv"
    with csv_path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["proto", "p", "f", "latency_s", "messages", "bytes", "failed_set_size", "wall_s",
                    "allreduce_latency_s"])
        for pt in res.points:
            w.writerow([pt.proto, pt.p, pt.f, f"{pt.latency:.9g}", pt.messages, pt.bytes, pt.failed,
                        f"{pt.wall:.3f}", f"{res.allreduce[pt.p]:.9g}"])
    json_path = out / f"{stem}.json"
    json_path.write_text(json.dumps({
        "proto": res.proto, "topology": res.topology, "when": res.when, "detect_s": res.detect,
        "tree": res.tree, "order": res.order,
        "points": [pt.__dict__ for pt in res.points],
        "allreduce_latency_s": {str(k): v for k, v in res.allreduce.items()},
        "fits": {str(k): v.__dict__ for k, v in res.fits.items()},
    }, indent=2) + "\n")
    paths = [csv_path, json_path]
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for what in ("latency", "messages", "residuals"):
        if what == "residuals" and not res.fits:
            continue
        fig, ax = plt.subplots(figsize=(5.5, 3.6), dpi=80)
        for i, p in enumerate(sorted({pt.p for pt in res.points})):
            pts = [pt for pt in res.points if pt.p == p]
            fs = [pt.f for pt in pts]
            color = f"C{i % 10}"
            if what == "latency":
                ax.plot(fs, [pt.latency * 1e6 for pt in pts], "o", color=color, label=f"P={p}")
                fit = res.fits.get(p)
                if fit:
                    grid = list(range(min(fs), max(fs) + 1))
                    ax.plot(grid, [(fit.a + fit.b * sum_log(p, f)) * 1e6 for f in grid], "-", color=color,
                            label=f"fit a+b·Σlog2(P−f), R²={fit.r2:.3f}")
            elif what == "residuals":
                fit = res.fits.get(p)
                if fit:
                    ax.plot(fs, [(pt.latency - fit.a - fit.b * sum_log(p, pt.f)) * 1e6 for pt in pts], "o-",
                            color=color, label=f"P={p}, R²={fit.r2:.4f}")
                    ax.axhline(0.0, color="grey", lw=0.8)
            else:
                ax.plot(fs, [pt.messages for pt in pts], "o-", color=color, label=f"P={p}")
        ax.set_xlabel("failures F")
        ax.set_ylabel({"latency": "latency (µs)", "messages": "messages",
                       "residuals": "latency − fit (µs)"}[what])
        tree = f", {res.tree} tree, {res.order} order" if res.proto in AGREEMENTS else ""
        ax.set_title(f"{res.proto}{tree}, {res.topology}, failures {res.when}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / f"{stem}-{what}.png"
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    return paths
