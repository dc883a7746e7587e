"""Seeded fault-injection campaigns over the sliding runtime's phases (``ftslide faults``).

A campaign runs one of the runtime's example applications (``app``: the resilient Jacobi stencil
``sliding/examples/jacobi3d.c``, or the 2D heat stencil ``heat2d.c``, which runs on 2D grids only)
many times, each run with SIGKILLs at named kill points drawn from a seed, and checks every run:
every planned kill landed and no other (else the run is ``missed``, or an error); it recovered with
the failure-free checksum (and, for heat2d, its own serial check of the field said valid=yes: a run
that says valid=no or exits 4 is a wrong result), or it stopped with the runtime's out-of-spares
error exactly when the method cannot absorb the failures that landed, or with the checkpoint-lost
error exactly when two buddy ranks (whose in-memory checkpoints hold each other's copy) died before
the next commit; it did not hang (a hang is reported with the stacks of the stuck processes); it
left nothing behind (processes of the run, shared-memory segments, session folders). The plans name
only points a run reaches whatever its timing; both applications pass the same points (an
``iter=I`` point at the start of every iteration, the runtime's own) and exchange halos with their
grid neighbours every iteration, which the plans rely on.
With ``load`` N, N busy processes (CPU spinners) run beside the campaign's launches.

Redundancy. A campaign may choose the runtime's redundancy policy (``redundancy``: ``buddy``, the
default, ``parity:G`` or ``rs:G,M``), failure domains as boxes of the node grid (``domains``:
``2x2x1``), and the file level (``file_level``: a fresh checkpoint directory per run, inside
``checkpoint_dir`` if given, every ``file_every``-th committed checkpoint written there). The
judge then asks of a run that stopped with the checkpoint-lost error that the policy could not
rebuild the failures that landed from memory (under the map of the last committed checkpoint,
``memory_loss``) and that no file checkpoint existed (the run's directory holds no manifest);
and of a run that rolled back to a file checkpoint that it finished with the failure-free
checksum. Every record says whether the policy promised survival of the kills that landed
(``promised``: no rank lost with every copy of its checkpoint, or a manifest to roll back to).

Phases (where the kill that matters lands; every run also has a first failure at an iteration so
that a recovery happens, except where the phase is that first failure):

- ``iteration``: one node holding a rank dies at the start of a random iteration;
- ``simultaneous``: two nodes holding ranks die at the same iteration, each keeping its rank under the
  method's map after the other's failure (either may be recovered first and the other have to get
  back to the iteration); a single one where no such pair exists;
- ``checkpoint``: a node holding a rank dies inside a checkpoint (copies exchanged, not committed);
- ``waiting``: a spare node dies while it waits, and a worker dies at an iteration;
- ``recovery_start`` ... ``recovery_commit``: a worker dies at an iteration, and another process
  (worker or spare, drawn at random) dies at that step of the recovery that follows;
- ``promoted``: the spare that the first recovery promotes dies as soon as it has its rank;
- ``exhaust``: nodes holding ranks die in stages that the run takes one after the other, until one
  more than the spares (or the first failure the method cannot place) has died (``exhaust_kills``).

Correlated phases (``correlated_phases``; ``phases_for`` says which apply to a campaign), each
under the map of the first failure's checkpoint (the initial map). "At once" means: the first
victim dies at the start of a random iteration, the others as the recovery that follows starts
(``recovery_start``, before anything is committed: to the checkpoints the same as dying together),
or, for ``partners`` drawn half the time, at the same iteration where each keeps its rank after
the other's failure (either may then be recovered first):

- ``partners``: a node and its redundancy partner at once (buddy: the node holding its rank's copy
  or whose copy it holds, core.buddy_shift; erasure: another member of its group, core.groups);
- ``overrun``: M + 1 members of one group at once (buddy and parity: the same as partners);
- ``domain``: every node of the first victim's failure domain at once (needs ``domains``);
- ``same_recovery``: a node dies at an iteration or inside the second checkpoint, and another (one of its
  partners half the time) at ``recovery_agree`` or ``recovery_state`` of the recovery that follows;
- ``checkpoint_file``: a node dies as a committed copy is about to go to the file level (needs the
  file level).

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
the core (an ``exhaust`` plan up to MAP_BUDGET); the leftover checks read ``/proc`` (O(processes)).
"""

from __future__ import annotations

import itertools
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from ..toolchain import mpi
from ..toolchain.mpi import SPINNER, busy  # noqa: F401  (the campaigns' load; re-exported for the harnesses)
from ..errors import FtslideError
from . import runtime as stencil
from . import core
from .core import SlideError, compute_map, make_block, make_layout

__all__ = ["phases", "correlated_phases", "all_phases", "phases_for", "Protection", "partners_of",
           "buddy_pairing", "lost_in_memory", "memory_loss", "checkpoint_committed", "manifest_version", "run_directory",
           "correlated_kills", "DEFAULT_FILE_EVERY", "default_methods", "DEFAULT_LAYOUTS", "MAX_LOAD", "Campaign",
           "RunRecord", "check", "plan",
           "halo_diameter", "exhaust_kills", "busy",
           "stage_check", "holds_rank", "absorbable", "buddies_lost", "buddies_among", "runtime_files", "in_use",
           "leftovers", "missed_kills", "unplanned_kills", "judge", "killed_in", "run_campaign", "summary", "as_json"]


