"""Real runs of the substitution maps on an emulated cluster, checked against SimGrid.

One topology, spare layout and seeded set of failed nodes; for the failure-free map and each
method's map after those failures, the project's stencil kernel
(``simulations/smpi/ftsim_kernels.c``, compiled with the Open MPI build's ``mpicc``) runs as
real Open MPI processes, K per node (``ranks_per_node``: a block of the rank grid each, one
unless told), on an emulated cluster of that topology (``ftslide.jobmgr.cluster``: one
namespace per node and switch, links shaped to ``rate``, routed as the topology model routes).
The same kernel runs on SimGrid (``smpi.run_kernels``) on a platform generated from the same
topology (``platform.platform_xml``), with the links' TCP payload rate as bandwidth and, unless
told not to, a calibration kept in the platform (``calibrate``): the host speed the K ranks of a
node get, and the CPU work per byte a rank spends sending, which SimGrid does not see and which
makes the real failure-free iteration slower than the flow model as processes per core grow.
Per method:

* measured slowdown -- median over repeats of (method's time / failure-free time of the same
  repeat): repeats interleave the maps, so a slow spell of the machine hits both sides;
* predicted slowdown -- SimGrid's time for the method's map / SimGrid's failure-free time;
* error % -- (predicted - measured) / measured x 100;
* time error % -- the same for the method's own time per iteration (median over repeats) against
  SimGrid's: where the failure-free run carries a fixed overhead that SimGrid does not model, the
  congested maps' times still agree.

The failed nodes run no rank; their processes are killed before the first run under a
substitution map, and their namespaces keep forwarding, as a torus router outlives its node
and as SimGrid and the model route through it.

Costs: one ``mpirun`` per map and repeat (about 10 s of start-up for 18 ranks on 2 cores, plus
(iterations + 1) halo exchanges), one more for the calibration; the simulations take seconds (the
calibration's fit runs SimGrid 2 to 8 times).

Errors: ``plan`` raises FtslideError (one line) for anything wrong before anything is created;
``run`` raises it when a launch or a simulation fails, and removes the cluster either way.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, TextIO

from .errors import FtslideError
from .jobmgr import cluster as netcluster
from .simulation import smpi
from .simulation.network import NetParams
from .simulation.placement import Placement, make_placement
from .simulation.platform import hostfile, platform_xml
from .simulation.sweep import draw_failures, kernel_name
from .sliding import core as sc
from .sliding.topology import Topology, parse_topology
from .toolchain import mpi
from .toolchain.mpi import compile_program
from .toolchain.ompi import require_prefix
from .ui.output import new_figure, save_figure
from .units import parse_rate, parse_time

__all__ = ["COMPILE_FLAGS", "default_methods", "ValidateConfig", "Case", "Calibration", "Plan", "link_params",
           "memory_available", "plan", "kernel_run", "calibrate", "fit_send_work", "predict", "eager_options",
           "mpirun_options", "launch", "measure", "summary", "plot", "run"]

# What the emulated links carry per second of their tc rate: at an MTU of 1500 a TCP segment
# with timestamps holds 1448 payload bytes in a 1514-byte frame (IP 20, TCP 32, Ethernet 14),
# and the shaping counts frames. A constant of the protocol headers, not a fitted value.
LINK_EFFICIENCY = 1448 / 1514
# Per-link latency of the platform: a veth hop and a forwarding step take tens of microseconds,
# far below a halo's transfer time at the rates used.
LINK_LATENCY = 50e-6
# Between two ranks of one node: TCP over the namespace's loopback, unshaped; a 64 KiB halo takes
# tens of microseconds, against half a second on a link at 1 Mbit/s.
LOOPBACK_BANDWIDTH = 1e9
# The calibration's compute phase: flops per rank, a fraction of a second with 27 to 54 ranks on
# 2 cores; and its halo exchanges, at least this many (one run of a few seconds: the time of a single
# exchange on a shared machine varies by tens of percent).
CALIBRATION_FLOPS = 20_000_000
CALIBRATION_ITERATIONS = 5
# Memory a node needs: an Open MPI rank and a PRRTE daemon (RSS about 60 MiB together, with
# room for the halo buffers), and a namespace's own (interfaces, routes, queues).
RANK_MEMORY = 256 * 2**20
NAMESPACE_MEMORY = 4 * 2**20
COMPILE_FLAGS = ("-O2", "-std=c11", "-Wall", "-Wextra", "-Werror")


def default_methods() -> tuple[str, ...]:
    """The methods compared unless told: all that keep one rank per node but slide2d, which spends a
    whole spare plane per failure (the default torus:3x3x3 has one)."""
    m = sc.Method
    return tuple(method.label for method in (m.SIMPLE, m.SLIDE1D, m.HYBRID, m.ROUTED))


@dataclass(frozen=True)
class ValidateConfig:
    """What ``ftslide validate`` runs: topology, grid, spares, methods, how many failures (seeded),
    the links' rate and delay, halo size, pattern, iterations and repeats, the cluster's name
    and the timeout of each mpirun."""

    topology: str
    spares: str
    methods: tuple[str, ...]
    failures: int
    grid: str | None = None
    seed: int = 1
    rate: str = "1mbit"
    delay: str | None = None
    halo: int = 65536
    pattern: str = "stencil7"
    iterations: int = 3
    repeats: int = 3
    route_order: str = ""
    name: str = ""
    timeout: float = 300.0
    ranks_per_node: int = 1
    block: str | None = None
    calibrate: bool = True


@dataclass
class Case:
    """One map to run: the failure-free map or a method's map after the failures."""

    label: str
    hosts: tuple[int, ...] | None
    error: str | None = None
    predicted_time: float | None = None
    measured_times: list[float] = field(default_factory=list)


