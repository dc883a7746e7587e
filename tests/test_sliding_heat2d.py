"""heat2d, the second example of the sliding runtime (sliding/examples/heat2d.{c,f90}), against the program it
was made from, heat2d_plain (heat2d_plain.{c,f90}): a 2D heat stencil, not periodic, two fields swapped each
iteration, tiles that do not divide the 50 x 37 grid, its own serial validation at rank 0.

heat2d runs on mesh:4x3 with the spare line x:1 (12 processes, a 3x3 rank grid of uneven tiles), heat2d_plain
on 4 processes (2x2): the sum of the field does not depend on the tiles, so both print the same checksum, bit for
bit, and a run that loses nodes (SIGKILL at the start of an iteration) must print it too, and valid=yes; so must
a run on the torus torus:4x3 (the field is not periodic on any grid). The fault-tolerance code, everything
`diff heat2d_plain heat2d` adds or changes, is counted against the issue's target, in C and in Fortran. Bad
arguments (a 3D grid, a number that is not one, an option the runtime does not know, a missing METHOD, a
--checkpoint-every of 0) end in one line on stderr and exit status 2. Last, the Python binding reads the same
command line as heat2d does (Sliding.from_args, checkpoint_due, report_error: sliding_create_args in C).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ftslide.sliding import runtime as stencil
from ftslide.toolchain import mpi
from ftslide.toolchain.native import REPO

pytestmark = pytest.mark.mpi

EXAMPLES = REPO / "sliding" / "examples"
GRID, SPARES, METHOD = "mesh:4x3", "x:1", "hybrid"
NODES = 12  # mesh:4x3: nodes 0-8 run the 3x3 rank grid, 9-11 are the spare line
TIMEOUT = 120
SUFFIX = {"c": ".c", "fortran": ".f90"}
# The lines `diff heat2d_plain heat2d` may add or change, in each language: the target (C takes 39,
# Fortran 39, with sliding_create_args / sliding_create_from_command_line, sliding_checkpoint_due and the
# runtime's report lines).
TARGET = 40


@dataclass
class Heat2dRun:
    returncode: int
    stdout: str
    stderr: str
    checksum: str | None = None
    valid: bool = False
    recoveries: list[tuple[int, list[int]]] = field(default_factory=list)  # (resume iteration, failed nodes)
    killed: dict[int, str] = field(default_factory=dict)


def parse(result: subprocess.CompletedProcess) -> Heat2dRun:
    """heat2d's lines as the campaign driver reads them (runtime.parse), as (resume, failed) pairs."""
    assert result.stdout.count("heat2d: done ") <= 1, result.stdout  # rank 0 alone prints it
    run = stencil.parse(result.returncode, result.stdout, result.stderr, "heat2d")
    return Heat2dRun(run.returncode, run.stdout, run.stderr, run.checksum, bool(run.valid),
                     [(r.resume_iteration, r.failed) for r in run.recoveries], run.killed)


def build(prefix: Path, lang: str, plain: bool) -> Path:
    """heat2d or heat2d_plain of the language, with the flags the examples get (warnings are errors)."""
    name = "heat2d_plain" if plain else "heat2d"
    source = EXAMPLES / f"{name}{SUFFIX[lang]}"
    flags = stencil.FLAGS if lang == "c" else stencil.FORTRAN_FLAGS
    if plain:
        return mpi.compile_program(prefix, [source], name=f"{name}-{lang}", flags=flags)
    modules = stencil.FORTRAN_MODULE if lang == "fortran" else ()
    library = stencil.build_library(prefix)
    return mpi.compile_program(prefix, [*modules, source], name=f"{name}-{lang}", flags=flags,
                               include_dirs=(stencil.HEADER_DIR,), link=stencil.link_flags(library))


def run(prefix: Path, np: int, program: Path, args: list[str], kill: str = "") -> Heat2dRun:
    env = {"FTSLIDE_KILL": kill} if kill else {}
    return parse(mpi.run(prefix, ["-np", str(np), str(program), *args], timeout=TIMEOUT, env=env))


@pytest.fixture(scope="module", params=["c", "fortran"])
def lang(request):
    return request.param


@pytest.fixture(scope="module")
def heat2d(mpi_prefix, lang):
    return build(mpi_prefix, lang, plain=False)


