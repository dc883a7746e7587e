"""Seeded fault-injection campaigns over the sliding runtime's phases (``ftslide faults``).

A campaign runs the resilient Jacobi example (``sliding/examples/jacobi3d.c``) many times, each run
with SIGKILLs at named kill points drawn from a seed, and checks every run: it recovered with the
failure-free checksum, or it stopped with the runtime's out-of-spares error exactly when the method
cannot absorb the failures that landed, or with the checkpoint-lost error exactly when two buddy
ranks (whose in-memory checkpoints hold each other's copy) died before the next commit; it did not hang (a hang is reported with the stacks of the stuck
processes); it left nothing behind (processes of the run, shared-memory segments, session folders).

Phases (where the kill that matters lands; every run also has a first failure at an iteration so
that a recovery happens, except where the phase is that first failure):

- ``iteration``: one node holding a rank dies at the start of a random iteration;
- ``simultaneous``: two nodes holding ranks die at the same iteration;
- ``checkpoint``: a node holding a rank dies inside a checkpoint (copies exchanged, not committed);
- ``waiting``: a spare node dies while it waits, and a worker dies at an iteration;
- ``recovery_start`` ... ``recovery_commit``: a worker dies at an iteration, and another process
  (worker or spare, drawn at random) dies at that step of the recovery that follows;
- ``promoted``: the spare that the first recovery promotes dies as soon as it has its rank;
- ``exhaust``: more nodes die, one after another, than there are spares (workers first).

With ``ranks_per_node`` K > 1 every node runs K processes (a block of the rank grid) and every kill
takes all K processes of the victim's node at once (``sliding_killpoint``: the first of them to reach
the point SIGKILLs the others, then itself); on one machine every K consecutive processes form a node.

With ``whole_nodes`` (``ftslide faults --cluster``) every run is spread over an emulated cluster, one
node per namespace (K processes in each), and each kill takes the victim's whole node at its point:
its processes, and its PRRTE daemon (ftslide_killpoint.h, FTSLIDE_KILL_NODE). The daemons route along a
chain (routing radix 1), so every node but the last relays for the nodes after it; node 0 runs
mpirun and is never a victim (losing it ends any job).

Errors and cost: ``check`` raises FtslideError for a campaign that cannot run, before anything
starts; ``run_campaign`` raises it when the failure-free run fails and costs one ``mpirun`` per run
(seconds each, up to ``timeout`` for a hang). ``plan``, ``judge`` and the helpers cost a few maps of
the core; the leftover checks read ``/proc`` (O(processes)).
"""

from __future__ import annotations

import os
import random
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..toolchain import mpi
from ..errors import FtslideError
from . import runtime as stencil
from . import core
from .core import SlideError, compute_map, make_layout

__all__ = ["phases", "default_methods", "Campaign", "RunRecord", "check", "plan", "holding_rank",
           "absorbable", "buddies_lost", "runtime_files", "in_use", "leftovers", "judge", "killed_in",
           "run_campaign", "summary", "as_json"]


def phases() -> tuple[str, ...]:
    """Every phase, in the order a campaign takes them: iteration, simultaneous, each of the
    runtime's kill points (sliding_names.h), exhaust."""
    return ("iteration", "simultaneous", *stencil.runtime_points(), "exhaust")


def default_methods() -> tuple[str, ...]:
    """The methods a campaign draws from unless told: the four that differ most in how they move ranks."""
    m = core.Method
    return tuple(method.label for method in (m.HYBRID, m.ROUTED, m.SLIDE1D, m.SIMPLE))


