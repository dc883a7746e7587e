"""ULFM fixes of upstream Open MPI 5.0.8-5.0.11 that our 5.0.7 build lacked (issue 36), each ported as
a patch of ompi-ulfm/patches/ompi and guarded here by a program that failed without it.

- ompi/15, MPI_Iprobe / MPI_Improbe and a failed source (upstream #13792): tests/mpi/conformance/iprobe_failed.c
- ompi/16 and ompi/17, coll/han's sub-communicators under a revoke or a failure (upstream #13642 for the
  hang; the wrong MPI_SUCCESS that 5.0.11 still returns is ours to fix): tests/mpi/revoke/han_subcomms.c,
  across a 2-node emulated cluster
- ompi/18, the storage of coll_ftagree_agreement (upstream #13952) and of mpi_ft_verbose (not fixed
  upstream): tests/mpi/conformance/ftagree_param.c

Every run has a timeout (mpiharness.run_program, mpi.run) and its processes are killed afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from ftslide.jobmgr import cluster as netcluster
from ftslide.toolchain import mpi
from harness.clusters import module_cluster
from mpiharness import MODULES, OK, PF, REVOKED, MpiRun, assert_all, parse_run

pytestmark = pytest.mark.mpi

FLAG0 = "flag0_forever"  # what a poll of tests/mpi/conformance/iprobe_failed.c reports when it gave up


@MODULES
def test_nonblocking_probes_report_a_failed_source(mpi_program, run_mpi, modules):
    """np 3, rank 2 killed after a barrier: MPI_Iprobe and MPI_Improbe from rank 2, and from MPI_ANY_SOURCE
    before the failure is acknowledged, return MPIX_ERR_PROC_FAILED (as MPI_Probe and MPI_Mprobe do);
    after MPIX_Comm_failure_ack an ANY_SOURCE poll finds rank 1's message; after a revoke both ranks'
    polls return MPIX_ERR_REVOKED. Without patch ompi/15 the four polls answered flag 0 for as long as
    they were called (each gives up after 3 s and reports flag0_forever)."""
    run = run_mpi(mpi_program("conformance/iprobe_failed.c"), 3, kill={2: "after_barrier"},
                  mpirun_options=modules, timeout=60)
    assert run.returncode == 0, run.describe()
    for key in ("recv_from_dead", "iprobe_dead", "improbe_dead", "iprobe_any", "improbe_any", "probe_dead",
                "mprobe_dead"):
        assert run.value(0, key) == PF, f"{key}: {run.value(0, key)}\n{run.describe()}"
    assert (run.value(0, "iprobe_live_empty"), run.value(0, "iprobe_live_empty_flag")) == (OK, "0")
    assert run.value(0, "failure_ack") == OK
    assert (run.value(0, "iprobe_any_acked"), run.value(0, "iprobe_any_acked_source"),
            run.value(0, "iprobe_any_acked_value")) == (OK, "1", "42"), run.describe()
    assert run.value(0, "iprobe_revoked_here") == REVOKED
    assert run.value(1, "iprobe_revoked_remote") == REVOKED, run.describe()
    assert_all(run, "finished", [0, 1], "1")


@pytest.mark.parametrize("value", [None, "0", "1"], ids=["default", "set-0", "set-1"])
def test_ft_parameters_read_their_values(mpi_program, run_mpi, value):
    """np 2, no failure: MPI_T reads coll_ftagree_agreement and mpi_ft_verbose after MPI_Init as the value
    set (or their defaults with fault tolerance on: 1 and 0), before and after more MPI calls. Without
    patch ompi/18 their storage was a variable of a function that had returned, and the reads gave what
    the stack held there (32558, 32560, -1676689876, ...)."""
    options = () if value is None else ("--mca", "coll_ftagree_agreement", value, "--mca", "mpi_ft_verbose", value)
    run = run_mpi(mpi_program("conformance/ftagree_param.c"), 2, mpirun_options=options, timeout=60)
    assert run.returncode == 0, run.describe()
    assert_all(run, "found", [0, 1], "1")
    assert_all(run, "read_rc", [0, 1], OK)
    for key, default in (("agreement", "1"), ("ft_verbose", "0")):
        expected = default if value is None else value
        assert_all(run, key, [0, 1], expected)
        assert_all(run, f"{key}_twice", [0, 1], expected)
    assert_all(run, "finished", [0, 1], "1")


# ---- coll/han across nodes ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[netcluster.Cluster]:
    """A 2-node emulated cluster, 2 slots a node, for this module; removed afterwards."""
    with module_cluster("u", nodes=2, slots=2) as made:
        yield made


def run_with_han(prefix: Path, cluster: netcluster.Cluster, program: Path, args: list[str],
                 kill: dict[int, str] | None = None, timeout: float = 60) -> MpiRun:
    """Run ``program`` on 4 ranks across ``cluster`` with coll/han left on: the cluster's mpirun options
    without MULTINODE_ULFM_OPTIONS (``--mca coll ^han``, which ftslide run adds because of the problem
    patch ompi/16 fixes). Ranks 0, 1 on node 0 and 2, 3 on node 1."""
    options = netcluster.mpirun_options(cluster)
    assert options[-len(mpi.MULTINODE_ULFM_OPTIONS):] == list(mpi.MULTINODE_ULFM_OPTIONS), options
    options = options[:-len(mpi.MULTINODE_ULFM_OPTIONS)]
    env = netcluster.launch_environment()
    if kill:
        env["FTSLIDE_KILL"] = ",".join(f"{rank}@{point}" for rank, point in kill.items())
    try:
        result = mpi.run(prefix, ["--mca", "coll_han_verbose", "10", "-np", "4", str(program), *args],
                         timeout=timeout, env=env,
                         wrap=lambda argv: netcluster.launch_argv(cluster, [argv[0], *options, *argv[1:]]))
    except mpi.MpirunTimeout as exc:
        hung = parse_run(-9, exc.stdout, exc.stderr)
        raise AssertionError(f"{exc}\n{hung.describe()}") from None
    return parse_run(result.returncode, result.stdout, result.stderr)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["revoke", "failure"])
def test_han_collective_interrupted_across_nodes(mpi_prefix, mpi_program, two_nodes, tmp_path, mode):
    """2 nodes x 2 ranks, coll/han on: an MPI_Allreduce that ranks 1-3 are in when rank 0 revokes the
    communicator (revoke), or that ranks 0-2 are in when rank 3 is killed (failure), returns an error at
    every survivor (REVOKED, resp. PROC_FAILED); then shrink and an allreduce on the result work.
    Three runs each. Without patch ompi/16 han's sub-communicators were not revoked and the survivors
    waited in them for ever (revoke: every run); with ompi/16 alone, a survivor that had not heard of
    the revoke or failure yet got MPI_SUCCESS and a wrong sum from what han forwarded after a failed
    step (revoke: 4 of 8 runs; failure: 3 of 10), which ompi/17 stops. Upstream's 5.0.11 returns
    MPI_SUCCESS with a wrong sum at every survivor, which this test counts as wrong too."""
    program = mpi_program("revoke/han_subcomms.c")
    survivors = [1, 2, 3] if mode == "revoke" else [0, 1, 2]
    everyone = [0, 1, 2, 3] if mode == "revoke" else survivors
    for attempt in range(3):
        marks = tmp_path / f"{mode}-{attempt}"
        marks.mkdir()
        kill = {3: "in_allreduce"} if mode == "failure" else None
        run = run_with_han(mpi_prefix, two_nodes, program, [mode, str(marks)], kill=kill, timeout=60)
        assert run.returncode == 0, f"run {attempt}: {run.describe()}"
        assert "coll:han" in run.stderr, f"han was not used:\n{run.describe()}"
        if mode == "failure":
            assert run.killed == {3: "in_allreduce"}, run.describe()
        else:
            assert run.value(0, "revoke") == OK, run.describe()
        assert_all(run, "first_allreduce", everyone, OK)
        assert_all(run, "first_sum", everyone, "4")
        assert_all(run, "allreduce_interrupted", survivors, REVOKED if mode == "revoke" else PF)
        assert_all(run, "shrink", everyone, OK)
        assert_all(run, "shrunk_size", everyone, str(len(everyone)))
        assert_all(run, "shrunk_allreduce", everyone, OK)
        assert_all(run, "shrunk_sum", everyone, str(len(everyone)))
        assert_all(run, "finished", everyone, "1")
