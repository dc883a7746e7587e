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
program without SLIDING_LIBRARY; `ftslide demo --lang cobol`. Last, the check-once style in each
language (tests/mpi/sliding/checkonce.{f90,py,cpp}: Fortran's check loop, Python's one except, C++'s
sliding::check and catch from sliding.hpp) against checkonce.c on np 6, failure-free and with kills:
the same rank grid and tiles before the start, the same statuses, recovery callbacks and final sum at
every process, and a callback that fails (returns non-zero, raises) ending the run with ERR_CALLBACK
at every living process.
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
from ftslide.toolchain.ompi import mpi_environment
from mpiharness import FORTRAN_MODULES, MPI_SOURCES, PYTHON_HELPERS, run_program
from test_build import assert_one_line_error, ftslide
from test_conformance_python import another_mpi4py
import test_sliding_runtime as runtime_test
from test_sliding_runtime import GRID, SCHEDULE_IDS, SCHEDULES, SPARES, recovered_as_planned

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
    assert recovered_as_planned(run, failed_after, resumes), run.stdout
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
    assert [str(e) for e in run.errors] == ["recovery: out of spares: the failures exceed what the method can absorb "
                                             "(sliding_on_no_spare=degrade runs on)"]
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


# ---- the check-once style, callbacks, dims and coords in every language ---------------------------------

CHECKONCE_NP = 6  # mesh:3x2, spares x:1: nodes 0-3 hold the 2x2 rank grid, 4 and 5 wait
CHECKONCE_TIMEOUT = 120
CHECKONCE_LANGUAGES = ("fortran", "python", "cpp")
# What checkonce.c reports, which every language's program must report alike ("sum" compared as a number).
CHECKONCE_KEYS = ("dims", "coords", "start", "recover", "finish", "callback")
CHECKONCE_KILLS = ("1@iter=6", "2@checkpoint#2", "4@waiting,1@iter=9")


@pytest.fixture(scope="module")
def checkonce(mpi_prefix, mpi4py_python, tmp_path_factory):
    """lang ("c", "fortran", "python", "cpp") -> a function (mode, kill) -> the MpiRun of that language's
    checkonce program on np 6 with FTSLIDE_KILL=kill, in which every node named died where named. Each
    program is built at its first run (the C++ one with the prefix's mpicxx, against sliding.hpp); C's
    runs are made once each."""
    link = stencil.link_flags(stencil.build_library(mpi_prefix))
    source = MPI_SOURCES / "sliding"

    def build_cpp():
        binary = tmp_path_factory.mktemp("checkonce-cpp") / "checkonce-cpp"
        built = subprocess.run([str(mpi_prefix / "bin" / "mpicxx"), "-std=c++11", "-O2", "-Wall", "-Wextra",
                                "-Wshadow", "-Werror", f"-I{stencil.HEADER_DIR}", f"-I{REPO / 'ompi-ulfm' / 'include'}",
                                f"-I{MPI_SOURCES}", "-o", str(binary), str(source / "checkonce.cpp"), *link],
                               capture_output=True, text=True, env=mpi_environment(mpi_prefix), timeout=300)
        assert built.returncode == 0, built.stderr[-3000:]
        return binary, [], {}

    def build_python():
        python = stencil.python_environment(mpi_prefix)
        env = {**python, "PYTHONPATH": os.pathsep.join([python["PYTHONPATH"], str(PYTHON_HELPERS)]),
               "PYTHONUNBUFFERED": "1"}
        return mpi4py_python, [str(source / "checkonce.py")], env

    builders = {
        "c": lambda: (mpi.compile_program(mpi_prefix, [source / "checkonce.c"], flags=stencil.FLAGS, link=link,
                                          include_dirs=[stencil.HEADER_DIR, MPI_SOURCES]), [], {}),
        "fortran": lambda: (mpi.compile_program(mpi_prefix, [*FORTRAN_MODULES, *stencil.FORTRAN_MODULE,
                                                             source / "checkonce.f90"], name="checkonce-f",
                                                flags=stencil.FORTRAN_FLAGS, include_dirs=[stencil.HEADER_DIR],
                                                link=link), [], {}),
        "cpp": build_cpp,
        "python": build_python,
    }
    programs, c_runs = {}, {}

    def run(lang, mode="run", kill=""):
        if lang == "c" and (mode, kill) in c_runs:
            return c_runs[mode, kill]
        if lang not in programs:
            programs[lang] = builders[lang]()
        program, args, env = programs[lang]
        result = run_program(mpi_prefix, program, CHECKONCE_NP, args=[*args, mode], timeout=CHECKONCE_TIMEOUT,
                             env={**env, "FTSLIDE_KILL": kill} if kill else env)
        died = {node: line[0] for node, line in runtime_test.killed_lines(result.stderr).items()}
        planned = {int(node): point for node, point in (entry.split("@") for entry in kill.split(",") if entry)}
        assert died == planned, f"{lang} {mode}: died {died}, planned {planned}\n{result.describe()}"
        if lang == "c":
            c_runs[mode, kill] = result
        return result

    return run