@dataclass
class Calibration:
    """What the calibration run measured and what the platform keeps of it: the host speed a node's
    K ranks share (flop/s: K x the rate each rank got computing at once with all the others) and the
    CPU work per byte sent (flop/byte) that makes SimGrid's failure-free iteration last as long as
    the measured one (0 when SimGrid's is already as long)."""

    compute_time: float          # seconds a rank took for CALIBRATION_FLOPS, all ranks at once
    host_speed: float
    failure_free_time: float     # measured seconds per iteration of the calibration run
    uncalibrated_time: float     # SimGrid's failure-free time without the send work
    send_work: float
    calibrated_time: float       # SimGrid's failure-free time with it
    simulations: int             # SimGrid runs of the fit

    def message_overhead(self, halo: int) -> float:
        """Seconds a rank's CPU spends on one halo at the host's full speed."""
        return self.send_work * halo / self.host_speed if self.host_speed else 0.0


@dataclass
class Plan:
    """Everything checked before anything is created."""

    config: ValidateConfig
    topology: Topology
    placement: Placement
    net: NetParams
    kernel: str
    failed: tuple[int, ...]
    cases: list[Case]  # the failure-free map first
    calibration: Calibration | None = None


def link_params(rate: str, delay: str | None) -> NetParams:
    """The platform's link: the rate's TCP payload per second, the latency plus the delay; ranks of
    one node talk over its loopback."""
    lat = LINK_LATENCY + (parse_time(delay, "delay") if delay else 0.0)
    return NetParams(bw=parse_rate(rate, "rate") * LINK_EFFICIENCY, lat=lat, speed=1e9,
                     loopback_bw=LOOPBACK_BANDWIDTH)


