"""The sliding runtime from Fortran (the module `sliding`, sliding/fortran) and Python (the binding
sliding/python, numpy and mpi4py), with real processes and SIGKILL.

jacobi3d.f90 and jacobi3d.py run the kill schedules of the C example's tests
(tests/test_sliding_runtime.py: SCHEDULES, whose entries name each node killed and the point where
it dies) on torus:3x2x2 with the spare plane x:1, 12 processes, and with 2 processes per node (24,
nodes 1 and 6 dying whole at iterations 12 and 23), and the Python one on an emulated cluster; every
run must end with the checksum of the language's failure-free run, which must also be the C
program's, bit for bit. Then the bindings
themselves on np 2 (tests/mpi/sliding/register.{f90,py}): Fortran's constants against C's, the
arrays each one takes, and the one-line errors for the others; the README's mpifort line; a Python
program without SLIDING_LIBRARY; `ftslide demo --lang cobol`.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import pytest

from ftslide.sliding import runtime as stencil
from ftslide.toolchain import mpi
from ftslide.toolchain.native import REPO, c_enum
from mpiharness import FORTRAN_MODULES, MPI_SOURCES, PYTHON_HELPERS
from test_build import assert_one_line_error, ftslide
from test_conformance_python import another_mpi4py
import test_sliding_runtime as runtime_test
from test_sliding_runtime import GRID, SCHEDULE_IDS, SCHEDULES, SPARES

pytestmark = pytest.mark.mpi

TIMEOUT = 240  # 12 or 24 Python processes start in a few seconds each on 2 cores


@pytest.fixture(scope="module", params=["fortran", "python"])
def program(request, mpi_prefix):
    return stencil.build(mpi_prefix, request.param)


@pytest.fixture(scope="module")
def c_checksum(mpi_prefix):
    run = stencil.run(mpi_prefix, GRID, SPARES, "hybrid", timeout=120)
    assert run.returncode == 0 and run.checksum, run.stderr[-3000:]
    return run.checksum


@pytest.fixture(scope="module")
def reference(mpi_prefix, program, c_checksum):
    """The language's failure-free checksum, which is C's: the same sums in the same order."""
    run = stencil.run(mpi_prefix, GRID, SPARES, "hybrid", program=program, timeout=TIMEOUT)
    assert run.returncode == 0 and run.checksum, run.stdout + run.stderr[-3000:]
    assert not run.recoveries and not run.errors
    assert run.checksum == c_checksum, f"{program}: {run.checksum} != C's {c_checksum}"
    return run.checksum


def run_with(mpi_prefix, program, method, kills, **options):
    return runtime_test.run_with(mpi_prefix, program, method, kills, timeout=TIMEOUT, **options)


@pytest.mark.parametrize("method,kills,failed_after,resumes", SCHEDULES, ids=SCHEDULE_IDS)
def test_recovers_with_identical_result(mpi_prefix, program, reference, method, kills, failed_after, resumes):
    run = run_with(mpi_prefix, program, method, kills)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert [r.failed for r in run.recoveries] == failed_after, run.stdout
    assert [r.resume_iteration for r in run.recoveries] == resumes, run.stdout
    assert all(r.times["total"] > 0 and r.attempts == 1 for r in run.recoveries), run.stdout
    assert run.checksum == reference, run.stdout


def test_spare_killed_while_waiting_and_kill_during_recovery(mpi_prefix, program, reference):
    """Spare node 8 dies as soon as it waits and node 1 at iteration 12 (one batch); then node 1 at
    iteration 12 and node 2 inside that recovery, before the state moves (a second attempt)."""
    run = run_with(mpi_prefix, program, "hybrid", [(8, "waiting"), (1, "iter=12")])
    assert run.returncode == 0 and [r.failed for r in run.recoveries] == [[1, 8]], run.stderr[-3000:]
    assert run.checksum == reference
    run = run_with(mpi_prefix, program, "hybrid", [(1, "iter=12"), (2, "recovery_state")])
    assert run.returncode == 0 and [r.failed for r in run.recoveries] == [[1, 2]], run.stderr[-3000:]
    assert run.recoveries[0].attempts == 2
    assert run.checksum == reference


def test_out_of_spares_is_the_runtime_error(mpi_prefix, program):
    """Nodes 1, 5, 10, 2 and 4 die at iterations 7, 9, 16, 22 and 27 under hybrid (spares + 1): four
    recoveries, then every survivor reports ERR_NO_SPARE in the runtime's words and exits 3."""
    run = run_with(mpi_prefix, program, "hybrid",
                   [(1, "iter=7"), (5, "iter=9"), (10, "iter=16"), (2, "iter=22"), (4, "iter=27")])
    assert run.returncode != 0 and run.checksum is None
    assert len(run.recoveries) == 4, run.stdout
    assert [str(e) for e in run.errors] == ["recovery: out of spares: the failures exceed what the method can absorb"]
    assert run.errors[0].status is stencil.Status.ERR_NO_SPARE, run.stderr


