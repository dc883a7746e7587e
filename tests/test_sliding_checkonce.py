"""The check-once style of the sliding runtime and its bad inputs (tests/mpi/sliding/checkonce.c).

mesh:3x2 with spares x:1: 6 processes, nodes 0-3 run the 2x2 rank grid, nodes 4 and 5 (the spare
plane) wait. The program exchanges with Irecv/Isend/Waitall and checks nothing but sliding_ok()
once per iteration and sliding_finish() at the end; a recovery callback reports the old and new
logical ranks and runs an MPI_Allreduce on the new communicator. Every test names the node
killed and where, checks that the kill landed there, and that every process returned the same
status: no hang, no process left behind.
"""

from __future__ import annotations

import re

import pytest

from ftslide.sliding import runtime as stencil
from ftslide.toolchain.mpi import compile_program
from mpiharness import MPI_SOURCES, run_program

pytestmark = pytest.mark.mpi

NP = 6
WORKERS, SPARES = [0, 1, 2, 3], [4, 5]
_NODE_KILLED = re.compile(r"ftslide: node (\d+) killed at (\S+)")


@pytest.fixture(scope="module")
def checkonce(mpi_prefix):
    library = stencil.build_library(mpi_prefix)
    return compile_program(mpi_prefix, [MPI_SOURCES / "sliding" / "checkonce.c"], flags=("-O2", "-Wall", "-Werror"),
                           include_dirs=[MPI_SOURCES, stencil.HEADER_DIR], link=stencil.link_flags(library))


def run_mode(mpi_prefix, program, mode, kills=()):
    """Run one mode with node kills [(node, point)]; check that each landed where planned."""
    env = {"FTSLIDE_KILL": ",".join(f"{node}@{point}" for node, point in kills)} if kills else None
    result = run_program(mpi_prefix, program, NP, args=[mode], env=env, timeout=90)
    landed = dict((int(node), point) for node, point in _NODE_KILLED.findall(result.stderr))
    assert landed == dict(kills), f"planned {kills}, landed {landed}\n{result.describe()}"
    assert result.returncode == 0, result.describe()
    return result


@pytest.fixture(scope="module")
def failure_free(mpi_prefix, checkonce):
    return run_mode(mpi_prefix, checkonce, "run")


def test_grid_and_tile_are_known_before_start(failure_free):
    """sliding_dims and sliding_coords before sliding_start: the 2x2 rank grid at every process, the
    workers' tiles in MPI_Cart_coords order, -1s at the spares; sliding_dims(NULL) is ERR_ARG."""
    run = failure_free
    assert run.values("dims", range(NP)) == {r: "2x2x1" for r in range(NP)}, run.describe()
    assert run.values("coords", range(NP)) == {0: "0,0", 1: "0,1", 2: "1,0", 3: "1,1", 4: "-1,-1", 5: "-1,-1"}
    assert run.values("null", range(NP)) == {r: "ERR_ARG" for r in range(NP)}
    assert run.values("finish", WORKERS) == {r: "OK" for r in WORKERS}
    assert run.values("pending", range(NP)) == run.values("leaked", range(NP)) == {r: "0" for r in range(NP)}
    assert run.value(0, "sum") is not None and run.value(0, "callback") is None


