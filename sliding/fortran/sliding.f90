! sliding.f90 -- the sliding runtime (sliding/runtime/include/sliding.h) from
! Fortran 2018: `use sliding`, with `use mpi_f08` communicators.
!
! The calls are sliding.h's, under the same names (but sliding_is_ok for C's
! sliding_ok, which Fortran could not tell from SLIDING_OK), and do the same;
! the functions return the runtime's status (SLIDING_OK or a code whose name
! sliding_status_name gives and whose one-line message sliding_strerror
! gives), as the C functions do:
!
!     type(sliding_t) :: s
!     type(MPI_Comm) :: cart
!     integer :: rc, role
!     integer(int64) :: version
!     real(real64), allocatable, target :: u(:,:,:)
!     integer :: ndims, dims(3), it
!     rc = sliding_create(MPI_COMM_WORLD, 'torus:3x2x2', 'x:1', 'hybrid', s)
!     ! K processes per node: ..., s, block='2x2x1', node_key=rank / 4)
!     ! or from the command line ([--block AxB ...] GRID SPARES METHOD, then the program's own):
!     !   rc = sliding_create_from_command_line(MPI_COMM_WORLD, s, first)
!     rc = sliding_dims(s, ndims, dims)          ! the rank grid, before sliding_start
!     allocate(u(...))                           ! sized from dims: spares too
!     rc = sliding_register(s, u)                ! every process, the same sizes
!     rc = sliding_on_recovery(s, on_recovery)   ! optional: re-derive what depends on cart
!     rc = sliding_start(s, cart, role, version) ! spares wait here
!     if (rc == SLIDING_OK .and. role /= SLIDING_FINISHED .and. version < 0) call initialize(u)
!     it = int(max(version, 0_int64))
!     do while (rc == SLIDING_OK .and. role /= SLIDING_FINISHED)
!         do while (it < n .and. sliding_is_ok(s)) ! MPI calls on cart go unchecked
!             call step(cart, it, u)
!             it = it + 1
!             if (sliding_checkpoint_due(s, it)) rc = sliding_checkpoint(s, int(it, int64)) ! failed: is_ok says so
!         end do
!         rc = sliding_finish(s)
!         if (rc == SLIDING_OK) exit
!         rc = sliding_recover(s, cart, role, version) ! the same status everywhere
!         if (rc == SLIDING_OK .and. role /= SLIDING_FINISHED .and. version < 0) call initialize(u)
!         it = int(max(version, 0_int64))
!     end do
!     call sliding_free(s)                       ! then MPI_Finalize; rc says how it went
!
! This is sliding.h's check-once loop: mpi_f08 calls without ierror return
! after the runtime's error handler on cart has recorded the first error and
! revoked cart, so the iteration runs to its end and sliding_is_ok says once
! whether to recover. A recovery callback is a bind(c) function of the
! interface sliding_recovery_callback (the runtime, the old and new logical
! rank, the new cart as type(MPI_Comm)) returning 0, or non-zero to end the
! run with SLIDING_ERR_CALLBACK at every process:
!
!     integer(c_int) function on_recovery(s, old_rank, new_rank, cart) bind(c)
!         type(sliding_t), intent(in) :: s
!         integer(c_int), intent(in) :: old_rank, new_rank
!         type(MPI_Comm), intent(in) :: cart
!         ...
!         on_recovery = 0
!     end function
!
! Registered arrays are taken by reference and the runtime writes into them
! inside later calls (sliding_start, sliding_recover), long after
! sliding_register returns: a registered array must be TARGET or ALLOCATABLE
! (best both, as jacobi3d.f90 does: TARGET tells the compiler that other
! calls may change it, so it keeps no stale copy in registers), a variable
! (not an expression, which would be a temporary), and it must stay alive and
! in place (no deallocate, no reallocation by assignment) until sliding_free.
! Any type and rank is accepted; a strided section (u(1:n:2, :, :)) is refused
! with SLIDING_ERR_NOT_CONTIGUOUS, since a copy would not see the recoveries.
!
! The optional arguments of sliding_create are the info keys of
! sliding_create_info (block, node_key, node_coords, redundancy, domains),
! which the C side builds
! into an MPI_Info (sliding_fortran.c, through sliding_create_options); that C
! side does every conversion of an MPI handle too. Fortran has no argv to
! edit: sliding_create_from_command_line hands the arguments that
! get_command_argument reads to C's sliding_create_args, which alone knows the
! options, and says where the program's own arguments start. SLIDING_OK,
! SLIDING_ERR_ARG, the roles and SLIDING_POINT_ITER are C's values
! (tests/test_sliding_languages.py compares them); other statuses are named by
! sliding_status_name ('ERR_FAILED'). sliding_report_recovery and
! sliding_report_error print the examples' lines from C, flushed (recovered on
! stdout, error on stderr), as C programs print them.
!
! Build it with your program and the project's mpifort (after
! eval "$(ftslide env)"):
!   mpifort $SLIDING_CFLAGS sliding/fortran/sliding.f90 sliding/fortran/sliding_fortran.c prog.f90 $SLIDING_LIBS
module sliding
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: output_unit, error_unit
    use mpi_f08, only: MPI_Comm
    implicit none
    private

    public :: sliding_t, sliding_recovery_times, sliding_recovery_callback
    public :: SLIDING_OK, SLIDING_INITIAL, SLIDING_SURVIVOR, SLIDING_PROMOTED, SLIDING_FINISHED, SLIDING_POINT_ITER
    public :: SLIDING_ERR_ARG
    public :: sliding_create, sliding_create_from_command_line, sliding_register, sliding_start
    public :: sliding_checkpoint, sliding_checkpoint_due, sliding_recover
    public :: sliding_dims, sliding_coords, sliding_on_recovery, sliding_is_ok, sliding_finish
    public :: sliding_finalize, sliding_free, sliding_rank, sliding_node, sliding_lane, sliding_ranks
    public :: sliding_ranks_per_node, sliding_failed, sliding_last_recovery, sliding_killpoint
    public :: sliding_strerror, sliding_status_name, sliding_point_name, sliding_report_recovery, sliding_report_error

    enum, bind(c) ! enum sliding_status's first values
        enumerator :: SLIDING_OK = 0, SLIDING_ERR_ARG = 1
    end enum
    enum, bind(c) ! enum sliding_role
        enumerator :: SLIDING_INITIAL = 0, SLIDING_SURVIVOR = 1, SLIDING_PROMOTED = 2, SLIDING_FINISHED = 3
    end enum
    enum, bind(c) ! enum sliding_point's first value: the application's iteration point
        enumerator :: SLIDING_POINT_ITER = 0
    end enum

    ! A runtime instance (sliding_t * in C; interoperable, so that a recovery
    ! callback receives it).
    type, bind(c) :: sliding_t
        type(c_ptr) :: ptr = c_null_ptr
    end type

    ! Timing of the last successful recovery, in seconds (sliding.h's struct).
    type, bind(c) :: sliding_recovery_times
        real(c_double) :: agree, mapping, rebuild, state, commit, total
        integer(c_int) :: attempts, failed_nodes
        integer(c_int64_t) :: moved_bytes, buddy_bytes
        real(c_double) :: spawn
        integer(c_int) :: guests
    end type

    ! A recovery callback (sliding_on_recovery): called at every process that
    ! holds a rank after a recovery, with the logical rank it held before (-1:
    ! it was waiting), the one it holds now and the new Cartesian communicator;
    ! the registered arrays already hold the checkpoint. Returns 0, or non-zero
    ! to end the run (SLIDING_ERR_CALLBACK at every process). It must not free
    ! cart; it may use MPI on it and on its own communicators.
    abstract interface
        integer(c_int) function sliding_recovery_callback(s, old_rank, new_rank, cart) bind(c)
            import :: c_int, sliding_t, MPI_Comm
            type(sliding_t), intent(in) :: s
            integer(c_int), intent(in) :: old_rank, new_rank
            type(MPI_Comm), intent(in) :: cart
        end function
    end interface

    interface
        integer(c_int) function c_create(comm, grid, spares, method, block, node_key, node_coords, redundancy, &
                                         domains, out) bind(c, name='sliding_fortran_create')
            import :: c_int, c_char, c_ptr
            integer(c_int), intent(in) :: comm
            character(kind=c_char), dimension(*), intent(in) :: grid, spares, method
            type(c_ptr), value :: block, node_key, node_coords, redundancy, domains
            type(c_ptr), intent(out) :: out
        end function
        integer(c_int) function c_create_args(comm, argc, text, first, out) bind(c, name='sliding_fortran_create_args')
            import :: c_int, c_char, c_ptr
            integer(c_int), intent(in) :: comm, argc
            character(kind=c_char), dimension(*), intent(in) :: text
            integer(c_int), intent(out) :: first
            type(c_ptr), intent(inout) :: out
        end function
        integer(c_int) function c_register(s, array) bind(c, name='sliding_fortran_register')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
            type(*), dimension(..), intent(in) :: array
        end function
        integer(c_int) function c_start(s, cart, role, version) bind(c, name='sliding_fortran_start')
            import :: c_int, c_int64_t, c_ptr
            type(c_ptr), value :: s
            integer(c_int), intent(out) :: cart, role
            integer(c_int64_t), intent(out) :: version
        end function
        integer(c_int) function c_checkpoint_due(s, iteration) bind(c, name='sliding_checkpoint_due')
            import :: c_int, c_int64_t, c_ptr
            type(c_ptr), value :: s
            integer(c_int64_t), value :: iteration
        end function
        integer(c_int) function c_recover(s, cart, role, version) bind(c, name='sliding_fortran_recover')
            import :: c_int, c_int64_t, c_ptr
            type(c_ptr), value :: s
            integer(c_int), intent(inout) :: cart
            integer(c_int), intent(out) :: role
            integer(c_int64_t), intent(out) :: version
        end function
        integer(c_int) function c_checkpoint(s, version) bind(c, name='sliding_checkpoint')
            import :: c_int, c_int64_t, c_ptr
            type(c_ptr), value :: s
            integer(c_int64_t), value :: version
        end function
        integer(c_int) function c_on_recovery(s, callback) bind(c, name='sliding_fortran_on_recovery')
            import :: c_int, c_ptr, c_funptr
            type(c_ptr), value :: s
            type(c_funptr), value :: callback
        end function
        integer(c_int) function c_dims(s, ndims, dims) bind(c, name='sliding_dims')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
            integer(c_int), intent(out) :: ndims, dims(3)
        end function
        integer(c_int) function c_coords(s, coords) bind(c, name='sliding_coords')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
            integer(c_int), intent(out) :: coords(3)
        end function
        integer(c_int) function c_ok(s) bind(c, name='sliding_ok')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
        end function
        integer(c_int) function c_finish(s) bind(c, name='sliding_finish')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
        end function
        integer(c_int) function c_finalize(s) bind(c, name='sliding_finalize')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
        end function
        subroutine c_free(s) bind(c, name='sliding_free')
            import :: c_ptr
            type(c_ptr), value :: s
        end subroutine
        integer(c_int) function c_rank(s) bind(c, name='sliding_rank')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
        end function
        integer(c_int) function c_node(s) bind(c, name='sliding_node')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
        end function
        integer(c_int) function c_lane(s) bind(c, name='sliding_lane')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
        end function
        integer(c_int) function c_ranks(s) bind(c, name='sliding_ranks')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
        end function
        integer(c_int) function c_ranks_per_node(s) bind(c, name='sliding_ranks_per_node')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
        end function
        integer(c_int) function c_failed(s, nodes) bind(c, name='sliding_failed')
            import :: c_int, c_ptr
            type(c_ptr), value :: s
            type(c_ptr), intent(out) :: nodes
        end function
        subroutine c_last_recovery(s, out) bind(c, name='sliding_last_recovery')
            import :: c_ptr, sliding_recovery_times
            type(c_ptr), value :: s
            type(sliding_recovery_times), intent(out) :: out
        end subroutine
        subroutine c_killpoint(s, point) bind(c, name='sliding_killpoint')
            import :: c_ptr, c_char
            type(c_ptr), value :: s
            character(kind=c_char), dimension(*), intent(in) :: point
        end subroutine
        subroutine c_report_recovery(s, program, iteration) bind(c, name='sliding_report_recovery')
            import :: c_ptr, c_char, c_int64_t
            type(c_ptr), value :: s
            character(kind=c_char), dimension(*), intent(in) :: program
            integer(c_int64_t), value :: iteration
        end subroutine
        subroutine c_report_error(s, program, step, status) bind(c, name='sliding_report_error')
            import :: c_ptr, c_char, c_int
            type(c_ptr), value :: s
            character(kind=c_char), dimension(*), intent(in) :: program, step
            integer(c_int), value :: status
        end subroutine
        type(c_ptr) function c_strerror(status) bind(c, name='sliding_strerror')
            import :: c_ptr, c_int
            integer(c_int), value :: status
        end function
        type(c_ptr) function c_status_name(status) bind(c, name='sliding_status_name')
            import :: c_ptr, c_int
            integer(c_int), value :: status
        end function
        type(c_ptr) function c_point_name(point) bind(c, name='sliding_point_name')
            import :: c_ptr, c_int
            integer(c_int), value :: point
        end function
        integer(c_size_t) function c_strlen(text) bind(c, name='strlen')
            import :: c_size_t, c_ptr
            type(c_ptr), value :: text
        end function
    end interface

contains

    ! sliding_create_info(comm, grid, spares, method, info, s) with the info
    ! keys given: block ('2x2x1'), node_key (same key, same node), node_coords
    ! (the path of a node coordinate file), redundancy ('buddy', 'parity:G',
    ! 'rs:G,M'), domains ('2x2x1': failure domains as boxes of nodes).
    ! Collective over comm.
    integer function sliding_create(comm, grid, spares, method, s, block, node_key, node_coords, redundancy, &
                                    domains) result(status)
        type(MPI_Comm), intent(in) :: comm
        character(*), intent(in) :: grid, spares, method
        type(sliding_t), intent(out) :: s
        character(*), intent(in), optional :: block, node_coords, redundancy, domains
        integer, intent(in), optional :: node_key
        character(len=:, kind=c_char), allocatable, target :: c_block, c_coords, c_redundancy, c_domains
        integer(c_int), target :: c_key
        type(c_ptr) :: block_ptr, key_ptr, coords_ptr, redundancy_ptr, domains_ptr

        block_ptr = c_null_ptr
        key_ptr = c_null_ptr
        coords_ptr = c_null_ptr
        redundancy_ptr = c_null_ptr
        domains_ptr = c_null_ptr
        if (present(block)) then
            c_block = trim(block) // c_null_char
            block_ptr = c_loc(c_block)
        end if
        if (present(node_key)) then
            c_key = int(node_key, c_int)
            key_ptr = c_loc(c_key)
        end if
        if (present(node_coords)) then
            c_coords = trim(node_coords) // c_null_char
            coords_ptr = c_loc(c_coords)
        end if
        if (present(redundancy)) then
            c_redundancy = trim(redundancy) // c_null_char
            redundancy_ptr = c_loc(c_redundancy)
        end if
        if (present(domains)) then
            c_domains = trim(domains) // c_null_char
            domains_ptr = c_loc(c_domains)
        end if
        status = c_create(comm%MPI_VAL, trim(grid) // c_null_char, trim(spares) // c_null_char, &
                          trim(method) // c_null_char, block_ptr, key_ptr, coords_ptr, redundancy_ptr, &
                          domains_ptr, s%ptr)
    end function

    ! sliding_create_args (sliding.h) over this program's command line, as
    ! get_command_argument reads it: the runtime's options (--block AxB[xC],
    ! --emulate-nodes K, --node-coords FILE, --checkpoint-every N,
    ! --redundancy POLICY, --domains AxB[xC]), then GRID
    ! SPARES METHOD. first is the index (for get_command_argument) of the first
    ! argument after METHOD, command_argument_count() + 1 if there is none; 0
    ! on a failure. SLIDING_ERR_ARG at every process if GRID SPARES METHOD are
    ! missing or an option is unknown or lacks its value (or is malformed:
    ! --emulate-nodes), otherwise sliding_create's statuses (SLIDING_ERR_INFO
    ! for a --checkpoint-every that is not a whole number of at least 1).
    ! Collective over comm.
    integer function sliding_create_from_command_line(comm, s, first) result(status)
        type(MPI_Comm), intent(in) :: comm
        type(sliding_t), intent(out) :: s
        integer, intent(out) :: first
        character(len=:, kind=c_char), allocatable :: text, argument
        integer :: k, length
        integer(c_int) :: c_first
        text = ''
        do k = 0, command_argument_count() ! the program's name first, as C's argv[0]
            call get_command_argument(k, length=length)
            allocate(character(len=length, kind=c_char) :: argument)
            if (length > 0) call get_command_argument(k, argument)
            text = text // argument // c_null_char
            deallocate(argument)
        end do
        status = c_create_args(comm%MPI_VAL, int(command_argument_count() + 1, c_int), text, c_first, s%ptr)
        first = c_first
    end function

    ! Register an array (any type and rank, contiguous, TARGET or ALLOCATABLE:
    ! see the top of this file) that checkpoints and recoveries carry.
    integer function sliding_register(s, array) result(status)
        type(sliding_t), intent(in) :: s
        type(*), dimension(..), intent(inout), target :: array
        status = c_register(s%ptr, array)
    end function

    integer function sliding_start(s, cart, role, version) result(status)
        type(sliding_t), intent(in) :: s
        type(MPI_Comm), intent(out) :: cart
        integer, intent(out) :: role
        integer(c_int64_t), intent(out) :: version
        integer(c_int) :: c_role
        status = c_start(s%ptr, cart%MPI_VAL, c_role, version)
        role = c_role
    end function

    ! On a failure during it, returns the MPI error (the previous checkpoint stays committed).
    integer function sliding_checkpoint(s, version) result(status)
        type(sliding_t), intent(in) :: s
        integer(c_int64_t), intent(in) :: version
        status = c_checkpoint(s%ptr, version)
    end function

    ! Whether the checkpoint labelled iteration is due: every N iterations
    ! (--checkpoint-every N, default 5). Local.
    logical function sliding_checkpoint_due(s, iteration)
        type(sliding_t), intent(in) :: s
        integer, intent(in) :: iteration
        sliding_checkpoint_due = c_checkpoint_due(s%ptr, int(iteration, c_int64_t)) /= 0
    end function

    ! cart is replaced (the old one is freed by the runtime).
    integer function sliding_recover(s, cart, role, version) result(status)
        type(sliding_t), intent(in) :: s
        type(MPI_Comm), intent(inout) :: cart
        integer, intent(out) :: role
        integer(c_int64_t), intent(out) :: version
        integer(c_int) :: c_role
        status = c_recover(s%ptr, cart%MPI_VAL, c_role, version)
        role = c_role
    end function

    ! The rank grid, before or after sliding_start: ndims (2 or 3) and its
    ! sizes (dims(3) = 1 in 2D).
    integer function sliding_dims(s, ndims, dims) result(status)
        type(sliding_t), intent(in) :: s
        integer, intent(out) :: ndims, dims(3)
        integer(c_int) :: c_ndims, c_sizes(3)
        status = c_dims(s%ptr, c_ndims, c_sizes)
        ndims = c_ndims
        dims = c_sizes
    end function

    ! This process's tile: its coordinates in the rank grid, from 0 as
    ! MPI_Cart_coords gives them, or -1s if it holds no rank (a spare).
    integer function sliding_coords(s, coords) result(status)
        type(sliding_t), intent(in) :: s
        integer, intent(out) :: coords(3)
        integer(c_int) :: c_coords3(3)
        status = c_coords(s%ptr, c_coords3)
        coords = c_coords3
    end function

    ! Register a recovery callback (the interface sliding_recovery_callback),
    ! called after every successful recovery in the order registered. Every
    ! process, spares included, registers the same number before sliding_start.
    integer function sliding_on_recovery(s, callback) result(status)
        type(sliding_t), intent(in) :: s
        procedure(sliding_recovery_callback) :: callback
        status = c_on_recovery(s%ptr, c_funloc(callback))
    end function

    ! C's sliding_ok (Fortran's names ignore case: sliding_ok would be
    ! SLIDING_OK): whether this worker's step may go on, no error recorded on
    ! cart since it was built and cart not revoked. .false.: call
    ! sliding_recover (or sliding_finish, which then fails). Local.
    logical function sliding_is_ok(s)
        type(sliding_t), intent(in) :: s
        sliding_is_ok = c_ok(s%ptr) /= 0
    end function

    ! The end of the run, collective over the workers: SLIDING_OK when every
    ! worker completed (the waiting processes are released), else
    ! SLIDING_ERR_FAILED: call sliding_recover and run again from the checkpoint.
    integer function sliding_finish(s) result(status)
        type(sliding_t), intent(in) :: s
        status = c_finish(s%ptr)
    end function

    integer function sliding_finalize(s) result(status)
        type(sliding_t), intent(in) :: s
        status = c_finalize(s%ptr)
    end function

    subroutine sliding_free(s)
        type(sliding_t), intent(inout) :: s
        call c_free(s%ptr)
        s%ptr = c_null_ptr
    end subroutine

    integer function sliding_rank(s)
        type(sliding_t), intent(in) :: s
        sliding_rank = c_rank(s%ptr)
    end function

    integer function sliding_node(s)
        type(sliding_t), intent(in) :: s
        sliding_node = c_node(s%ptr)
    end function

    integer function sliding_lane(s)
        type(sliding_t), intent(in) :: s
        sliding_lane = c_lane(s%ptr)
    end function

    integer function sliding_ranks(s)
        type(sliding_t), intent(in) :: s
        sliding_ranks = c_ranks(s%ptr)
    end function

    integer function sliding_ranks_per_node(s)
        type(sliding_t), intent(in) :: s
        sliding_ranks_per_node = c_ranks_per_node(s%ptr)
    end function

    ! The agreed failed nodes, in the order they failed.
    function sliding_failed(s) result(nodes)
        type(sliding_t), intent(in) :: s
        integer, allocatable :: nodes(:)
        type(c_ptr) :: first
        integer(c_int32_t), pointer :: c_nodes(:)
        integer :: n
        n = c_failed(s%ptr, first)
        allocate(nodes(n))
        if (n > 0) then
            call c_f_pointer(first, c_nodes, [n])
            nodes = c_nodes
        end if
    end function

    function sliding_last_recovery(s) result(times)
        type(sliding_t), intent(in) :: s
        type(sliding_recovery_times) :: times
        call c_last_recovery(s%ptr, times)
    end function

    ! Fault injection at the point named (sliding.h): 'iter=12', or
    ! ('iter=', 12) with the number apart (C's sliding_killpointf).
    subroutine sliding_killpoint(s, point, number)
        type(sliding_t), intent(in) :: s
        character(*), intent(in) :: point
        integer, intent(in), optional :: number
        character(len=16) :: digits
        logical, save :: looked = .false., armed = .false.
        integer :: length
        if (.not. looked) then ! FTSLIDE_KILL is read once, as in C: no kill armed costs a test
            call get_environment_variable('FTSLIDE_KILL', length=length)
            armed = length > 0
            looked = .true.
        end if
        if (.not. armed) return
        digits = ''
        if (present(number)) write(digits, '(i0)') number
        call c_killpoint(s%ptr, trim(point) // trim(digits) // c_null_char)
    end subroutine

    ! Logical rank 0 prints the line that says where the workers resume after
    ! the last recovery, 'PROGRAM: recovered iteration=I failed=... attempts=...'
    ! (nothing if none happened yet), on stdout, flushed.
    subroutine sliding_report_recovery(s, program, iteration)
        type(sliding_t), intent(in) :: s
        character(*), intent(in) :: program
        integer, intent(in) :: iteration
        flush(output_unit) ! what this program wrote before comes first
        call c_report_recovery(s%ptr, trim(program) // c_null_char, int(iteration, c_int64_t))
    end subroutine

    ! 'PROGRAM: error step=STEP status=NAME message=...' on stderr: at every
    ! process for a runtime's status (the same everywhere), at rank 0 of
    ! MPI_COMM_WORLD only if s was not created.
    subroutine sliding_report_error(s, program, step, status)
        type(sliding_t), intent(in) :: s
        character(*), intent(in) :: program, step
        integer, intent(in) :: status
        flush(error_unit)
        call c_report_error(s%ptr, trim(program) // c_null_char, trim(step) // c_null_char, int(status, c_int))
    end subroutine

    function sliding_strerror(status) result(text)
        integer, intent(in) :: status
        character(:), allocatable :: text
        text = from_c(c_strerror(int(status, c_int)))
    end function

    ! The name of a status ('ERR_NO_SPARE'), '' for a value that is none.
    function sliding_status_name(status) result(text)
        integer, intent(in) :: status
        character(:), allocatable :: text
        text = from_c(c_status_name(int(status, c_int)))
    end function

    ! The name of a kill point ('iter' for SLIDING_POINT_ITER), '' for a value that is none.
    function sliding_point_name(point) result(text)
        integer, intent(in) :: point
        character(:), allocatable :: text
        text = from_c(c_point_name(int(point, c_int)))
    end function

    ! A C string as a Fortran one ('' for NULL).
    function from_c(text) result(out)
        type(c_ptr), intent(in) :: text
        character(:), allocatable :: out
        character(kind=c_char), pointer :: chars(:)
        integer :: i, n
        if (.not. c_associated(text)) then
            out = ''
            return
        end if
        n = int(c_strlen(text))
        call c_f_pointer(text, chars, [n])
        allocate(character(n) :: out)
        do i = 1, n
            out(i:i) = chars(i)
        end do
    end function

end module sliding