def test_two_processes_per_node(mpi_prefix, program):
    """24 processes, every 2 consecutive ones a node: nodes 1 and 6 die whole (both processes) at
    iterations 12 and 23; the checksum is the failure-free run's with the same K."""
    nodes_as = stencil.node_options(GRID, SPARES, 2)
    base = stencil.run(mpi_prefix, GRID, SPARES, "hybrid", program=program, timeout=TIMEOUT, nodes_as=nodes_as)
    assert base.returncode == 0 and base.checksum, base.stderr[-3000:]
    run = run_with(mpi_prefix, program, "hybrid", [(1, "iter=12"), (6, "iter=23")], nodes_as=nodes_as)
    assert run.returncode == 0, run.stderr[-3000:]
    assert [r.failed for r in run.recoveries] == [[1], [1, 6]]
    assert [r.resume_iteration for r in run.recoveries] == [10, 20]
    assert run.checksum == base.checksum


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_python_on_a_cluster(tmp_path):
    """faults --cluster --lang python: 12 namespaces, 11 of them reached through the launch agent; a node
    dies whole, its daemon with it, at an iteration, and during a recovery's state moves; every run
    recovers with the failure-free checksum and leaves no namespace. (The binding's PYTHONPATH and
    SLIDING_LIBRARY go with mpirun's -x, which daemons that ssh starts need; this cluster's agent passes
    the whole environment, so the test would pass without them too.)"""
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "ftslide", "faults", "--cluster", "--lang", "python", "--runs",
                             "2", "--seed", "3", "--phases", "iteration,recovery_state", "--out", str(report)],
                            cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert report.exists(), result.stderr[-3000:]
    doc = json.loads(report.read_text())
    assert [r["outcome"] for r in doc["runs"]] == ["recovered", "recovered"], json.dumps(doc["runs"], indent=1)[:6000]
    assert result.returncode == 0 and all(r["daemons_lost"] == len(r["landed"]) > 0 for r in doc["runs"])
    assert not [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if ns.startswith("ftf")]


# ---- the bindings themselves ------------------------------------------------------------------------------

def test_fortran_module_constants_and_arrays(mpi_prefix, run_mpi):
    """tests/mpi/sliding/register.f90, np 2 (one worker, one spare), nobody killed: the roles, SLIDING_OK
    and SLIDING_POINT_ITER are C's values; a strided section is refused with ERR_NOT_CONTIGUOUS and its
    one-line message, a contiguous column, a whole array and a scalar are taken, and they go through a
    checkpoint."""
    library = stencil.build_library(mpi_prefix)
    binary = mpi.compile_program(mpi_prefix, [*FORTRAN_MODULES, *stencil.FORTRAN_MODULE,
                                              MPI_SOURCES / "sliding" / "register.f90"],
                                 flags=stencil.FORTRAN_FLAGS, include_dirs=[stencil.HEADER_DIR],
                                 link=stencil.link_flags(library))
    run = run_mpi(binary, 2, timeout=90)
    lib = ctypes.CDLL(str(library))
    lib.sliding_role_name.restype = ctypes.c_char_p
    roles = c_enum("Role", lib.sliding_role_name)
    for rank in (0, 1):
        got = run.reports.get(rank, {})
        assert {r: int(got.get(r.label.lower(), -1)) for r in roles} == {r: int(r) for r in roles}, run.describe()
        assert (got["ok"], got["ok_name"], got["iter_point"]) == ("0", "OK", stencil.Point.ITER.label)
        assert (got["create"], got["strided"], got["column"], got["whole"], got["scalar"], got["start"]) == \
            ("OK", "ERR_NOT_CONTIGUOUS", "OK", "OK", "OK", "OK")
        assert got["strided_message"].startswith("a registered array must be contiguous")
        assert got["failed"] == "0"
    worker = next(r for r in (0, 1) if run.value(r, "role") == str(int(roles.INITIAL)))
    assert (run.value(worker, "checkpoint"), run.value(worker, "finalize")) == ("OK", "OK"), run.describe()
    assert run.value(1 - worker, "role") == str(int(roles.FINISHED))
    assert run.returncode == 0, run.describe()


