"""Callers that disagree on the call get an MPI error everywhere, and nothing hangs (issue 36).

One part of a communicator calls MPIX_Comm_agree while the other calls MPIX_Comm_shrink on it
(tests/mpi/conformance/intercomm_mismatch.c). Both enter the same agreement of coll/ftera; the
call kind each process starts it with (era_start_kind) tells them apart, so every survivor gets
MPI_ERR_OTHER, the agree side keeps its int, the shrink side returns no communicator, and a
matched agreement on the same communicator afterwards succeeds. Real processes, a real SIGKILL
at "before_mismatch" for the variants with a victim.
"""

from __future__ import annotations

import pytest

from mpiharness import OK, PF, assert_all

pytestmark = pytest.mark.mpi

CONFLICT = "MPI_ERR_OTHER"


def contribution(mode: str, np: int, rank: int) -> str:
    """The int a rank gives (the program's ``mine``), as the program prints it."""
    if mode == "inter":
        local_rank = rank if rank < np // 2 else rank - np // 2
        if rank < np // 2:
            return "0x1" if local_rank == 0 else "0x3"
        return "0x4" if local_rank == 0 else "0xc"
    return "0x1" if rank == 0 else "0x3"


@pytest.mark.parametrize("mode,np,victim", [
    ("inter", 4, None), ("inter", 6, None), ("inter", 6, 4), ("inter", 6, 1),
    ("intra", 4, None), ("intra", 6, 3), ("intra", 4, 2),
], ids=["inter-np4", "inter-np6", "inter-np6-kill-shrink-side", "inter-np6-kill-agree-side",
        "intra-np4", "intra-np6-kill-shrink-side", "intra-np4-kill-agree-side"])
def test_agree_against_shrink(mpi_program, run_mpi, mode, np, victim):
    """inter: the low half agrees on the intercommunicator while the high half shrinks it; intra: even
    world ranks agree on a dup of MPI_COMM_WORLD while odd ones shrink it. ``victim`` (never a local
    rank 0) is killed at before_mismatch, so the conflict is decided together with its failure."""
    kill = {} if victim is None else {victim: "before_mismatch"}
    run = run_mpi(mpi_program("conformance/intercomm_mismatch.c"), np, args=[mode], kill=kill, timeout=90)
    assert run.returncode == 0, run.describe()
    survivors = [rank for rank in range(np) if rank != victim]
    if mode == "inter":
        agree_side = [rank for rank in survivors if rank < np // 2]
    else:
        agree_side = [rank for rank in survivors if rank % 2 == 0]
    shrink_side = [rank for rank in survivors if rank not in agree_side]
    assert_all(run, "mismatch_call", agree_side, "agree")
    assert_all(run, "mismatch_call", shrink_side, "shrink")
    assert_all(run, "mismatch", survivors, CONFLICT)
    for rank in agree_side:  # the contribution is left as it was
        assert run.value(rank, "mismatch_flag") == contribution(mode, np, rank), run.describe()
    assert_all(run, "mismatch_newcomm", shrink_side, "null")
    assert_all(run, "ack", survivors, OK)
    # On an inter-communicator MPIX_Comm_failure_ack acknowledges the failures of the local group
    # only (ompi_comm_failure_get_acked_internal), so the other group never acknowledges the victim
    # and the matched agreement reports it: MPIX_ERR_PROC_FAILED, uniformly, with the right flags.
    assert_all(run, "agree_after", survivors, PF if mode == "inter" and victim is not None else OK)
    if mode == "inter":
        assert_all(run, "agree_after_flag", [rank for rank in survivors if rank < np // 2], "0x4")
        assert_all(run, "agree_after_flag", [rank for rank in survivors if rank >= np // 2], "0x1")
    else:
        assert_all(run, "agree_after_flag", survivors, "0x1")
    assert_all(run, "finalized", survivors, "1")


def test_unknown_mode_is_refused(mpi_program, run_mpi):
    """A mode the program does not know: one line on stderr and exit status 2, not a run."""
    run = run_mpi(mpi_program("conformance/intercomm_mismatch.c"), 2, args=["sideways"], timeout=60)
    assert run.returncode != 0, run.describe()
    assert "unknown mode 'sideways'" in run.stderr, run.describe()
