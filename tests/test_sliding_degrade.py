"""Running on when spares run out (issue 38): the sliding runtime's `--on-no-spare degrade`
(SLIDING_INFO_ON_NO_SPARE), through heat2d (sliding/examples/heat2d.c).

The grid is mesh:3x3 with the spare line x:1: 6 node ranks (a 2x3 rank grid) on nodes 0-5 (node = 3 x + y),
spares 6-8, method simple. Nodes 0, 1 and 2 die at iterations 8, 14 and 20 and take the three spares; node 3
dies at iteration 26, when none is left. Without degrade every process stops with ERR_NO_SPARE; with it the
core (slide_map_degrade) gives node 3's rank to the least loaded live node nearest its neighbours, the
survivors start a guest there (MPI_Comm_spawn of heat2d on that node's host), and the run must end with the
failure-free checksum and valid=yes. Then the guest's host dies (its guest with it), or the guest alone
(its id, nodes + 0 = 9, named in FTSLIDE_KILL), or a survivor during the spawn (recovery_spawn): each is one
more recovery, and the answer stays the failure-free one. Every test says which node dies where, and checks
that exactly those kills landed.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ftslide.sliding import core
from ftslide.sliding import runtime as stencil
from ftslide.toolchain import mpi
from test_build import ftslide

pytestmark = pytest.mark.mpi

GRID, SPARES, METHOD, NODES = "mesh:3x3", "x:1", "simple", 9
SIZE = ("40", "30", "44")            # nx ny iterations (heat2d), checkpoints every 5
OUT_OF_SPARES = ("0@iter=8", "1@iter=14", "2@iter=20", "3@iter=26")
TIMEOUT = 150


@pytest.fixture(scope="module")
def reference(mpi_prefix: Path, heat2d: list[str]) -> str:
    run = launch(mpi_prefix, heat2d, [], ())
    assert run.returncode == 0 and run.checksum and run.valid, run.stdout + run.stderr
    return run.checksum


def launch(prefix: Path, program: list[str], options: list[str], kills: tuple[str, ...],
           k: int = 1) -> stencil.StencilRun:
    env = {"FTSLIDE_KILL": ",".join(kills)} if kills else {}
    emulate = ["--emulate-nodes", str(k)] if k > 1 else []
    result = mpi.run(prefix, ["--oversubscribe", "-np", str(NODES * k), *program, *emulate, *options,
                              GRID, SPARES, METHOD, *SIZE], timeout=TIMEOUT, env=env)
    run = stencil.parse(result.returncode, result.stdout, result.stderr, "heat2d")
    landed = {f"{node}@{point}" for node, point in run.killed.items()}
    assert landed == set(kills), f"kills that landed {sorted(landed)}, planned {sorted(kills)}\n{result.stderr}"
    return run


def guest_host(failed: list[int]) -> int:
    """The node the core puts the first guest on after `failed` (what the runtime will do)."""
    degraded = core.degrade_map((GRID, SPARES), METHOD, failed)
    assert len(degraded.hosts) == 1, degraded
    return degraded.hosts[0]


def finished(run: stencil.StencilRun, reference: str) -> bool:
    return run.returncode == 0 and run.checksum == reference and bool(run.valid)


def test_out_of_spares_ends_without_degrade(mpi_prefix, heat2d):
    """The fourth failure finds no spare: ERR_NO_SPARE at every process, as before."""
    run = launch(mpi_prefix, heat2d, [], OUT_OF_SPARES)
    assert run.returncode != 0
    assert run.errors and {e.status for e in run.errors} == {stencil.Status.ERR_NO_SPARE}, run.stdout + run.stderr


@pytest.mark.parametrize("k", [1, 2])
def test_degrade_runs_on_with_a_guest(mpi_prefix, heat2d, reference, k):
    """The fourth failure starts a guest (K processes) beside a live node's block: the failure-free answer."""
    run = launch(mpi_prefix, heat2d, ["--on-no-spare", "degrade"], OUT_OF_SPARES, k)
    assert finished(run, reference), run.stdout + run.stderr
    assert [r.guests for r in run.recoveries] == [0, 0, 0, 1], run.stdout
    assert run.recoveries[-1].failed == [0, 1, 2, 3]


def test_guest_dies_with_its_host(mpi_prefix, heat2d, reference):
    """After degrading, the guest's host dies at iteration 32: its own rank and the guest's move again
    (onto new guests of the least loaded nodes), the answer stays right."""
    host = guest_host([0, 1, 2, 3])
    run = launch(mpi_prefix, heat2d, ["--on-no-spare", "degrade"], (*OUT_OF_SPARES, f"{host}@iter=32"))
    assert finished(run, reference), run.stdout + run.stderr
    last = run.recoveries[-1]
    assert host in last.failed and NODES in last.failed, last  # the host, and guest 0 (id 9) with it
    expected = core.degrade_map((GRID, SPARES), METHOD, last.failed)
    assert last.guests == sum(n >= NODES for n in expected.serving) == 2, (last, expected)