@dataclass
class Campaign:
    """A campaign's parameters; ``check()`` validates them. The methods default to
    ``default_methods()``, the phases to all of ``phases()``."""

    grid: str = "torus:3x2x2"
    spares: str = "x:1"
    methods: tuple[str, ...] = field(default_factory=default_methods)
    phases: tuple[str, ...] = field(default_factory=phases)
    runs: int = 12
    seed: int = 1
    iterations: int = 30
    checkpoint_every: int = 5
    timeout: float = 60.0
    whole_nodes: bool = False  # kills take whole nodes of an emulated cluster (node 0 spared)
    ranks_per_node: int = 1    # K processes per node, every kill takes the node's K
    block: str | None = None   # the block of ranks a node runs (None: the runtime's default)
    lang: str = "c"            # the example's language (stencil.LANGUAGES)

    def nodes_as(self) -> stencil.NodeOptions:
        """How the campaign's processes form nodes (checked: FtslideError for a bad K or block)."""
        return stencil.node_options(self.grid, self.spares, self.ranks_per_node, self.block,
                                    emulate=not self.whole_nodes)


LOST_DAEMON = "prterun: lost daemon"  # mpirun's notice per lost node (docs/nodeloss.md)
# The daemons' routing on a cluster: a chain 0-1-2-..., so that a lost node is a relay (docs/nodeloss.md).
CLUSTER_MPIRUN_OPTIONS = ("--prtemca", "rml_base_radix", "1")


@dataclass
class RunRecord:
    """One run of a campaign: what was planned, what happened, and the verdict."""

    index: int
    phase: str
    method: str
    kills: list[tuple[int, str]]               # (node, point) planned
    landed: dict[int, str] = field(default_factory=dict)   # node -> point where it died
    outcome: str = ""  # recovered | out-of-spares | data-lost | hang | wrong-checksum | error
    ok: bool = False
    detail: str = ""
    recoveries: int = 0
    recovery_ms: list[float] = field(default_factory=list)  # total time of each recovery
    daemons_lost: int = 0  # whole-node runs: nodes whose daemon mpirun reported lost
    leftovers: list[str] = field(default_factory=list)
    stacks: str = ""
    stderr_tail: str = ""  # the last lines mpirun printed, for runs that are not as they should be
    seconds: float = 0.0


def check(campaign: Campaign) -> None:
    """Raise FtslideError for a campaign that cannot run, before anything starts."""
    if campaign.runs < 1:
        raise FtslideError(f"--runs must be at least 1, not {campaign.runs}")
    if campaign.lang not in stencil.LANGUAGES:
        raise FtslideError(f"unknown language {campaign.lang!r}: choose {', '.join(stencil.LANGUAGES)}")
    if not campaign.timeout > 0:
        raise FtslideError(f"--timeout must be a positive number of seconds, not {campaign.timeout:g}")
    if campaign.iterations < 2 * campaign.checkpoint_every + 2:
        raise FtslideError(f"--iterations {campaign.iterations} is too short: at least two checkpoints "
                           f"(every {campaign.checkpoint_every}) and room after them are needed")
    unknown = [p for p in campaign.phases if p not in phases()]
    if unknown or not campaign.phases:
        raise FtslideError(f"unknown phase {', '.join(map(repr, unknown)) or '(none)'}: choose from "
                           f"{', '.join(phases())}")
    for method in campaign.methods:
        stencil.node_count(campaign.grid, campaign.spares, method)  # one-line errors for bad input
    campaign.nodes_as()
    if not campaign.methods:
        raise FtslideError(f"give at least one method of {', '.join(m.label for m in stencil.runtime_methods())}")


