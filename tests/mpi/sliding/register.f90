! The Fortran module `sliding` on np 2 (mesh:2x1, spares x:1: one worker, one spare): its
! constants, and which arrays sliding_register takes. Every process reports, as ftcheck lines,
! the roles, SLIDING_OK and SLIDING_POINT_ITER (the test compares them with C's), the status of
! registering a strided section (twice: its name and its message), a contiguous column, a whole
! allocatable array of rank 3 and a scalar, then of a start, checkpoint and finalize that carry them.
program register
    use, intrinsic :: iso_fortran_env, only: int64, real64
    use mpi_f08
    use sliding
    use ftcheck
    implicit none
    type(sliding_t) :: s
    type(MPI_Comm) :: cart
    real(real64), allocatable, target :: whole(:,:,:)
    real(real64), target :: strided(10, 4), scalar
    integer :: rc, role
    integer(int64) :: version

    call MPI_Init()
    call report_int('initial', SLIDING_INITIAL)
    call report_int('survivor', SLIDING_SURVIVOR)
    call report_int('promoted', SLIDING_PROMOTED)
    call report_int('finished', SLIDING_FINISHED)
    call report_int('ok', SLIDING_OK)
    call report('ok_name', sliding_status_name(SLIDING_OK))
    call report('iter_point', sliding_point_name(SLIDING_POINT_ITER))
    rc = sliding_create(MPI_COMM_WORLD, 'mesh:2x1', 'x:1', 'simple', s)
    call report('create', sliding_status_name(rc))
    allocate(whole(4, 3, 2))
    whole = 1
    strided = 2
    scalar = 3
    call report('strided', sliding_status_name(sliding_register(s, strided(1:10:2, :))))
    call report('strided_message', sliding_strerror(sliding_register(s, strided(1:10:2, :))))
    call report('column', sliding_status_name(sliding_register(s, strided(:, 2))))
    call report('whole', sliding_status_name(sliding_register(s, whole)))
    call report('scalar', sliding_status_name(sliding_register(s, scalar)))
    rc = sliding_start(s, cart, role, version)
    call report('start', sliding_status_name(rc))
    call report_int('role', role)
    if (role /= SLIDING_FINISHED) then
        call report_int('rank', sliding_rank(s))
        rc = sliding_checkpoint(s, 1_int64)
        call report('checkpoint', sliding_status_name(rc))
        rc = sliding_finalize(s)
        call report('finalize', sliding_status_name(rc))
    end if
    call report_int('failed', size(sliding_failed(s)))
    call sliding_free(s)
    call MPI_Finalize()
end program register
