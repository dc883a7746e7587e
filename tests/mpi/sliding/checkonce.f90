! The check-once style from Fortran (the module `sliding`), as checkonce.c runs it in C, on
! mesh:3x2 with spares x:1 (6 processes: nodes 0-3 run a 2x2 rank grid, nodes 4 and 5 wait).
! Usage: checkonce-f MODE
!   run             20 iterations of a halo exchange (MPI_Sendrecv, no error checks), sliding_is_ok
!                   once per iteration, a checkpoint every 4, sliding_finish; the recovery callback
!                   notes old>new rank and runs an MPI_Allreduce on the new cart
!   callback-fails  the callback of logical rank 0 returns 1
! Every process reports (ftcheck.f90) what checkonce.c reports under the same keys: "null" (the
! status of sliding_dims on a runtime never created), "dims" and "coords" before sliding_start,
! "start", "recover" (the last sliding_recover), "finish" (the last sliding_finish), "callback"
! (old>new, each call), "sum" (the final value summed at logical rank 0); and "ok_start" (sliding_is_ok
! after sliding_start, 1 or 0), "status" (the last status of start or recover).
! Kill points: the runtime's and "iter=I" at the start of iteration I.
module checkonce_state
    use, intrinsic :: iso_c_binding, only: c_int
    use, intrinsic :: iso_fortran_env, only: real64
    use mpi_f08
    use sliding
    implicit none
    character(len=32) :: mode = 'run'
    character(len=:), allocatable :: calls

contains

    integer(c_int) function on_recovery(s, old_rank, new_rank, cart) bind(c)
        type(sliding_t), intent(in) :: s
        integer(c_int), intent(in) :: old_rank, new_rank
        type(MPI_Comm), intent(in) :: cart
        character(len=24) :: text
        integer :: one, count
        write (text, '(i0,a,i0)') old_rank, '>', new_rank
        if (len(calls) > 0) calls = calls // ','
        calls = calls // trim(text)
        if (new_rank /= sliding_rank(s)) then
            on_recovery = 1
            return
        end if
        if (trim(mode) == 'callback-fails' .and. new_rank == 0) then
            on_recovery = 1
            return
        end if
        one = 1
        call MPI_Allreduce(one, count, 1, MPI_INTEGER, MPI_SUM, cart)
        on_recovery = merge(0, 1, count == 4)
    end function

    ! Every rank sends its value to its four neighbours (none beyond the edges) and adds what it
    ! receives, in checkonce.c's order: low then high neighbour of dimension 0, then of dimension 1.
    subroutine step(cart, value)
        type(MPI_Comm), intent(in) :: cart
        real(real64), intent(inout) :: value
        real(real64) :: in(4)
        integer :: dim, low, high
        in = 0
        do dim = 0, 1
            call MPI_Cart_shift(cart, dim, 1, low, high)
            call MPI_Sendrecv(value, 1, MPI_DOUBLE_PRECISION, high, dim, in(dim * 2 + 1), 1, MPI_DOUBLE_PRECISION, &
                              low, dim, cart, MPI_STATUS_IGNORE)
            call MPI_Sendrecv(value, 1, MPI_DOUBLE_PRECISION, low, dim, in(dim * 2 + 2), 1, MPI_DOUBLE_PRECISION, &
                              high, dim, cart, MPI_STATUS_IGNORE)
        end do
        value = value * 0.5_real64 + (in(1) + in(2) + in(3) + in(4)) * 0.125_real64
    end subroutine

end module checkonce_state

program checkonce
    use, intrinsic :: iso_fortran_env, only: int64, real64
    use mpi_f08
    use sliding
    use ftcheck
    use checkonce_state
    implicit none
    integer, parameter :: iterations = 20
    type(sliding_t) :: s, never
    type(MPI_Comm) :: cart
    real(real64), target :: value
    real(real64) :: total
    integer :: rc, status, finish, role, it, ndims, dims(3), coords(3)
    integer(int64) :: version
    character(len=32) :: text

    call MPI_Init()
    if (command_argument_count() > 0) call get_command_argument(1, mode)
    calls = ''
    call report('null', sliding_status_name(sliding_dims(never, ndims, dims)))
    rc = sliding_create(MPI_COMM_WORLD, 'mesh:3x2', 'x:1', 'hybrid', s)
    if (rc /= SLIDING_OK) error stop 1
    rc = sliding_dims(s, ndims, dims)
    write (text, '(i0,"x",i0,"x",i0)') dims
    call report('dims', trim(text))
    call report_int('ndims', ndims)
    rc = sliding_coords(s, coords)
    write (text, '(i0,",",i0)') coords(1:2)
    call report('coords', trim(text))
    value = 0
    rc = sliding_register(s, value)
    rc = sliding_on_recovery(s, on_recovery)
    finish = -1
    it = 0
    status = sliding_start(s, cart, role, version)
    call report('start', sliding_status_name(status))
    call report_int('ok_start', merge(1, 0, sliding_is_ok(s)))
    if (status == SLIDING_OK .and. role /= SLIDING_FINISHED) call resume()
    do while (status == SLIDING_OK .and. role /= SLIDING_FINISHED)
        do while (it < iterations .and. sliding_is_ok(s))
            write (text, '("iter=",i0)') it
            call sliding_killpoint(s, trim(text))
            call step(cart, value)
            it = it + 1
            if (mod(it, 4) == 0) rc = sliding_checkpoint(s, int(it, int64))
        end do
        finish = sliding_finish(s)
        if (finish == SLIDING_OK) exit
        status = sliding_recover(s, cart, role, version)
        call report('recover', sliding_status_name(status))
        if (status == SLIDING_OK .and. role /= SLIDING_FINISHED) call resume()
    end do
    call report('status', sliding_status_name(status))
    if (finish >= 0) call report('finish', sliding_status_name(finish))
    if (len(calls) > 0) call report('callback', calls)
    if (status == SLIDING_OK .and. role /= SLIDING_FINISHED) then
        call MPI_Reduce(value, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, cart)
        if (sliding_rank(s) == 0) then
            write (text, '(es25.17)') total
            call report('sum', trim(adjustl(text)))
        end if
    end if
    call sliding_free(s)
    call MPI_Finalize()

contains

    ! From checkpoint `version`, or from the start (value = logical rank) if none was committed.
    subroutine resume()
        it = int(max(version, 0_int64))
        if (version < 0) value = sliding_rank(s)
    end subroutine

end program checkonce
