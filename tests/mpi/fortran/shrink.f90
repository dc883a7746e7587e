! Shrink after two failures, from "use mpi_f08". np 5; the test kills ranks 1 and 3 at
! "after_barrier".
! MPIX_Comm_shrink keeps 0,2,4 in order with new ranks 0,1,2 and an allreduce works on the
! result; so does MPIX_Comm_ishrink (Fortran binding of patch ompi/11), completed by MPI_Test
! in a loop: newcomm is set when the request completes.
program shrink
    use mpi_f08
    use mpi_f08_ext
    use ftcheck
    use ftslide_killpoint
    implicit none
    type(MPI_Comm) :: comm, shrunk
    type(MPI_Comm), asynchronous :: ishrunk
    type(MPI_Request) :: req
    integer :: rank, rc
    logical :: done

    call MPI_Init()
    rank = ftcheck_rank()
    comm = ftcheck_dup_world()
    call MPI_Barrier(comm)
    call ftslide_kill_at(rank, "after_barrier")

    call MPIX_Comm_shrink(comm, shrunk, rc)
    call report_rc("shrink", rc)
    call describe("shrunk", shrunk)

    call MPIX_Comm_ishrink(comm, ishrunk, req, rc)
    call report_rc("ishrink", rc)
    done = .false.
    do while (.not. done)
        call MPI_Test(req, done, MPI_STATUS_IGNORE, rc)
        if (rc /= MPI_SUCCESS) exit
    end do
    call report_rc("ishrink_test", rc)
    call report_int("ishrunk_is_null", merge(1, 0, ishrunk == MPI_COMM_NULL))
    if (ishrunk /= MPI_COMM_NULL) call describe("ishrunk", ishrunk)
    call report_int("finished", 1)
    call MPI_Finalize()

contains

    ! Size, world ranks of the members in order, own rank, and an allreduce on NEWCOMM.
    subroutine describe(name, newcomm)
        character(len=*), intent(in) :: name
        type(MPI_Comm), intent(in) :: newcomm
        type(MPI_Group) :: group, world_group
        integer :: size, me, sum, i
        integer, allocatable :: members(:), world(:)
        character(len=64) :: order
        call MPI_Comm_size(newcomm, size)
        call MPI_Comm_rank(newcomm, me)
        call MPI_Comm_group(newcomm, group)
        call MPI_Comm_group(MPI_COMM_WORLD, world_group)
        members = [(i, i = 0, size - 1)]
        allocate (world(size))
        call MPI_Group_translate_ranks(group, size, members, world_group, world)
        write (order, '(*(i0,:,","))') world
        call report_int(name//"_size", size)
        call report(name//"_order", trim(order))
        call report_int(name//"_new_rank", me)
        call MPI_Allreduce(1, sum, 1, MPI_INTEGER, MPI_SUM, newcomm, rc)
        call report_rc(name//"_allreduce", rc)
        call report_int(name//"_sum", sum)
        call MPI_Group_free(group)
        call MPI_Group_free(world_group)
    end subroutine describe
end program shrink
