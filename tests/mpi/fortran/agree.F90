! Agreement and failure introspection, from "use mpi_f08": MPIX_Comm_agree, or
! MPIX_Comm_iagree + MPI_Wait when compiled with -DFTCHECK_IAGREE. np 4; the test kills rank 3
! at "after_first_agree".
! 1. No failure: the flag is the AND of all flags (6), MPI_SUCCESS everywhere.
! 2. Rank 3 is dead and nobody acknowledged it: every survivor gets MPIX_ERR_PROC_FAILED, twice,
!    with the AND of the survivors' flags (5).
! 3. MPIX_Comm_get_failed holds rank 3; MPIX_Comm_ack_failed(comm, 0) acknowledges nothing and
!    MPIX_Comm_failure_get_acked is empty; MPIX_Comm_ack_failed(comm, 4) acknowledges 1, and the
!    acknowledged group holds rank 3.
! 4. After that: MPI_SUCCESS and the AND (3).
program agree
    use mpi_f08
    use mpi_f08_ext
    use ftcheck
    use ftslide_killpoint
    implicit none
    type(MPI_Comm) :: comm
    type(MPI_Group) :: group
    integer :: rank, rc, acked
    integer, asynchronous :: flag

    call MPI_Init()
    rank = ftcheck_rank()
    comm = ftcheck_dup_world()

    flag = merge(6, merge(14, 15, rank == 1), rank == 2)
    rc = agreement(comm, flag)
    call report_rc("first_rc", rc)
    call report_int("first_flag", flag)
    call ftslide_kill_at(rank, "after_first_agree")

    flag = merge(5, 15, rank == 0)
    rc = agreement(comm, flag)
    call report_rc("unacked_rc", rc)
    call report_int("unacked_flag", flag)
    flag = 15
    rc = agreement(comm, flag)
    call report_rc("unacked_again_rc", rc)

    call MPIX_Comm_get_failed(comm, group, rc)
    call report_rc("get_failed_rc", rc)
    call report("failed", world_ranks(group))
    call MPIX_Comm_ack_failed(comm, 0, acked, rc)
    call report_rc("ack_none_rc", rc)
    call report_int("acked_none", acked)
    call MPIX_Comm_failure_get_acked(comm, group, rc)
    call report("acked_before", world_ranks(group))
    call MPIX_Comm_ack_failed(comm, 4, acked, rc)
    call report_rc("ack_failed", rc)
    call report_int("acked", acked)
    call MPIX_Comm_failure_get_acked(comm, group, rc)
    call report("acked_after", world_ranks(group))

    flag = merge(3, 15, rank == 1)
    rc = agreement(comm, flag)
    call report_rc("acked_rc", rc)
    call report_int("acked_flag", flag)
    call report_int("finished", 1)
    call MPI_Finalize()

contains

    integer function agreement(comm, flag) result(rc)
        type(MPI_Comm), intent(in) :: comm
        integer, intent(inout), asynchronous :: flag
#ifdef FTCHECK_IAGREE
        type(MPI_Request) :: req
        call MPIX_Comm_iagree(comm, flag, req, rc)
        if (rc /= MPI_SUCCESS) return
        call MPI_Wait(req, MPI_STATUS_IGNORE, rc)
#else
        call MPIX_Comm_agree(comm, flag, rc)
#endif
    end function agreement

    ! The world ranks of GROUP's members, comma-separated, "none" when it is empty; frees GROUP.
    function world_ranks(group) result(text)
        type(MPI_Group), intent(inout) :: group
        character(len=:), allocatable :: text
        type(MPI_Group) :: world_group
        integer :: size, i
        integer, allocatable :: world(:)
        character(len=64) :: buffer
        call MPI_Group_size(group, size)
        if (size == 0) then
            text = "none"
        else
            allocate (world(size))
            call MPI_Comm_group(MPI_COMM_WORLD, world_group)
            call MPI_Group_translate_ranks(group, size, [(i, i = 0, size - 1)], world_group, world)
            call MPI_Group_free(world_group)
            write (buffer, '(*(i0,:,","))') world
            text = trim(buffer)
        end if
        call MPI_Group_free(group)
    end function world_ranks
end program agree
