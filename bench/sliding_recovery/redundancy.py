#!/usr/bin/env python3
"""Redundancy policies of the sliding runtime side by side: checkpoint time, recovery time, memory, file level.

    .venv/bin/python bench/sliding_recovery/redundancy.py [--quick] [--ks 1,2,4] [--repeat 3] [--bytes 2097152]
        [--checkpoint-every 10] [--checkpoints 8] [--passes 4] [--json PATH]

The program is redundancy.c beside this file (built with the prefix's mpicc against libsliding): every
process registers --bytes of state, iterates a halo-free update whose every word has a closed form (so
a recovery that restores wrong data is caught word by word), and checkpoints every --checkpoint-every
iterations (issue 38's bench).

Policy runs. For each K (processes per node, --emulate-nodes K) and policy (buddy, parity:4,
parity:8, rs:8,2), one run per repetition: --checkpoints checkpoints, then node VICTIM is SIGKILLed
(FTSLIDE_KILL=VICTIM@iter=I, half an interval after the last of them), the job recovers and runs two
more intervals. Measured per run: the median over its checkpoints before the kill (the first left
out: buffers are allocated there) of the longest time any worker spent in sliding_checkpoint (the
workers meet at a barrier first, not timed); sliding_redundancy_bytes (the largest over the workers)
x K: the redundancy memory per node; the recovery's total and state phase, the longest over the
workers (sliding_last_recovery). Every run must end valid (every word as the closed form says), with
the checksum this script computes itself, after exactly one recovery of the victim's node.

File-level runs. For each K, one launch per repetition of --file-pairs pairs of failure-free jobs of
the default policy (buddy), run one after the other in the same processes (each job creates, runs and
frees the runtime): without and with --checkpoint-dir (a fresh directory per job) at the file level's
default interval (every 4th checkpoint), the order swapped every other pair. Measured: the wall time
per iteration of each job's whole loop, checkpoints included; each pair gives a ratio with / without.

Pairing. Each repetition runs every (K, arm) once, the arms of a K back to back in an order that
rotates from one repetition to the next, so that a slow spell of the shared machine hits all of them;
ratios are taken within a repetition (policy / buddy) or a pair of jobs (with / without the file
level) and their median reported. --parts policies or --parts file measures one half only.

Grids: K = 1 and 2 on torus:5x4 with spares x:1 (16 node ranks, 4 spare nodes: 20 and 40
processes; parity:8 makes 2 groups), K = 4 on torus:5x2 with x:1 (8 node ranks, 2 spares: 40
processes; parity:8 and rs:8,2 are one group). Oversubscribed on this machine.

Targets (issue 38): parity:8's checkpoint within 1.5x of buddy's, at <= 20 % of its memory; the file
level adds <= 10 % to an iteration at the default interval.

A run that fails (exit status, timeout, invalid, wrong checksum, no or another recovery) is recorded
with its command and last lines of stderr, in the table and the JSON, and the bench goes on; the exit
status is then 1. Bad options: one line, exit 2.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from ftslide.errors import FtslideError  # noqa: E402
from ftslide.sliding import core as sc  # noqa: E402
from ftslide.sliding import runtime as stencil  # noqa: E402
from ftslide.toolchain import mpi  # noqa: E402
from ftslide.toolchain.ompi import require_prefix  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

PROGRAM = "redundancy"
SOURCE = HERE / f"{PROGRAM}.c"
POLICIES = ("buddy", "parity:4", "parity:8", "rs:8,2")
BASELINE = "buddy"
FILE_POLICY = "buddy"  # the default policy: the file level's cost on top of it
GRIDS = {1: ("torus:5x4", "x:1"), 2: ("torus:5x4", "x:1"), 4: ("torus:5x2", "x:1")}
METHOD = "hybrid"
VICTIM = 1  # a worker node on both grids
TARGET_CHECKPOINT_RATIO = 1.5  # parity:8 / buddy
TARGET_MEMORY_RATIO = 0.20
TARGET_FILE_OVERHEAD = 0.10
WORD = 8
RANK_FACTOR, INDEX_FACTOR, ITERATION_FACTOR = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
MASK = (1 << 64) - 1


def expected_checksum(ranks: int, words: int, iterations: int, passes: int) -> str:
    """The sum mod 2^64 of every word of every rank after ``iterations`` (redundancy.c's closed form,
    summed here independently of the program)."""
    n, p = iterations, passes
    total = 0
    for r in range(ranks):
        initial = words * (r << 40) + words * (words - 1) // 2  # (r << 40) ^ i == (r << 40) + i for i < 2^40
        bases = words * r * RANK_FACTOR + INDEX_FACTOR * words * (words - 1) // 2
        total += initial + n * p * bases + words * (p * ITERATION_FACTOR * n * (n - 1) // 2 + n * p * (p - 1) // 2)
    return f"0x{total & MASK:016x}"


def build(prefix: Path) -> str:
    library = stencil.build_library(prefix)
    return str(mpi.compile_program(prefix, [SOURCE], name=PROGRAM, flags=stencil.FLAGS,
                                   include_dirs=(stencil.HEADER_DIR,), link=stencil.link_flags(library)))


class RunFailed(Exception):
    """One run did not end as it must; the message says how, with the command."""


def run_once(prefix: Path, program: str, k: int, options: list[str], size: list[int], kill: str | None,
             timeout: float, env: dict[str, str] | None = None) -> tuple[dict, str]:
    """One launch; (what it printed, parsed, the command line). RunFailed unless it exited 0 with valid=yes."""
    grid, spares = GRIDS[k]
    nodes = stencil.node_count(grid, spares, METHOD)
    args = ["-np", str(nodes * k), program, "--emulate-nodes", str(k), *options, grid, spares, METHOD,
            *map(str, size)]
    env = {**(env or {}), **({"FTSLIDE_KILL": kill} if kill else {})}
    command = " ".join([*(f"{key}={value}" for key, value in env.items() if key == "FTSLIDE_KILL"), "mpirun --with-ft ulfm", *args])
    try:
        result = mpi.run(prefix, args, timeout=timeout, env=env)
    except mpi.MpirunTimeout as exc:
        raise RunFailed(f"hang: no end within {timeout:.0f} s: {command}; last stdout: "
                        f"{(exc.stdout.strip().splitlines() or ['none'])[-1]}") from None
    out: dict = {"checkpoints": [], "recoveries": [], "recovery_max": [], "memory": [], "loop": None, "done": None,
                 "all_loops": [], "all_done": []}
    for event, f in stencil.events(result.stdout, PROGRAM):
        if event == "checkpoint":
            out["checkpoints"].append((int(f["version"]), float(f["seconds"])))
            out["memory"].append((int(f["version"]), int(f["bytes_max"]), int(f["bytes_min"])))
        elif event == "recovered":
            out["recoveries"].append(f)
        elif event == "recovery_max":
            out["recovery_max"].append({key: float(value) for key, value in f.items()})
        elif event == "loop":
            out["loop"] = (int(f["iterations"]), float(f["seconds"]))
            out["all_loops"].append((f.get("arm"), int(f["iterations"]), float(f["seconds"])))
        elif event == "done":
            out["done"] = f
            out["all_done"].append(f)
    errors = [line for line in result.stderr.splitlines() if f"{PROGRAM}: error" in line]
    if result.returncode != 0 or not out["done"] or any(done.get("valid") != "yes" for done in out["all_done"]):
        last = errors[:1] or result.stderr.strip().splitlines()[-3:] or ["no output"]
        raise RunFailed(f"exit {result.returncode}, done={out['done']}: {' | '.join(last)}: {command}")
    out["killed"] = sorted(stencil.parse(result.returncode, result.stdout, result.stderr, PROGRAM).killed)
    return out, command


def policy_run(prefix: Path, program: str, k: int, policy: str, args, timeout: float) -> dict:
    """A policy run (checkpoints, a kill, a recovery): its figures, or {"error": ...}."""
    every, count = args.checkpoint_every, args.checkpoints
    kill_at = every * count + every // 2
    iterations = every * (count + 2)
    size = [args.bytes, iterations, args.passes]
    try:
        out, command = run_once(prefix, program, k, ["--checkpoint-every", str(every), "--redundancy", policy], size,
                                f"{VICTIM}@iter={kill_at}", timeout)
        want = expected_checksum(node_ranks(k) * k, args.bytes // WORD, iterations, args.passes)
        got = out["done"].get("checksum")
        if got != want:
            raise RunFailed(f"wrong checksum {got} (expected {want}): {command}")
        failed = [rec.get("failed") for rec in out["recoveries"]]
        if failed != [str(VICTIM)] or len(out["recovery_max"]) != 1 or out["killed"] != [VICTIM]:
            raise RunFailed(f"expected one recovery of node {VICTIM}, got recoveries of {failed} and kills of "
                            f"{out['killed']}: {command}")
        before = [s for v, s in out["checkpoints"] if every < v <= every * count]
        memory = [(most, least) for v, most, least in out["memory"] if v <= every * count]
        after = [(most, least) for v, most, least in out["memory"] if v > every * count]
        if not before or not memory:
            raise RunFailed(f"no checkpoint line before the kill: {command}")
        recovery = out["recoveries"][0]
        return {"checkpoint_s": statistics.median(before), "checkpoint_samples": before,
                "redundancy_bytes_per_process": memory[-1][0], "redundancy_bytes_per_process_min": memory[-1][1],
                "redundancy_bytes_per_node": memory[-1][0] * k,
                "redundancy_bytes_per_process_after_recovery": after[-1][0] if after else None,
                "recovery_s": out["recovery_max"][0]["total_ms"] / 1e3,
                "recovery_state_s": out["recovery_max"][0]["state_ms"] / 1e3,
                "recovery_rank0": {key: value for key, value in recovery.items()},
                "resumed_at": int(recovery["iteration"]), "checksum": got, "valid": True, "command": command}
    except RunFailed as exc:
        return {"error": str(exc)}


def file_run(prefix: Path, program: str, k: int, args, timeout: float) -> dict:
    """One launch of --file-pairs pairs of failure-free jobs of FILE_POLICY, without and with the file
    level, in the same processes (redundancy.c's REDUNDANCY_FILE_PAIRS): seconds per iteration of each,
    or {"error": ...}."""
    every = args.checkpoint_every
    iterations = every * (args.checkpoints + 2)
    folder = Path(tempfile.mkdtemp(prefix="ftslide-filelevel-", dir=args.checkpoint_root))
    env = {"REDUNDANCY_FILE_PAIRS": str(args.file_pairs), "REDUNDANCY_FILE_DIR": str(folder)}
    try:
        out, command = run_once(prefix, program, k, ["--checkpoint-every", str(every), "--redundancy", FILE_POLICY],
                                [args.bytes, iterations, args.passes], None, timeout, env)
        command = f"REDUNDANCY_FILE_PAIRS={args.file_pairs} REDUNDANCY_FILE_DIR=DIR {command}"
        want = expected_checksum(node_ranks(k) * k, args.bytes // WORD, iterations, args.passes)
        checksums = [done.get("checksum") for done in out["all_done"]]
        loops = out["all_loops"]
        if checksums != [want] * (2 * args.file_pairs) or out["recoveries"] or len(loops) != 2 * args.file_pairs:
            raise RunFailed(f"checksums {checksums} (expected {want} x {2 * args.file_pairs}), "
                            f"{len(out['recoveries'])} recoveries, {len(loops)} loop lines: {command}")
        written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        jobs_with_files = {name.split("/", 1)[0] for name in written}
        if len(jobs_with_files) != args.file_pairs:
            raise RunFailed(f"the file level wrote into {sorted(jobs_with_files)}, not {args.file_pairs} job "
                            f"directories: {command}")
        off = [seconds / n for arm, n, seconds in loops if arm == "off"]
        on = [seconds / n for arm, n, seconds in loops if arm == "on"]
        return {"pairs": [{"without_s": a, "with_s": b} for a, b in zip(off, on)], "files": len(written),
                "command": command}
    except RunFailed as exc:
        return {"error": str(exc)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def node_ranks(k: int) -> int:
    """Working nodes (node ranks) of K's grid: its nodes less its spares."""
    return sc.make_layout(*GRIDS[k]).ranks


def median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt(value: float | None, scale: float = 1.0, digits: int = 1, suffix: str = "") -> str:
    return "-" if value is None else f"{value * scale:.{digits}f}{suffix}"


def file_writes(args) -> int:
    """Checkpoints a file-level job writes to files: every 4th (the default) of its checkpoints."""
    return (args.checkpoints + 2) // 4


def summarise(samples: dict, ks: list[int], args) -> tuple[list[dict], list[dict]]:
    """Per (K, policy) and per K (file level): medians and paired ratios over the repetitions."""
    policy_rows, file_rows = [], []
    for k in ks:
        for policy in POLICIES:
            runs = samples["policy"][(k, policy)]
            good = [r for r in runs if "error" not in r]
            pairs = [(r, b) for r, b in zip(runs, samples["policy"][(k, BASELINE)]) if "error" not in r and "error" not in b]
            row = {"K": k, "grid": GRIDS[k][0], "spares": GRIDS[k][1], "processes": stencil.node_count(*GRIDS[k], METHOD) * k,
                   "policy": policy, "runs": len(runs), "recovered_valid": len(good),
                   "errors": [r["error"] for r in runs if "error" in r],
                   "checkpoint_s": median_or_none([r["checkpoint_s"] for r in good]),
                   "checkpoint_ratio": median_or_none([r["checkpoint_s"] / b["checkpoint_s"] for r, b in pairs]),
                   "recovery_s": median_or_none([r["recovery_s"] for r in good]),
                   "recovery_ratio": median_or_none([r["recovery_s"] / b["recovery_s"] for r, b in pairs]),
                   "recovery_state_s": median_or_none([r["recovery_state_s"] for r in good]),
                   "redundancy_bytes_per_node": good[0]["redundancy_bytes_per_node"] if good else None,
                   "memory_ratio": median_or_none([r["redundancy_bytes_per_node"] / b["redundancy_bytes_per_node"]
                                                   for r, b in pairs]),
                   "samples": runs}
            policy_rows.append(row)
        launches = samples["file"][k]
        pairs = [pair for launch in launches if "error" not in launch for pair in launch["pairs"]]
        ratios = [pair["with_s"] / pair["without_s"] for pair in pairs]
        file_rows.append({"K": k, "grid": GRIDS[k][0], "policy": FILE_POLICY, "launches": len(launches),
                          "pairs": len(pairs), "errors": [r["error"] for r in launches if "error" in r],
                          "iteration_s_without": median_or_none([pair["without_s"] for pair in pairs]),
                          "iteration_s_with": median_or_none([pair["with_s"] for pair in pairs]),
                          "ratio": median_or_none(ratios), "ratio_min": min(ratios, default=None),
                          "added_s_per_file_write": median_or_none(
                              [(pair["with_s"] - pair["without_s"]) * args.checkpoint_every * (args.checkpoints + 2)
                               / file_writes(args) for pair in pairs]),
                          "ratio_max": max(ratios, default=None), "samples": launches})
    return policy_rows, file_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--quick", action="store_true",
                        help="a short version for tests: K = 1, one repetition, 1 MiB, 4 checkpoints (under 2 minutes)")
    parser.add_argument("--ks", help="comma-separated processes per node among 1, 2, 4 (default 1,2,4)")
    parser.add_argument("--repeat", type=int, help="repetitions (median; default 3)")
    parser.add_argument("--bytes", type=int, help="state per process, a multiple of 8 (default 2097152: 2 MiB)")
    parser.add_argument("--checkpoint-every", type=int, help="iterations between checkpoints (default 10)")
    parser.add_argument("--checkpoints", type=int,
                        help="checkpoints before the kill, the first not counted (default 8)")
    parser.add_argument("--passes", type=int, default=4, help="passes over the state per iteration (default 4)")
    parser.add_argument("--timeout", type=float, help="seconds per launch (default 300; 90 with --quick)")
    parser.add_argument("--file-pairs", type=int, help="pairs of jobs (without, with the file level) per file-level "
                        "launch (default 3; 2 with --quick)")
    parser.add_argument("--parts", default="policies,file",
                        help="what to measure: policies, file, or both (default policies,file)")
    parser.add_argument("--checkpoint-root", help="where the file level's temporary directories go (default: TMPDIR)")
    parser.add_argument("--json", type=Path, help="where to write the results (default results/redundancy[-quick].json "
                        "beside this script)")
    args = parser.parse_args()
    quick = args.quick
    defaults = {"ks": "1" if quick else "1,2,4", "repeat": 1 if quick else 3, "bytes": (1 if quick else 2) << 20,
                "checkpoint_every": 10, "checkpoints": 4 if quick else 8, "timeout": 90 if quick else 300,
                "file_pairs": 2 if quick else 3}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    try:
        ks = [int(x) for x in args.ks.split(",")]
    except ValueError:
        parser.error(f"--ks takes comma-separated numbers among {sorted(GRIDS)}, not {args.ks!r}")
    if not ks or any(k not in GRIDS for k in ks) or len(set(ks)) != len(ks):
        parser.error(f"--ks takes distinct numbers among {sorted(GRIDS)}, not {args.ks!r}")
    parts = {x.strip() for x in args.parts.split(",") if x.strip()}
    if not parts or parts - {"policies", "file"}:
        parser.error(f"--parts takes policies, file or both, not {args.parts!r}")
    if args.file_pairs < 1 or args.repeat < 1 or args.bytes < WORD or args.bytes % WORD or args.checkpoint_every < 2 \
            or args.checkpoints < 2 or args.passes < 1 or args.timeout <= 0:
        parser.error("--repeat >= 1, --bytes a positive multiple of 8, --checkpoint-every >= 2, --checkpoints >= 2, "
                     "--passes >= 1, --timeout > 0, --file-pairs >= 1")
    if args.checkpoint_root and not os.access(args.checkpoint_root, os.W_OK):
        parser.error(f"--checkpoint-root {args.checkpoint_root} is not a writable directory")
    json_path = args.json or HERE / "results" / f"redundancy{'-quick' if quick else ''}.json"
    started = time.monotonic()
    load_start = os.getloadavg()[0]
    try:
        prefix = require_prefix()
        program = build(prefix)
    except FtslideError as exc:
        print(f"redundancy.py: error: {exc}", file=sys.stderr)
        return 1
    samples: dict = {"policy": {(k, p): [] for k in ks for p in POLICIES},
                     "file": {k: [] for k in ks}}
    arms = [("policy", p) for p in POLICIES if "policies" in parts] + [("file", None)] * ("file" in parts)
    for rep in range(args.repeat):
        for k in ks:
            shift = rep % len(arms)
            for kind, arm in arms[shift:] + arms[:shift]:
                t0 = time.monotonic()
                if kind == "policy":
                    result = policy_run(prefix, program, k, arm, args, args.timeout)
                    what = f"K={k} {arm}"
                    figure = "" if "error" in result else (f"checkpoint {result['checkpoint_s'] * 1e3:.1f} ms, "
                                                           f"recovery {result['recovery_s'] * 1e3:.0f} ms")
                else:
                    result = file_run(prefix, program, k, args, args.timeout)
                    what = f"K={k} file level off/on"
                    figure = "" if "error" in result else ", ".join(
                        f"{pair['without_s'] * 1e3:.1f}/{pair['with_s'] * 1e3:.1f}" for pair in result["pairs"]) + \
                        " ms per iteration"
                samples[kind][(k, arm) if kind == "policy" else k].append(result)
                print(f"repetition {rep + 1}/{args.repeat} {what}: {result.get('error') or figure} "
                      f"({time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    policy_rows, file_rows = summarise(samples, ks, args)
    policy_rows = policy_rows if "policies" in parts else []
    file_rows = file_rows if "file" in parts else []

    targets = []
    if policy_rows:
        print(f"\nRedundancy policies, side by side with {BASELINE} (median of {args.repeat} runs each; ratios: median "
              f"of the per-repetition ratios); state {args.bytes / 2**20:g} MiB per process, a checkpoint every "
              f"{args.checkpoint_every} iterations, node {VICTIM} killed at iteration "
              f"{args.checkpoint_every * args.checkpoints + args.checkpoint_every // 2}")
        table = []
        for row in policy_rows:
            mem = row["redundancy_bytes_per_node"]
            table.append([row["K"], f"{row['grid']} {row['spares']}", row["processes"], row["policy"],
                          fmt(row["checkpoint_s"], 1e3), fmt(row["checkpoint_ratio"], digits=2, suffix="x"),
                          fmt(row["recovery_s"], 1e3, 0), fmt(row["recovery_state_s"], 1e3, 0),
                          fmt(row["recovery_ratio"], digits=2, suffix="x"),
                          "-" if mem is None else f"{mem / 2**20:.2f}", fmt(row["memory_ratio"], digits=3, suffix="x"),
                          f"{row['recovered_valid']}/{row['runs']}"])
        print_table(["K", "grid", "np", "policy", "ckpt ms", "ckpt/buddy", "recovery ms", "state ms", "recov/buddy",
                     "MiB/node", "mem/buddy", "recovered ok"], table)
    for row in policy_rows:
        if row["policy"] != "parity:8":
            continue
        ckpt, mem = row["checkpoint_ratio"], row["memory_ratio"]
        met = ckpt is not None and mem is not None and ckpt <= TARGET_CHECKPOINT_RATIO and mem <= TARGET_MEMORY_RATIO
        targets.append({"target": f"K={row['K']} parity:8 checkpoint <= {TARGET_CHECKPOINT_RATIO}x buddy at "
                        f"<= {TARGET_MEMORY_RATIO:.0%} of its memory", "checkpoint_ratio": ckpt, "memory_ratio": mem,
                        "met": met})
    if file_rows:
        print(f"\nFile level: {FILE_POLICY}, --checkpoint-dir in {args.checkpoint_root or tempfile.gettempdir()} at "
              f"the default interval (every 4th checkpoint) vs none, {args.file_pairs} pairs of jobs per launch in the "
              f"same processes (order alternating); time per iteration, checkpoints included; ratio: median of the "
              f"pairs' ratios")
        table = []
        for row in file_rows:
            ratio = row["ratio"]
            met = ratio is not None and ratio - 1 <= TARGET_FILE_OVERHEAD
            targets.append({"target": f"K={row['K']} file level adds <= {TARGET_FILE_OVERHEAD:.0%} to an iteration",
                            "ratio": ratio, "met": met})
            table.append([row["K"], row["grid"], fmt(row["iteration_s_without"], 1e3, 2),
                          fmt(row["iteration_s_with"], 1e3, 2), fmt(ratio, digits=3, suffix="x"),
                          fmt(row["ratio_min"], digits=3, suffix="x"), fmt(row["ratio_max"], digits=3, suffix="x"),
                          "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %",
                          fmt(row["added_s_per_file_write"], 1e3, 0), row["pairs"],
                          f"{row['launches'] - len(row['errors'])}/{row['launches']}"])
        print_table(["K", "grid", "ms/it without", "ms/it with", "ratio", "min", "max", "overhead",
                     "ms per file write", "pairs", "launches ok"], table)
        print(f"(ms per file write: the median pair's added loop time over its {file_writes(args)} file writes of "
              f"{args.bytes / 2**20:g} MiB per process)")
    print("\nTargets (issue 38):")
    for target in targets:
        print(f"  {target['target']}: {'met' if target['met'] else 'NOT met'}")
    errors = [e for row in (*policy_rows, *file_rows) for e in row["errors"]]
    for error in errors:
        print(f"failed run: {error}")
    print(f"{os.cpu_count()} cores, oversubscribed; load average {load_start:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end; {time.monotonic() - started:.0f} s")

    document = {"bench": "sliding_recovery/redundancy", "date": datetime.datetime.now().isoformat(timespec="seconds"),
                "options": {key: value for key, value in vars(args).items() if key != "json"} | {"ks": ks},
                "method": METHOD, "victim_node": VICTIM, "policies": list(POLICIES), "cores": os.cpu_count(),
                "load_average": {"start": load_start, "end": os.getloadavg()[0]},
                "policy_rows": policy_rows, "file_rows": file_rows, "targets": targets, "failed_runs": errors}
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(document, indent=1, default=str) + "\n")
    print(f"results: {json_path}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