def phases() -> tuple[str, ...]:
    """The phases of a campaign with the runtime's default checkpoints, in the order a campaign takes
    them: iteration, simultaneous, each of the runtime's kill points (sliding_names.h) but the file
    level's and the degraded recovery's, exhaust. correlated_phases() come after them."""
    skip = {stencil.Point.CHECKPOINT_FILE.label, stencil.Point.RECOVERY_SPAWN.label}
    return ("iteration", "simultaneous", *(p for p in stencil.runtime_points() if p not in skip), "exhaust")


def correlated_phases() -> tuple[str, ...]:
    """The phases of correlated kills (the module's docstring), in the order a campaign takes them."""
    return ("partners", "overrun", "domain", "same_recovery", stencil.Point.CHECKPOINT_FILE.label)


def all_phases() -> tuple[str, ...]:
    """Every phase a campaign may name: phases(), correlated_phases(), then recovery_spawn (with
    --on-no-spare degrade: exhaust's kills, and a node killed while the survivors start guests)."""
    return (*phases(), *correlated_phases(), stencil.Point.RECOVERY_SPAWN.label)


def phases_for(campaign: "Campaign") -> tuple[str, ...]:
    """The phases ``--phases all`` means for ``campaign``: phases(), then the correlated phases that
    apply: partners and same_recovery always, overrun where a group may lose two members or more
    (buddy and parity: partners already kills M + 1), domain with domains, checkpoint_file with the
    file level; recovery_spawn when the runtime degrades."""
    lose = core.parse_redundancy(campaign.redundancy or "buddy").lose
    wanted = {"partners", "same_recovery"} | ({"overrun"} if lose >= 2 else set()) | \
        ({"domain"} if campaign.domains else set()) | \
        ({stencil.Point.CHECKPOINT_FILE.label} if campaign.files() else set())
    spawn = (stencil.Point.RECOVERY_SPAWN.label,) if campaign.degrade else ()
    return (*phases(), *(p for p in correlated_phases() if p in wanted), *spawn)


def default_methods() -> tuple[str, ...]:
    """The methods a campaign draws from unless told: the four that differ most in how they move ranks."""
    m = core.Method
    return tuple(method.label for method in (m.HYBRID, m.ROUTED, m.SLIDE1D, m.SIMPLE))


# Each application's layout unless told: (grid, spares). heat2d's is 2D, as it needs, and a mesh, as its
# field: a 3x3 rank grid of uneven tiles and the spare line x:1 (12 nodes, as jacobi3d's).
DEFAULT_LAYOUTS = {"jacobi3d": ("torus:3x2x2", "x:1"), "heat2d": ("mesh:4x3", "x:1")}
MAX_LOAD = 64  # busy processes beside the runs, at most
DEFAULT_FILE_EVERY = 4  # the runtime's file level interval unless told (sliding.h: sliding_file_every)


@dataclass
class Campaign:
    """A campaign's parameters; ``check()`` validates them. The methods default to
    ``default_methods()``, the phases to all of ``phases()``; the grid and spares are jacobi3d's
    (DEFAULT_LAYOUTS gives heat2d's)."""

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
    app: str = "jacobi3d"      # the example application (stencil.APPS)
    load: int = 0              # busy processes beside the runs (busy)
    redundancy: str | None = None   # the runtime's policy: buddy (None: its default), parity:G, rs:G,M
    domains: str | None = None      # failure domains, a box of the node grid (2x2x1); None: each node its own
    file_level: bool = False        # a fresh checkpoint directory per run (in checkpoint_dir if given)
    checkpoint_dir: str | None = None  # where the runs' directories go (implies the file level)
    file_every: int | None = None   # every Nth committed checkpoint to files (None: the runtime's 4)
    degrade: bool = False           # out of spares, run on with two blocks on a node (--on-no-spare degrade)

    def nodes_as(self) -> stencil.NodeOptions:
        """How the campaign's processes form nodes (checked: FtslideError for a bad K or block)."""
        return stencil.node_options(self.grid, self.spares, self.ranks_per_node, self.block,
                                    emulate=not self.whole_nodes)

    def files(self) -> bool:
        """Whether the runs write a file level."""
        return self.file_level or self.checkpoint_dir is not None

    def checkpoints_as(self) -> stencil.CheckpointOptions:
        """The runtime's checkpoint options of every run, without a directory (each run gets its own;
        checked: FtslideError for a bad policy, domain box, placement or interval)."""
        return stencil.checkpoint_options(self.grid, self.spares, self.redundancy, self.domains,
                                          file_every=self.file_every, nodes_as=self.nodes_as(),
                                          degrade=self.degrade)

    def protection(self) -> "Protection":
        """What the judge needs to know of the campaign's checkpoints."""
        layout = make_layout(self.grid, self.spares)
        domains = core.block_domains(layout, self.domains)[0] if self.domains else None
        return Protection(core.parse_redundancy(self.redundancy or "buddy"), domains, self.files(),
                          self.checkpoint_every, self.degrade)


@dataclass(frozen=True)
class Protection:
    """How a run's checkpoints survive failures: the redundancy ``policy``, the failure domain of
    each grid node (``domains``; None: every node its own), whether a file level is written, and the
    checkpoint interval (a failure before the first checkpoint loses nothing)."""

    policy: core.Redundancy = core.Redundancy("buddy", 2, 1)
    domains: Sequence[int] | None = None
    file_level: bool = False
    checkpoint_every: int = 5
    degrade: bool = False  # out of spares, the runtime runs on (guests) instead of ending


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
    outcome: str = ""  # recovered | out-of-spares | data-lost | missed | hang | wrong-checksum | error
    # (wrong-checksum: a wrong result, another checksum than the failure-free run's or heat2d's valid=no)
    ok: bool = False
    detail: str = ""
    recoveries: int = 0
    recovery_ms: list[float] = field(default_factory=list)  # total time of each recovery
    daemons_lost: int = 0  # whole-node runs: nodes whose daemon mpirun reported lost
    # whether the policy promised survival of the kills that landed: no rank's checkpoint lost in memory
    # (memory_loss), or a file checkpoint to roll back to; None where the judge could not tell (a hang)
    promised: bool | None = None
    manifest: int | None = None        # the version the run's file level names after it (None: none)
    rolled_back_to: int | None = None  # the iteration a recovery resumed from a file checkpoint
    guests: int = 0  # out of spares and degraded: guests running after the last recovery
    leftovers: list[str] = field(default_factory=list)
    stacks: str = ""
    stderr_tail: str = ""  # the last lines mpirun printed, for runs that are not as they should be
    seconds: float = 0.0


