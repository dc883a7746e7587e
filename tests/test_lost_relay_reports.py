"""The end of a process reaches mpirun when a relay daemon dies with the report (patch prrte/26).

5 emulated nodes with one slot each, the daemons in a chain (``--prtemca rml_base_radix 1``):
0-1-2-3-4, rank R on node R. A daemon reports the end of its node's processes to mpirun up the
chain, so daemon 2 relays the reports of daemons 3 and 4. Each rank is a shell that waits for a go
file, prints ``done R`` and exits with the code the test gives it, so the test orders the events:

1. every rank runs; node 2 is frozen (SIGSTOP to its daemon and rank 2);
2. ranks 3 and 4 end: their daemons' reports go into the frozen relay's socket;
3. node 2 is killed whole (its daemon and rank 2, SIGKILL);
4. ranks 0 and 1 end.

Before prrte/26 the reports of daemons 3 and 4 died with daemon 2, mpirun never counted ranks 3
and 4 as ended and waited for ever with every process gone (the launcher hang of issue 38's
campaigns, where the relay died at the end of the job): 2 hangs in 2 runs. A daemon now keeps its
report and sends it again when it learns of the loss (prrte/23's kept reports).

mpirun acts on each end once: an end counted twice ends the job under processes still running.
Without the freeze (step 1) the reports arrive and are sent again. And a process that exits non-zero
was counted twice even without a loss (its own report, then its daemon's report of the job's local
end): ranks 3 and 4 exiting 3 ended the job at step 3, killing ranks 0 and 1 before they printed, and
with no node lost at all, ranks 2, 3 and 4 exiting 3 killed ranks 0 and 1 (the last test).
Every test of this module failed on the build before prrte/26 (FTSLIDE_MPI=<that prefix>).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from ftslide.jobmgr import cluster as netcluster
from ftslide.toolchain import mpi
from harness.clusters import module_cluster

pytestmark = pytest.mark.mpi

NODES = 5
RELAY = 2  # the frozen, then killed, relay: daemon 2 relays daemons 3 and 4
BELOW, ABOVE = (3, 4), (0, 1)
JOB_TIMEOUT = 40  # a run takes about 5 s on an idle machine; a hang is waited for this long
STEP_TIMEOUT = 20.0


@pytest.fixture(scope="module")
def chain_cluster() -> Iterator[netcluster.Cluster]:
    """5 emulated nodes with one slot each; removed after the module's last test."""
    with module_cluster("lr", nodes=NODES, slots=1) as made:
        yield made


def rank_script(go: Path, code_below: int) -> str:
    """Rank R waits for the file go.R, prints 'done R' and exits (ranks 3 and 4 with ``code_below``)."""
    return (f'r=$OMPI_COMM_WORLD_RANK; while [ ! -e {go}.$r ]; do sleep 0.05; done; echo done $r; '
            f'case $r in {BELOW[0]}|{BELOW[1]}) exit {code_below};; esac')


def wait_for(what: str, condition, failures: list[str]) -> bool:
    deadline = time.monotonic() + STEP_TIMEOUT
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    failures.append(f"{what} within {STEP_TIMEOUT:g} s")
    return False


def rank_running(cluster: netcluster.Cluster, node: int, go: Path) -> bool:
    """The rank's shell of this run runs on ``node`` (a shell whose command line names the go file)."""
    for pid in netcluster.namespace_pids(cluster.namespace(node)):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sh" \
                    and str(go).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def release_every_rank(go: Path) -> None:
    for rank in range(NODES):
        Path(f"{go}.{rank}").touch()


def drive(cluster: netcluster.Cluster, go: Path, freeze: bool, failures: list[str]) -> None:
    """Steps 1-4 of the module's docstring; what did not happen goes to ``failures``."""
    if not wait_for("every rank running", lambda: all(rank_running(cluster, n, go) for n in range(NODES)),
                    failures):
        return
    if freeze:  # the whole node: its daemon (two prted processes, one waiting for the other) and rank 2
        for pid in netcluster.namespace_pids(cluster.namespace(RELAY)):
            os.kill(pid, signal.SIGSTOP)
    for rank in BELOW:
        Path(f"{go}.{rank}").touch()
    if not wait_for("ranks 3 and 4 ended", lambda: not any(rank_running(cluster, n, go) for n in BELOW), failures):
        return
    time.sleep(1.0)  # their daemons' reports are on their way (in the frozen relay's socket)
    netcluster.kill_namespaces([cluster.namespace(RELAY)])
    for rank in ABOVE:
        Path(f"{go}.{rank}").touch()