def plan(campaign: Campaign, index: int) -> tuple[str, str, list[tuple[int, str]]]:
    """(phase, method, kills) of run ``index``: phases in turn, the rest drawn from the seed."""
    rng = random.Random(f"ftslide-faults:{campaign.seed}:{index}")
    phase = campaign.phases[index % len(campaign.phases)]
    method = rng.choice(campaign.methods)
    layout = make_layout(campaign.grid, campaign.spares)
    spared = {0} if campaign.whole_nodes else set()  # node 0 runs mpirun
    workers = [w for w in layout.initial_map() if w not in spared]
    spares = sorted(set(range(layout.nodes)) - set(layout.initial_map()) - spared)
    last = campaign.iterations - 2
    first = rng.choice(workers)
    iteration = rng.randint(1, last)
    kills: list[tuple[int, str]] = [(first, stencil.iteration_point(iteration))]
    others = [n for n in range(layout.nodes) if n != first and n not in spared]
    point = stencil.Point
    if phase == "simultaneous":
        kills.append((rng.choice([w for w in workers if w != first]), stencil.iteration_point(iteration)))
    elif phase == point.CHECKPOINT.label:
        kills = [(first, phase)]
    elif phase == point.WAITING.label:
        kills.append((rng.choice(spares), phase))
    elif phase == point.PROMOTED.label:
        try:
            after = compute_map(layout, method, [first])
        except SlideError:
            after = []
        promoted = sorted(set(after) - set(layout.initial_map()) - spared)
        if promoted:
            kills.append((rng.choice(promoted), phase))
    elif phase in stencil.runtime_points():  # a step of the recovery that the first kill starts
        kills.append((rng.choice(others), phase))
    elif phase == "exhaust":
        victims = [first]  # one more failure than spares; workers first, spares once none is left
        for _ in range(layout.nodes - len(layout.initial_map())):
            pool = [w for w in workers if w not in victims] or [n for n in others if n not in victims]
            victims.append(rng.choice(pool))
        span = range(1, last + 1)
        steps = sorted(rng.sample(span, len(victims)) if len(victims) <= len(span) else
                       rng.choices(span, k=len(victims)))
        kills = holding_rank(layout, method, list(zip(victims, steps)))
    return phase, method, kills


