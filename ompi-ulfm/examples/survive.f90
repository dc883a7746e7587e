! survive: an iterative MPI_Allreduce that keeps going when ranks die (Fortran, "use mpi_f08").
!
! The same program as survive.c. Every iteration each live rank contributes (world rank + 1). On
! an error the survivors revoke the communicator, shrink it, agree on the iteration to resume
! from and redo it without the dead; each iteration's sum is checked against the sum over the
! communicator's members, and rank 0 prints one line per recovery and a summary:
!
!     survive: recovered at iteration 5: 3 survivors, 412.3 us
!     survive: done: 20 iterations, 1 recoveries, 3 survivors, checksum 1234, all sums correct
!
! Usage: survive [ITERATIONS]. Fault injection: FTSLIDE_KILL (ompi-ulfm/fortran/ftslide_killpoint.f90),
! points "iter=N" at the start of iteration N. Build:
!     mpifort -o survive ompi-ulfm/fortran/ftslide_killpoint.f90 ompi-ulfm/examples/survive.f90
program survive
    use mpi_f08
    use mpi_f08_ext   ! MPIX_Comm_revoke, MPIX_Comm_shrink, MPIX_ERR_PROC_FAILED, ...
    use ftslide_killpoint
    implicit none
    type(MPI_Comm) :: comm
    integer :: iterations, world_rank, rank, size, it, rc, eclass, recoveries, wrong, all_wrong
    integer(kind=8) :: mine, total, checksum
    integer(kind=8), allocatable :: sums(:), expected(:)
    character(len=32) :: argument, point
    double precision :: start

    call MPI_Init()
    iterations = 20
    if (command_argument_count() > 0) then
        call get_command_argument(1, argument)
        read (argument, *) iterations
    end if
    call MPI_Comm_rank(MPI_COMM_WORLD, world_rank)
    call MPI_Comm_dup(MPI_COMM_WORLD, comm)
    call MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)

    ! Per-iteration results: an iteration redone after a recovery overwrites its slot.
    allocate (sums(0:iterations - 1), expected(0:iterations - 1))
    sums = 0
    expected = 0
    recoveries = 0
    it = 0
    do while (it < iterations)
        write (point, '(a,i0)') "iter=", it
        call ftslide_kill_at(world_rank, trim(point))
        mine = world_rank + 1
        call MPI_Allreduce(mine, total, 1, MPI_INTEGER8, MPI_SUM, comm, rc)
        if (rc == MPI_SUCCESS) then
            sums(it) = total
            expected(it) = expected_sum(comm)
            it = it + 1
            cycle
        end if
        call MPI_Error_class(rc, eclass)
        if (eclass /= MPIX_ERR_PROC_FAILED .and. eclass /= MPIX_ERR_REVOKED) then
            write (*, '(a,i0,a,i0)') "survive: rank ", world_rank, ": unexpected error class ", eclass
            call MPI_Abort(MPI_COMM_WORLD, 2)
        end if
        start = MPI_Wtime()
        it = recover(comm, it)
        recoveries = recoveries + 1
        call MPI_Comm_rank(comm, rank)
        if (rank == 0) then
            call MPI_Comm_size(comm, size)
            write (*, '(a,i0,a,i0,a,f0.1,a)') "survive: recovered at iteration ", it, ": ", size, &
                " survivors, ", (MPI_Wtime() - start)*1d6, " us"
            flush (6)
        end if
    end do

    call MPI_Comm_rank(comm, rank)
    call MPI_Comm_size(comm, size)
    checksum = 0
    wrong = 0
    all_wrong = 0   ! MPI_Reduce sets it at rank 0 only
    do it = 0, iterations - 1
        checksum = checksum + sums(it)*(it + 1)
        if (sums(it) /= expected(it)) wrong = wrong + 1
    end do
    call MPI_Reduce(wrong, all_wrong, 1, MPI_INTEGER, MPI_SUM, 0, comm)
    if (rank == 0) then
        write (*, '(a,i0,a,i0,a,i0,a,i0,2a)') "survive: done: ", iterations, " iterations, ", recoveries, &
            " recoveries, ", size, " survivors, checksum ", checksum, ", ", &
            trim(merge("WRONG SUMS      ", "all sums correct", all_wrong /= 0))
    end if
    call MPI_Comm_free(comm)
    call MPI_Finalize()
    if (all_wrong /= 0) error stop 1

contains

    ! Sum of (world rank + 1) over the members of COMM.
    integer(kind=8) function expected_sum(comm)
        type(MPI_Comm), intent(in) :: comm
        type(MPI_Group) :: group, world_group
        integer :: size, i
        integer, allocatable :: world(:)
        call MPI_Comm_group(comm, group)
        call MPI_Comm_group(MPI_COMM_WORLD, world_group)
        call MPI_Group_size(group, size)
        allocate (world(size))
        call MPI_Group_translate_ranks(group, size, [(i, i = 0, size - 1)], world_group, world)
        expected_sum = sum(int(world, 8) + 1)
        call MPI_Group_free(group)
        call MPI_Group_free(world_group)
    end function expected_sum

    ! Replace COMM by a shrunk copy without the dead and return the iteration all survivors
    ! resume from (the earliest one any of them failed in). A failure during recovery starts it again.
    integer function recover(comm, failed_iteration) result(resume)
        type(MPI_Comm), intent(inout) :: comm
        integer, intent(in) :: failed_iteration
        type(MPI_Comm) :: shrunk
        integer :: rc
        do
            call MPIX_Comm_revoke(comm)
            call MPIX_Comm_shrink(comm, shrunk, rc)
            if (rc /= MPI_SUCCESS) cycle
            call MPI_Comm_free(comm)
            comm = shrunk
            call MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)
            call MPI_Allreduce(failed_iteration, resume, 1, MPI_INTEGER, MPI_MIN, comm, rc)
            if (rc == MPI_SUCCESS) return
        end do
    end function recover
end program survive
