"""Whole-node loss under a recoverable job on the emulated cluster (PRRTE patches prrte/01-05, docs/nodeloss.md).

4 nodes x 2 ranks (slot mapping: node K runs world ranks 2K and 2K+1; node 0 also runs mpirun).

- The PRRTE side (always run): every rank runs a shell that reports ``started``, sleeps and reports
  ``finished``. Once all 8 started, the test SIGKILLs every process of the named nodes at once.
  mpirun must print one ``lost daemon`` line per node, let the other nodes' ranks finish, and exit
  0: the job survived, and the HNP could still reach every remaining daemon through the repaired
  routing tree to end them. One more test freezes a node (SIGSTOP) and declares it dead with
  'ftslide notify --node'.
- The MPI side: tests/mpi/nodeloss.c loops on MPI_Allreduce; once rank 0 reports
  ``loop=running`` the nodes are killed; the survivors must see MPIX_ERR_PROC_FAILED (or
  MPIX_ERR_REVOKED), shrink to exactly the other nodes' ranks, run 20 more allreduces and finalize.
  A leaf node, the relay of a chain, two chained nodes at once, a frozen node declared dead (a leaf,
  and the relay of a chain), and 20 runs killing a random node at a random time.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest

from harness.nodeloss import run as nodeloss_run
from mpiharness import MpiRun, parse_run
from test_netcluster import cluster, up  # noqa: F401  (the fixture removes the cluster)

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
              pytest.mark.mpi, pytest.mark.timeout(120)]
SHELL_RANK = 'echo "started rank=$OMPI_COMM_WORLD_RANK"; sleep 4; echo "finished rank=$OMPI_COMM_WORLD_RANK"'


NODES, SLOTS = 4, 2
JOB_TIMEOUT = 60


def node_ranks(node: int) -> list[int]:
    return [node * SLOTS + slot for slot in range(SLOTS)]


def run_and_take_nodes(cluster: str, program: Path, nodes: list[int], how: str = "kill", delay: float = 0.0,
                       mpirun_options: tuple[str, ...] = ()) -> MpiRun:
    """Run the program over the whole cluster and take ``nodes`` away ``delay`` s after rank 0
    reports the loop running (harness.nodeloss.run); fail on a hang."""
    result = nodeloss_run(cluster, program, NODES * SLOTS, ["20"], nodes, how=how, delay=delay,
                          mpirun_options=mpirun_options, timeout=JOB_TIMEOUT)
    run = parse_run(-9 if result.returncode is None else result.returncode, result.stdout, result.stderr)
    assert result.returncode is not None, f"hang after taking nodes {nodes} away ({how}):\n{run.describe()}"
    return run


def assert_survived(run: MpiRun, lost_nodes: list[int]) -> None:
    lost = sorted(rank for node in lost_nodes for rank in node_ranks(node))
    survivors = [rank for rank in range(NODES * SLOTS) if rank not in lost]
    detail = run.describe()
    for rank in lost:
        assert run.value(rank, "finalized") is None, f"rank {rank} of a killed node finished\n{detail}"
    # A rank's output travels to mpirun along the daemons' routing tree; lines in flight through a
    # relay at the moment it is killed are lost with it (docs/nodeloss.md), so a survivor behind
    # that relay may miss the lines it printed before the routing tree was repaired: its error and,
    # as the recovery itself runs over the processes' own connections (every process has every
    # other's address from MPI_Init, patch ompi/12), even its shrink's. Every line that arrived must
    # be right, and the lines printed once the survivors worked together again must all be there.
    def arrived(key: str) -> set[str]:
        return {value for value in run.values(key, survivors).values() if value is not None}

    errors = {rank: error for rank, error in run.values("error", survivors).items() if error is not None}
    assert set(errors.values()) <= {"MPIX_ERR_PROC_FAILED", "MPIX_ERR_REVOKED"}, f"{errors}\n{detail}"
    # a revoke comes from a survivor that saw the failure: its own line, or one lost in flight
    assert "MPIX_ERR_PROC_FAILED" in errors.values() or len(errors) < len(survivors), f"{errors}\n{detail}"
    assert arrived("shrink") == {"MPI_SUCCESS"}, detail
    assert arrived("survivors") == {str(len(survivors))}, detail
    assert arrived("left_out") == {",".join(map(str, lost))}, detail
    assert set(run.values("after", survivors).values()) == {"ok"}, detail
    assert set(run.values("finalized", survivors).values()) == {"1"}, detail
    assert run.stderr.count("lost daemon") == len(lost_nodes), detail  # one notice per lost node
    assert "lost communication with a remote daemon" not in run.stderr, detail
    assert run.returncode == 0, detail


def run_shell_job(cluster: str, nodes: list[int], how: str = "kill",
                  mpirun_options: tuple[str, ...] = ()) -> tuple[int | None, str, str]:
    """SHELL_RANK on every slot; the nodes go once all ranks started."""
    result = nodeloss_run(cluster, Path("/bin/sh"), NODES * SLOTS, ["-c", SHELL_RANK], nodes, how=how,
                          trigger="started", mpirun_options=mpirun_options, timeout=JOB_TIMEOUT,
                          trigger_count=NODES * SLOTS)
    return result.returncode, result.stdout, result.stderr


def assert_job_survived(result: tuple[int | None, str, str], lost_nodes: list[int]) -> None:
    returncode, out, err = result
    detail = f"exit {returncode}\n--- stdout\n{out}\n--- stderr\n{err[-3000:]}"
    survivors = [rank for rank in range(NODES * SLOTS) if rank // SLOTS not in lost_nodes]
    assert returncode == 0, detail
    assert sorted(int(rank) for rank in re.findall(r"^finished rank=(\d+)$", out, re.M)) == survivors, detail
    assert err.count("lost daemon") == len(lost_nodes), detail
    for node in lost_nodes:
        assert f"on node {netcluster_node_name(err, node)}" in err, detail
    assert "lost communication with a remote daemon" not in err, detail


def netcluster_node_name(err: str, node: int) -> str:
    match = re.search(rf"on node (\S+-n{node});", err)
    return match[1] if match else f"<node {node} not named>"


def test_job_survives_a_killed_node(cluster):
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    assert_job_survived(run_shell_job(cluster, [2]), [2])


def test_job_survives_the_loss_of_a_relay(cluster):
    """Routing radix 1: the daemons form the chain 0-1-2-3 and node 1's daemon relays for 2 and 3.
    After node 1 goes, the HNP must adopt daemon 2 and daemon 2 re-parent to the HNP, else the job
    could not be ended on nodes 2 and 3."""
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    assert_job_survived(run_shell_job(cluster, [1], mpirun_options=("--prtemca", "rml_base_radix", "1")), [1])


def test_job_survives_two_nodes_lost_at_once(cluster):
    """On the chain 0-1-2-3 the relay and the next relay go at once: the HNP adopts a lost daemon,
    finds it lost too when it sends to it, and must route past it to node 3."""
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    assert_job_survived(run_shell_job(cluster, [1, 2], mpirun_options=("--prtemca", "rml_base_radix", "1")), [1, 2])


def test_frozen_node_declared_dead_by_notify(cluster):
    """Node 3 is frozen (SIGSTOP: its connections stay open, nothing is detected), then
    'ftslide notify --node 3' declares it dead: the HNP handles it as a lost daemon."""
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    result = run_shell_job(cluster, [3], how="notify")
    assert "declared dead by the job manager" in result[2], result[2]
    assert_job_survived(result, [3])


@pytest.fixture
def nodeloss(mpi_program) -> Path:
    return mpi_program("nodeloss.c")


def test_leaf_node_lost_in_a_loop_of_collectives(cluster, nodeloss):
    """Node 2 (ranks 4, 5 and its daemon) is killed 0.1 s into the loop."""
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    assert_survived(run_and_take_nodes(cluster, nodeloss, [2], delay=0.1), [2])


def test_relay_node_lost(cluster, nodeloss):
    """With a routing radix of 1 the daemons form the chain 0-1-2-3: node 1's daemon relays for
    nodes 2 and 3. Killing node 1 orphans daemon 2; it must re-parent to the HNP and the HNP adopt it."""
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    run = run_and_take_nodes(cluster, nodeloss, [1], delay=0.1,
                             mpirun_options=("--prtemca", "rml_base_radix", "1"))
    assert_survived(run, [1])


def test_two_nodes_lost_at_once(cluster, nodeloss):
    """Nodes 1 and 2 are stopped together, then killed: on the chain 0-1-2-3 the relay and the next
    relay go at once, so the HNP adopts a lost daemon and must route past it to node 3."""
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    run = run_and_take_nodes(cluster, nodeloss, [1, 2], delay=0.1,
                             mpirun_options=("--prtemca", "rml_base_radix", "1"))
    assert_survived(run, [1, 2])


def test_frozen_relay_declared_dead_by_notify(cluster, nodeloss):
    """On the chain 0-1-2-3 node 2, the relay for node 3, is frozen in the loop and declared dead.
    Its connections stay open, so daemon 1 hands the failure reports of ranks 4 and 5 to the frozen
    daemon 2 and nothing tells node 3: its ranks 6 and 7 keep waiting for 4 and 5. Only the HNP's
    repeats of those reports, routed around daemon 2 once daemon 1 has handled the first copy,
    reach node 3 (patches prrte/04-05)."""
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    run = run_and_take_nodes(cluster, nodeloss, [2], how="notify", delay=0.1,
                             mpirun_options=("--prtemca", "rml_base_radix", "1"))
    assert "declared dead by the job manager" in run.stderr, run.describe()
    assert_survived(run, [2])


@pytest.mark.timeout(900)
def test_random_kill_times(cluster, nodeloss):
    """20 runs, each killing one of nodes 1..3 at a random time in the first 0.5 s of the loop."""
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    rng = random.Random(int(os.environ.get("FTSLIDE_NODELOSS_SEED", "20261121")))
    for attempt in range(20):
        node, delay = rng.randint(1, NODES - 1), rng.uniform(0.0, 0.5)
        run = run_and_take_nodes(cluster, nodeloss, [node], delay=delay)
        try:
            assert_survived(run, [node])
        except AssertionError as exc:
            raise AssertionError(f"run {attempt}: node {node} killed {delay:.3f} s in: {exc}") from None


def test_hung_node_declared_dead_by_notify(cluster, nodeloss):
    """Node 3 is frozen in the middle of the loop, then declared dead with 'ftslide notify --node 3':
    the survivors must recover as after a kill."""
    up(cluster, "--nodes", str(NODES), "--slots", str(SLOTS))
    run = run_and_take_nodes(cluster, nodeloss, [3], how="notify", delay=0.1)
    assert "declared dead by the job manager" in run.stderr, run.describe()
    assert_survived(run, [3])
