! The ULFM extension from "use mpi" + "use mpi_ext", or from mpif.h + mpif-ext.h when compiled
! with -DFTCHECK_MPIFH. np 4; the test kills rank 2 at "after_barrier".
! A barrier after the death fails at every survivor (MPIX_ERR_PROC_FAILED or, where another
! survivor revoked first, MPIX_ERR_REVOKED); each survivor revokes, MPIX_Comm_is_revoked says so
! (a LOGICAL here), MPIX_Comm_shrink and MPIX_Comm_ishrink keep 0,1,3, and MPIX_Comm_agree on the
! shrunk communicator gives the AND of the flags.
program legacy
#ifndef FTCHECK_MPIFH
    use mpi
    use mpi_ext
#endif
    use ftcheck, only: ftcheck_rank, report, report_int, report_rc
    use ftslide_killpoint
    implicit none
#ifdef FTCHECK_MPIFH
    include 'mpif.h'
    include 'mpif-ext.h'
#endif
    integer :: comm, shrunk, rank, rc, size, flag, req, ierr
    integer, asynchronous :: ishrunk
    logical :: revoked, done

    call MPI_Init(ierr)
    rank = ftcheck_rank()
    call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
    call MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN, ierr)
    call MPI_Barrier(comm, ierr)
    call ftslide_kill_at(rank, "after_barrier")

    call MPI_Barrier(comm, rc)
    call report_int("barrier_failed", merge(1, 0, rc /= MPI_SUCCESS))
    call MPIX_Comm_revoke(comm, rc)
    call report_rc("revoke", rc)
    call MPIX_Comm_is_revoked(comm, revoked, rc)
    call report_int("is_revoked", merge(1, 0, revoked))

    call MPIX_Comm_shrink(comm, shrunk, rc)
    call report_rc("shrink", rc)
    call MPI_Comm_size(shrunk, size, ierr)
    call report_int("shrunk_size", size)

    call MPIX_Comm_ishrink(comm, ishrunk, req, rc)
    call report_rc("ishrink", rc)
    done = .false.
    do while (.not. done .and. rc == MPI_SUCCESS)
        call MPI_Test(req, done, MPI_STATUS_IGNORE, rc)
    end do
    call report_rc("ishrink_test", rc)
    call MPI_Comm_size(ishrunk, size, ierr)
    call report_int("ishrunk_size", size)

    flag = merge(5, 7, rank == 3)
    call MPIX_Comm_agree(shrunk, flag, rc)
    call report_rc("agree", rc)
    call report_int("agree_flag", flag)
    call report_int("finished", 1)
    call MPI_Finalize(ierr)
end program legacy
