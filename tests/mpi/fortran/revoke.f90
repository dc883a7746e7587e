! Revoke after a failure, from "use mpi_f08". np 4; the test kills rank 3 at "after_barrier".
! Ranks 1 and 2 wait on a receive from rank 0, which revokes the communicator instead of
! sending: the pending receives, a later barrier and a later send return MPIX_ERR_REVOKED at
! every survivor; MPIX_Comm_is_revoked says so; the shrink of the revoked communicator keeps
! 0,1,2 and works.
program revoke
    use mpi_f08
    use mpi_f08_ext
    use ftcheck
    use ftslide_killpoint
    implicit none
    type(MPI_Comm) :: comm, shrunk
    type(MPI_Request) :: req
    integer :: rank, rc, flag, size, sum
    integer, asynchronous :: value

    call MPI_Init()
    rank = ftcheck_rank()
    comm = ftcheck_dup_world()
    call MPI_Barrier(comm)
    call ftslide_kill_at(rank, "after_barrier")

    if (rank == 0) then
        call MPIX_Comm_revoke(comm, rc)
        call report_rc("revoke", rc)
    else
        call MPI_Irecv(value, 1, MPI_INTEGER, 0, 7, comm, req)
        call MPI_Wait(req, MPI_STATUS_IGNORE, rc)
        call report_rc("pending_recv", rc)
    end if
    call MPI_Barrier(comm, rc)
    call report_rc("later_barrier", rc)
    value = rank
    call MPI_Send(value, 1, MPI_INTEGER, modulo(rank + 1, 3), 8, comm, rc)
    call report_rc("later_send", rc)
    call MPIX_Comm_is_revoked(comm, flag, rc)
    call report_int("is_revoked", flag)

    call MPIX_Comm_shrink(comm, shrunk, rc)
    call report_rc("shrink", rc)
    call MPI_Comm_size(shrunk, size)
    call report_int("shrunk_size", size)
    call MPI_Allreduce(1, sum, 1, MPI_INTEGER, MPI_SUM, shrunk, rc)
    call report_rc("shrunk_allreduce", rc)
    call report_int("shrunk_sum", sum)
    call report_int("finished", 1)
    call MPI_Finalize()
end program revoke