def memory_available() -> int:
    """MemAvailable of /proc/meminfo in bytes (0 if unreadable)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def plan(cfg: ValidateConfig) -> Plan:
    """Check the whole configuration (one-line FtslideError) and compute the maps."""
    topology = parse_topology(cfg.topology, cfg.route_order)
    netcluster.cluster_topology(str(topology), None, cfg.route_order)  # buildable as a cluster
    placement = make_placement(topology, cfg.grid, cfg.spares, 0, cfg.ranks_per_node, cfg.block)
    layout = placement.layout
    if not cfg.methods:
        raise FtslideError("no method given: choose from " +
                           ", ".join(m.label for m in sc.methods() if m.one_rank_per_node))
    for method in cfg.methods:
        if not sc.parse_method(method).one_rank_per_node:
            raise FtslideError(f"{method} puts two node ranks on one node, which a run of a block of ranks per "
                               "node cannot show: leave it out of --methods")
    if len(set(cfg.methods)) != len(cfg.methods):
        raise FtslideError("a method is listed twice: list each once")
    if cfg.failures < 0:
        raise FtslideError(f"--failures must be 0 or more, not {cfg.failures}")
    if cfg.failures > placement.spare_nodes:
        raise FtslideError(f"{cfg.failures} failures but the layout {layout.grid} spares {layout.spares} has "
                           f"only {placement.spare_nodes} spare nodes: lower --failures or add spares")
    kernel = kernel_name(cfg.pattern, len(layout.grid.sizes))
    if kernel not in ("stencil", "phased"):
        raise FtslideError(f"pattern {cfg.pattern} is not a halo exchange: use stencil7 or stencil7-phased "
                           "(stencil5 in 2D)")
    if cfg.halo < 1:
        raise FtslideError("--halo must be at least 1 byte")
    if cfg.iterations < 1 or cfg.repeats < 1:
        raise FtslideError("--iterations and --repeats must be at least 1")
    netcluster.shaping_commands(cfg.rate, cfg.delay)  # rate and delay as tc takes them
    net = link_params(cfg.rate, cfg.delay)
    netcluster.check_name(cfg.name)
    if netcluster.state_path(cfg.name).exists():
        raise FtslideError(f"cluster {cfg.name!r} already exists: pick another --name or remove it with "
                           f"'ftslide cluster down --name {cfg.name}'")
    ranks = layout.ranks * placement.ranks_per_node
    need = ranks * RANK_MEMORY + topology.vertices * NAMESPACE_MEMORY
    have = memory_available()
    if have and need > have:
        raise FtslideError(f"{ranks} ranks in {topology.vertices} namespaces need about "
                           f"{need / 2**30:.1f} GiB but {have / 2**30:.1f} GiB are available: use a smaller "
                           "topology")
    if os.geteuid() != 0:
        raise FtslideError("real runs build network namespaces, which needs root: run ftslide validate as root")
    failed = tuple(draw_failures(placement, cfg.failures, 1, cfg.seed)[0])
    cases = [Case("failure-free", placement.initial_hosts())]
    for method in cfg.methods:
        try:
            cases.append(Case(method, placement.hosts(sc.compute_map(layout, method, list(failed)))))
        except sc.SlideError as exc:
            cases.append(Case(method, None, error=str(exc)))
    return Plan(cfg, topology, placement, net, kernel, failed, cases)


def kernel_run(p: Plan, hosts: tuple[int, ...], kernels: tuple[str, ...], net: NetParams) -> smpi.KernelRun:
    """The SimGrid run of ``kernels`` with rank r on host ``hosts[r]``, on the platform of ``net``."""
    return smpi.KernelRun(platform_xml(p.topology, net), hostfile(hosts), p.placement.stencil_dims(),
                          p.placement.stencil_periodic, kernels, p.config.iterations, net)


def fit_send_work(simulate: Callable[[float], float], target: float, first_guess: float,
                  tolerance: float = 0.01, rounds: int = 8) -> tuple[float, float, int]:
    """The send work w >= 0 for which ``simulate(w)`` (a time that grows with w) is ``target``:
    secant steps from w = 0 and ``first_guess``, inside the bracket once one is found, until within
    ``tolerance`` (relative) or after ``rounds`` simulations. Returns (w, simulate(w), simulations):
    the best w tried. Cost: ``rounds`` calls of ``simulate`` at most."""
    f0 = simulate(0.0) - target
    runs = 1
    if f0 >= 0:  # SimGrid is already as slow as the real run: nothing to add
        return 0.0, f0 + target, runs
    lo, f_lo, hi, f_hi = 0.0, f0, None, 0.0
    best = (0.0, f0)
    w = first_guess if first_guess > 0 else 1e-9
    while runs < rounds:
        f = simulate(w) - target
        runs += 1
        if abs(f) < abs(best[1]):
            best = (w, f)
        if abs(f) <= tolerance * target:
            break
        if f < 0:
            lo, f_lo = w, f
        else:
            hi, f_hi = w, f
        if hi is None:  # still short: extrapolate the line through (0, f0) and (w, f), at most 8 w
            w = min(w - f * w / (f - f0), 8 * w) if f > f0 else 2 * w
        else:
            w = lo + (hi - lo) * (-f_lo) / (f_hi - f_lo)
    return best[0], best[1] + target, runs


def calibrate(p: Plan, cluster: netcluster.Cluster, prefix: Path, binary: Path,
              log: TextIO | None = None) -> Calibration:
    """The calibration run and its fit: the failure-free map on the cluster, every rank computing
    CALIBRATION_FLOPS at once (the host speed), then the halo exchange (the time to match); SimGrid
    then finds the send work per byte that gives the same failure-free time. Sets ``p.net`` to the
    calibrated platform. Raises FtslideError when the run fails."""
    cfg = p.config
    hosts = p.cases[0].hosts
    assert hosts is not None
    dims = "x".join(map(str, p.placement.stencil_dims()))
    iterations = max(cfg.iterations, CALIBRATION_ITERATIONS)
    out = launch(cluster, prefix, hosts, [str(binary), dims, "1" if p.placement.stencil_periodic else "0",
                                          str(iterations), f"compute:{CALIBRATION_FLOPS}",
                                          f"{p.kernel}:{cfg.halo}"], cfg.halo, cfg.timeout)
    times = {line.split("pattern=", 1)[1].split()[0]: float(line.rsplit("time=", 1)[1])
             for line in out.splitlines() if line.startswith("ftsim pattern=") and "time=" in line}
    if "compute" not in times or p.kernel not in times:
        raise FtslideError(f"the calibration run printed no time: {out[-300:]}")
    k = p.placement.ranks_per_node
    speed = k * CALIBRATION_FLOPS / times["compute"]  # the kernel reports time per repetition
    base = replace(p.net, speed=speed, send_work=0.0)
    kernel = (f"{p.kernel}:{cfg.halo}",)

    def simulate(work: float) -> float:
        return smpi.run_kernels(kernel_run(p, hosts, kernel, replace(base, send_work=work)))[p.kernel]

    target = times[p.kernel]
    uncalibrated = simulate(0.0)
    # A first guess: the excess spread over a rank's messages, its node's K ranks in turn.
    neighbours = 2 * len(p.placement.stencil_dims())
    guess = max(target - uncalibrated, 0.0) * speed / (k * neighbours * cfg.halo)
    work, calibrated, runs = fit_send_work(simulate, target, guess)
    p.net = replace(base, send_work=work)
    p.calibration = Calibration(times["compute"], speed, target, uncalibrated, work, calibrated, runs)
    if log:
        print(f"[validate] calibration: host speed {speed / 1e6:.1f} Mflop/s shared by {k} rank(s), send work "
              f"{work:.4g} flop/byte ({p.calibration.message_overhead(cfg.halo) * 1e3:.2f} ms per halo); failure-free "
              f"{target:.4f} s measured, SimGrid {uncalibrated:.4f} s -> {calibrated:.4f} s ({runs} simulations)",
              file=log, flush=True)
    return p.calibration


def predict(p: Plan) -> None:
    """SimGrid's time per iteration for every map (cached by configuration), on ``p.net``'s platform
    (calibrated after ``calibrate``)."""
    for case in p.cases:
        if case.hosts is None:
            continue
        run = kernel_run(p, case.hosts, (f"{p.kernel}:{p.config.halo}",), p.net)
        case.predicted_time = smpi.run_kernels(run)[p.kernel]


def eager_options(halo: int) -> list[str]:
    """MCA options sending every halo of ``halo`` bytes eagerly into a socket buffer that holds it whole.

    With a rendezvous, the receiver's go-ahead queues in the same TCP stream behind its own halo,
    which serialises the two directions of an exchange; with the kernel's small initial socket
    buffers a rank must be scheduled again and again to feed its halo in, and on 2 shared cores
    it is not, in time, so the link idles. With both, the link's rate sets the time."""
    eager = max(halo + 4096, 65536)
    buffer = min(max(2 * eager, 262144), 4 * 2**20)
    values = {"btl_tcp_eager_limit": eager, "btl_tcp_rndv_eager_limit": eager, "btl_tcp_max_send_size": eager,
              "btl_tcp_sndbuf": buffer, "btl_tcp_rcvbuf": buffer}
    return [x for k, v in values.items() for x in ("--mca", k, str(v))]


