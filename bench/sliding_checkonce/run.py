#!/usr/bin/env python3
"""What the check-once style costs heat2d: its iteration time against heat2d_plain's, and its lines.

    .venv/bin/python bench/sliding_checkonce/run.py [--sizes 50x37,512x512] [--iterations 100000,3000] [--np 2]
        [--repeat 15] [--langs c,fortran] [--checkpoint-every 0] [--spare-line] [--tiles 17x13] [--no-instructions]
        [--no-align] [--sources DIR]

(a) Overhead on a failure-free iteration (issue 37's target: at most 2 %). heat2d (sliding/examples/heat2d.c)
runs the iteration of heat2d_plain.c (the program it was made from) under the sliding runtime: the
runtime's error handler on the Cartesian communicator, a kill point, sliding_ok() and
sliding_checkpoint_due() at every iteration. The pair compared is the fairest one: the same
arithmetic, sizes, process count and rank grid (heat2d on mesh:AxB with no spares, heat2d_plain on
A*B processes, whose MPI_Dims_create gives AxB), both failure-free, both launched by the same mpirun
(--with-ft ulfm, so both link the same library), and heat2d's checkpoints off (--checkpoint-every
ITERATIONS + 1) unless --checkpoint-every says otherwise (heat2d_plain has none: then the figure is
the checkpoints' cost too). --spare-line adds a line of spare nodes to heat2d's grid (mesh:(A+1)xB,
spares x:1): processes that wait beside the workers, which on a shared machine take cores from them.
Both programs are compiled with the examples' flags plus ALIGN (hot loops on 64-byte boundaries):
where a compiler happens to place the stencil's inner loop decides more than the machinery does (on
this machine's AMD EPYC, heat2d_plain's loop across a 64-byte boundary ran 1.4 times slower than
heat2d's inside one, with the same instructions); --no-align builds them as the examples are built.

Wall time. Each program times its own iterations: with HEAT2D_TIMES=N in the environment, logical
rank 0 prints "heat2d: timing iterations=N seconds=S" after every N iterations (S: their wall time,
MPI_Wtime), and nothing without it. The bench asks for BLOCKS blocks per run and takes the median
block as the run's time per iteration: a block that other users' processes delayed does not move
it. The two programs run one after the other, their order alternating from one repetition to the
next (after one warm-up run of each, not counted), and every run must end with valid=yes and the
same checksum in both programs. The table gives, per language and size, the median time per
iteration of each and the ratio heat2d / heat2d_plain of each pair: median, min and max, the ratio
of the two programs' best times (the runs the load disturbed least), and the median's overhead
against the target. On a shared, oversubscribed machine a pair's two runs meet different loads: the
spread of the ratios says how far the median can be trusted.

Instructions. The same pair, one process each (np 1: no process waits for another, so nothing spins)
on the largest tile a process holds at --np (NX/A x NY/B, rounded up), under valgrind's callgrind at
two iteration counts: the instructions main executes per iteration, the difference between the two
counts divided by the iterations between them, so that start-up and the end cancel (MPI_Init and
MPI_Finalize, whose counts vary with the timing of the launch, are left out of main's count first).
The final validation at rank 0 sweeps the grid once per iteration too, as many instructions in both
programs: one sweep is taken off each (the sweep function's own count), which leaves the loop's.
These counts do not depend on the load. The halo exchanges go to no one at np 1 (MPI_PROC_NULL),
cheaper than the real ones at --np, so the ratio is an upper bound of the machinery's share of an
iteration of that tile. --tiles adds tiles counted this way only (17x13: a tile of heat2d's own run,
50 x 37 points over a 3x3 rank grid). Skipped with --no-instructions or without valgrind.

(b) Fault-tolerance code: the lines `diff heat2d_plain heat2d` adds or changes (comments and blank
lines included, as tests/test_sliding_heat2d.py counts them), for C and Fortran, against the
target (at most 40), with the lines it removes and the added lines that are code.

Programs that print no timing line are not timed (the table says so) and the rest still runs.
Errors: one line and exit status 1 (a build that fails, a run that fails or is not valid, a wrong
number of timing lines, different checksums).
Cost: two builds per language, (repeat + 1) x 2 launches per language and size, and four valgrind
runs (seconds each) per language and size.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ftslide.errors import FtslideError  # noqa: E402
from ftslide.sliding import runtime as stencil  # noqa: E402
from ftslide.toolchain import mpi  # noqa: E402
from ftslide.toolchain.ompi import require_prefix  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

SUFFIX = {"c": ".c", "fortran": ".f90"}
TARGET_OVERHEAD = 0.02  # issue 37: the check-once style costs at most 2 % of a failure-free iteration
TARGET_LINES = 40       # issue 37: at most 40 lines of fault tolerance
TIMEOUT = 300           # seconds per launch
BLOCKS = 20             # timed blocks of iterations per run (HEAT2D_TIMES)
METHOD = "hybrid"       # any method: nothing fails
COUNTED = (10, 110)     # the iteration counts of the valgrind runs
ALIGN = ("-falign-functions=64", "-falign-loops=64")  # both programs' hot loops at the same alignment


def dims_create(count: int) -> tuple[int, int]:
    """MPI_Dims_create(count, 2): the two most even factors, the larger first (heat2d_plain's rank grid)."""
    best = max(b for b in range(1, int(count ** 0.5) + 1) if count % b == 0)
    return count // best, best


def sizes_arg(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        match = re.fullmatch(r"\s*(\d+)x(\d+)\s*", item)
        if not match or min(int(match[1]), int(match[2])) < 1:
            raise ValueError(f"size {item!r} is not NXxNY")
        out.append((int(match[1]), int(match[2])))
    return out


def build(prefix: Path, sources: Path, lang: str, plain: bool, extra: tuple[str, ...]) -> list[str]:
    """heat2d_plain or heat2d of ``lang`` from ``sources``, with the examples' flags (runtime.build's)
    and ``extra``."""
    name = "heat2d_plain" if plain else "heat2d"
    source = sources / f"{name}{SUFFIX[lang]}"
    if not source.is_file():
        raise FtslideError(f"{source} does not exist")
    flags = (*(stencil.FLAGS if lang == "c" else stencil.FORTRAN_FLAGS), *extra)
    if plain:
        return [str(mpi.compile_program(prefix, [source], name=f"{name}-{lang}", flags=flags))]
    modules = stencil.FORTRAN_MODULE if lang == "fortran" else ()
    return [str(mpi.compile_program(prefix, [*modules, source], name=f"{name}-{lang}", flags=flags,
                                    include_dirs=(stencil.HEADER_DIR,),
                                    link=stencil.link_flags(stencil.build_library(prefix))))]


def arguments(program: list[str], plain: bool, grid: str, spares: str, nx: int, ny: int, iterations: int,
              every: int) -> list[str]:
    """The argv of one failure-free run of heat2d_plain or heat2d."""
    size = [str(nx), str(ny), str(iterations)]
    if plain:
        return [*program, *size]
    return [*program, "--checkpoint-every", str(every or iterations + 1), grid, spares, METHOD, *size]


def describe(argv: list[str]) -> str:
    return " ".join([Path(argv[0]).name, *argv[1:]])


def checked(result, argv: list[str], np: int):
    """The parsed run, or FtslideError unless it ended with exit 0, valid=yes and a checksum."""
    run = stencil.parse(result.returncode, result.stdout, result.stderr, "heat2d")
    if result.returncode != 0 or run.valid is not True or not run.checksum:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise FtslideError(f"{describe(argv)} (np {np}) failed: exit {result.returncode}, valid={run.valid}: {last}")
    return run


def timed_run(prefix: Path, np: int, argv: list[str], iterations: int, block: int) -> tuple[float, str]:
    """Seconds per iteration of one failure-free run of ``iterations`` (the median of its blocks of
    ``block`` iterations, as the program timed them) and its checksum."""
    result = mpi.run(prefix, ["-np", str(np), *argv], timeout=TIMEOUT, env={"HEAT2D_TIMES": str(block)})
    run = checked(result, argv, np)
    timings = [f for event, f in stencil.events(result.stdout, "heat2d") if event == "timing"]
    wanted = iterations // block
    if not timings:
        raise Untimed(f"{describe(argv)} printed no 'heat2d: timing' line with HEAT2D_TIMES={block}")
    if len(timings) != wanted:
        raise FtslideError(f"{describe(argv)} printed {len(timings)} 'heat2d: timing' lines with HEAT2D_TIMES={block}, "
                           f"not {wanted} (the program must time its iterations: see this bench's docstring)")
    return statistics.median(float(f["seconds"]) / int(f["iterations"]) for f in timings), run.checksum


def instructions(prefix: Path, argv: list[str]) -> tuple[int, int]:
    """(instructions main executes outside MPI_Init and MPI_Finalize, instructions of the sweep
    function) in one run of ``argv`` (np 1) under callgrind. FtslideError if the run fails or a
    count is missing."""
    binary = Path(argv[0]).name
    with tempfile.TemporaryDirectory(prefix="ftslide-checkonce-") as folder:
        out = Path(folder) / "callgrind.out"
        result = mpi.run(prefix, ["-np", "1", "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
                         timeout=TIMEOUT)
        checked(result, argv, 1)
        table = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                               capture_output=True, text=True, timeout=120).stdout
    counts: dict[str, int] = {}   # the program's functions
    library: dict[str, int] = {}  # everything else's
    for line in table.splitlines():  # "  35,039,761 (57.46%)  ???:main [/path/heat2d-c-...]"
        match = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*?:([\w.]+) \[(.*)\]\s*$", line)
        if match:
            (counts if Path(match[3]).name == binary else library).setdefault(match[2], int(match[1].replace(",", "")))
    sweep = [count for name, count in counts.items() if "sweep" in name.lower()]
    if "main" not in counts or len(sweep) != 1 or "PMPI_Init" not in library or "PMPI_Finalize" not in library:
        raise FtslideError(f"callgrind counted no main, MPI_Init or MPI_Finalize, or no single sweep function in "
                           f"{binary} (its functions: {', '.join(sorted(counts)) or 'none'})")
    return counts["main"] - library["PMPI_Init"] - library["PMPI_Finalize"], sweep[0]


def loop_instructions(prefix: Path, make_argv) -> float:
    """Instructions per iteration of the loop of the program whose argv for I iterations is
    ``make_argv(I)``, at np 1: the difference of two callgrind runs (COUNTED) per iteration, less the
    validation's sweep (half the sweep function's share: the loop and the validation call it once each
    per iteration, on the same whole grid at np 1)."""
    (main_a, sweep_a), (main_b, sweep_b) = (instructions(prefix, make_argv(count)) for count in COUNTED)
    span = COUNTED[1] - COUNTED[0]
    return (main_b - main_a) / span - (sweep_b - sweep_a) / span / 2


def ft_lines(sources: Path, lang: str) -> tuple[int, int, int]:
    """(lines added or changed, lines removed, added lines that are code) by `diff heat2d_plain heat2d`."""
    plain, ft = (sources / f"{name}{SUFFIX[lang]}" for name in ("heat2d_plain", "heat2d"))
    diff = subprocess.run(["diff", str(plain), str(ft)], capture_output=True, text=True, timeout=30)
    if diff.returncode not in (0, 1):
        raise FtslideError(f"diff {plain} {ft}: {diff.stderr.strip() or 'failed'}")
    lines = diff.stdout.splitlines()
    added = [line[2:] for line in lines if line.startswith("> ")] + [""] * sum(line == ">" for line in lines)
    comment = ("/*", "*", "//") if lang == "c" else ("!",)
    code = [line for line in added if line.strip() and not line.strip().startswith(comment)]
    return len(added), sum(line.startswith("<") for line in lines), len(code)


class Untimed(FtslideError):
    """A program printed no timing line: it does not time its iterations (HEAT2D_TIMES)."""


def wall_figures(prefix: Path, arms: dict[str, tuple[int, list[str]]], iterations: int, repeat: int,
                 what: str) -> list[str]:
    """The wall-time columns of one language and size: a warm-up run of each program, then ``repeat``
    pairs in alternating order; Untimed if the programs print no timing line."""
    block = max(1, iterations // BLOCKS)
    times: dict[str, list[float]] = {"plain": [], "ft": []}
    checksums = set()
    for arm in ("plain", "ft"):  # warm-up, not counted
        checksums.add(timed_run(prefix, *arms[arm], iterations, block)[1])
    for r in range(repeat):
        for arm in (("plain", "ft") if r % 2 == 0 else ("ft", "plain")):
            seconds, checksum = timed_run(prefix, *arms[arm], iterations, block)
            times[arm].append(seconds)
            checksums.add(checksum)
        print(f"{what} pair {r + 1}: plain {times['plain'][-1] * 1e6:.1f} us, heat2d {times['ft'][-1] * 1e6:.1f} us "
              "per iteration", file=sys.stderr, flush=True)
    if len(checksums) != 1:
        raise FtslideError(f"{what}: the programs printed different checksums {sorted(checksums)}")
    ratios = [ft_s / plain_s for ft_s, plain_s in zip(times["ft"], times["plain"])]
    median = statistics.median(ratios)
    return [f"{statistics.median(times['plain']) * 1e6:.1f}", f"{statistics.median(times['ft']) * 1e6:.1f}",
            f"{median:.3f}", f"{min(ratios):.3f}", f"{max(ratios):.3f}",
            f"{min(times['ft']) / min(times['plain']):.3f}", f"{(median - 1) * 100:+.1f} %",
            "yes" if median - 1 <= TARGET_OVERHEAD else "no"]


def instruction_figures(prefix: Path, plain: list[str], ft: list[str], nx: int, ny: int, every: int) -> list[str]:
    """The instruction columns of one tile of nx x ny points (np 1)."""
    base = loop_instructions(prefix, lambda i: arguments(plain, True, "mesh:1x1", "none", nx, ny, i, every))
    with_ft = loop_instructions(prefix, lambda i: arguments(ft, False, "mesh:1x1", "none", nx, ny, i, every))
    print(f"tile {nx}x{ny}: {base:.0f} and {with_ft:.0f} instructions per iteration", file=sys.stderr, flush=True)
    return [f"{base:.0f}", f"{with_ft:.0f}", f"{with_ft - base:+.0f}", f"{with_ft / base:.4f}",
            f"{(with_ft / base - 1) * 100:+.2f} %", "yes" if with_ft / base - 1 <= TARGET_OVERHEAD else "no"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--sizes", default="50x37,512x512",
                        help="comma-separated NXxNY grids of points (default 50x37, heat2d's own, and 512x512)")
    parser.add_argument("--iterations", default="100000,3000",
                        help="iterations per run, one per size or one for all (default 100000,3000: loops of about "
                        "half a second each at np 2 on this machine)")
    parser.add_argument("--np", type=int, default=2, help="processes of each program (default 2)")
    parser.add_argument("--repeat", type=int, default=15, help="pairs per language and size (default 15)")
    parser.add_argument("--langs", default="c,fortran", help="comma-separated: c, fortran (default both)")
    parser.add_argument("--checkpoint-every", type=int, default=0,
                        help="heat2d's checkpoint interval (default 0: none, ITERATIONS + 1)")
    parser.add_argument("--spare-line", action="store_true",
                        help="heat2d with a line of spare nodes waiting beside the workers (mesh:(A+1)xB, x:1)")
    parser.add_argument("--tiles", default="",
                        help="comma-separated NXxNY tiles whose instructions are counted too (17x13: heat2d's own run)")
    parser.add_argument("--no-instructions", action="store_true", help="skip the instruction counts (valgrind)")
    parser.add_argument("--no-align", action="store_true",
                        help=f"compile as the examples are compiled, without {' '.join(ALIGN)}")
    parser.add_argument("--sources", type=Path, default=REPO / "sliding" / "examples",
                        help="the folder of heat2d.{c,f90} and heat2d_plain.{c,f90} (default sliding/examples)")
    args = parser.parse_args()
    langs = [x.strip() for x in args.langs.split(",") if x.strip()]
    try:
        sizes = sizes_arg(args.sizes)
        tiles = sizes_arg(args.tiles) if args.tiles.strip() else []
        counts = [int(x) for x in args.iterations.split(",")]
        counts = counts * len(sizes) if len(counts) == 1 else counts
        if len(counts) != len(sizes) or min(counts) < 1:
            raise ValueError("--iterations takes one count of at least 1 per size, or one for all")
        if not langs or any(x not in SUFFIX for x in langs):
            raise ValueError("--langs takes c and fortran")
        if args.np < 1 or args.np > 8 or args.repeat < 1 or args.checkpoint_every < 0:
            raise ValueError("--np from 1 to 8, --repeat from 1, --checkpoint-every from 0")
    except ValueError as exc:
        parser.error(str(exc))
    rows, cols = dims_create(args.np)
    grid, spares, np_ft = f"mesh:{rows}x{cols}", "none", args.np
    if args.spare_line:
        grid, spares, np_ft = f"mesh:{rows + 1}x{cols}", "x:1", args.np + cols
    count_instructions = not args.no_instructions and shutil.which("valgrind") and shutil.which("callgrind_annotate")
    print(f"load average at the start {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores", flush=True)
    try:
        line_rows = []
        for lang in langs:
            added, removed, code = ft_lines(args.sources, lang)
            line_rows.append([lang, added, code, removed, TARGET_LINES, "yes" if added <= TARGET_LINES else "no"])
        prefix = require_prefix()
        wall, counted, untimed = [], [], []
        for lang in langs:
            extra = () if args.no_align else ALIGN
            plain, ft = build(prefix, args.sources, lang, True, extra), build(prefix, args.sources, lang, False, extra)
            for (nx, ny), iterations in zip(sizes, counts):
                arms = {"plain": (args.np, arguments(plain, True, grid, spares, nx, ny, iterations,
                                                     args.checkpoint_every)),
                        "ft": (np_ft, arguments(ft, False, grid, spares, nx, ny, iterations, args.checkpoint_every))}
                try:
                    wall.append([lang, f"{nx}x{ny}", iterations, *wall_figures(prefix, arms, iterations, args.repeat,
                                                                               f"{lang} {nx}x{ny}")])
                except Untimed:
                    untimed.append(f"{lang} {nx}x{ny}")
                if count_instructions:
                    tx, ty = -(-nx // rows), -(-ny // cols)  # the largest tile at --np
                    counted.append([lang, f"{nx}x{ny}", f"{tx}x{ty}",
                                    *instruction_figures(prefix, plain, ft, tx, ty, args.checkpoint_every)])
            for tx, ty in tiles if count_instructions else []:
                counted.append([lang, "-", f"{tx}x{ty}", *instruction_figures(prefix, plain, ft, tx, ty,
                                                                              args.checkpoint_every)])
    except FtslideError as exc:
        print(f"run.py: error: {exc}", file=sys.stderr)
        return 1
    sys.stderr.flush()
    print(f"(a) failure-free iteration, heat2d (sliding runtime, check-once) / heat2d_plain: wall time, np {args.np}")
    print_table(["lang", "points", "iterations", "plain us/it", "heat2d us/it", "ratio median", "min", "max",
                 "best / best", "overhead", f"<= {TARGET_OVERHEAD:.0%}"], wall)
    if untimed:
        print(f"not timed ({', '.join(untimed)}): the programs print no 'heat2d: timing iterations=N seconds=S' line "
              "with HEAT2D_TIMES=N in the environment (logical rank 0, after every N iterations)")
    print(f"rank grid {rows}x{cols}; heat2d on {grid} spares {spares} ({np_ft} processes), checkpoints "
          f"{'every ' + str(args.checkpoint_every) if args.checkpoint_every else 'off'}; {args.repeat} pairs per row "
          f"(order alternating) after a warm-up; each run's median of {BLOCKS} blocks as the program timed them; "
          f"{'examples flags' if args.no_align else 'compiled with ' + ' '.join(ALIGN)}; "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    if counted:
        print(f"\n(a) the same, in instructions per iteration of the loop on one process's tile (callgrind, np 1, "
              f"iterations {COUNTED[0]} and {COUNTED[1]}; load-independent)")
        print_table(["lang", "points", "tile", "plain", "heat2d", "difference", "ratio", "overhead",
                     f"<= {TARGET_OVERHEAD:.0%}"], counted)
    elif not args.no_instructions:
        print("\n(instruction counts skipped: valgrind or callgrind_annotate not found)")
    print("\n(b) fault-tolerance lines: diff heat2d_plain heat2d")
    print_table(["lang", "added or changed", "of which code", "removed", "target", "met"], line_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
