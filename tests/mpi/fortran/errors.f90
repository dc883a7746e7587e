! Errors returned after a failure, from "use mpi_f08". np 3; the test kills rank 2 at
! "after_barrier".
! Rank 0: a receive from rank 2 returns MPIX_ERR_PROC_FAILED; a send to rank 1 works. Then an
! MPI_ANY_SOURCE receive returns MPIX_ERR_PROC_FAILED_PENDING and stays pending; after
! MPIX_Comm_failure_ack (MPIX_Comm_failure_get_acked then holds rank 2) rank 0 tells rank 1 to
! send, and the same request completes with rank 1's message.
program errors
    use mpi_f08
    use mpi_f08_ext
    use ftcheck
    use ftslide_killpoint
    implicit none
    type(MPI_Comm) :: comm
    type(MPI_Request) :: req
    type(MPI_Status) :: status
    type(MPI_Group) :: acked, world_group
    integer :: rank, rc, go, size, translated(1)
    integer, asynchronous :: value

    call MPI_Init()
    rank = ftcheck_rank()
    comm = ftcheck_dup_world()
    call MPI_Barrier(comm)
    call ftslide_kill_at(rank, "after_barrier")

    if (rank == 0) then
        call MPI_Recv(value, 1, MPI_INTEGER, 2, 0, comm, MPI_STATUS_IGNORE, rc)
        call report_rc("recv_from_dead", rc)
        value = 99
        call MPI_Send(value, 1, MPI_INTEGER, 1, 1, comm, rc)
        call report_rc("send_to_live", rc)

        value = -1
        call MPI_Irecv(value, 1, MPI_INTEGER, MPI_ANY_SOURCE, 2, comm, req)
        call MPI_Wait(req, status, rc)
        call report_rc("first_wait", rc)
        call report_int("still_pending", merge(1, 0, req /= MPI_REQUEST_NULL))
        call MPIX_Comm_failure_ack(comm, rc)
        call report_rc("failure_ack", rc)
        call MPIX_Comm_failure_get_acked(comm, acked, rc)
        call MPI_Group_size(acked, size)
        call MPI_Comm_group(MPI_COMM_WORLD, world_group)
        call MPI_Group_translate_ranks(acked, 1, [0], world_group, translated)
        call report_int("acked_size", size)
        call report_int("acked_rank", translated(1))
        go = 1
        call MPI_Send(go, 1, MPI_INTEGER, 1, 3, comm)
        call MPI_Wait(req, status, rc)
        call report_rc("second_wait", rc)
        call report_int("value", value)
        call report_int("source", status%MPI_SOURCE)
    else if (rank == 1) then
        call MPI_Recv(value, 1, MPI_INTEGER, 0, 1, comm, MPI_STATUS_IGNORE, rc)
        call report_rc("recv_from_live", rc)
        call report_int("value", value)
        call MPI_Recv(go, 1, MPI_INTEGER, 0, 3, comm, MPI_STATUS_IGNORE)
        value = 42
        call MPI_Send(value, 1, MPI_INTEGER, 0, 2, comm)
    end if
    call report_int("finished", 1)
    call MPI_Finalize()
end program errors