def mpirun_options(cluster: netcluster.Cluster, hostfile_path: Path, halo: int) -> list[str]:
    """The cluster's options with a hostfile of one line per rank (its node), ranks in its line
    order, and ``eager_options``."""
    options = netcluster.mpirun_options(cluster)
    options[options.index("--hostfile") + 1] = str(hostfile_path)
    return [*options, "--map-by", "seq", *eager_options(halo)]


def launch(cluster: netcluster.Cluster, prefix: Path, hosts: tuple[int, ...], program: list[str],
           halo: int, timeout: float) -> str:
    """Run ``program`` with rank r on node ``hosts[r]``; its stdout. mpirun runs in rank 0's node;
    every process of the launch is killed when it ends or times out (``mpi.run``)."""
    path = cluster.directory / f"ranks-{os.getpid()}"
    # One line per rank, a node once per slot (a slot count on a node named twice is refused).
    path.write_text("".join(f"{netcluster.address(h)}\n" for h in hosts))
    options = mpirun_options(cluster, path, halo)

    def wrap(argv: list[str]) -> list[str]:
        return netcluster.launch_argv(cluster, [argv[0], *options, *argv[1:]], node=hosts[0])

    try:
        result = mpi.run(prefix, ["-np", str(len(hosts)), *program], timeout=timeout,
                         env=netcluster.launch_environment(), wrap=wrap)
    except mpi.MpirunTimeout:
        raise FtslideError(f"a run of {len(hosts)} ranks did not finish within {timeout:.0f} s: lower "
                           "--halo or --iterations, or raise --rate") from None
    finally:
        path.unlink(missing_ok=True)
    if result.returncode != 0:
        last = next((ln for ln in reversed(result.stderr.splitlines()) if ln.strip()), "no output")
        raise FtslideError(f"mpirun failed (exit {result.returncode}) on nodes {list(hosts)}: {last[:300]}")
    return result.stdout


