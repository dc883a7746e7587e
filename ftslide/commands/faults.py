"""ftslide faults: a seeded fault-injection campaign over the sliding runtime's phases."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
from pathlib import Path

from ..toolchain import features
from ..toolchain.ompi import MPI_OPTION_HELP, require_prefix
from ..errors import FtslideError
from ..jobmgr import cluster as netcluster
from ..sliding import faults
from ..sliding import runtime as stencil
from ..ui.output import write_text
from ..ui.progress import Bar
from ..ui.table import print_table
from . import add_block_options

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "faults"
HELP = ("run a seeded fault-injection campaign: an example application of the sliding runtime (the Jacobi "
        "stencil jacobi3d, or the 2D heat stencil heat2d, --app) with SIGKILLs at every phase "
        "(iterations, checkpoints, each step of a recovery, a spare's promotion, more failures than "
        "spares) and correlated kills (a node with its redundancy partners, a whole failure domain, two "
        "nodes in one recovery, a node writing the file level) under a chosen redundancy policy; reports "
        "per run where the kills landed (a run where a planned kill did not is "
        "'missed'), whether it recovered with the failure-free checksum (and heat2d's own check), hangs "
        "(with stacks) and leftovers")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = faults.Campaign  # the class: its plain defaults, without reading the core's names
    parser.add_argument("--runs", type=int, default=defaults.runs, help=f"runs (default {defaults.runs})")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--app", choices=stencil.APPS, default=defaults.app,
                        help=f"the application: jacobi3d (3D or 2D grids) or heat2d (2D grids only, its field not "
                        f"periodic even on a torus; C and Fortran) (default {defaults.app})")
    layouts = "; ".join(f"{app} {grid}" for app, (grid, _spares) in faults.DEFAULT_LAYOUTS.items())
    parser.add_argument("--grid", help=f"node grid with spares (default {layouts})")
    parser.add_argument("--spares", help="spare layout (default " +
                        "; ".join(f"{app} {spares}" for app, (_grid, spares) in faults.DEFAULT_LAYOUTS.items()) + ")")
    parser.add_argument("--method", help="comma-separated methods drawn per run, any but shrink "
                        "(default hybrid,routed,slide1d,simple)")
    parser.add_argument("--phases", default="all",
                        help="comma-separated phases run in turn: iteration, simultaneous, each kill point "
                        "of the runtime (checkpoint, waiting, the steps of a recovery, promoted), exhaust, "
                        "then the correlated ones: partners (a node and its buddy, or another member of its "
                        "group, at once), overrun (M+1 members of one group), domain (every node of a failure "
                        "domain; needs --domains), same_recovery (a second node dies at recovery_agree or "
                        "recovery_state), checkpoint_file (a node writing the file level; needs --file-level); "
                        "default all: every phase that applies (overrun only where M >= 2) (docs/testing.md)")
    parser.add_argument("--iterations", type=int, default=defaults.iterations)
    parser.add_argument("--timeout", type=float, default=defaults.timeout,
                        help=f"seconds per run before it counts as a hang (default {defaults.timeout:g})")
    add_block_options(parser, "processes per node (default 1): every node runs a block of K ranks and every "
                      "kill takes all K processes of its node at once",
                      default=defaults.ranks_per_node)
    parser.add_argument("--cluster", action="store_true",
                        help="run across an emulated cluster (one network namespace per node, created for the "
                        "campaign and removed after it; root) where every kill takes a whole node, its PRRTE "
                        "daemon with it, the daemons routing along a chain so that lost nodes relay; node 0 "
                        "runs mpirun and is spared")
    parser.add_argument("--lang", choices=stencil.LANGUAGES, default=defaults.lang,
                        help="the application's language: APP.c, .f90 (the Fortran module) or .py (numpy, mpi4py; "
                        f"jacobi3d only) (default {defaults.lang})")
    parser.add_argument("--load", type=int, default=defaults.load, metavar="N",
                        help=f"N busy processes (CPU spinners) beside the runs, 0 to {faults.MAX_LOAD} "
                        f"(default {defaults.load})")
    parser.add_argument("--redundancy", metavar="POLICY",
                        help="how the runtime keeps each checkpoint alive: buddy (a copy on another node), "
                        "parity:G (groups of G nodes, any one may die) or rs:G,M (any M of a group may die) "
                        "(default: the runtime's, buddy); the judge holds each run to what the policy promises")
    parser.add_argument("--domains", metavar="AxB[xC]",
                        help="failure domains: boxes of that shape in the node grid; buddies and groups are "
                        "drawn across them (default: every node its own domain)")
    parser.add_argument("--file-level", action="store_true",
                        help="write the runtime's file level: each run gets a fresh, empty checkpoint "
                        "directory (removed after it), so that a recovery that cannot rebuild a checkpoint in "
                        "memory rolls back to the newest file checkpoint")
    parser.add_argument("--checkpoint-dir", metavar="DIR",
                        help="with the file level (implies --file-level): create each run's checkpoint "
                        "directory inside DIR, an existing writable folder (e.g. on a shared file system), "
                        "instead of the temporary folder")
    parser.add_argument("--file-every", type=int, metavar="N",
                        help="with the file level: every Nth committed checkpoint goes to files (default: the "
                        f"runtime's, {faults.DEFAULT_FILE_EVERY})")
    parser.add_argument("--on-no-spare", choices=("fail", "degrade"), default="fail",
                        help="when the failures exceed the spares: fail (the default: the run ends with "
                        "ERR_NO_SPARE, judged right) or degrade (the runtime starts guests, two blocks on a live "
                        "node, and the run must end with the failure-free checksum)")
    parser.add_argument("--mpi", metavar="PREFIX", help=MPI_OPTION_HELP)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--out", metavar="FILE",
                        help="also write the JSON report (with the stacks of hung runs) to FILE")


def campaign_from_args(args: argparse.Namespace) -> faults.Campaign:
    methods = tuple(m.strip() for m in args.method.split(",") if m.strip()) if args.method is not None else \
        faults.default_methods()
    phases = tuple(p.strip() for p in args.phases.split(",") if p.strip())
    grid, spares = faults.DEFAULT_LAYOUTS[args.app]
    campaign = faults.Campaign(grid=args.grid or grid, spares=args.spares or spares, methods=methods,
                               phases=phases, runs=args.runs, seed=args.seed, iterations=args.iterations,
                               timeout=args.timeout, whole_nodes=args.cluster, ranks_per_node=args.ranks_per_node,
                               block=args.block, lang=args.lang, app=args.app, load=args.load,
                               redundancy=args.redundancy, domains=args.domains, file_level=args.file_level,
                               checkpoint_dir=args.checkpoint_dir, file_every=args.file_every,
                               degrade=args.on_no_spare == "degrade")
    if args.phases.strip() == "all":
        faults.check(dataclasses.replace(campaign, phases=faults.phases()))  # the policy's one-line errors first
        campaign = dataclasses.replace(campaign, phases=faults.phases_for(campaign))
    return campaign


def kills_text(kills) -> str:
    return " ".join(f"{node}@{point}" for node, point in kills)


def run(args: argparse.Namespace) -> int:
    campaign = campaign_from_args(args)
    faults.check(campaign)
    out = Path(args.out) if args.out else None
    if out is not None and not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise FtslideError(f"--out {out}: folder '{out.parent}' does not exist")
    prefix = require_prefix(args.mpi)
    features.for_runs(prefix, "ftslide faults", lang=campaign.lang, whole_nodes=campaign.whole_nodes)
    bar = Bar(campaign.runs, "faults", sys.stderr)
    if campaign.whole_nodes:
        nodes = stencil.node_count(campaign.grid, campaign.spares, campaign.methods[0])
        cluster = netcluster.up(f"ftf{os.getpid() % 100000}", nodes=nodes, slots=campaign.ranks_per_node)
        try:
            reference, records = faults.run_campaign(campaign, prefix, progress=lambda _r: bar.step(),
                                                     wrap=functools.partial(netcluster.job_argv, cluster),
                                                     env=netcluster.launch_environment())
        finally:
            netcluster.down(cluster.name)
        left = sorted(ns for ns in netcluster.existing_namespaces() if ns.startswith(f"{cluster.name}-"))
        if left:
            raise FtslideError(f"namespaces left behind by the campaign's cluster: {', '.join(left)}")
    else:
        reference, records = faults.run_campaign(campaign, prefix, progress=lambda _r: bar.step())
    report = faults.as_json(campaign, reference, records)
    if out is not None:
        write_text(out, json.dumps(report, indent=1) + "\n")
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        per_node = "" if campaign.ranks_per_node == 1 else f", {campaign.ranks_per_node} processes per node"
        language = "" if campaign.lang == "c" else f" in {campaign.lang}"
        load = f", {campaign.load} busy processes beside" if campaign.load else ""
        policy = f", redundancy {campaign.redundancy or 'buddy'}" + \
            (f", domains {campaign.domains}" if campaign.domains else "") + \
            (f", file level every {campaign.file_every or faults.DEFAULT_FILE_EVERY}" if campaign.files() else "")
        print(f"ftslide faults: {campaign.app}{language}, {campaign.grid}, spares {campaign.spares}{per_node}{load}"
              f"{policy}, {campaign.runs} runs, seed {campaign.seed}; failure-free checksum {reference}")
        print_table(["#", "phase", "method", "kills planned", "landed", "outcome", "promised", "recoveries", "ms",
                     "s", "leftovers"],
                    [[r.index, r.phase, r.method, kills_text(r.kills), kills_text(sorted(r.landed.items())),
                      r.outcome + ("" if r.ok else " (!)") +
                      (f" (from file {r.rolled_back_to})" if r.rolled_back_to is not None else "") +
                      (f" (degraded, {r.guests} guests)" if r.guests else ""),
                      {True: "yes", False: "no", None: "-"}[r.promised], r.recoveries,
                      " ".join(f"{ms:.0f}" for ms in r.recovery_ms) or "-", r.seconds,
                      len(r.leftovers) or "-"] for r in records])
        s = report["summary"]
        print(f"\n{s['runs']} runs: {s['recovered']} recovered ({s['rolled_back']} from a file checkpoint, "
              f"{s['degraded']} degraded out of spares), "
              f"{s['out_of_spares']} out of spares, {s['data_lost']} lost a checkpoint "
              f"({s['data_lost_promised']} where the policy promised survival), "
              f"{s['missed']} missed a planned kill, "
              f"{s['hangs']} hangs, {s['wrong_checksums']} wrong checksums, {s['errors']} errors, "
              f"{s['leftovers']} with leftovers; "
              f"{s['ok']} as they should be ((!) marks the others); {s['kills_landed']} of {s['kills_planned']} "
              "planned kills landed")
        for r in records:
            if not r.ok:
                print(f"run {r.index} ({r.phase}, {r.method}, {kills_text(r.kills)}): {r.outcome}: {r.detail}"
                      + (f"; leftovers {', '.join(r.leftovers)}" if r.leftovers else ""))
    return 0 if all(r.ok for r in records) else 1