def run_driven(prefix: Path, cluster: netcluster.Cluster, script: str, driver, release) -> mpi.MpiResult:
    """np 5 shell ranks running ``script`` on the chain while ``driver(failures)`` orders the steps in a
    thread; ``release()`` then lets every rank still waiting go, whatever happened. A hang is an
    AssertionError with the steps not done and the stacks; a step not done, one after the run."""
    failures: list[str] = []
    thread = threading.Thread(target=driver, args=(failures,))
    thread.start()
    try:
        result = mpi.run(prefix, ["--prtemca", "rml_base_radix", "1", "-np", str(NODES), "sh", "-c", script],
                         timeout=JOB_TIMEOUT, env=netcluster.launch_environment(), stacks_on_timeout=True,
                         wrap=lambda argv: netcluster.job_argv(cluster, argv))
    except mpi.MpirunTimeout as exc:
        raise AssertionError(f"mpirun never ended ({failures or 'every step done'}):\n{exc.stderr[-3000:]}\n"
                             f"--- stacks\n{exc.stacks[-6000:]}") from None
    finally:
        release()
        thread.join()
    assert not failures, failures
    return result


@pytest.mark.timeout(200)
@pytest.mark.parametrize("freeze, code_below", [(True, 0), (True, 3), (False, 3)],
                         ids=["relay-frozen", "relay-frozen-nonzero", "nonzero-counted-once"])
def test_every_end_reaches_mpirun_once_when_a_relay_dies(freeze, code_below, mpi_prefix, chain_cluster,
                                                          tmp_path):
    """Ranks 3 and 4 end (exit ``code_below``) while relay daemon 2 is frozen (or not), node 2 is
    killed, then ranks 0 and 1 end: mpirun ends the job with every survivor's output, rank 2 reported
    lost, and the job's code (3 when ranks 3 and 4 exited 3, else 0)."""
    go = tmp_path / "go"
    result = run_driven(mpi_prefix, chain_cluster, rank_script(go, code_below),
                        lambda failures: drive(chain_cluster, go, freeze, failures),
                        lambda: release_every_rank(go))
    assert f"lost daemon [prterun-{chain_cluster.name}-n0-" in result.stderr and f",{RELAY}] on node" \
        in result.stderr, result.stderr[-3000:]
    printed = sorted(line for line in result.stdout.splitlines() if line.startswith("done "))
    assert [f"done {r}" for r in ABOVE] == [line for line in printed if int(line.split()[1]) in ABOVE], \
        (printed, result.stderr[-3000:])
    assert "done 2" not in printed
    if not freeze:
        assert [f"done {r}" for r in BELOW] == [line for line in printed if int(line.split()[1]) in BELOW]
    assert result.returncode == code_below, (result.returncode, result.stderr[-3000:])


@pytest.mark.timeout(200)
def test_non_zero_exits_are_counted_once_without_a_loss(mpi_prefix, chain_cluster, tmp_path):
    """Ranks 2, 3 and 4 exit 3 while ranks 0 and 1 still run, no node lost: both still print and exit,
    the job's code is 3. Before prrte/26 prterun counted each non-zero exit twice (its own report and its
    daemon's report of the job's local end), reached 5 ends with 3 processes gone, and killed ranks 0
    and 1 (3 runs of 3 on 4 nodes with 2 of them exiting 3)."""
    go = tmp_path / "go"
    script = (f'r=$OMPI_COMM_WORLD_RANK; case $r in 2|3|4) exit 3;; esac; '
              f'while [ ! -e {go} ]; do sleep 0.05; done; echo done $r')

    def release_when_three_ended(failures: list[str]) -> None:
        if wait_for("ranks 2, 3 and 4 ended", lambda: all(
                not rank_running(chain_cluster, n, go) for n in (2, 3, 4)) and rank_running(chain_cluster, 1, go),
                failures):
            time.sleep(1.0)  # their reports reach mpirun
        go.touch()

    result = run_driven(mpi_prefix, chain_cluster, script, release_when_three_ended, go.touch)
    assert sorted(line for line in result.stdout.splitlines() if line.startswith("done ")) == ["done 0", "done 1"], \
        (result.stdout, result.stderr[-3000:])
    assert result.returncode == 3, (result.returncode, result.stderr[-3000:])