def measure(p: Plan, cluster: netcluster.Cluster, prefix: Path, binary: Path,
            log: TextIO | None = None) -> None:
    """Run every map ``repeats`` times, interleaved; the failed nodes' processes are killed first."""
    cfg = p.config
    dims = "x".join(map(str, p.placement.stencil_dims()))
    program = [str(binary), dims, "1" if p.placement.stencil_periodic else "0", str(cfg.iterations),
               f"{p.kernel}:{cfg.halo}"]
    runnable = [c for c in p.cases if c.hosts is not None]
    for r in range(cfg.repeats):
        for case in runnable:
            if case is not p.cases[0]:
                netcluster.kill_namespaces([cluster.namespace(n) for n in p.failed])
            assert case.hosts is not None
            out = launch(cluster, prefix, case.hosts, program, cfg.halo, cfg.timeout)
            times = [float(line.rsplit("time=", 1)[1]) for line in out.splitlines()
                     if line.startswith("ftsim pattern=") and "time=" in line]
            if len(times) != 1:
                raise FtslideError(f"the kernel printed no time on nodes {list(case.hosts)}: {out[-300:]}")
            case.measured_times.append(times[0])
            if log:
                print(f"[validate] repeat {r + 1}/{cfg.repeats} {case.label}: {times[0]:.4f} s per iteration",
                      file=log, flush=True)