def check(campaign: Campaign) -> None:
    """Raise FtslideError for a campaign that cannot run, before anything starts."""
    if campaign.runs < 1:
        raise FtslideError(f"--runs must be at least 1, not {campaign.runs}")
    if isinstance(campaign.load, bool) or not isinstance(campaign.load, int) or not 0 <= campaign.load <= MAX_LOAD:
        raise FtslideError(f"--load must be a count of busy processes from 0 to {MAX_LOAD}, not {campaign.load!r}")
    stencil.check_app(campaign.app, campaign.lang, campaign.grid)  # heat2d: a 2D grid only
    if not campaign.timeout > 0:
        raise FtslideError(f"--timeout must be a positive number of seconds, not {campaign.timeout:g}")
    if campaign.iterations < 2 * campaign.checkpoint_every + 2:
        raise FtslideError(f"--iterations {campaign.iterations} is too short: at least two checkpoints "
                           f"(every {campaign.checkpoint_every}) and room after them are needed")
    unknown = [p for p in campaign.phases if p not in all_phases()]
    if unknown or not campaign.phases:
        raise FtslideError(f"unknown phase {', '.join(map(repr, unknown)) or '(none)'}: choose from "
                           f"{', '.join(all_phases())}")
    campaign.checkpoints_as()  # the policy, domains and interval, as the runtime will check them
    if campaign.checkpoint_dir is not None:
        folder = Path(campaign.checkpoint_dir)
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise FtslideError(f"--checkpoint-dir {folder}: not a writable folder (each run writes a directory "
                               "of its own inside it): create it or choose another")
    if campaign.file_every is not None and not campaign.files():
        raise FtslideError(f"--file-every {campaign.file_every} sets the file level's interval: give --file-level "
                           "or --checkpoint-dir DIR too")
    if stencil.Point.RECOVERY_SPAWN.label in campaign.phases and not campaign.degrade:
        raise FtslideError("the phase recovery_spawn kills a node while guests start: give --on-no-spare degrade")
    if "domain" in campaign.phases and not campaign.domains:
        raise FtslideError("the phase domain kills a whole failure domain: give --domains AxB[xC]")
    files = stencil.Point.CHECKPOINT_FILE.label
    if files in campaign.phases:
        if not campaign.files():
            raise FtslideError(f"the phase {files} kills a node writing the file level: give --file-level or "
                               "--checkpoint-dir DIR")
        every = campaign.file_every or DEFAULT_FILE_EVERY
        if every * campaign.checkpoint_every >= campaign.iterations:
            raise FtslideError(f"the phase {files} needs a checkpoint written to files: with --file-every {every} "
                               f"the first is at iteration {every * campaign.checkpoint_every}, give more "
                               f"--iterations than {campaign.iterations} or a smaller --file-every")
    for method in campaign.methods:
        stencil.node_count(campaign.grid, campaign.spares, method)  # one-line errors for bad input
    nodes_as = campaign.nodes_as()
    if campaign.app == "heat2d":  # heat2d refuses a grid smaller than its rank grid (exit 2): say it first
        layout = make_layout(campaign.grid, campaign.spares)
        ranks = [n * b for n, b in zip(layout.logical, make_block(layout, nodes_as.ranks_per_node, campaign.block))]
        size = stencil.default_size(campaign.app)
        if any(r > s for r, s in zip(ranks, size)):
            raise FtslideError(f"heat2d's {' x '.join(map(str, size))} grid of points cannot be split over a "
                               f"{' x '.join(map(str, ranks))} rank grid: choose a smaller grid or block")
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
    if phase in correlated_phases():
        # past the first checkpoint, so that there is a checkpoint to lose (the same draws otherwise)
        iteration = max(iteration, min(campaign.checkpoint_every, last))
        kills = correlated_kills(campaign, phase, method, rng, layout, first, iteration, spared)
    elif phase == "simultaneous":
        # either may be recovered first and the other go back to its iteration: it must keep its rank
        pair = [w for w in workers if w != first and holds_rank(layout, method, w, [first])
                and holds_rank(layout, method, first, [w])]
        if pair:
            kills.append((rng.choice(pair), stencil.iteration_point(iteration)))
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
    elif phase in ("exhaust", point.RECOVERY_SPAWN.label):
        diameter = halo_diameter(layout, make_block(layout, campaign.ranks_per_node, campaign.block),
                                 stencil.HALOS_WRAP[campaign.app])
        protection = campaign.protection()
        kills = exhaust_kills(layout, method, rng, first, [n for n in range(layout.nodes) if n not in spared],
                              last, campaign.checkpoint_every, diameter,
                              lost=lambda mapping, nodes: lost_in_memory(layout, mapping, protection, nodes))
        if phase == point.RECOVERY_SPAWN.label and core.degrade_map(layout, method, [n for n, _ in kills]).hosts:
            # the failures end in a degraded recovery that starts guests: one more node dies then, not
            # the last one alive (guests need a host, and a run without survivors proves nothing)
            alive = [n for n in range(layout.nodes) if n not in dict(kills)]
            bystanders = [n for n in alive if n not in spared]
            if bystanders and len(alive) > 1:
                kills.append((rng.choice(bystanders), phase))
    elif phase in stencil.runtime_points():  # a step of the recovery that the first kill starts
        # the steps after the map only come when the method places the first failure
        before_map = (point.RECOVERY_START.label, point.RECOVERY_AGREE.label, point.RECOVERY_MAP.label)
        if phase in before_map or absorbable(layout, method, [first]):
            kills.append((rng.choice(others), phase))
    return phase, method, kills