@pytest.fixture(scope="module")
def plain_checksum(mpi_prefix, lang):
    """heat2d_plain's checksum on a 2x2 process grid: the failure-free field, checked serially at rank 0."""
    result = run(mpi_prefix, 4, build(mpi_prefix, lang, plain=True), [])
    assert result.returncode == 0 and result.valid, result.stdout + result.stderr[-3000:]
    return result.checksum


def test_failure_free_equals_plain(mpi_prefix, heat2d, plain_checksum):
    result = run(mpi_prefix, NODES, heat2d, [GRID, SPARES, METHOD])
    assert result.returncode == 0 and result.valid, result.stdout + result.stderr[-3000:]
    assert not result.recoveries
    assert result.checksum == plain_checksum


@pytest.mark.parametrize("kill,recoveries", [
    # node 4 (the middle tile) dies at the start of iteration 15, just after the checkpoint of 15
    ("4@iter=15", [(15, [4])]),
    # then node 7, which holds the middle tile since the first recovery, at 27: back to the checkpoint of 25
    ("4@iter=15,7@iter=27", [(15, [4]), (25, [4, 7])]),
], ids=["one-node", "two-nodes"])
def test_node_kills_leave_the_result_unchanged(mpi_prefix, heat2d, plain_checksum, kill, recoveries):
    """A checkpoint every 5 iterations, heat2d's default."""
    result = run(mpi_prefix, NODES, heat2d, [GRID, SPARES, METHOD], kill=kill)
    expected = dict((int(node), point) for node, point in (k.split("@") for k in kill.split(",")))
    assert result.killed == expected, result.stderr[-3000:]
    assert result.returncode == 0 and result.valid, result.stdout + result.stderr[-3000:]
    assert result.recoveries == recoveries, result.stdout
    assert result.checksum == plain_checksum


def test_two_processes_per_node(mpi_prefix, heat2d, plain_checksum):
    """24 processes, every 2 consecutive ones a node running a 1x2 block (a 3x6 rank grid), a checkpoint every
    4 iterations (--checkpoint-every): nodes 4 and 7 die whole; the tiles move two by two, the workers resume
    at the checkpoints of 12 and 24, and the result is still the plain program's."""
    args = ["--emulate-nodes", "2", "--block", "1x2", "--checkpoint-every", "4", GRID, SPARES, METHOD]
    result = run(mpi_prefix, 2 * NODES, heat2d, args, kill="4@iter=15,7@iter=27")
    assert result.killed == {4: "iter=15", 7: "iter=27"}, result.stderr[-3000:]
    assert result.returncode == 0 and result.valid, result.stdout + result.stderr[-3000:]
    assert result.recoveries == [(12, [4]), (24, [4, 7])], result.stdout
    assert result.checksum == plain_checksum


def test_torus_gives_the_mesh_result(mpi_prefix, heat2d, plain_checksum):
    """torus:4x3: the machine wraps around, the field does not (MPI_PROC_NULL at the grid's edges), so the
    checksum is the mesh's, with node 4 killed at iteration 15 too."""
    result = run(mpi_prefix, NODES, heat2d, ["torus:4x3", SPARES, METHOD], kill="4@iter=15")
    assert result.killed == {4: "iter=15"}, result.stderr[-3000:]
    assert result.returncode == 0 and result.valid, result.stdout + result.stderr[-3000:]
    assert result.recoveries == [(15, [4])], result.stdout
    assert result.checksum == plain_checksum


def test_c_and_fortran_compute_the_same_field(mpi_prefix):
    """The two languages do the same additions in the same order: the same checksum, bit for bit."""
    checksums = {lang: run(mpi_prefix, 4, build(mpi_prefix, lang, plain=True), ["20", "30", "25"]).checksum
                 for lang in ("c", "fortran")}
    assert checksums["c"] is not None and checksums["c"] == checksums["fortran"], checksums


def test_fault_tolerance_lines(lang):
    """Everything heat2d adds to or changes in heat2d_plain, comments and blank lines included: the issue's
    TARGET at most."""
    plain, ft = (EXAMPLES / f"{name}{SUFFIX[lang]}" for name in ("heat2d_plain", "heat2d"))
    diff = subprocess.run(["diff", str(plain), str(ft)], capture_output=True, text=True, timeout=30)
    assert diff.returncode == 1, diff.stderr  # 1: the files differ
    added = [line for line in diff.stdout.splitlines() if line.startswith(">")]
    assert len(added) <= TARGET, f"{len(added)} lines of fault tolerance in {ft.name}:\n" + "\n".join(added)