def _pct(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or not measured:
        return None
    return round((predicted - measured) / measured * 100, 2)


def summary(p: Plan) -> dict[str, object]:
    """The JSON document: configuration, failure-free calibration, one entry per method."""
    cfg = p.config
    base = p.cases[0]
    base_measured = statistics.median(base.measured_times) if base.measured_times else None
    methods = []
    for case in p.cases[1:]:
        entry: dict[str, object] = {"method": case.label, "error": case.error,
                                    "hosts": list(case.hosts) if case.hosts else None,
                                    "measured_times": case.measured_times,
                                    "predicted_time": case.predicted_time}
        ratios = [t / b for t, b in zip(case.measured_times, base.measured_times) if b > 0]
        measured = statistics.median(ratios) if ratios else None
        predicted = (case.predicted_time / base.predicted_time
                     if case.predicted_time is not None and base.predicted_time else None)
        median_time = statistics.median(case.measured_times) if case.measured_times else None
        entry.update(measured_time=median_time, time_error_pct=_pct(case.predicted_time, median_time),
                     measured_slowdown=round(measured, 4) if measured else None,
                     measured_slowdown_min=round(min(ratios), 4) if ratios else None,
                     measured_slowdown_max=round(max(ratios), 4) if ratios else None,
                     predicted_slowdown=round(predicted, 4) if predicted else None,
                     error_pct=_pct(predicted, measured))
        methods.append(entry)
    spread = (max(base.measured_times) - min(base.measured_times)) / base_measured * 100 \
        if base_measured else None
    doc: dict[str, object] = {
        "topology": str(p.topology), "route_order": p.topology.order, "grid": str(p.placement.layout.grid),
        "spares": str(p.placement.layout.spares), "ranks": p.placement.layout.ranks * p.placement.ranks_per_node,
        "spare_nodes": p.placement.spare_nodes, "failures": cfg.failures, "seed": cfg.seed,
        "failed_nodes": list(p.failed), "rate": cfg.rate, "delay": cfg.delay, "halo": cfg.halo,
        "pattern": cfg.pattern, "iterations": cfg.iterations, "repeats": cfg.repeats,
        "link_bandwidth": p.net.bw, "link_latency": p.net.lat,
        "ranks_per_node": p.placement.ranks_per_node,
        "block": list(p.placement.block) if p.placement.block else None,
        "calibration": None if p.calibration is None else {
            "compute_flops": CALIBRATION_FLOPS, "compute_time": p.calibration.compute_time,
            "host_speed": p.calibration.host_speed, "send_work": p.calibration.send_work,
            "message_overhead": p.calibration.message_overhead(cfg.halo),
            "failure_free_time": p.calibration.failure_free_time,
            "uncalibrated_time": p.calibration.uncalibrated_time,
            "calibrated_time": p.calibration.calibrated_time, "simulations": p.calibration.simulations},
        "failure_free": {"measured_times": base.measured_times, "measured_time": base_measured,
                         "spread_pct": round(spread, 2) if spread is not None else None,
                         "predicted_time": base.predicted_time,
                         "error_pct": _pct(base.predicted_time, base_measured)},
        "methods": methods,
    }
    return doc


def plot(doc: dict[str, object], path: Path) -> None:
    """Measured (median, min-max bars) beside predicted slowdown per method."""
    methods = [m for m in doc["methods"] if m["measured_slowdown"] is not None]  # type: ignore[union-attr]
    fig = new_figure(6.4, 4.2)
    ax = fig.add_subplot()
    xs = range(len(methods))
    meas = [m["measured_slowdown"] for m in methods]
    err = [[m["measured_slowdown"] - m["measured_slowdown_min"] for m in methods],
           [m["measured_slowdown_max"] - m["measured_slowdown"] for m in methods]]
    ax.bar([x - 0.2 for x in xs], meas, 0.4, yerr=err, capsize=3, label="measured (median, min-max)")
    ax.bar([x + 0.2 for x in xs], [m["predicted_slowdown"] for m in methods], 0.4, label="SimGrid")
    ax.set_xticks(list(xs), [m["method"] for m in methods])
    ax.axhline(1.0, color="grey", linewidth=0.5)
    ax.set_ylabel("slowdown (x failure-free)")
    ax.set_title(f"{doc['pattern']} on {doc['topology']}, spares {doc['spares']}, "
                 f"{doc['failures']} failures, {doc['rate']}", fontsize=9)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path)


def run(p: Plan, log: TextIO | None = sys.stderr) -> dict[str, object]:
    """Build the cluster, calibrate (unless told not to), simulate, run, remove the cluster; the
    summary document."""
    cfg = p.config
    prefix = require_prefix()
    binary = compile_program(prefix, [smpi.KERNEL_SOURCE], flags=COMPILE_FLAGS)
    smpi.build_kernels()
    started = time.monotonic()
    cluster = netcluster.up(cfg.name, None, str(p.topology), cfg.rate, p.placement.ranks_per_node, cfg.delay,
                            p.topology.order)
    try:
        if log:
            print(f"[validate] cluster {cluster.name}: {len(cluster.namespaces)} namespaces up in "
                  f"{time.monotonic() - started:.1f} s; failed nodes {list(p.failed)}", file=log, flush=True)
        if cfg.calibrate:
            calibrate(p, cluster, prefix, binary, log)
        predict(p)
        measure(p, cluster, prefix, binary, log)
    finally:
        netcluster.teardown(cluster)
    return summary(p)
