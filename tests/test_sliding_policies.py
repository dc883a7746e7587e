"""Redundancy policies, failure domains and the file level of the sliding runtime (issue 38), through heat2d
(sliding/examples/heat2d.c), which takes them as runtime options (sliding_create_args).

The grid is mesh:5x4 with the spare line x:1: 16 node ranks (a 4x4 rank grid) on nodes 0-15 (node = 4 x + y),
spares 16-19, method simple (a failed rank moves to a free spare: up to 4 failures anywhere). Node rank r starts
on node r; buddies are r and r + 8; the groups of parity:4 and rs:4,2 (4 groups of 4) deal the node ranks
ordered by (domain, node rank) round-robin (slide_groups), so without domains group g = {g, g+4, g+8, g+12}.

Which nodes die where, in each test: one node at the start of iteration 12 and the others of the set at
recovery_agree of the recovery it starts, so that the recovery that succeeds sees them all at once. The
verdicts: every survivor returns the status the policy promises (heat2d prints `error step=recovery
status=ERR_DATA_LOST` at every process, or rank 0 prints the failure-free checksum with valid=yes).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ftslide.sliding import runtime as stencil
from ftslide.toolchain import mpi

pytestmark = pytest.mark.mpi

GRID, SPARES, METHOD, NP = "mesh:5x4", "x:1", "simple", 20
SIZE = ("50", "37", "40")
TIMEOUT = 120


@pytest.fixture(scope="module")
def reference(mpi_prefix: Path, heat2d: list[str]) -> str:
    """The failure-free checksum (buddy, no file level)."""
    run = launch(mpi_prefix, heat2d, [])
    assert run.returncode == 0 and run.checksum and run.valid, run.stdout + run.stderr
    return run.checksum


def launch(prefix: Path, program: list[str], options: list[str], dead: tuple[int, ...] = (),
           size: tuple[str, ...] = SIZE) -> stencil.StencilRun:
    """heat2d with `options`; the first node of `dead` dies at iter=12, the others at recovery_agree."""
    kills = [f"{dead[0]}@iter=12", *(f"{node}@recovery_agree" for node in dead[1:])] if dead else []
    env = {"FTSLIDE_KILL": ",".join(kills)} if kills else {}
    result = mpi.run(prefix, ["--oversubscribe", "-np", str(NP), *program, *options, GRID, SPARES, METHOD, *size],
                     timeout=TIMEOUT, env=env)
    run = stencil.parse(result.returncode, result.stdout, result.stderr, "heat2d")
    assert set(run.killed) == set(dead), f"kills that landed {run.killed}, planned {dead}\n{result.stderr}"
    return run


def statuses(run: stencil.StencilRun) -> set[str]:
    return {error.status.name if error.status is not None else error.step for error in run.errors}


def recovered(run: stencil.StencilRun, reference: str) -> bool:
    return run.returncode == 0 and run.checksum == reference and bool(run.valid)


@pytest.mark.parametrize("policy, dead, survives", [
    ("buddy", (5,), True),
    ("buddy", (5, 13), False),         # 5 and 13 = 5 + 8: buddies
    ("parity:4", (5,), True),
    ("parity:4", (5, 6), True),        # groups 1 and 2: one member each
    ("parity:4", (5, 13), False),      # group 1 loses two
    ("rs:4,2", (5, 13), True),         # group 1 loses two: M = 2
    ("rs:4,2", (1, 5, 13), False),     # group 1 loses three
    ("rs:8,3", (1, 3, 5), True),       # groups of 8 ({odd}, {even}): three of one
], ids=lambda v: str(v).replace(" ", ""))
def test_policy_survives_what_it_promises(mpi_prefix, heat2d, reference, policy, dead, survives):
    """One recovery that sees `dead` at once: the failure-free checksum exactly when the policy rebuilds
    every lost checkpoint, else ERR_DATA_LOST at every process (never a wrong answer, never a hang)."""
    run = launch(mpi_prefix, heat2d, ["--redundancy", policy], dead)
    if survives:
        assert recovered(run, reference), run.stdout + run.stderr
        assert sorted(run.recoveries[-1].failed) == sorted(dead)
    else:
        assert run.returncode != 0 and run.checksum is None, run.stdout
        assert statuses(run) == {"ERR_DATA_LOST"}, run.stderr


def test_two_processes_per_node(mpi_prefix, heat2d, reference):
    """K = 2 (every two consecutive processes a node) on mesh:5x2 x:1, 8 node ranks in 2 groups of 4 ({0,2,4,6},
    {1,3,5,7}): nodes 1 and 3 die (1 at iter=12, 3 at recovery_agree), and rs:4,2 rebuilds both lanes of both."""
    result = mpi.run(mpi_prefix, ["--oversubscribe", "-np", "20", *heat2d, "--emulate-nodes", "2", "--redundancy",
                                  "rs:4,2", "mesh:5x2", "x:1", "simple", *SIZE],
                     timeout=TIMEOUT, env={"FTSLIDE_KILL": "1@iter=12,3@recovery_agree"})
    run = stencil.parse(result.returncode, result.stdout, result.stderr, "heat2d")
    assert set(run.killed) == {1, 3}, result.stderr
    assert recovered(run, reference), result.stdout + result.stderr


def test_domains_spread_the_groups(mpi_prefix, heat2d, reference):
    """A whole domain dies: the row y = 0 (nodes 0, 4, 8, 12). Without domains parity:4's group 0 is that row
    and loses four members; with --domains 5x1 (rows as domains) every group holds one node of the row."""
    row = (0, 4, 8, 12)
    run = launch(mpi_prefix, heat2d, ["--redundancy", "parity:4"], row)
    assert statuses(run) == {"ERR_DATA_LOST"}, run.stdout + run.stderr
    run = launch(mpi_prefix, heat2d, ["--redundancy", "parity:4", "--domains", "5x1"], row)
    assert recovered(run, reference), run.stdout + run.stderr
    run = launch(mpi_prefix, heat2d, ["--domains", "5x1"], row)  # buddy: r and r + 8 in other rows
    assert recovered(run, reference), run.stdout + run.stderr


def test_domains_in_the_coordinate_file(mpi_prefix, heat2d, reference, tmp_path):
    """The same rows as domain= fields of the node coordinate file (nodes named by --emulate-nodes 1 keys)."""
    coords = tmp_path / "nodes.txt"
    coords.write_text("".join(f"{n} domain=row{n % 4 if n < 16 else 'spare'}\n" for n in range(NP)))
    run = launch(mpi_prefix, heat2d, ["--emulate-nodes", "1", "--node-coords", str(coords), "--redundancy",
                                      "parity:4"], (0, 4, 8, 12))
    assert recovered(run, reference), run.stdout + run.stderr


def test_file_level_rolls_back_when_memory_cannot(mpi_prefix, heat2d, reference, tmp_path):
    """Buddies 5 and 13 die together (5 at iteration 32, 13 in the recovery): with --checkpoint-dir every rank
    goes back to the newest complete file checkpoint and the run ends with the failure-free checksum. A
    manifest names a version only once every rank's file is on disk, which fsync under load can delay past
    any iteration; so a first job of 20 iterations (whose end waits for its last file and commits the
    manifest) leaves one for sure, and the second job, 40 iterations from the same directory, resumes at it,
    loses both buddies at iteration 32 and rolls back to a file checkpoint no older than that manifest's."""
    directory = ["--checkpoint-dir", str(tmp_path / "ck"), "--file-every", "1"]
    first = launch(mpi_prefix, heat2d, directory, size=("50", "37", "20"))
    assert first.returncode == 0, first.stderr
    manifest = (tmp_path / "ck" / "manifest").read_text()
    resumed_at = int(re.search(r"^version (\d+)$", manifest, re.M).group(1))
    result = mpi.run(mpi_prefix, ["--oversubscribe", "-np", str(NP), *heat2d, *directory, GRID, SPARES, METHOD,
                                  *SIZE], timeout=TIMEOUT, env={"FTSLIDE_KILL": "5@iter=32,13@recovery_agree"})
    run = stencil.parse(result.returncode, result.stdout, result.stderr, "heat2d")
    assert set(run.killed) == {5, 13}, result.stderr
    assert recovered(run, reference), result.stdout + result.stderr
    # a file checkpoint: at least the first job's, older than the memory's (30)
    assert resumed_at <= run.recoveries[-1].resume_iteration < 30, (manifest, result.stdout)