def test_guest_dies_alone(mpi_prefix, heat2d, reference):
    """The guest's processes die alone (FTSLIDE_KILL names guest id 9) at iteration 32: its rank gets a
    new guest, the answer stays right."""
    run = launch(mpi_prefix, heat2d, ["--on-no-spare", "degrade"], (*OUT_OF_SPARES, f"{NODES}@iter=32"))
    assert finished(run, reference), run.stdout + run.stderr
    assert run.recoveries[-1].failed == [0, 1, 2, 3, NODES] and run.recoveries[-1].guests == 1


def test_survivor_dies_while_guests_start(mpi_prefix, heat2d, reference):
    """Node 4 dies at recovery_spawn of the fourth recovery, before the guest starts: the recovery starts
    again with nodes 3 and 4 lost (two ranks on guests; a guest the first map put on node 4 never
    starts), the answer stays right."""
    run = launch(mpi_prefix, heat2d, ["--on-no-spare", "degrade"], (*OUT_OF_SPARES, "4@recovery_spawn"))
    assert finished(run, reference), run.stdout + run.stderr
    assert set(run.recoveries[-1].failed) == {0, 1, 2, 3, 4} and run.recoveries[-1].guests == 2, \
        run.recoveries[-1]


@pytest.mark.parametrize("method", ["hybrid", "slide1d"])
def test_bystander_dies_before_the_spawn(mpi_prefix, heat2d, method):
    """heat2d's campaign layout (mesh:4x3, x:1: 9 node ranks, 3 spares): four workers die one after
    another, the fourth recovery starts a guest, and node 7, which holds a rank, dies at recovery_spawn.
    Before the agreement that opens the spawn, the guest's MPI_Init met its dead parent and aborted the
    whole job (3 of 3 campaign runs, `ftslide faults --app heat2d --on-no-spare degrade --phases all
    --seed 600`, runs 15, 30, 45); now the failure is noticed first and the recovery starts again."""
    kills = ("8@iter=18", "5@iter=20", "3@iter=24", "4@iter=25", "7@recovery_spawn")
    env = {"FTSLIDE_KILL": ",".join(kills)}
    args = ["--oversubscribe", "-np", "12", *heat2d, "--on-no-spare", "degrade", "mesh:4x3", "x:1", method]
    result = mpi.run(mpi_prefix, args, timeout=TIMEOUT, env=env)
    reference = mpi.run(mpi_prefix, args, timeout=TIMEOUT)
    run, free = (stencil.parse(r.returncode, r.stdout, r.stderr, "heat2d") for r in (result, reference))
    assert {f"{n}@{p}" for n, p in run.killed.items()} == set(kills), result.stderr
    assert free.returncode == 0 and free.checksum, reference.stdout + reference.stderr
    assert finished(run, free.checksum), result.stdout + result.stderr
    assert run.recoveries[-1].guests >= 1, run.recoveries[-1]


@pytest.mark.parametrize("lang", ["c", "fortran", "python"])
def test_main_job_runs_on_degraded_in_every_language(mpi_prefix, lang):
    """The main job (jacobi3d on torus:3x2x2, x:1, hybrid: 8 ranks, 4 spares) loses nodes 0, 4, 1, 3
    and 2 at iterations 6, 10, 14, 18 and 22, each holding a rank when it dies: the fifth failure finds
    no spare, starts a guest (a C, Fortran or Python process spawned from the program's command line),
    and the checksum equals the failure-free run's."""
    kills = [arg for node_iter in ("0@6", "4@10", "1@14", "3@18", "2@22") for arg in ("--kill", node_iter)]
    result = ftslide("demo", "--lang", lang, "--on-no-spare", "degrade", *kills, timeout=TIMEOUT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 recoveries" in result.stdout and ": PASS" in result.stdout, result.stdout


def test_no_slot_for_the_guests_is_out_of_spares(mpi_prefix, heat2d):
    """Nine slots for nine processes and no oversubscription: the guest of the fourth failure cannot be
    spawned, nobody died meanwhile, so every survivor stops with ERR_NO_SPARE at once (not after
    MAX_ATTEMPTS spawns) and one line says why and what to allow."""
    host = socket.gethostname()
    # (the launcher's default mapping allows oversubscription: this run says it does not)
    env = {"FTSLIDE_KILL": ",".join(OUT_OF_SPARES), "PRTE_MCA_rmaps_default_mapping_policy": ":nooversubscribe"}
    result = mpi.run(mpi_prefix, ["--bind-to", "none", "--host", f"{host}:{NODES}", "-np", str(NODES), *heat2d, "--on-no-spare",
                                  "degrade", GRID, SPARES, METHOD, *SIZE], timeout=TIMEOUT, env=env)
    run = stencil.parse(result.returncode, result.stdout, result.stderr, "heat2d")
    assert {e.status for e in run.errors} == {stencil.Status.ERR_NO_SPARE}, result.stdout + result.stderr
    assert len(run.recoveries) == 3, run.recoveries
    lines = [line for line in result.stderr.splitlines() if "guests could not be started" in line]
    assert len(lines) == 1 and "--oversubscribe" in lines[0], result.stderr


def test_bad_on_no_spare_is_refused_everywhere(mpi_prefix, heat2d):
    """An unknown value: ERR_INFO at every process, nothing runs."""
    run = launch(mpi_prefix, heat2d, ["--on-no-spare", "shrink"], ())
    assert run.returncode != 0
    assert {e.status for e in run.errors} == {stencil.Status.ERR_INFO}, run.stdout + run.stderr