def holding_rank(layout, method: str, kills: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """Kill points for (node, iteration) pairs in order: the start of the iteration while the node holds
    a rank under the method's map after the kills before it, else the point where it waits (a slide
    left it without a rank)."""
    out, failed = [], []
    waiting = stencil.Point.WAITING.label
    for node, iteration in kills:
        try:
            holds = node in compute_map(layout, method, failed)
        except SlideError:
            holds = False
        out.append((node, stencil.iteration_point(iteration) if holds else waiting))
        failed.append(node)
    return out


def absorbable(layout, method: str, order: Sequence[int]) -> bool:
    """Whether the method places every failure of ``order`` (in that order)."""
    try:
        compute_map(layout, method, list(order))
        return True
    except SlideError:
        return False


def buddies_lost(layout, method: str, agreed: Sequence[int], landed: dict[int, str]) -> bool:
    """Whether two dead nodes held buddy ranks (r and r + R/2, whose in-memory checkpoints hold each
    other's copy) under the map of the last committed checkpoint: then a checkpoint is gone for good."""
    try:
        mapping = compute_map(layout, method, list(agreed))
    except SlideError:
        return False
    ranks, holder = len(mapping), {node: rank for rank, node in enumerate(mapping)}
    dead = {holder[node] for node in landed if node in holder}
    return any((rank + ranks // 2) % ranks in dead for rank in dead)


def runtime_files() -> set[str]:
    """Shared-memory segments and session folders of Open MPI on this machine."""
    found = {str(p) for p in Path("/dev/shm").glob("sm_segment.*")} if Path("/dev/shm").is_dir() else set()
    found |= {str(p) for p in Path("/dev/shm").glob("ftslide-run-*")}
    found |= {str(p) for p in Path("/tmp").glob("prterun.*")}
    return found


def in_use(paths: set[str]) -> set[str]:
    """The paths of ``paths`` that a live process still names in its environment or has mapped: the
    runtime files of other launches on this machine (another campaign, a test suite), not leftovers."""
    if not paths:
        return set()
    needles = {path: path.encode() for path in paths}
    # a session folder /tmp/prterun.HOST.PID.UID is in use while its prterun lives
    used = {path for path in paths if (m := re.fullmatch(r".*/prterun\.[^/]+\.(\d+)\.\d+", path))
            and Path(f"/proc/{m[1]}").exists()}
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            text = (proc_dir / "environ").read_bytes() + (proc_dir / "maps").read_bytes()
        except OSError:
            continue
        used |= {path for path, needle in needles.items() if needle in text}
    return used


def leftovers(before: set[str], marker: str) -> list[str]:
    """What one run left behind: its processes still alive, and runtime files that appeared during it
    and that no live process claims, and that are still there after the scan of the processes (a
    launch running beside the campaign may end, and remove its files, during the scan)."""
    found = [f"process {pid}" for pid in mpi.processes_with(marker)]
    new = runtime_files() - before
    return found + sorted(path for path in new - in_use(new) if Path(path).exists())


def judge(record: RunRecord, run: stencil.StencilRun, reference: str, layout, method: str,
          whole_nodes: bool = False) -> None:
    """Fill ``record``'s outcome from ``run``: recovered with the failure-free ``reference`` checksum
    and exactly the dead agreed, or out of spares exactly when ``method`` cannot absorb the
    failures that landed, or data lost exactly when two buddies died; anything else is an error.
    Cost: a few maps of the core."""
    record.landed = dict(run.killed)
    record.recoveries = len(run.recoveries)
    record.recovery_ms = [r.times.get("total", 0.0) for r in run.recoveries]
    if whole_nodes:
        record.daemons_lost = run.stderr.count(LOST_DAEMON)
        if record.daemons_lost != len(record.landed):
            record.outcome = "error"
            record.detail = (f"{len(record.landed)} nodes killed, mpirun reported {record.daemons_lost} "
                             "daemons lost")
            return
    if run.returncode == 0:
        # the recoveries agreed on exactly the dead: never a live node, and every node that died
        # holding a rank (a spare that died waiting is only noticed by a later recovery, if any)
        agreed = set(run.recoveries[-1].failed) if run.recoveries else set()
        must = {node for node, point in record.landed.items() if point != stencil.Point.WAITING.label}
        if run.checksum == reference and must <= agreed <= set(record.landed):
            record.outcome, record.ok = "recovered", True
        elif run.checksum == reference:
            record.outcome = "error"
            record.detail = f"nodes {sorted(record.landed)} died, the recoveries agreed on {sorted(agreed)}"
        else:
            record.outcome, record.detail = "wrong-checksum", f"checksum {run.checksum} != {reference}"
        return
    status = stencil.Status  # out of spares: in a recovery, or at a waiting spare's start
    if run.errors and all(e.status is status.ERR_NO_SPARE for e in run.errors):
        agreed = run.recoveries[-1].failed if run.recoveries else []
        order = agreed + sorted(n for n in record.landed if n not in agreed)
        record.outcome = "out-of-spares"
        record.ok = not absorbable(layout, method, order)
        if not record.ok:
            record.detail = f"out of spares, but {method} places failures {order}"
        return
    if run.errors and all(e.status is status.ERR_DATA_LOST for e in run.errors):  # both copies gone
        agreed = run.recoveries[-1].failed if run.recoveries else []
        record.outcome = "data-lost"
        record.ok = buddies_lost(layout, method, agreed, record.landed)
        if not record.ok:
            record.detail = "checkpoint lost, but no rank lost both its node and its buddy's"
        return
    record.outcome = "error"
    record.detail = "; ".join(map(str, run.errors)) or (run.stderr.strip().splitlines() or ["exit " + str(run.returncode)])[-1]


def killed_in(log: Path) -> dict[int, str]:
    """node -> point of the kills a run's kill log holds (a whole node's stderr line dies with it)."""
    try:
        return stencil.parse(-1, "", log.read_text()).killed
    except OSError:
        return {}


def run_campaign(campaign: Campaign, prefix: Path, progress: Callable[[RunRecord], None] | None = None,
                 wrap: Callable[[list[str]], list[str]] | None = None,
                 env: dict[str, str] | None = None) -> tuple[str, list[RunRecord]]:
    """The failure-free checksum and one record per run. ``wrap`` and ``env`` go to every launch
    (mpi.run): for ``whole_nodes``, what runs the job across the emulated cluster."""
    check(campaign)
    program = stencil.build(prefix, campaign.lang)
    layout = make_layout(campaign.grid, campaign.spares)
    nodes_as = campaign.nodes_as()
    launch_env = {**(env or {}), **({"FTSLIDE_KILL_NODE": "1"} if campaign.whole_nodes else {})}
    options = CLUSTER_MPIRUN_OPTIONS if campaign.whole_nodes else ()
    base = stencil.run(prefix, campaign.grid, campaign.spares, campaign.methods[0], (),
                       iterations=campaign.iterations, checkpoint_every=campaign.checkpoint_every,
                       timeout=campaign.timeout, program=program, env=launch_env, wrap=wrap,
                       mpirun_options=options, nodes_as=nodes_as)
    if base.returncode != 0 or not base.checksum:
        raise FtslideError(f"the failure-free run failed (exit {base.returncode}): "
                           f"{(base.stderr.strip().splitlines() or ['no output'])[-1]}")
    records = []
    for index in range(campaign.runs):
        phase, method, kills = plan(campaign, index)
        record = RunRecord(index + 1, phase, method, kills)
        before = runtime_files()
        marker = f"FTSLIDE_FAULTS_RUN={campaign.seed}.{index}.{os.getpid()}"
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="ftslide-faults-") as folder:
            kill_log = Path(folder) / "kills"
            run_env = {**launch_env, "FTSLIDE_KILL_LOG": str(kill_log), **dict([marker.split("=", 1)])}
            try:
                run = stencil.run(prefix, campaign.grid, campaign.spares, method, kills,
                                  iterations=campaign.iterations, checkpoint_every=campaign.checkpoint_every,
                                  timeout=campaign.timeout, program=program, stacks_on_timeout=True,
                                  env=run_env, wrap=wrap, mpirun_options=options, nodes_as=nodes_as)
                run.killed.update(killed_in(kill_log))
                judge(record, run, base.checksum, layout, method, campaign.whole_nodes)
                if not record.ok:
                    record.stderr_tail = "\n".join(run.stderr.splitlines()[-40:])
            except mpi.MpirunTimeout as exc:
                record.outcome, record.stacks = "hang", exc.stacks
                record.stderr_tail = "\n".join(exc.stderr.splitlines()[-40:])
                record.landed = {**stencil.parse(-1, exc.stdout, exc.stderr).killed, **killed_in(kill_log)}
                record.detail = f"no end within {campaign.timeout:g} s"
        record.seconds = round(time.monotonic() - started, 2)
        record.leftovers = leftovers(before, marker)
        if record.leftovers:
            record.ok = False
        records.append(record)
        if progress:
            progress(record)
    return base.checksum, records


def summary(records: Sequence[RunRecord]) -> dict[str, object]:
    """Counts of ``records`` by outcome, kills planned and landed, runs per phase."""
    phases: dict[str, int] = {}
    for r in records:
        phases[r.phase] = phases.get(r.phase, 0) + 1
    return {
        "runs": len(records),
        "ok": sum(r.ok for r in records),
        "recovered": sum(r.outcome == "recovered" for r in records),
        "out_of_spares": sum(r.outcome == "out-of-spares" for r in records),
        "data_lost": sum(r.outcome == "data-lost" for r in records),
        "hangs": sum(r.outcome == "hang" for r in records),
        "wrong_checksums": sum(r.outcome == "wrong-checksum" for r in records),
        "errors": sum(r.outcome == "error" for r in records),
        "leftovers": sum(bool(r.leftovers) for r in records),
        # a planned kill does not land when the run never reaches its point (a spare promoted before
        # it could wait, a node left without a rank, a run that ended first)
        "kills_planned": sum(len(r.kills) for r in records),
        "kills_landed": sum(len(r.landed) for r in records),
        "phases": phases,
    }


def as_json(campaign: Campaign, reference: str, records: Sequence[RunRecord]) -> dict[str, object]:
    """The campaign, its failure-free checksum, the summary and every run, as JSON-ready data."""
    return {"campaign": asdict(campaign), "reference_checksum": reference, "summary": summary(records),
            "runs": [asdict(r) for r in records]}
