"""MPI_Finalize after one process died, when its daemon relays for others (patch prrte/22).

4 emulated nodes with one slot each (rank R on node R, its daemon is daemon R). With
``--prtemca rml_base_radix 1`` the daemons form the chain 0-1-2-3: daemon 1 relays every message of
daemons 2 and 3 to mpirun's, daemon 2 those of daemon 3. One rank is SIGKILLed (FTSLIDE_KILL) while
its daemon stays alive; the survivors then finalize, and ULFM's MPI_Finalize ends with a PMIx fence
over the survivors only (patch ompi/01), which the daemons gather up the chain.

Before prrte/22, a daemon released the job's data as soon as the last process of the job on its node
ended. When the fence's contribution of the daemons below it came through, it could no longer tell
which daemons take part ("Not found" in grpcomm create_dmns), dropped the contribution, and every
survivor waited in MPI_Finalize for ever: rank 2 or rank 1 killed on the chain, or rank 1 with radix
2 (daemon 1 relays daemon 3), hung in every run tried (7 with rank 2 on the chain, 1 with each of the
others). Rank 3 (the end of the chain, a relay for nobody) and the default radix (every daemon a child
of mpirun's) always finalized.

Two programs: tests/mpi/patterns/finalize_after_failure.c (revoke and finalize, no repair; every
survivor prints ``finalized=1`` once MPI_Finalize returned) and tests/mpi/conformance/shrink.c
(shrink, work on the shrunk communicators, finalize).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from ftslide.jobmgr import cluster as netcluster
from ftslide.toolchain import mpi
from harness.clusters import module_cluster
from mpiharness import OK, MpiRun, assert_all, parse_run

pytestmark = pytest.mark.mpi

NODES = 4
JOB_TIMEOUT = 45  # a run takes 2-3 s on an idle machine; a hang is waited for this long
CHAIN = ("--prtemca", "rml_base_radix", "1")
BINARY_TREE = ("--prtemca", "rml_base_radix", "2")


@pytest.fixture(scope="module")
def one_slot_cluster() -> Iterator[netcluster.Cluster]:
    """4 emulated nodes with one slot each; removed after the module's last test."""
    with module_cluster("fc", nodes=NODES, slots=1) as made:
        yield made


def run_with_kill(prefix: Path, cluster: netcluster.Cluster, program: Path, args: list[str], victim: int,
                  point: str, options: tuple[str, ...]) -> MpiRun:
    """np 4 across the cluster with ``victim`` SIGKILLed at ``point``; a hang is an AssertionError with the
    stacks of every process still there."""
    env = {**netcluster.launch_environment(), "FTSLIDE_KILL": f"{victim}@{point}"}
    try:
        result = mpi.run(prefix, [*options, "-np", str(NODES), str(program), *args], timeout=JOB_TIMEOUT,
                         env=env, stacks_on_timeout=True, wrap=lambda argv: netcluster.job_argv(cluster, argv))
    except mpi.MpirunTimeout as exc:
        hung = parse_run(-9, exc.stdout, exc.stderr)
        raise AssertionError(f"{exc}\n{hung.describe()}\n--- stacks\n{exc.stacks[-12000:]}") from None
    return parse_run(result.returncode, result.stdout, result.stderr)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("options, victim", [(CHAIN, 2), (CHAIN, 1), (BINARY_TREE, 1), (CHAIN, 3), ((), 2)],
                         ids=["chain-rank2", "chain-rank1", "radix2-rank1", "chain-end-rank3", "default-rank2"])
def test_survivors_finalize_when_a_relay_lost_its_process(options, victim, mpi_prefix, mpi_program,
                                                           one_slot_cluster):
    """finalize_after_failure, rank ``victim`` killed at iteration 5, twice: every survivor returns from
    MPI_Finalize and the job ends with 0."""
    program = mpi_program("patterns/finalize_after_failure.c")
    survivors = [rank for rank in range(NODES) if rank != victim]
    for _ in range(2):
        run = run_with_kill(mpi_prefix, one_slot_cluster, program, ["20"], victim, "iter=5", options)
        assert run.killed == {victim: "iter=5"}, run.describe()
        assert_all(run, "outcome", survivors, "ok")
        assert_all(run, "finalized", survivors, "1")
        assert run.value(victim, "finalized") is None, run.describe()
        assert run.returncode == 0, run.describe()


@pytest.mark.timeout(300)
def test_survivors_finalize_after_a_shrink_on_the_chain(mpi_prefix, mpi_program, one_slot_cluster):
    """conformance/shrink.c on the chain with rank 2 killed after the first barrier: both shrinks leave
    ranks 0, 1 and 3, an allreduce works on each, the survivors report finishing, and MPI_Finalize returns everywhere (the job ends with 0)."""
    program = mpi_program("conformance/shrink.c")
    for _ in range(2):
        run = run_with_kill(mpi_prefix, one_slot_cluster, program, [], 2, "after_barrier", CHAIN)
        assert run.killed == {2: "after_barrier"}, run.describe()
        assert_all(run, "shrink_a", [0, 1, 3], OK)
        assert_all(run, "shrink_b", [0, 1, 3], OK)
        for name in ("a", "b"):
            assert_all(run, f"{name}_order", [0, 1, 3], "0,1,3")
            assert_all(run, f"{name}_allreduce", [0, 1, 3], OK)
        assert_all(run, "finished", [0, 1, 3], "1")
        assert run.returncode == 0, run.describe()