def test_a_job_resumes_from_its_directory(mpi_prefix, heat2d, tmp_path):
    """40 iterations with a checkpoint directory, then 60 with the same one: the checksum of 60 from scratch;
    the same directory under another grid: ERR_CHECKPOINT_DIR at every process, nothing computed."""
    fresh = launch(mpi_prefix, heat2d, [], size=("50", "37", "60"))
    directory = ["--checkpoint-dir", str(tmp_path / "ck")]
    first = launch(mpi_prefix, heat2d, directory)
    assert first.returncode == 0, first.stderr
    manifest = (tmp_path / "ck" / "manifest").read_text()
    resumed = launch(mpi_prefix, heat2d, directory, size=("50", "37", "60"))
    assert resumed.returncode == 0 and resumed.checksum == fresh.checksum, (manifest, resumed.stdout)
    result = mpi.run(mpi_prefix, ["--oversubscribe", "-np", "16", *heat2d, *directory, "mesh:4x4", "x:1", "simple",
                                  *SIZE], timeout=TIMEOUT)
    assert result.returncode != 0 and "done" not in result.stdout
    run = stencil.parse(result.returncode, result.stdout, result.stderr, "heat2d")
    assert statuses(run) == {"ERR_CHECKPOINT_DIR"}, result.stderr
    assert "holds a checkpoint of grid mesh:5x4, this job runs grid mesh:4x4" in result.stderr


@pytest.mark.parametrize("options, status", [
    (["--redundancy", "parity:20"], "ERR_REDUNDANCY"),         # a group larger than the 16 node ranks
    (["--redundancy", "rs:4,4"], "ERR_REDUNDANCY"),            # M >= G
    (["--redundancy", "mirror"], "ERR_REDUNDANCY"),
    (["--redundancy", "parity:4", "--domains", "5x4"], "ERR_REDUNDANCY"),  # one domain: nothing survives it
    (["--redundancy", "parity:8", "--domains", "5x1"], "ERR_REDUNDANCY"),  # 4 per row > 1 x 2 groups
    (["--domains", "6x1"], "ERR_REDUNDANCY"),                  # a box larger than the grid
    (["--checkpoint-dir", "/dev/null/ck"], "ERR_CHECKPOINT_DIR"),
    (["--file-every", "0"], "ERR_INFO"),
], ids=lambda v: "_".join(v) if isinstance(v, list) else v)
def test_bad_policies_stop_every_process_at_creation(mpi_prefix, heat2d, options, status):
    """One status, nothing started: heat2d reports the creation's error and no iteration runs."""
    result = mpi.run(mpi_prefix, ["--oversubscribe", "-np", str(NP), *heat2d, *options, GRID, SPARES, METHOD, *SIZE],
                     timeout=TIMEOUT)
    run = stencil.parse(result.returncode, result.stdout, result.stderr, "heat2d")
    assert result.returncode != 0 and "done" not in result.stdout, result.stdout
    assert statuses(run) == {status}, result.stderr
    assert all(error.step == "create" for error in run.errors), result.stderr