def test_python_binding_arrays(mpi_prefix, mpi4py_python, run_mpi):
    """tests/mpi/sliding/register.py, np 2, nobody killed: a strided view and a Fortran-ordered array are
    refused with ERR_NOT_CONTIGUOUS, a read-only array with ERR_READ_ONLY, a list too; each refusal is a
    ValueError (and a sliding.SlidingError) of one line that says what to give; a C-contiguous array goes
    through start, checkpoint and finalize."""
    python = stencil.python_environment(mpi_prefix)
    env = {**python, "PYTHONPATH": os.pathsep.join([python["PYTHONPATH"], str(PYTHON_HELPERS)])}
    run = run_mpi(mpi4py_python, 2, args=[str(MPI_SOURCES / "sliding" / "register.py")], env=env, timeout=90)
    for rank in (0, 1):
        got = run.reports.get(rank, {})
        assert [got.get(k) for k in ("strided", "fortran_order", "read_only", "list", "whole")] == \
            ["ERR_NOT_CONTIGUOUS", "ERR_NOT_CONTIGUOUS", "ERR_READ_ONLY", "ERR_NOT_CONTIGUOUS", "OK"], run.describe()
        for key in ("strided", "fortran_order", "read_only", "list"):
            assert got[f"{key}_value_error"] == "1"
        assert "numpy.ascontiguousarray" in got["strided_message"] and "strides (64, 8)" in got["strided_message"]
        assert "writeable" in got["read_only_message"] and "array.copy()" in got["read_only_message"]
        assert got["roles"] == "INITIAL=0,SURVIVOR=1,PROMOTED=2,FINISHED=3"
    assert sorted(run.value(r, "role") for r in (0, 1)) == ["FINISHED", "INITIAL"], run.describe()
    assert run.returncode == 0, run.describe()


def test_python_without_library_is_one_line(mpi_prefix, mpi4py_python):
    """jacobi3d.py with SLIDING_LIBRARY unset: one line naming eval "$(ftslide env)", exit 2, no traceback."""
    program = stencil.build(mpi_prefix, "python")
    env = {**stencil.python_environment(mpi_prefix), "SLIDING_LIBRARY": ""}
    result = mpi.run(mpi_prefix, ["-np", "1", *program, GRID, SPARES, "hybrid"], timeout=60, env=env)
    lines = [line for line in result.stderr.splitlines() if line.startswith("jacobi3d:")]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert lines == ['jacobi3d: error step=arguments message=SLIDING_LIBRARY is not set: run eval "$(ftslide env)" '
                     'first (it builds libsliding.so and names it)'], result.stderr


def test_readme_fortran_line_and_library(mpi_prefix, mpi4py_python, tmp_path):
    """After eval "$(ftslide env)", the README's mpifort line builds jacobi3d.f90 with the module, which
    runs (np 2, mesh:2x1 with a spare: one rank); SLIDING_LIBRARY is what the Python binding loads."""
    lines = ftslide("env").stdout
    assert "export SLIDING_LIBRARY=" in lines
    fortran = " ".join(str(REPO / p) for p in ("sliding/fortran/sliding.f90", "sliding/fortran/sliding_fortran.c",
                                               "sliding/examples/jacobi3d.f90"))
    script = (f'{lines}\nmpifort $SLIDING_CFLAGS {fortran} $SLIDING_LIBS -o jacobi3d-f\n'
              f'PYTHONPATH={REPO / "sliding" / "python"} {mpi4py_python} -c '
              # without MPI_Init: Open MPI 5.0.7's singleton never unlinks its btl/sm segment in /dev/shm
              '"import mpi4py; mpi4py.rc.initialize = False; import sliding; '
              'print(sliding.Status.ERR_NO_SPARE.name, sliding.library()._name)"')
    built = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert built.returncode == 0, built.stderr
    assert built.stdout.split() == ["ERR_NO_SPARE", str(stencil.build_library(mpi_prefix))]
    result = mpi.run(mpi_prefix, ["-np", "2", str(tmp_path / "jacobi3d-f"), "mesh:2x1", "x:1", "simple", "4", "6"],
                     timeout=60)
    assert result.returncode == 0, result.stderr
    assert "jacobi3d: done iterations=6 n=4 checksum=0x" in result.stdout


def test_demo_unknown_language_is_one_line():
    result = ftslide("demo", "--lang", "cobol")
    assert_one_line_error(result, "--lang", "cobol")


def test_python_demo_refuses_another_mpi4py(tmp_path):
    """An mpi4py built against another MPI (a stand-in first on PYTHONPATH): `ftslide demo --lang python`
    and `ftslide faults --lang python` stop in one line naming `ftslide build-mpi4py`, before any launch."""
    site, libmpi = another_mpi4py(tmp_path)
    for command in (["demo"], ["faults", "--runs", "1"]):
        result = ftslide(*command, "--lang", "python", env={"PYTHONPATH": str(site)})
        assert_one_line_error(result, "built against another MPI", str(libmpi), "ftslide build-mpi4py")
