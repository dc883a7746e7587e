! jacobi3d.f90: jacobi3d.c in Fortran, through the module `sliding`
! (sliding/fortran/sliding.f90): the same arguments and options (the runtime's,
! read by sliding_create_from_command_line, then N ITERATIONS INTERVAL), the same
! arithmetic in the same order (so the same checksum, bit for bit), the same
! "jacobi3d: EVENT KEY=VALUE ..." lines, the same exit statuses. See
! jacobi3d.c's header for what it computes and prints.
!
! The block u(k, j, i) of a rank is stored as C's u[i][j][k]: i, the first
! Cartesian dimension, varies slowest, and the loops run i, j, k with k
! innermost, as in C.
program jacobi3d
    use, intrinsic :: iso_fortran_env, only: int64, real64, output_unit, error_unit
    use mpi_f08
    use sliding
    implicit none

    integer :: n, iterations, every, world_rank, first, nargs, rc, status, role, it, rank
    integer(int64) :: version
    character(len=4096) :: arg(3)
    logical :: report_times
    type(sliding_t) :: s
    type(MPI_Comm) :: cart
    real(real64), allocatable, target :: a(:,:,:), b(:,:,:), saved(:,:,:)
    real(real64), pointer :: u(:,:,:), v(:,:,:), swap(:,:,:)
    real(real64), allocatable :: send(:), recv(:)
    real(real64) :: total
    character(len=32) :: text

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, world_rank)
    rc = sliding_create_from_command_line(MPI_COMM_WORLD, s, first) ! first: the index of N
    if (rc /= SLIDING_OK) then ! bad arguments, or a layout the runtime refuses: one line, exit 2
        if (rc /= SLIDING_ERR_ARG) then
            call sliding_report_error(s, 'jacobi3d', 'create', rc)
        else if (world_rank == 0) then
            write(error_unit, '(a)') 'jacobi3d: error step=arguments status=ERR_ARG message=usage: jacobi3d ' &
                // '[RUNTIME OPTIONS] GRID SPARES METHOD [N [ITERATIONS [INTERVAL]]]; runtime options (sliding.h): ' &
                // '--block AxB[xC] --emulate-nodes K --node-coords FILE --checkpoint-every N --redundancy POLICY ' &
                // '--domains AxB[xC] --checkpoint-dir DIR --file-every N'
        end if
        call MPI_Finalize()
        stop 2, quiet=.true.
    end if
    nargs = command_argument_count() - first + 1
    do it = 1, min(nargs, 3)
        call get_command_argument(first + it - 1, arg(it))
    end do
    n = 8
    iterations = 40
    every = 0 ! no INTERVAL: the runtime's --checkpoint-every (sliding_checkpoint_due)
    if (nargs > 0) n = atoi(arg(1))
    if (nargs > 1) iterations = atoi(arg(2))
    if (nargs > 2) every = atoi(arg(3))
    if (n < 1 .or. iterations < 1 .or. (nargs > 2 .and. every < 1)) then
        if (world_rank == 0) then
            write(error_unit, '(a)') 'jacobi3d: error step=arguments message=N, ITERATIONS and INTERVAL ' &
                // 'must be at least 1'
        end if
        call sliding_free(s)
        call MPI_Finalize()
        stop 2, quiet=.true.
    end if
    allocate(a(0:n+1, 0:n+1, 0:n+1), b(0:n+1, 0:n+1, 0:n+1), saved(0:n+1, 0:n+1, 0:n+1), send(n*n), recv(n*n))
    a = 0
    b = 0
    saved = 0
    u => a
    v => b
    ! u changes identity at every sweep (swap): register a stable array and
    ! copy into it around checkpoints and recoveries.
    rc = sliding_register(s, saved)

    it = 0
    rc = sliding_start(s, cart, role, version)
    if (rc /= SLIDING_OK) call fail('start', rc)
    if (role /= SLIDING_FINISHED .and. version >= 0) then ! a spare promoted after a checkpoint
        u = saved
        it = int(version)
    else if (role /= SLIDING_FINISHED) then
        call initial_values()
    end if
    if (role == SLIDING_PROMOTED) call sliding_report_recovery(s, 'jacobi3d', it)
    call get_environment_variable('JACOBI3D_TIMES', text)
    report_times = text == '1'
    do while (role /= SLIDING_FINISHED)
        if (it == iterations) then
            ! The gather is the run's last step: sliding_finish agrees that every worker got
            ! through it, or the run goes back to the checkpoint.
            rc = checksum()
            if (sliding_finish(s) == SLIDING_OK) exit
            rc = MPI_ERR_OTHER
        else
            write(text, '(i0)') it
            call sliding_killpoint(s, sliding_point_name(SLIDING_POINT_ITER) // '=' // trim(text))
            rc = exchange_halos()
            if (rc == MPI_SUCCESS) then
                call sweep()
                it = it + 1
                if (report_times) then
                    call MPI_Comm_rank(cart, rank)
                    if (rank == 0) then
                        write(output_unit, '(a, i0, 2a)') 'jacobi3d: iteration number=', it, ' time=', &
                            fixed(MPI_Wtime(), 6)
                        flush(output_unit)
                    end if
                end if
                if (merge(mod(it, max(every, 1)) == 0, sliding_checkpoint_due(s, it), every > 0) &
                    .and. it < iterations) then
                    saved = u
                    rc = sliding_checkpoint(s, int(it, int64))
                end if
            end if
        end if
        if (rc == MPI_SUCCESS) cycle
        status = sliding_recover(s, cart, role, version)
        if (status /= SLIDING_OK) call fail('recovery', status)
        if (role == SLIDING_FINISHED) exit
        if (version >= 0) then
            u = saved
            it = int(version)
        else
            call initial_values()
            it = 0
        end if
        call sliding_report_recovery(s, 'jacobi3d', it)
    end do

    rank = -1
    if (role /= SLIDING_FINISHED) call MPI_Comm_rank(cart, rank)
    if (rank == 0) then
        write(text, '(z16.16)') transfer(total, 0_int64)
        write(output_unit, '(a, i0, a, i0, 4a)') 'jacobi3d: done iterations=', iterations, ' n=', n, &
            ' checksum=0x', lower(trim(text)), ' value=', shortest(total)
        flush(output_unit)
    end if
    call sliding_free(s)
    call MPI_Finalize()

contains

    ! C's atoi for the numbers of the command line: 0 for anything that is not one.
    integer function atoi(text)
        character(*), intent(in) :: text
        integer :: ios
        read(text, *, iostat=ios) atoi
        if (ios /= 0) atoi = 0
    end function

    subroutine initial_values()
        integer :: cart_rank, ndims, coords3(3), i, j, k
        integer(int64) :: gx, gy, gz
        coords3 = 0
        call MPI_Comm_rank(cart, cart_rank)
        call MPI_Cartdim_get(cart, ndims)
        call MPI_Cart_coords(cart, cart_rank, ndims, coords3)
        u = 0
        do i = 1, n
            do j = 1, n
                do k = 1, n
                    gx = int(coords3(1), int64) * n + i
                    gy = int(coords3(2), int64) * n + j
                    gz = int(coords3(3), int64) * n + k
                    u(k, j, i) = real(mod(gx * 7 + gy * 13 + gz * 29, 101_int64), real64) / 101.0_real64
                end do
            end do
        end do
    end subroutine

    ! Face 'plane' of dimension 'dim' (0, 1, 2 as in C) of u into buf, or buf into it.
    subroutine face(dim, plane, buf, to_buffer)
        integer, intent(in) :: dim, plane
        real(real64), intent(inout) :: buf(n * n)
        logical, intent(in) :: to_buffer
        select case (dim)
        case (0)
            if (to_buffer) then
                buf = reshape(u(1:n, 1:n, plane), [n * n])
            else
                u(1:n, 1:n, plane) = reshape(buf, [n, n])
            end if
        case (1)
            if (to_buffer) then
                buf = reshape(u(1:n, plane, 1:n), [n * n])
            else
                u(1:n, plane, 1:n) = reshape(buf, [n, n])
            end if
        case default
            if (to_buffer) then
                buf = reshape(u(plane, 1:n, 1:n), [n * n])
            else
                u(plane, 1:n, 1:n) = reshape(buf, [n, n])
            end if
        end select
    end subroutine

    ! The six faces, as exchange_halos in jacobi3d.c; returns the MPI error.
    integer function exchange_halos() result(err)
        integer :: self, ndims, dims(3), coords3(3), dim, dir, low, high, to, from
        logical :: periods(3)
        call MPI_Comm_rank(cart, self)
        call MPI_Cartdim_get(cart, ndims)
        call MPI_Cart_get(cart, ndims, dims, periods, coords3)
        do dim = 0, 2
            if (dim < ndims) then
                call MPI_Cart_shift(cart, dim, 1, low, high)
            else
                low = MPI_PROC_NULL
                if (periods(1)) low = self
                high = low
            end if
            ! Send the high face up, receive the low halo from below; then the reverse.
            do dir = 0, 1
                if (dir == 0) then
                    to = high
                    from = low
                    call face(dim, n, send, .true.)
                else
                    to = low
                    from = high
                    call face(dim, 1, send, .true.)
                end if
                call MPI_Sendrecv(send, n * n, MPI_DOUBLE_PRECISION, to, dim * 2 + dir, recv, n * n, &
                                  MPI_DOUBLE_PRECISION, from, dim * 2 + dir, cart, MPI_STATUS_IGNORE, err)
                if (err /= MPI_SUCCESS) return
                if (from == MPI_PROC_NULL) recv = 0
                call face(dim, merge(0, n + 1, dir == 0), recv, .false.)
            end do
        end do
        err = MPI_SUCCESS
    end function

    subroutine sweep()
        integer :: i, j, k
        do i = 1, n
            do j = 1, n
                do k = 1, n
                    v(k, j, i) = (u(k, j, i - 1) + u(k, j, i + 1) + u(k, j - 1, i) + u(k, j + 1, i) + &
                                  u(k - 1, j, i) + u(k + 1, j, i)) / 6.0_real64
                end do
            end do
        end do
        swap => u
        u => v
        v => swap
    end subroutine

    ! Sum of the block, then of all blocks in rank order at rank 0 (into total); returns the MPI error.
    integer function checksum() result(err)
        real(real64) :: mine
        real(real64), allocatable :: all(:)
        integer :: i, j, k, cart_rank, ranks
        mine = 0
        do i = 1, n
            do j = 1, n
                do k = 1, n
                    mine = mine + u(k, j, i)
                end do
            end do
        end do
        call MPI_Comm_rank(cart, cart_rank)
        call MPI_Comm_size(cart, ranks)
        allocate(all(merge(ranks, 1, cart_rank == 0)))
        call MPI_Gather(mine, 1, MPI_DOUBLE_PRECISION, all, 1, MPI_DOUBLE_PRECISION, 0, cart, err)
        if (err == MPI_SUCCESS .and. cart_rank == 0) then
            total = 0
            do i = 1, ranks
                total = total + all(i)
            end do
        end if
    end function

    ! A runtime error: every survivor gets the same one, and all of them leave with exit status 3.
    subroutine fail(what, code)
        character(*), intent(in) :: what
        integer, intent(in) :: code
        write(error_unit, '(6a)') 'jacobi3d: error step=', what, ' status=', sliding_status_name(code), ' message=', &
            sliding_strerror(code)
        call sliding_free(s)
        call MPI_Finalize()
        stop 3, quiet=.true.
    end subroutine

    ! C's "%.Nf": x with N decimals, a 0 before the point.
    function fixed(x, decimals) result(out)
        real(real64), intent(in) :: x
        integer, intent(in) :: decimals
        character(:), allocatable :: out
        character(len=64) :: buffer, form
        write(form, '(a, i0, a)') '(f0.', decimals, ')'
        write(buffer, form) x
        out = trim(buffer)
        if (out(1:1) == '.') out = '0' // out
        if (out(1:2) == '-.') out = '-0' // out(2:)
    end function

    ! The value printed (17 significant digits, as C's %.17g for the sizes this program sums).
    function shortest(x) result(out)
        real(real64), intent(in) :: x
        character(:), allocatable :: out
        character(len=64) :: buffer
        write(buffer, '(g0.17)') x
        out = trim(adjustl(buffer))
    end function

    pure function lower(text) result(out)
        character(*), intent(in) :: text
        character(len(text)) :: out
        integer :: i
        out = text
        do i = 1, len(text)
            if (text(i:i) >= 'A' .and. text(i:i) <= 'F') out(i:i) = achar(iachar(text(i:i)) + 32)
        end do
    end function

end program jacobi3d
