! heat2d.f90 and heat2d_plain.f90 (this comment is the same in both): heat2d.c
! and heat2d_plain.c in Fortran, through the module `sliding`
! (sliding/fortran/sliding.f90) for heat2d: the same arguments, options,
! output lines and exit statuses, the same arithmetic in the same order, so
! the same checksum as C's, bit for bit. heat2d.c's header says what they
! compute and print; `diff heat2d_plain.f90 heat2d.f90` is all the runtime
! asks of a Fortran application (tests/test_sliding_heat2d.py counts it).
!
! A tile's field, C's u[i][j] (i the row, the first Cartesian dimension), is
! u(j, i) here: rows are contiguous, columns a vector datatype, and the
! loops run i, then j, as in C. The arrays are ALLOCATABLE and TARGET (the
! runtime writes into heat2d's at every recovery) and their halos are
! received by Irecv: ASYNCHRONOUS. Both are sized for the largest tile, so
! that the first dimension (the vector's stride) is the same at every rank;
! a tile uses u(0:ny+1, 0:nx+1) of it. The two pointers u and unew swap
! after every sweep (swap_fields).
!
! Fortran has no argv to shorten: sliding_create_from_command_line (the
! module's sliding_create_args) takes heat2d's OPTIONS and GRID SPARES METHOD
! and says where NX is, first; heat2d_plain's NX is argument 1.
program heat2d_plain
    use, intrinsic :: iso_fortran_env, only: int64, real64, output_unit, error_unit
    use mpi_f08
    implicit none

    type :: tile_t
        integer :: gnx = 0, gny = 0             ! the whole grid's interior points
        integer :: nx = 0, ny = 0               ! this tile's interior points
        integer :: x0 = 1, y0 = 1               ! the global index of its first interior point (1: the grid's first)
        integer :: up, down, left, right        ! neighbours in the Cartesian communicator, MPI_PROC_NULL at an edge
        type(MPI_Datatype) :: column, interior  ! an interior column; the interior within the halo ring
    end type

    integer :: first, nargs, nx, ny, iterations, world_size, dims(2), it, status
    type(MPI_Comm) :: cart
    type(tile_t) :: t
    real(real64), allocatable, target, asynchronous :: a(:,:), b(:,:)
    real(real64), pointer, contiguous, asynchronous :: u(:,:), unew(:,:)
    real(real64), allocatable :: whole(:,:)

    call MPI_Init()
    first = 1 ! the index of NX, the first argument
    nargs = command_argument_count() - first + 1
    status = 0
    nx = argument(first, 50)
    ny = argument(first + 1, 37)
    iterations = argument(first + 2, 40)
    if (nargs > 3 .or. nx < 1 .or. ny < 1 .or. iterations < 1) then
        call refuse('usage: heat2d_plain [NX [NY [ITERATIONS]]], whole numbers of at least 1')
    end if
    call MPI_Comm_size(MPI_COMM_WORLD, world_size)
    dims = 0
    call MPI_Dims_create(world_size, 2, dims)
    if (nx < dims(1) .or. ny < dims(2)) call refuse("NX and NY must be at least the rank grid's sizes")
    allocate(a(0:ny/dims(2)+2, 0:nx/dims(1)+2), b(0:ny/dims(2)+2, 0:nx/dims(1)+2)) ! the largest tile

    call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, [.false., .false.], .false., cart)
    call tile_setup(t, cart, nx, ny)
    call tile_types(t, size(a, 1))
    u => a
    unew => b
    call initial_values(t, u, unew)
    do it = 0, iterations - 1
        call exchange_halos(t, u, cart)
        call sweep(t, u, unew)
        call swap_fields(u, unew)
    end do
    call gather_field(t, u, cart, whole) ! allocated at rank 0
    call tile_free(t)
    if (allocated(whole)) status = validate(whole, nx, ny, iterations)
    call MPI_Comm_free(cart)
    call MPI_Finalize()
    if (status /= 0) stop status, quiet=.true.

contains

    ! Command argument k as a whole number of at least 1 (-1 if it is not one), or dflt if there is none.
    integer function argument(k, dflt)
        integer, intent(in) :: k, dflt
        character(len=64) :: text
        integer :: ios, length
        argument = dflt
        if (k > command_argument_count()) return
        call get_command_argument(k, text, length)
        read(text, '(i64)', iostat=ios) argument
        if (ios /= 0 .or. length > len(text) .or. verify(trim(text), '0123456789') /= 0) argument = -1
        if (argument < 1 .or. argument > 1000000) argument = -1
    end function

    ! Bad arguments: world rank 0 says so in one line; every process exits with status 2.
    subroutine refuse(message)
        character(*), intent(in) :: message
        integer :: rank
        call MPI_Comm_rank(MPI_COMM_WORLD, rank)
        if (rank == 0) write(error_unit, '(2a)') 'heat2d: error step=arguments message=', message
        call MPI_Finalize()
        stop 2, quiet=.true.
    end subroutine

    ! Part coord (from 0) of parts of n points: its size and its first point (1-based); the first mod(n, parts)
    ! get one more.
    subroutine split(n, parts, coord, length, first)
        integer, intent(in) :: n, parts, coord
        integer, intent(out) :: length, first
        length = n / parts + merge(1, 0, coord < mod(n, parts))
        first = 1 + coord * (n / parts) + min(coord, mod(n, parts))
    end subroutine

    ! The part of the grid that rank of cart holds: its size and first point in each dimension.
    subroutine place(t, cart, rank)
        type(tile_t), intent(inout) :: t
        type(MPI_Comm), intent(in) :: cart
        integer, intent(in) :: rank
        integer :: dims(2), coords(2)
        logical :: periods(2)
        call MPI_Cart_get(cart, 2, dims, periods, coords)
        call MPI_Cart_coords(cart, rank, 2, coords)
        call split(t%gnx, dims(1), coords(1), t%nx, t%x0)
        call split(t%gny, dims(2), coords(2), t%ny, t%y0)
    end subroutine

    ! This process's tile of the gnx x gny grid and its neighbours (MPI_PROC_NULL at the grid's edges).
    subroutine tile_setup(t, cart, gnx, gny)
        type(tile_t), intent(inout) :: t
        type(MPI_Comm), intent(in) :: cart
        integer, intent(in) :: gnx, gny
        integer :: rank
        call MPI_Comm_rank(cart, rank)
        t%gnx = gnx
        t%gny = gny
        call place(t, cart, rank)
        call MPI_Cart_shift(cart, 0, 1, t%up, t%down)
        call MPI_Cart_shift(cart, 1, 1, t%left, t%right)
        if (t%x0 == 1) t%up = MPI_PROC_NULL ! the field is not periodic, even where the machine is
        if (t%x0 + t%nx - 1 == t%gnx) t%down = MPI_PROC_NULL
        if (t%y0 == 1) t%left = MPI_PROC_NULL
        if (t%y0 + t%ny - 1 == t%gny) t%right = MPI_PROC_NULL
    end subroutine

    ! The new field becomes the current one and the current one the next new one.
    subroutine swap_fields(u, unew)
        real(real64), pointer, contiguous, intent(inout), asynchronous :: u(:,:), unew(:,:)
        real(real64), pointer, contiguous, asynchronous :: old(:,:)
        old => u
        u => unew
        unew => old
    end subroutine

    ! The tile's datatypes in an array whose first dimension has lead elements.
    subroutine tile_types(t, lead)
        type(tile_t), intent(inout) :: t
        integer, intent(in) :: lead
        call MPI_Type_vector(t%nx, 1, lead, MPI_DOUBLE_PRECISION, t%column)
        call MPI_Type_commit(t%column)
        call MPI_Type_create_subarray(2, [lead, t%nx + 2], [t%ny, t%nx], [1, 1], MPI_ORDER_FORTRAN, &
                                      MPI_DOUBLE_PRECISION, t%interior)
        call MPI_Type_commit(t%interior)
    end subroutine

    subroutine tile_free(t)
        type(tile_t), intent(inout) :: t
        call MPI_Type_free(t%column)
        call MPI_Type_free(t%interior)
    end subroutine

    ! Global point (i, j), 0..gnx+1 x 0..gny+1, before the first iteration: the fixed edges, or the starting pattern.
    real(real64) function initial(t, i, j)
        type(tile_t), intent(in) :: t
        integer, intent(in) :: i, j
        if (i == 0) then
            initial = 1
        else if (i == t%gnx + 1 .or. j == 0 .or. j == t%gny + 1) then
            initial = 0
        else
            initial = real(mod(i * 7 + j * 13, 101), real64) / 101.0_real64
        end if
    end function

    ! Both fields, halos included: a halo on the grid's edge holds the edge's value for good.
    subroutine initial_values(t, u, unew)
        type(tile_t), intent(in) :: t
        real(real64), intent(inout) :: u(0:, 0:), unew(0:, 0:)
        integer :: i, j
        do i = 0, t%nx + 1
            do j = 0, t%ny + 1
                u(j, i) = initial(t, t%x0 - 1 + i, t%y0 - 1 + j)
                unew(j, i) = u(j, i)
            end do
        end do
    end subroutine

    ! Fill the four halos from the neighbours; a halo on the grid's edge (MPI_PROC_NULL) keeps its value.
    ! Tags name the way the data goes: 0 down, 1 up, 2 right, 3 left.
    subroutine exchange_halos(t, u, cart)
        type(tile_t), intent(in) :: t
        real(real64), intent(inout), asynchronous :: u(0:, 0:)
        type(MPI_Comm), intent(in) :: cart
        type(MPI_Request) :: requests(8)
        call MPI_Irecv(u(1, 0), t%ny, MPI_DOUBLE_PRECISION, t%up, 0, cart, requests(1))
        call MPI_Irecv(u(1, t%nx + 1), t%ny, MPI_DOUBLE_PRECISION, t%down, 1, cart, requests(2))
        call MPI_Irecv(u(0, 1), 1, t%column, t%left, 2, cart, requests(3))
        call MPI_Irecv(u(t%ny + 1, 1), 1, t%column, t%right, 3, cart, requests(4))
        call MPI_Isend(u(1, t%nx), t%ny, MPI_DOUBLE_PRECISION, t%down, 0, cart, requests(5))
        call MPI_Isend(u(1, 1), t%ny, MPI_DOUBLE_PRECISION, t%up, 1, cart, requests(6))
        call MPI_Isend(u(t%ny, 1), 1, t%column, t%right, 2, cart, requests(7))
        call MPI_Isend(u(1, 1), 1, t%column, t%left, 3, cart, requests(8))
        call MPI_Waitall(8, requests, MPI_STATUSES_IGNORE)
    end subroutine

    subroutine sweep(t, u, unew)
        type(tile_t), intent(in) :: t
        real(real64), intent(in) :: u(0:, 0:)
        real(real64), intent(inout) :: unew(0:, 0:)
        integer :: i, j
        do i = 1, t%nx
            do j = 1, t%ny
                unew(j, i) = (u(j, i - 1) + u(j, i + 1) + u(j - 1, i) + u(j + 1, i)) * 0.25_real64
            end do
        end do
    end subroutine

    ! The interior of every tile, at rank 0 of cart, into whole(gny, gnx); whole stays unallocated elsewhere.
    subroutine gather_field(t, u, cart, whole)
        type(tile_t), intent(in) :: t
        real(real64), intent(in) :: u(0:, 0:)
        type(MPI_Comm), intent(in) :: cart
        real(real64), allocatable, intent(out) :: whole(:,:)
        real(real64), allocatable :: tiles(:)
        integer, allocatable :: counts(:), displs(:)
        type(tile_t) :: other
        integer :: rank, ranks, r, i
        call MPI_Comm_rank(cart, rank)
        call MPI_Comm_size(cart, ranks)
        other = t
        allocate(counts(ranks), displs(ranks), tiles(merge(t%gnx * t%gny, 1, rank == 0)))
        displs(1) = 0
        do r = 0, ranks - 1
            call place(other, cart, r)
            counts(r + 1) = other%nx * other%ny
            if (r > 0) displs(r + 1) = displs(r) + counts(r)
        end do
        call MPI_Gatherv(u, 1, t%interior, tiles, counts, displs, MPI_DOUBLE_PRECISION, 0, cart)
        if (rank /= 0) return
        allocate(whole(t%gny, t%gnx))
        do r = 0, ranks - 1 ! tile r's rows to their place
            call place(other, cart, r)
            do i = 0, other%nx - 1
                whole(other%y0:other%y0 + other%ny - 1, other%x0 + i) = &
                    tiles(displs(r + 1) + i * other%ny + 1:displs(r + 1) + (i + 1) * other%ny)
            end do
        end do
    end subroutine

    ! Rank 0: recompute the grid serially, compare, print the done line; the exit status (0 valid, 4 not).
    integer function validate(field, gnx, gny, iterations) result(status)
        real(real64), intent(in) :: field(:,:)
        integer, intent(in) :: gnx, gny, iterations
        type(tile_t) :: whole
        real(real64), allocatable, target :: wa(:,:), wb(:,:)
        real(real64), pointer, contiguous :: wu(:,:), wnew(:,:), wswap(:,:)
        real(real64) :: total, worst
        integer(int64) :: differ
        integer :: i, j, it
        character(len=32) :: bits
        whole%gnx = gnx
        whole%gny = gny
        whole%nx = gnx
        whole%ny = gny
        allocate(wa(0:gny+1, 0:gnx+1), wb(0:gny+1, 0:gnx+1))
        wu => wa
        wnew => wb
        call initial_values(whole, wu, wnew)
        do it = 1, iterations
            call sweep(whole, wu, wnew)
            wswap => wu
            wu => wnew
            wnew => wswap
        end do
        total = 0
        worst = 0
        differ = 0
        do i = 1, gnx
            do j = 1, gny
                total = total + field(j, i)
                if (field(j, i) /= wu(j, i)) then ! NaN too
                    differ = differ + 1
                    worst = max(worst, abs(field(j, i) - wu(j, i)))
                end if
            end do
        end do
        write(bits, '(z16.16)') transfer(total, 0_int64)
        write(output_unit, '(3(a, i0), 6a)') 'heat2d: done iterations=', iterations, ' nx=', gnx, ' ny=', gny, &
            ' checksum=0x', lower(trim(bits)), ' value=', shortest(total), ' valid=', &
            trim(merge('yes', 'no ', differ == 0))
        flush(output_unit)
        if (differ /= 0) then
            write(error_unit, '(a, i0, a, i0, a, i0, 2a)') 'heat2d: error step=validation message=', differ, ' of ', &
                gnx, ' x ', gny, ' points differ from the serial computation, by up to ', shortest(worst)
        end if
        status = merge(0, 4, differ == 0)
    end function

    ! The value printed (17 significant digits, as C's %.17g for the sums this program prints).
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

end program
