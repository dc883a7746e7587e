"""First contact with a peer after a failure: the address lookup of a process that has ended.

tests/mpi/conformance/first_contact.c at np 4: rank 3 is SIGKILLed before anyone sent it anything;
then ranks 0-2 send to and receive from a live peer they never talked to and the dead one, and rank
0's PMIx request for a key rank 3 never posts, made while rank 3 was alive, must end. With
`--mca mpi_add_procs_cutoff 0` (5.0.7's default; ours is 4,096, patch ompi/12) a process on another
node is added at the first message to it and its address is looked up then, by a direct-modex
request through the daemons. Before patches prrte/20 and ompi/30 the daemon of a dead process left
such a request waiting for ever once it had released the job's data (the last process of the job on
its node gone): the sender stayed in PMIx_Get under MPI_Send, and rank 0's request never ended.

On one node every peer is added at MPI_Init (they are all local), so nothing is looked up on the
failure path there: those runs guard the answers, not the fix. Across the emulated cluster (one slot
per node, so rank 3 is alone on its node) both cutoffs are run; the parked request fails the old
build in both, the send to the dead peer with the lazy cutoff only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from ftslide.jobmgr import cluster as netcluster
from ftslide.toolchain import mpi
from ftslide.toolchain.mpi import compile_program
from harness.clusters import module_cluster
from mpiharness import MPI_SOURCES, OK, PF, MpiRun, assert_all, parse_run

pytestmark = pytest.mark.mpi

VICTIM, POINT = 3, "before_first_contact"
CUTOFFS = pytest.mark.parametrize("cutoff", [("--mca", "mpi_add_procs_cutoff", "0"), ()], ids=["lazy", "at-init"])


@pytest.fixture(scope="module")
def first_contact(mpi_prefix: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program, linked with PMIx too (rank 0 calls PMIx_Get_nb itself)."""
    return compile_program(mpi_prefix, [MPI_SOURCES / "conformance" / "first_contact.c"], name="first_contact",
                           flags=("-O2", "-Wall"), out_dir=tmp_path_factory.mktemp("first-contact"),
                           include_dirs=[MPI_SOURCES], link=("-lpmix",))


@pytest.fixture(scope="module")
def one_slot_cluster() -> Iterator[netcluster.Cluster]:
    """4 emulated nodes with one slot each (rank R on node R); removed afterwards."""
    with module_cluster("f", nodes=4, slots=1) as made:
        yield made


def run_first_contact(prefix: Path, program: Path, marks: Path, options: tuple[str, ...],
                      cluster: netcluster.Cluster | None = None, timeout: float = 60) -> MpiRun:
    """One run of the program with rank 3 killed; a hang is an AssertionError with every stuck stack."""
    marks.mkdir()
    env = {"FTSLIDE_KILL": f"{VICTIM}@{POINT}"}
    wrap = None
    if cluster is not None:
        env.update(netcluster.launch_environment())
        wrap = lambda argv: netcluster.job_argv(cluster, argv)  # noqa: E731
    try:
        result = mpi.run(prefix, [*options, "-np", "4", str(program), str(marks)], timeout=timeout, env=env,
                         stacks_on_timeout=True, wrap=wrap)
    except mpi.MpirunTimeout as exc:
        hung = parse_run(-9, exc.stdout, exc.stderr)
        raise AssertionError(f"{exc}\n{hung.describe()}\n--- stacks\n{exc.stacks[-12000:]}") from None
    return parse_run(result.returncode, result.stdout, result.stderr)


def assert_first_contacts(run: MpiRun) -> None:
    """What every run must report: live peers reached, the dead one failed, the parked request ended."""
    assert run.returncode == 0, run.describe()
    assert run.killed == {VICTIM: POINT}, run.describe()
    assert_all(run, "finished", [0, 1, 2], "1")
    # rank 0: a live peer never talked to, after the failure
    assert (run.value(0, "send_to_live"), run.value(0, "recv_from_live"), run.value(0, "live_value")) == \
        (OK, OK, "101"), run.describe()
    assert (run.value(1, "recv_from_0"), run.value(1, "value_from_0"), run.value(1, "send_to_0")) == \
        (OK, "100", OK), run.describe()
    # the request made while rank 3 was alive ended with an error, well before rank 0 gave up (20 s)
    assert run.value(0, "parked_get_issued") == "1", run.describe()
    assert run.value(0, "parked_get") == "error", run.describe()
    assert float(run.value(0, "parked_seconds") or "inf") < 10, run.describe()
    assert run.value(0, "recv_from_dead") == PF, run.describe()
    # rank 2: the dead peer first (a send may be buffered, but never an other error), then a live one
    assert run.value(2, "send_to_dead") in (OK, PF), run.describe()
    assert run.value(2, "recv_from_dead") == PF, run.describe()
    assert run.value(2, "send_to_live") == OK, run.describe()
    assert (run.value(1, "recv_from_2"), run.value(1, "value_from_2")) == (OK, "102"), run.describe()


@pytest.mark.timeout(300)
@CUTOFFS
def test_first_contact_after_a_failure_on_one_node(cutoff, mpi_prefix, first_contact, tmp_path):
    """np 4 on this machine, 3 runs: right answers, nothing waits."""
    for attempt in range(3):
        run = run_first_contact(mpi_prefix, first_contact, tmp_path / f"run{attempt}", cutoff)
        assert_first_contacts(run)


@pytest.mark.timeout(600)
@CUTOFFS
def test_first_contact_after_a_failure_across_nodes(cutoff, mpi_prefix, first_contact, one_slot_cluster, tmp_path):
    """np 4 over 4 emulated nodes, 3 runs. Before prrte/20 and ompi/30: with the lazy cutoff rank 2
    waited for ever in PMIx_Get under its MPI_Send to rank 3 (3 runs of 3), and with either cutoff rank
    0's PMIx request for rank 3 never ended; now rank 2's send returns MPIX_ERR_PROC_FAILED at once."""
    for attempt in range(3):
        run = run_first_contact(mpi_prefix, first_contact, tmp_path / f"run{attempt}", cutoff,
                                cluster=one_slot_cluster, timeout=90)
        assert_first_contacts(run)
        if cutoff:
            # the send looked the dead peer's address up, and got the runtime's refusal as a failure
            assert run.value(2, "send_to_dead") == PF, run.describe()