def correlated_kills(campaign: Campaign, phase: str, method: str, rng: random.Random, layout, first: int,
                     iteration: int, spared: set[int]) -> list[tuple[int, str]]:
    """The kills of a correlated phase (the module's docstring) whose first victim is worker ``first``
    at the start of ``iteration``; nodes of ``spared`` never die."""
    point = stencil.Point
    at_iteration = (first, stencil.iteration_point(iteration))
    protection = campaign.protection()
    initial = layout.initial_map()
    partners = [n for n in partners_of(layout, initial, protection, first) if n not in spared]
    if phase == point.CHECKPOINT_FILE.label:
        return [(first, phase)]
    if phase == "partners":
        if not partners:
            return [at_iteration]
        partner = rng.choice(partners)
        together = holds_rank(layout, method, partner, [first]) and holds_rank(layout, method, first, [partner])
        same = together and rng.random() < 0.5
        return [at_iteration, (partner, at_iteration[1] if same else point.RECOVERY_START.label)]
    if phase == "overrun":
        others = rng.sample(partners, min(len(partners), protection.policy.lose))
        return [at_iteration, *((node, point.RECOVERY_START.label) for node in sorted(others))]
    if phase == "domain":
        box = protection.domains[first] if protection.domains is not None else -1
        others = [n for n in range(layout.nodes) if n != first and n not in spared
                  and protection.domains is not None and protection.domains[n] == box]
        return [at_iteration, *((node, point.RECOVERY_START.label) for node in others)]
    # same_recovery: the second victim at a step of the recovery the first starts (after the map only
    # where the method places the first failure: the steps after it come only then)
    # inside the second checkpoint (the first committed, its copies there to lose), or at an iteration
    start = at_iteration if rng.random() < 0.5 else (first, f"{point.CHECKPOINT.label}#2")
    others = [n for n in range(layout.nodes) if n != first and n not in spared]
    second = rng.choice(partners if partners and rng.random() < 0.5 else others)
    steps = [point.RECOVERY_AGREE.label] + ([point.RECOVERY_STATE.label] if absorbable(layout, method, [first]) else [])
    return [start, (second, rng.choice(steps))]


# exhaust_kills' limits: kills in one stage (whose orders it follows, 4! at most), orders of the failures
# so far it follows (drawn where there are more), and maps it computes for one plan.
STAGE_MAX = 4
ORDERS = 16
MAP_BUDGET = 1000