@pytest.mark.parametrize("mode", ["run", "run-slow"])
def test_a_failure_is_checked_once_per_iteration(mpi_prefix, checkonce, failure_free, mode):
    """Node 1 dies at the start of iteration 6. Its neighbours' Waitall fails; nobody checks it: the
    error handler revokes, sliding_ok() sends every worker to sliding_recover, the spare plane takes
    over (hybrid on a 2x2 grid moves a plane: nodes 2, 3 keep their ranks' new positions, 4 and 5 are
    promoted) and the run ends with the failure-free sum. A Waitall that meets the failure may return
    before its other requests complete (MPI_ERR_PENDING, as MPI allows). With run-slow, at iteration 6
    rank 1 waits 1 s before its kill point and rank 2 3 s: ranks 0 and 3, neighbours of both, are in
    their Waitall when rank 1 dies. The first of them to learn of the failure returns with its receive
    from rank 2 still pending (the other may see the first one's revoke instead, which completes
    everything: so did one CI run, where rank 0 left one). A second Waitall on what was left returns,
    the revoke having completed it: no request leaked."""
    run = run_mode(mpi_prefix, checkonce, mode, [(1, "iter=6")])
    survivors = [0, 2, 3, 4, 5]
    assert run.values("leaked", survivors) == {r: "0" for r in survivors}, run.describe()
    if mode == "run-slow":
        assert max(int(run.value(r, "pending")) for r in (0, 3)) >= 1, run.describe()
    assert run.values("callback", [2, 3, 4, 5]) == {2: "2>0", 3: "3>1", 4: "-1>2", 5: "-1>3"}
    assert run.values("recover", [0, 2, 3]) == {0: "OK", 2: "OK", 3: "OK"}
    sums = [run.value(r, "sum") for r in survivors if run.value(r, "sum") is not None]
    assert sums == [failure_free.value(0, "sum")]


def test_mismatched_registrations_are_one_status_everywhere(mpi_prefix, checkonce):
    """World rank 3 registers one byte more: sliding_start returns ERR_REGISTER at all 6 processes,
    workers and spares, and nothing runs."""
    run = run_mode(mpi_prefix, checkonce, "register")
    assert run.values("start", range(NP)) == {r: "ERR_REGISTER" for r in range(NP)}, run.describe()
    assert run.values("finish", range(NP)) == {r: None for r in range(NP)}


@pytest.mark.parametrize("mode", ["callback-fails", "callback-frees"])
def test_a_bad_callback_is_one_status_everywhere(mpi_prefix, checkonce, mode):
    """After node 1 dies at iteration 6, the callback of the new logical rank 0 returns 1, or that of
    rank 1 frees the Cartesian communicator, while the others wait for it in an MPI_Allreduce: the
    runtime revokes, and every survivor returns ERR_CALLBACK (the workers from sliding_recover, the
    promoted spares from sliding_start)."""
    run = run_mode(mpi_prefix, checkonce, mode, [(1, "iter=6")])
    assert run.values("recover", [0, 2, 3]) == {0: "ERR_CALLBACK", 2: "ERR_CALLBACK", 3: "ERR_CALLBACK"}, run.describe()
    assert run.values("start", SPARES) == {4: "ERR_CALLBACK", 5: "ERR_CALLBACK"}


def test_a_failure_during_the_callbacks_recovers_again(mpi_prefix, checkonce, failure_free):
    """Node 1 dies at iteration 6; in the recovery's callbacks, promoted node 5 dies before the callbacks'
    MPI_Allreduce. The others' Allreduce fails, the runtime recovers again (hybrid slides in 1D), the
    callbacks run again with the rank held before the first recovery, and the sum is the failure-free one."""
    run = run_mode(mpi_prefix, checkonce, "callback-kill", [(1, "iter=6"), (5, "callback")])
    survivors = [0, 2, 3, 4]
    assert run.values("finish", survivors) == {r: "OK" for r in survivors}, run.describe()
    assert run.value(4, "callback").startswith("-1>2,-1>")
    assert run.value(2, "callback").startswith("2>0,2>")
    sums = [run.value(r, "sum") for r in survivors if run.value(r, "sum") is not None]
    assert sums == [failure_free.value(0, "sum")]


def test_an_application_error_is_not_recovered_for_ever(mpi_prefix, checkonce):
    """Logical rank 2 sends with a negative tag at iteration 5 (MPI_ERR_TAG: its own error, no process
    failed). Recovering would meet it again at every attempt: every process returns ERR_MPI instead."""
    run = run_mode(mpi_prefix, checkonce, "app-error")
    assert run.values("recover", WORKERS) == {r: "ERR_MPI" for r in WORKERS}, run.describe()
    assert run.values("start", SPARES) == {4: "ERR_MPI", 5: "ERR_MPI"}
