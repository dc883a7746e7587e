"""ULFM from Fortran: the conformance programs of tests/mpi/fortran, compiled with the build's mpifort,
with real processes and a real SIGKILL at a named point (ftslide_killpoint.f90), under our modules
and under upstream's; the README's Fortran example. The docstrings say which rank dies where."""

from __future__ import annotations

import pytest

from ftslide.errors import FtslideError
from ftslide.toolchain.mpi import compile_program
from ftslide.toolchain.native import REPO
from mpiharness import MODULES, OK, PF, REVOKED, assert_all, assert_shrunk_twice, check_survive_output, run_program

pytestmark = pytest.mark.mpi


@MODULES
def test_errors_returned(mpi_program, run_mpi, modules):
    """np 3, rank 2 killed after a barrier: receive from it fails, ANY_SOURCE is pending until
    MPIX_Comm_failure_ack, MPIX_Comm_failure_get_acked holds it, rank 0-1 traffic works."""
    run = run_mpi(mpi_program("fortran/errors.f90"), 3, kill={2: "after_barrier"}, mpirun_options=modules)
    assert run.value(0, "recv_from_dead") == PF, run.describe()
    assert run.value(0, "send_to_live") == OK
    assert (run.value(1, "recv_from_live"), run.value(1, "value")) == (OK, "99")
    assert run.value(0, "first_wait") == "MPIX_ERR_PROC_FAILED_PENDING"
    assert run.value(0, "still_pending") == "1"
    assert run.value(0, "failure_ack") == OK
    assert (run.value(0, "acked_size"), run.value(0, "acked_rank")) == ("1", "2")
    assert run.value(0, "second_wait") == OK
    assert (run.value(0, "value"), run.value(0, "source")) == ("42", "1")
    assert_all(run, "finished", [0, 1], "1")


@MODULES
def test_revoke(mpi_program, run_mpi, modules):
    """np 4, rank 3 killed after a barrier: rank 0 revokes; a pending receive, a barrier and a send
    return REVOKED at every survivor; is_revoked; the shrink keeps 3 and works."""
    run = run_mpi(mpi_program("fortran/revoke.f90"), 4, kill={3: "after_barrier"}, mpirun_options=modules)
    survivors = [0, 1, 2]
    assert run.value(0, "revoke") == OK, run.describe()
    assert_all(run, "pending_recv", [1, 2], REVOKED)
    for key in ("later_barrier", "later_send"):
        assert_all(run, key, survivors, REVOKED)
    assert_all(run, "is_revoked", survivors, "1")
    assert_all(run, "shrink", survivors, OK)
    assert_all(run, "shrunk_size", survivors, "3")
    assert_all(run, "shrunk_allreduce", survivors, OK)
    assert_all(run, "shrunk_sum", survivors, "3")
    assert_all(run, "finished", survivors, "1")


@MODULES
def test_shrink_and_ishrink(mpi_program, run_mpi, modules):
    """np 5, ranks 1 and 3 killed after a barrier: MPIX_Comm_shrink and MPIX_Comm_ishrink (the Fortran
    binding of patch ompi/11, newcomm set at completion) keep 0,2,4 in order; the results work."""
    run = run_mpi(mpi_program("fortran/shrink.f90"), 5, kill={1: "after_barrier", 3: "after_barrier"},
                  mpirun_options=modules)
    survivors = [0, 2, 4]
    assert_shrunk_twice(run, survivors)
    assert_all(run, "ishrunk_is_null", survivors, "0")


@MODULES
@pytest.mark.parametrize("variant,flags", [("agree", ()), ("iagree", ("-DFTCHECK_IAGREE",))])
def test_agree_and_failure_introspection(mpi_program, run_mpi, modules, variant, flags):
    """np 4, rank 3 killed after the first agreement: AND of flags; uniform PROC_FAILED until acked;
    get_failed = {3}; ack_failed 0 then 1; failure_get_acked empty then {3}."""
    run = run_mpi(mpi_program("fortran/agree.F90", flags), 4, kill={3: "after_first_agree"},
                  mpirun_options=modules)
    survivors = [0, 1, 2]
    assert run.values("first_rc", [0, 1, 2, 3]) == {r: OK for r in range(4)}, run.describe()
    assert run.values("first_flag", [0, 1, 2, 3]) == {r: "6" for r in range(4)}
    for key, expected in (("unacked_rc", PF), ("unacked_flag", "5"), ("unacked_again_rc", PF),
                          ("get_failed_rc", OK), ("failed", "3"), ("ack_none_rc", OK), ("acked_none", "0"),
                          ("acked_before", "none"), ("ack_failed", OK), ("acked", "1"), ("acked_after", "3"),
                          ("acked_rc", OK), ("acked_flag", "3"), ("finished", "1")):
        assert_all(run, key, survivors, expected)


@pytest.mark.parametrize("interface,flags", [("use mpi", ()), ("mpif.h", ("-DFTCHECK_MPIFH",))])
def test_use_mpi_and_mpif_h(mpi_program, run_mpi, interface, flags):
    """np 4, rank 2 killed after a barrier, through 'use mpi' + 'use mpi_ext' and through mpif.h +
    mpif-ext.h: the failed barrier, revoke, is_revoked (LOGICAL), shrink, ishrink, agree."""
    run = run_mpi(mpi_program("fortran/legacy.F90", flags), 4, kill={2: "after_barrier"})
    survivors = [0, 1, 3]
    for key, expected in (("barrier_failed", "1"), ("revoke", OK), ("is_revoked", "1"), ("shrink", OK),
                          ("shrunk_size", "3"), ("ishrink", OK), ("ishrink_test", OK), ("ishrunk_size", "3"),
                          ("agree", OK), ("agree_flag", "5"), ("finished", "1")):
        assert_all(run, key, survivors, expected)


def test_survive_example(mpi_prefix):
    """The README's Fortran example, ompi-ulfm/examples/survive.f90, np 4: rank 2 SIGKILLed at iteration
    5, rank 1 at 12; the same output as survive.c (check_survive_output)."""
    binary = compile_program(mpi_prefix, [REPO / "ompi-ulfm" / "examples" / "survive.f90"])
    run = run_program(mpi_prefix, binary, 4, args=["20"], kill={2: "iter=5", 1: "iter=12"})
    assert run.returncode == 0, run.describe()
    check_survive_output(run.stdout)


def test_prefix_without_fortran_is_one_line(tmp_path):
    """A build without mpifort (configured --disable-mpi-fortran, given by FTSLIDE_MPI_PREFIX) is
    named in one line that says what to do, not a traceback."""
    (tmp_path / "bin").mkdir()
    with pytest.raises(FtslideError, match=r"^the Open MPI build at .* has no mpifort .*run 'ftslide build-mpi'$"):
        compile_program(tmp_path, [REPO / "ompi-ulfm" / "examples" / "survive.f90"], out_dir=tmp_path)