def halo_diameter(layout, block: Sequence[int], wrap: bool = True) -> int:
    """The most halo exchanges between two processes of the stencil: the diameter of the process grid
    (the logical rank grid times the block of a node), periodic on a torus if the application's halos
    ``wrap`` around it (heat2d's do not: stencil.HALOS_WRAP). A process at that many
    hops from a process that died at the start of iteration K cannot start iteration K + diameter
    before a recovery (each iteration needs every neighbour's halo of that iteration)."""
    sizes = [ranks * width for ranks, width in zip(layout.logical, block)]
    return sum(size // 2 if layout.grid.periodic and wrap else size - 1 for size in sizes)


def exhaust_kills(layout, method: str, rng: random.Random, first: int, nodes: Sequence[int], last: int,
                  every: int, diameter: int,
                  lost: Callable[[Sequence[int], Sequence[int]], bool] | None = None) -> list[tuple[int, str]]:
    """The kills of the ``exhaust`` phase: nodes of ``nodes`` holding a rank die at the start of
    iterations 1..last, ``first`` first, initial workers before promoted spares, until one more
    failure than the spares (or the first failure the method may not place) has been planned.

    Every kill must land, whatever the timing of the run, so the kills come in stages that the run
    takes one after the other: a stage's iteration is at least ``diameter`` iterations
    (halo_diameter) after the previous one's, or past the checkpoint after it (nobody passes a
    checkpoint while a failure is unrecovered), so the previous stage's failures are recovered before
    it comes. A stage has one kill while the stages that fit in 1..last suffice, up to STAGE_MAX
    otherwise. The nodes of one stage die at the same iteration and may be agreed in any order, in one
    recovery or several: the plan follows every order the failures may be agreed in (up to ORDERS of
    them, drawn where there are more) and takes a victim only where, in each order, every node of its
    stage holds a rank until it dies (a node without a rank waits and never reaches its iteration) and
    no two of them hold buddy ranks (the run would end with a checkpoint lost). A failure that some
    order cannot place ends the run, so it is the last kill, in a stage of its own. Where the stages
    cannot take enough failures (many spares, few iterations) or following the orders would take more
    than MAP_BUDGET maps, the plan stops short of the spares and the run may recover. ``lost(mapping,
    nodes)`` says whether the death of ``nodes`` together loses a checkpoint under ``mapping``
    (default buddies_among: buddy copies without domains).
    Cost: compute_map once per distinct order of failures, at most MAP_BUDGET times; once per kill
    where every stage has one."""
    maps: dict[tuple[int, ...], list[int] | None] = {}

    def map_after(failed: tuple[int, ...]) -> list[int] | None:
        if failed not in maps:
            try:
                maps[failed] = compute_map(layout, method, list(failed))
            except SlideError:
                maps[failed] = None
        return maps[failed]

    def after(iteration: int) -> int:  # the first iteration the run reaches only after recovering
        return min(iteration + max(diameter, 1), (iteration // every + 1) * every)

    def stages_from(iteration: int) -> int:  # how many stages fit from this iteration on
        count = 0
        while iteration <= last:
            count, iteration = count + 1, after(iteration)
        return count

    initial = set(layout.initial_map())
    wanted = layout.nodes - len(initial) + 1
    orders: list[tuple[int, ...]] = [()]  # the orders the failures of the stages so far may be agreed in
    kills: list[tuple[int, str]] = []
    lowest = 1
    while lowest <= last and len(kills) < wanted:
        stages_left = stages_from(lowest)
        # a stage's iteration: any that leaves room for the stages still wanted after it
        room = [k for k in range(lowest, last + 1) if stages_from(k) >= min(stages_left, wanted - len(kills))]
        iteration = rng.choice(room)
        # spread the failures over the stages left, keeping one stage for the last kill
        here = stages_from(iteration)
        size = 1 if here == 1 else min(STAGE_MAX, max(1, -(-(wanted - len(kills) - 1) // (here - 1))))
        dead = {node for node, _point in kills}
        stage: list[int] = []
        final = False
        tried: set[int] = set()
        while len(stage) < size and not final and len(maps) < MAP_BUDGET:
            pool = [n for n in nodes if n not in dead and n not in stage and n not in tried
                    and all(map_after(order) is not None and n in map_after(order) for order in orders)]
            pool = [n for n in pool if n in initial] or pool  # workers first
            if not pool:
                break
            victim = first if not kills and not stage and first in pool else rng.choice(pool)
            tried.add(victim)
            verdict = stage_check(map_after, orders, [*stage, victim], lost)
            if verdict == "ends" and stage:
                break  # the failure that may end the run gets a stage of its own
            if verdict == "misses":
                continue
            final = verdict == "ends"
            stage.append(victim)
        kills += [(node, stencil.iteration_point(iteration)) for node in stage]
        if final or not stage:
            break
        orders = [order + perm for order in orders for perm in stage_orders(stage)]
        orders = rng.sample(orders, ORDERS) if len(orders) > ORDERS else orders
        lowest = after(iteration)
    return kills


def stage_orders(stage: Sequence[int]) -> list[tuple[int, ...]]:
    """The orders one stage's failures may be agreed in: all of them (a stage has STAGE_MAX at most)."""
    return list(itertools.permutations(stage))


def stage_check(map_after: Callable[[tuple[int, ...]], list[int] | None], orders: Sequence[tuple[int, ...]],
                stage: Sequence[int], lost: Callable[[Sequence[int], Sequence[int]], bool] | None = None) -> str:
    """Whether the nodes of ``stage``, killed at one iteration after the failures of ``orders``, all
    die there: "ok"; "misses" when, after some order and some of the stage's failures recovered first,
    a node of the stage left holds no rank or two hold buddy ranks; else "ends" when some order cannot
    place some of the stage's failures (the run may end there, out of spares). ``lost`` as
    exhaust_kills takes it (default buddies_among)."""
    lost = lost or buddies_among
    ends = False
    for order in orders:
        for perm in stage_orders(stage):
            for done in range(len(perm) + 1):
                mapping = map_after(order + perm[:done])
                if mapping is None:
                    ends = True
                    break
                left = perm[done:]
                if any(node not in mapping for node in left) or lost(mapping, left):
                    return "misses"
    return "ends" if ends else "ok"


def holds_rank(layout, method: str, node: int, failed: Sequence[int]) -> bool:
    """Whether ``node`` holds a rank under the method's map after ``failed`` (False if the method
    cannot place them)."""
    try:
        return node in compute_map(layout, method, list(failed))
    except SlideError:
        return False


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
    return buddies_among(mapping, landed)


def buddies_among(mapping: Sequence[int], nodes: Iterable[int]) -> bool:
    """Whether two of ``nodes`` hold buddy ranks (r and r + R/2) under ``mapping`` (rank -> node)."""
    ranks, holder = len(mapping), {node: rank for rank, node in enumerate(mapping)}
    dead = {holder[node] for node in nodes if node in holder}
    return any((rank + ranks // 2) % ranks in dead for rank in dead)


def buddy_pairing(layout, mapping: Sequence[int], domains: Sequence[int] | None) -> int:
    """The shift h of the runtime's buddy pairing under ``mapping`` (node rank r's copy on the node of
    r + h): half the node ranks, or with domains core.buddy_shift's (half again where none works, as
    sliding_checkpoint.c falls back)."""
    ranks = len(mapping)
    if domains is None or ranks < 2:
        return ranks // 2
    try:
        return core.buddy_shift(layout, list(mapping), list(domains))
    except SlideError:
        return ranks // 2


def partners_of(layout, mapping: Sequence[int], protection: Protection, node: int) -> list[int]:
    """The nodes whose death together with ``node``'s costs a rank its checkpoint under ``mapping``
    (node rank -> node) with one more failure (buddy: the node holding the copy of ``node``'s rank
    and the one whose copy it holds; erasure: the other members of its group), ascending; none if
    ``node`` holds no rank. Cost O(ranks log ranks)."""
    holder = {n: r for r, n in enumerate(mapping)}
    if node not in holder:
        return []
    rank, ranks, policy = holder[node], len(mapping), protection.policy
    if policy.kind == "buddy":
        shift = buddy_pairing(layout, mapping, protection.domains)
        return sorted({mapping[(rank + shift) % ranks], mapping[(rank - shift) % ranks]} - {node})
    try:
        found = core.groups(layout, list(mapping), protection.domains, policy.group, policy.lose)
    except SlideError:
        return []
    return sorted(mapping[r] for r in found.members(found.group_of_rank[rank]) if mapping[r] != node)


def lost_in_memory(layout, mapping: Sequence[int], protection: Protection, dead: Iterable[int]) -> bool:
    """Whether the death of the nodes ``dead`` costs some rank every copy of a checkpoint taken under
    ``mapping`` (sliding_checkpoint.c's checkpoint_lost): buddy, a node rank and its buddy both dead;
    parity:G and rs:G,M, a group (core.groups, across the domains) with more than M dead members. A
    map the groups cannot be drawn for counts as lost (the runtime commits no checkpoint under it).
    Cost O(ranks log ranks)."""
    dead = set(dead)
    ranks, policy = len(mapping), protection.policy
    if policy.kind == "buddy":
        shift = buddy_pairing(layout, mapping, protection.domains)
        return any(mapping[r] in dead and mapping[(r + shift) % ranks] in dead for r in range(ranks))
    try:
        found = core.groups(layout, list(mapping), protection.domains, policy.group, policy.lose)
    except SlideError:
        return True
    return any(sum(mapping[r] in dead for r in found.members(g)) > policy.lose for g in range(len(found.sizes)))


def checkpoint_committed(landed: dict[int, str], recoveries: Sequence[stencil.Recovery], every: int) -> bool:
    """Whether a checkpoint had been committed when the failures of ``landed`` came (before the first,
    a recovery starts from the initial values and loses nothing): a recovery resumed past iteration
    0, a node died at the start of an iteration at or past the first checkpoint's (``every``), or
    one died inside a checkpoint after the first (``checkpoint#2``) or taking a committed copy to the
    file level."""
    if any(r.resume_iteration > 0 for r in recoveries):
        return True
    for point in landed.values():
        name, _, rest = point.partition("#")[0].partition("=")
        if name == stencil.Point.ITER.label and rest.isdigit() and int(rest) >= every:
            return True
        if name == stencil.Point.CHECKPOINT_FILE.label:
            return True
        occurrence = point.partition("#")[2]
        if name == stencil.Point.CHECKPOINT.label and occurrence.isdigit() and int(occurrence) >= 2:
            return True
    return False


def memory_loss(layout, method: str, protection: Protection, recoveries: Sequence[stencil.Recovery],
                landed: dict[int, str]) -> int | None:
    """Which recovery found a checkpoint lost in memory (``lost_in_memory``): the index in
    ``recoveries`` of the one that resumed from the file level, ``len(recoveries)`` for the failures
    after the last recovery that printed its line (the run's end: recovered, or the checkpoint-lost
    error), None if none. Each recovery's checkpoint was taken under the map after the failures the
    recovery before agreed (a recovery commits the redundancy under its new map), and every node that
    died since counts. Cost: a map and the groups per recovery."""
    if not checkpoint_committed(landed, recoveries, protection.checkpoint_every):
        return None
    agreed: list[int] = []
    for index, recovery in enumerate([*recoveries, None]):
        try:
            mapping = core.degrade_map(layout, method, agreed).mapping if protection.degrade else \
                compute_map(layout, method, agreed)
        except SlideError:
            return None
        dead = set(recovery.failed) if recovery is not None else set(landed) | set(agreed)
        if lost_in_memory(layout, mapping, protection, dead):
            return index
        if recovery is not None:
            agreed = recovery.failed
    return None


def manifest_version(directory: Path | None) -> int | None:
    """The version a file level's manifest names (sliding_file.h), None without one."""
    try:
        text = (Path(directory) / "manifest").read_text() if directory is not None else ""
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "version" and value.strip().isdigit():
            return int(value)
    return None


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


# Seconds a runtime file nobody claims is given before it counts as a leftover: another launch on this
# machine creates its folder before its mpirun starts and names it (mpi.launch_scratch), and removes it
# only after its mpirun ended and its processes were swept (mpi.kill_processes scans /proc: a second or
# more on a loaded machine).
LEFTOVER_GRACE = 5.0


def leftovers(before: set[str], marker: str) -> list[str]:
    """What one run left behind: its processes still alive, and runtime files that appeared during it
    and that no live process claims, and that are still there after the scan of the processes (a
    launch running beside the campaign may end, and remove its files, during the scan), and again
    LEFTOVER_GRACE seconds later (a launch beside it may have created its folder and not yet started
    the mpirun that names it, or have ended and not yet removed it: 4 such folders of other launches
    were called leftovers in 60 runs on a cluster while other suites ran). Cost: a scan of /proc, two
    and a wait where a file looks left behind."""
    found = [f"process {pid}" for pid in mpi.processes_with(marker)]
    new = runtime_files() - before
    suspects = {path for path in new - in_use(new) if Path(path).exists()}
    if suspects:
        time.sleep(LEFTOVER_GRACE)
        suspects = {path for path in suspects - in_use(suspects) if Path(path).exists()}
    return found + sorted(suspects)


def unplanned_kills(planned: Sequence[tuple[int, str]], landed: dict[int, str]) -> list[str]:
    """The kills of ``landed`` that ``planned`` does not name, in words."""
    named = dict(planned)
    return [f"node {node} at {point}" + (f" (planned at {named[node]})" if node in named else "")
            for node, point in sorted(landed.items()) if named.get(node) != point]


def missed_kills(planned: Sequence[tuple[int, str]], landed: dict[int, str]) -> list[str]:
    """The kills of ``planned`` that did not land, in words."""
    return [f"node {node} at {point}" for node, point in planned if node not in landed]


def judge(record: RunRecord, run: stencil.StencilRun, reference: str, layout, method: str,
          whole_nodes: bool = False, protection: Protection | None = None) -> None:
    """Fill ``record``'s outcome from ``run``: recovered with the failure-free ``reference`` checksum
    (and not refused by the program's own check, ``run.valid``) and exactly the dead agreed, or out
    of spares exactly when ``method`` cannot absorb the failures that landed, or data lost exactly
    when the ``protection``'s policy could not rebuild a checkpoint from memory (default: two buddies
    died) and no file checkpoint existed (``record.manifest``, the run's manifest, filled by the
    caller); each of those only if every planned kill landed, else ``missed`` (the run did not have
    the failures its phase is about). A kill that was not planned, or anything else, is an error.
    Also says whether the policy promised survival (``record.promised``) and where a recovery rolled
    back to the file level (``record.rolled_back_to``). Cost: a few maps of the core."""
    judge_end(record, run, reference, layout, method, whole_nodes, protection)
    missed = missed_kills(record.kills, record.landed)
    if missed and record.ok:
        ended = {"recovered": "recovered", "out-of-spares": "ran out of spares", "data-lost": "lost a checkpoint"}
        record.outcome, record.ok, record.detail = "missed", False, (
            f"planned kills that did not land: {', '.join(missed)}; without them the run "
            f"{ended[record.outcome]}")
    elif missed:
        record.detail += f" (planned kills that did not land: {', '.join(missed)})"


def judge_end(record: RunRecord, run: stencil.StencilRun, reference: str, layout, method: str,
              whole_nodes: bool, protection: Protection | None = None) -> None:
    """``judge`` without the planned kills that did not land: how the run ended, and whether that end
    is right for the failures that landed."""
    protection = protection or Protection()
    record.landed = dict(run.killed)
    lost_at = memory_loss(layout, method, protection, run.recoveries, record.landed)
    has_files = protection.file_level and record.manifest is not None
    record.promised = lost_at is None or has_files
    if lost_at is not None and lost_at < len(run.recoveries):
        record.rolled_back_to = run.recoveries[lost_at].resume_iteration
    record.recoveries = len(run.recoveries)
    record.recovery_ms = [r.times.get("total", 0.0) for r in run.recoveries]
    record.guests = run.recoveries[-1].guests if run.recoveries else 0
    if whole_nodes:
        record.daemons_lost = run.stderr.count(LOST_DAEMON)
        if record.daemons_lost != len(record.landed):
            record.outcome = "error"
            record.detail = (f"{len(record.landed)} nodes killed, mpirun reported {record.daemons_lost} "
                             "daemons lost")
            return
    unplanned = unplanned_kills(record.kills, record.landed)
    if unplanned:
        record.outcome, record.detail = "error", f"killed without a plan: {', '.join(unplanned)}"
        return
    if run.valid is False:  # the program's own check of the field it computed failed: a wrong result
        record.outcome = "wrong-checksum"
        record.detail = (f"the program's own check of its result failed (valid=no, exit {run.returncode}; "
                         f"checksum {run.checksum}, failure-free {reference})")
        return
    if run.returncode == 0:
        # the recoveries agreed on exactly the dead: never a live node, and every node that died
        # holding a rank (a spare that died waiting is only noticed by a later recovery, if any)
        # (guests that died with their node are agreed too: not grid nodes, never killed by name)
        agreed = {n for n in run.recoveries[-1].failed if n < layout.nodes} if run.recoveries else set()
        must = {node for node, point in record.landed.items() if point != stencil.Point.WAITING.label}
        back = record.rolled_back_to
        if back is not None and protection.file_level and \
                (back < protection.checkpoint_every or back % protection.checkpoint_every):
            record.outcome = "error"  # a rollback resumes from a file checkpoint, a checkpoint's iteration
            record.detail = (f"a checkpoint was lost in memory and the run resumed at iteration {back}, "
                             "which no file checkpoint holds")
        elif run.checksum == reference and must <= agreed <= set(record.landed):
            record.outcome, record.ok = "recovered", True
            if lost_at is not None and not protection.file_level:
                record.detail = (f"recovered although {protection.policy} lost a checkpoint in memory and "
                                 "no file level was written")
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
        record.ok = not absorbable(layout, method, order) and not protection.degrade
        if protection.degrade:
            record.detail = "out of spares although the runtime was to run on degraded"
        elif not record.ok:
            record.detail = f"out of spares, but {method} places failures {order}"
        return
    if run.errors and all(e.status is status.ERR_DATA_LOST for e in run.errors):  # every copy gone
        record.outcome = "data-lost"
        record.ok = lost_at is not None and not has_files
        if lost_at is None and protection.policy.kind == "buddy" and protection.domains is None:
            record.detail = "checkpoint lost, but no rank lost both its node and its buddy's"
        elif lost_at is None:
            record.detail = f"checkpoint lost, but {protection.policy} rebuilds the failures that landed from memory"
        elif has_files:
            record.detail = (f"checkpoint lost, but the file level had a checkpoint (manifest version "
                             f"{record.manifest}) to roll back to")
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
    (mpi.run): for ``whole_nodes``, what runs the job across the emulated cluster. The campaign's
    ``load`` busy processes run from the failure-free run to the last."""
    check(campaign)
    program = stencil.build(prefix, campaign.lang, campaign.app)
    with busy(campaign.load):
        return _run_all(campaign, prefix, program, progress, wrap, env)


@contextmanager
def run_directory(campaign: Campaign) -> Iterator[Path | None]:
    """A fresh, empty checkpoint directory for one run of a campaign with a file level (None
    without): in ``campaign.checkpoint_dir`` if given, else in the temporary folder; removed with
    everything in it when the block ends, however it ends."""
    if not campaign.files():
        yield None
        return
    path = Path(tempfile.mkdtemp(prefix="ftslide-checkpoints-", dir=campaign.checkpoint_dir))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _run_all(campaign: Campaign, prefix: Path, program: list[str], progress: Callable[[RunRecord], None] | None,
             wrap: Callable[[list[str]], list[str]] | None,
             env: dict[str, str] | None) -> tuple[str, list[RunRecord]]:
    """run_campaign's runs, the failure-free one first."""
    layout = make_layout(campaign.grid, campaign.spares)
    nodes_as = campaign.nodes_as()
    checkpoints = campaign.checkpoints_as()
    protection = campaign.protection()
    launch_env = {**(env or {}), **({"FTSLIDE_KILL_NODE": "1"} if campaign.whole_nodes else {})}
    options = CLUSTER_MPIRUN_OPTIONS if campaign.whole_nodes else ()
    with run_directory(campaign) as directory:  # the failure-free run writes its file level too
        base = stencil.run(prefix, campaign.grid, campaign.spares, campaign.methods[0], (),
                           iterations=campaign.iterations, checkpoint_every=campaign.checkpoint_every,
                           timeout=campaign.timeout, program=program, env=launch_env, wrap=wrap,
                           mpirun_options=options, nodes_as=nodes_as, app=campaign.app,
                           checkpoints=checkpoints.with_directory(directory))
    if base.returncode != 0 or not base.checksum or base.valid is False:
        raise FtslideError(f"the failure-free run failed (exit {base.returncode}): "
                           f"{(base.stderr.strip().splitlines() or ['no output'])[-1]}")
    records = []
    for index in range(campaign.runs):
        phase, method, kills = plan(campaign, index)
        record = RunRecord(index + 1, phase, method, kills)
        before = runtime_files()
        marker = f"FTSLIDE_FAULTS_RUN={campaign.seed}.{index}.{os.getpid()}"
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="ftslide-faults-") as folder, \
                run_directory(campaign) as directory:
            kill_log = Path(folder) / "kills"
            run_env = {**launch_env, "FTSLIDE_KILL_LOG": str(kill_log), **dict([marker.split("=", 1)])}
            try:
                run = stencil.run(prefix, campaign.grid, campaign.spares, method, kills,
                                  iterations=campaign.iterations, checkpoint_every=campaign.checkpoint_every,
                                  timeout=campaign.timeout, program=program, stacks_on_timeout=True,
                                  env=run_env, wrap=wrap, mpirun_options=options, nodes_as=nodes_as,
                                  app=campaign.app, checkpoints=checkpoints.with_directory(directory))
                run.killed.update(killed_in(kill_log))
                record.manifest = manifest_version(directory)
                judge(record, run, base.checksum, layout, method, campaign.whole_nodes, protection)
                if not record.ok:
                    record.stderr_tail = "\n".join(run.stderr.splitlines()[-40:])
            except mpi.MpirunTimeout as exc:
                record.manifest = manifest_version(directory)
                record.outcome, record.stacks = "hang", exc.stacks
                record.stderr_tail = "\n".join(exc.stderr.splitlines()[-40:])
                record.landed = {**stencil.parse(-1, exc.stdout, exc.stderr).killed, **killed_in(kill_log)}
                record.detail = f"no end within {campaign.timeout:g} s"
                missed = missed_kills(record.kills, record.landed)
                record.detail += f" (planned kills that had not landed: {', '.join(missed)})" if missed else ""
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
        # runs that lost a checkpoint where the policy promised survival (the judge calls each wrong)
        "data_lost_promised": sum(r.outcome == "data-lost" and bool(r.promised) for r in records),
        "promised": sum(bool(r.promised) for r in records),
        "rolled_back": sum(r.rolled_back_to is not None for r in records),
        # runs that ran out of spares and finished degraded (guests: two blocks on a node)
        "degraded": sum(r.outcome == "recovered" and r.guests > 0 for r in records),
        "missed": sum(r.outcome == "missed" for r in records),
        "hangs": sum(r.outcome == "hang" for r in records),
        "wrong_checksums": sum(r.outcome == "wrong-checksum" for r in records),
        "errors": sum(r.outcome == "error" for r in records),
        "leftovers": sum(bool(r.leftovers) for r in records),
        # a planned kill does not land when the run never reaches its point (plan draws only points
        # a run reaches; a run where one did not land is "missed")
        "kills_planned": sum(len(r.kills) for r in records),
        "kills_landed": sum(r.landed.get(node) == point for r in records for node, point in r.kills),
        "phases": phases,
    }


def as_json(campaign: Campaign, reference: str, records: Sequence[RunRecord]) -> dict[str, object]:
    """The campaign (its application also on top), its failure-free checksum, the summary and every
    run, as JSON-ready data."""
    return {"app": campaign.app, "campaign": asdict(campaign), "reference_checksum": reference,
            "summary": summary(records),
            "runs": [asdict(r) for r in records]}