@pytest.mark.parametrize("args,phrase", [
    (["mesh:4x3x1", SPARES, METHOD], "GRID must be a 2D node grid"),
    ([GRID, SPARES, METHOD, "50", "thirty"], "usage: heat2d"),
    ([GRID, SPARES, METHOD, "50", "0"], "usage: heat2d"),
    ([GRID, SPARES, METHOD, "50", "37", "40", "5"], "usage: heat2d"),  # CHECKPOINT_EVERY is an option now
    ([GRID, SPARES, METHOD, "2"], "NX and NY must be at least the rank grid's sizes"),
], ids=["3d", "not-a-number", "zero", "too-many", "too-small"])
def test_bad_arguments_are_one_line_and_exit_2(mpi_prefix, heat2d, args, phrase):
    result = run(mpi_prefix, NODES, heat2d, args)
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("heat2d: error step=arguments message="), result.stderr
    assert phrase in lines[0]


@pytest.mark.parametrize("args,step,status", [
    (["--blocks", "1x1", GRID, SPARES, METHOD], "arguments", "ERR_ARG"),
    (["--block", "1x1", GRID, SPARES], "arguments", "ERR_ARG"),
    (["--checkpoint-every", "0", GRID, SPARES, METHOD], "create", "ERR_INFO"),
], ids=["unknown-option", "missing-method", "checkpoint-every-0"])
def test_the_runtimes_command_line_refusals_are_one_line_and_exit_2(mpi_prefix, heat2d, args, step, status):
    """sliding_create_args (Fortran: sliding_create_from_command_line) refuses the command line with one
    status at every process; heat2d says it once (sliding_report_error, at world rank 0: no runtime yet)."""
    result = run(mpi_prefix, NODES, heat2d, args)
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"heat2d: error step={step} status={status} message="), \
        result.stderr


def test_a_refused_layout_is_one_line_and_exit_2(mpi_prefix, heat2d):
    """8 processes for the 12 nodes: the runtime's status, said once."""
    result = run(mpi_prefix, 8, heat2d, [GRID, SPARES, METHOD])
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("heat2d: error step=create status=ERR_SIZE message="), result.stderr


PYTHON_ARGS = """\
import sys
from mpi4py import MPI
import sliding
try:
    s, rest = sliding.Sliding.from_args(MPI.COMM_WORLD, sys.argv)
except sliding.SlidingError as exc:
    sliding.report_error(None, "args", "create", exc.status)
    sys.exit(2)
due = [i for i in range(13) if s.checkpoint_due(i)]
print(f"rank={MPI.COMM_WORLD.rank} rest={rest} due={due} dims={list(s.dims)}", flush=True)
s.report_recovery("args", 0)  # no recovery happened: nothing
s.free()
"""


@pytest.mark.parametrize("args,out", [
    (["--checkpoint-every", "3", "mesh:2x2", SPARES, METHOD, "7", "a b"],
     "rest=['7', 'a b'] due=[3, 6, 9, 12] dims=[1, 2]"),
    (["mesh:2x2", SPARES, METHOD], "rest=[] due=[5, 10] dims=[1, 2]"),
    (["--checkpoint-every", "0", "mesh:2x2", SPARES, METHOD], "args: error step=create status=ERR_INFO message="),
    (["--blocks", "1x1", "mesh:2x2", SPARES, METHOD], "args: error step=create status=ERR_ARG message="),
], ids=["options-and-rest", "defaults", "checkpoint-every-0", "unknown-option"])
def test_python_reads_the_same_command_line(mpi_prefix, mpi4py_python, tmp_path, args, out):
    """Sliding.from_args on mesh:2x2 (4 processes): the arguments after METHOD come back as they were, the
    checkpoints are due every --checkpoint-every iterations (5 unless told); a refusal is one status everywhere,
    which report_error says once."""
    script = tmp_path / "args.py"
    script.write_text(PYTHON_ARGS)
    result = mpi.run(mpi_prefix, ["-np", "4", mpi4py_python, str(script), *args], timeout=TIMEOUT,
                     env=stencil.python_environment(mpi_prefix))
    if out.startswith("args: error"):
        assert result.returncode == 2, result.stdout + result.stderr[-3000:]
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(out), result.stderr
    else:
        assert result.returncode == 0, result.stdout + result.stderr[-3000:]
        assert sorted(result.stdout.splitlines()) == [f"rank={r} {out}" for r in range(4)], result.stdout
