! The program around a Fortran example of docs/sliding-runtime.md marked
! <!-- frame: stencil -->: tests/test_sliding_examples.py puts the example, as
! written, where the line EXAMPLE is, at the top of the subroutine
! run_example (its use statements, its declarations, then its statements).
! This frame gives what the example uses, the names of sliding.h's example:
!
!   rank                  this process's rank in MPI_COMM_WORLD (module example_frame);
!   n                     the number of iterations, 40;
!   allocate_tile(u, dims) allocates u(0:, 0:, 0:) for the largest tile, halo
!                         included, of an 11 x 9 x 7 domain split over the rank
!                         grid dims (tiles differ by a cell; a 2D grid splits x
!                         and y), zero;
!   initialize(u, cart)   this rank's tile at iteration 0, a function of the
!                         global cell, zero halo;
!   step(cart, it, u)     kill point "iter=IT" (sliding_killpoint with the
!                         example's own s: step is internal to run_example),
!                         then a halo exchange on cart (MPI_Sendrecv of
!                         subarray faces, no error checks) and a 7-point
!                         average plus a term that depends on it.
!
! After the example, a process that still holds a rank with no error recorded
! (sliding_finish agreed) gathers the tiles' sums to logical rank 0, which adds
! them in rank order and prints "frame: checksum=0x<bits> value=<sum>"; then
! sliding_free. The frame reads the example's variables s, cart, role and u.
module example_frame
    use, intrinsic :: iso_fortran_env, only: int64, real64
    use mpi_f08
    use sliding
    implicit none
    integer, parameter :: n = 40
    integer, parameter :: domain(3) = [11, 9, 7]
    integer :: rank = -1
contains
    integer function tile_cells(cells, parts, c)
        integer, intent(in) :: cells, parts, c
        tile_cells = cells / parts
        if (c < mod(cells, parts)) tile_cells = tile_cells + 1
    end function

    integer function tile_first(cells, parts, c)
        integer, intent(in) :: cells, parts, c
        tile_first = c * (cells / parts) + min(c, mod(cells, parts))
    end function

    subroutine allocate_tile(u, dims)
        real(real64), allocatable, intent(inout) :: u(:,:,:)
        integer, intent(in) :: dims(3)
        integer :: largest(3), d
        do d = 1, 3
            largest(d) = tile_cells(domain(d), dims(d), 0) ! coordinate 0 has the most cells
        end do
        allocate(u(0:largest(1) + 1, 0:largest(2) + 1, 0:largest(3) + 1))
        u = 0
    end subroutine

    ! This rank's tile on cart: its cells along x, y, z and its first global cell (from 0).
    subroutine tile_of(cart, ndims, cells, first)
        type(MPI_Comm), intent(in) :: cart
        integer, intent(out) :: ndims, cells(3), first(3)
        integer :: dims(3), coords(3), d
        logical :: periods(3)
        dims = 1
        coords = 0
        call MPI_Cartdim_get(cart, ndims)
        call MPI_Cart_get(cart, ndims, dims, periods, coords)
        do d = 1, 3
            cells(d) = tile_cells(domain(d), dims(d), coords(d))
            first(d) = tile_first(domain(d), dims(d), coords(d))
        end do
    end subroutine

    subroutine initialize(u, cart)
        real(real64), intent(inout) :: u(0:, 0:, 0:)
        type(MPI_Comm), intent(in) :: cart
        integer :: ndims, cells(3), first(3), x, y, z
        call tile_of(cart, ndims, cells, first)
        u = 0
        do z = 1, cells(3)
            do y = 1, cells(2)
                do x = 1, cells(1)
                    u(x, y, z) = real(mod((first(1) + x - 1) * 31 + (first(2) + y - 1) * 17 + &
                                          (first(3) + z - 1) * 7, 23), real64) / 23.0_real64
                end do
            end do
        end do
    end subroutine

    ! The face of the tile at `index` along dimension d (0 and cells+1: halos; 1 and cells: edges).
    function face(u, cells, d, index) result(type)
        real(real64), intent(in) :: u(0:, 0:, 0:)
        integer, intent(in) :: cells(3), d, index
        type(MPI_Datatype) :: type
        integer :: starts(3), sizes(3)
        starts = 1
        sizes = cells
        starts(d) = index
        sizes(d) = 1
        call MPI_Type_create_subarray(3, shape(u), sizes, starts, MPI_ORDER_FORTRAN, MPI_DOUBLE_PRECISION, type)
        call MPI_Type_commit(type)
    end function

    subroutine sweep(cart, it, u)
        type(MPI_Comm), intent(in) :: cart
        integer, intent(in) :: it
        real(real64), intent(inout) :: u(0:, 0:, 0:)
        real(real64), allocatable :: next(:,:,:)
        type(MPI_Datatype) :: low_edge, high_edge, low_halo, high_halo
        integer :: ndims, cells(3), first(3), d, low, high, x, y, z
        call tile_of(cart, ndims, cells, first)
        do d = 1, ndims
            call MPI_Cart_shift(cart, d - 1, 1, low, high)
            low_edge = face(u, cells, d, 1)
            high_edge = face(u, cells, d, cells(d))
            low_halo = face(u, cells, d, 0)
            high_halo = face(u, cells, d, cells(d) + 1)
            call MPI_Sendrecv(u, 1, high_edge, high, d, u, 1, low_halo, low, d, cart, MPI_STATUS_IGNORE)
            call MPI_Sendrecv(u, 1, low_edge, low, 3 + d, u, 1, high_halo, high, 3 + d, cart, MPI_STATUS_IGNORE)
            call MPI_Type_free(low_edge)
            call MPI_Type_free(high_edge)
            call MPI_Type_free(low_halo)
            call MPI_Type_free(high_halo)
        end do
        allocate(next(cells(1), cells(2), cells(3)))
        do z = 1, cells(3)
            do y = 1, cells(2)
                do x = 1, cells(1)
                    next(x, y, z) = 0.5_real64 * u(x, y, z) + (u(x - 1, y, z) + u(x + 1, y, z) + u(x, y - 1, z) + &
                                    u(x, y + 1, z) + u(x, y, z - 1) + u(x, y, z + 1)) / 12.0_real64 + &
                                    0.001_real64 * mod(it, 7)
                end do
            end do
        end do
        u(1:cells(1), 1:cells(2), 1:cells(3)) = next
    end subroutine

    ! The sum of this rank's cells; logical rank 0 adds the ranks' sums in rank order and prints it.
    subroutine print_checksum(cart, u)
        type(MPI_Comm), intent(in) :: cart
        real(real64), intent(in) :: u(0:, 0:, 0:)
        integer :: ndims, cells(3), first(3), cart_rank, size, r
        real(real64) :: sum
        real(real64), allocatable :: sums(:)
        call tile_of(cart, ndims, cells, first)
        sum = 0
        block
            integer :: x, y, z
            do x = 1, cells(1)
                do y = 1, cells(2)
                    do z = 1, cells(3)
                        sum = sum + u(x, y, z)
                    end do
                end do
            end do
        end block
        call MPI_Comm_rank(cart, cart_rank)
        call MPI_Comm_size(cart, size)
        allocate(sums(size))
        call MPI_Gather(sum, 1, MPI_DOUBLE_PRECISION, sums, 1, MPI_DOUBLE_PRECISION, 0, cart)
        if (cart_rank == 0) then
            sum = 0
            do r = 1, size
                sum = sum + sums(r)
            end do
            write (*, '(a, z16.16, a, es25.17)') 'frame: checksum=0x', transfer(sum, 0_int64), ' value=', sum
            flush (6)
        end if
    end subroutine
end module example_frame

module example_run
    implicit none
contains
    subroutine run_example()
        use example_frame
EXAMPLE
        if (role /= SLIDING_FINISHED .and. sliding_is_ok(s)) call print_checksum(cart, u)
        call sliding_free(s)
    contains
        subroutine step(comm, it, field)
            type(MPI_Comm), intent(in) :: comm
            integer, intent(in) :: it
            real(real64), intent(inout) :: field(0:, 0:, 0:)
            character(len=24) :: point
            write (point, '(a, i0)') 'iter=', it
            call sliding_killpoint(s, trim(point))
            call sweep(comm, it, field)
        end subroutine
    end subroutine
end module example_run

program example
    use mpi_f08
    use example_frame, only: rank
    use example_run
    implicit none
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call run_example()
    call MPI_Finalize()
end program example