def assert_like_c(run, c_run, lang):
    """Every process reported what it reported in C, the final sum the same number; exit 0."""
    for rank in range(CHECKONCE_NP):
        got, expected = run.reports.get(rank, {}), c_run.reports.get(rank, {})
        assert {k: got.get(k) for k in CHECKONCE_KEYS} == {k: expected.get(k) for k in CHECKONCE_KEYS}, \
            f"{lang}, world rank {rank}: {got} against C's {expected}\n{run.describe()}"
        assert ("sum" in got) == ("sum" in expected), f"{lang}, world rank {rank}: {got}\n{run.describe()}"
        if "sum" in got:
            assert float(got["sum"]) == float(expected["sum"]), f"{lang}: {got['sum']} != C's {expected['sum']}"
    assert run.returncode == 0, run.describe()


@pytest.mark.parametrize("lang", CHECKONCE_LANGUAGES)
def test_check_once_failure_free_like_c(checkonce, lang):
    """No kill: dims and coords before the start are C's (2x2x1; 0,0 .. 1,1 at the workers, -1,-1 at the
    spares), the finish succeeds at the four workers, the spares are released, the sum is C's; sliding_ok
    (Fortran's sliding_is_ok, Python's ok()) is true at the workers after the start and false at the
    released spares; dims of a runtime never created (Fortran) or freed (Python) is ERR_ARG."""
    run, c_run = checkonce(lang), checkonce("c")
    assert [c_run.value(r, "coords") for r in range(CHECKONCE_NP)] == ["0,0", "0,1", "1,0", "1,1", "-1,-1", "-1,-1"]
    assert [c_run.value(r, "finish") for r in range(CHECKONCE_NP)] == ["OK"] * 4 + [None] * 2, c_run.describe()
    assert_like_c(run, c_run, lang)
    assert [run.value(r, "status") for r in range(CHECKONCE_NP)] == ["OK"] * CHECKONCE_NP, run.describe()
    if lang != "cpp":
        assert [run.value(r, "ok_start") for r in range(CHECKONCE_NP)] == ["1"] * 4 + ["0"] * 2, run.describe()
        assert [run.value(r, "null") for r in range(CHECKONCE_NP)] == ["ERR_ARG"] * CHECKONCE_NP, run.describe()
    if lang == "fortran":
        assert [run.value(r, "ndims") for r in range(CHECKONCE_NP)] == ["2"] * CHECKONCE_NP


@pytest.mark.parametrize("kill", CHECKONCE_KILLS)
@pytest.mark.parametrize("lang", CHECKONCE_LANGUAGES)
def test_check_once_recovery_and_callbacks_like_c(checkonce, lang, kill):
    """A node dies at an iteration, inside its second checkpoint, or a spare while waiting and then a
    worker: the language's loop recovers as C's does, every callback sees the same old and new ranks at
    the same process (a promoted spare: -1>R), and the final sum is the failure-free one."""
    run, c_run = checkonce(lang, kill=kill), checkonce("c", kill=kill)
    calls = [c_run.value(r, "callback") or "" for r in range(CHECKONCE_NP)]
    assert any(call.startswith("-1>") for call in calls), c_run.describe()
    assert [s for s in (c_run.value(r, "sum") for r in range(CHECKONCE_NP)) if s] == \
        [checkonce("c").value(0, "sum")], c_run.describe()
    assert_like_c(run, c_run, lang)


@pytest.mark.parametrize("lang,mode", [("fortran", "callback-fails"), ("cpp", "callback-fails"),
                                       ("python", "callback-returns"), ("python", "callback-raises")])
def test_failed_callback_ends_the_run_everywhere(checkonce, lang, mode):
    """Node 1 dies at iteration 6; the callback of the new logical rank 0 (world rank 2) returns 1, or in
    Python raises ValueError: every living process, survivor or spare, returns ERR_CALLBACK (from the
    recovery, or from the start it was waiting in), as in C, and the run ends without a hang. Python's
    SlidingError at world rank 2 has the ValueError as its cause; C++'s sliding::failure names the status."""
    run, c_run = checkonce(lang, mode, "1@iter=6"), checkonce("c", "callback-fails", "1@iter=6")
    assert_like_c(run, c_run, lang)
    living = [0, 2, 3, 4, 5]
    assert {r: run.value(r, "status") for r in living} == dict.fromkeys(living, "ERR_CALLBACK"), run.describe()
    assert run.value(2, "callback") == "2>0", run.describe()
    if lang == "python":
        assert run.value(2, "cause") == ("ValueError" if mode == "callback-raises" else None), run.describe()
    if lang == "cpp":
        assert run.value(2, "what").startswith("ERR_CALLBACK: a recovery callback"), run.describe()
