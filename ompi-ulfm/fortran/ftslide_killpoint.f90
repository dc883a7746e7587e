! Named kill points for Fortran MPI programs: the FTSLIDE_KILL convention of
! ompi-ulfm/include/ftslide_killpoint.h, for programs that cannot include it.
!
! A program marks where a test may kill it:
!
!     use ftslide_killpoint
!     call ftslide_kill_at(rank, "after_barrier")
!     write (point, '(a,i0)') "iter=", it
!     call ftslide_kill_at(rank, trim(point))
!
! and the test names the victims in the environment, FTSLIDE_KILL="2@iter=5,3@after_barrier".
! A rank that reaches a point named for it prints "ftslide: rank R killed at P" on stderr
! and sends itself SIGKILL: it dies at once, as if killed from outside. FTSLIDE_KILL is
! read once. As in C, FTSLIDE_KILL_NODE=1 kills the parent (the node's daemon) first
! and FTSLIDE_KILL_LOG=FILE appends the line to FILE too.
module ftslide_killpoint
    use, intrinsic :: iso_c_binding, only: c_int
    use, intrinsic :: iso_fortran_env, only: error_unit, output_unit
    implicit none
    private
    public :: ftslide_kill_at

    integer(c_int), parameter :: SIGKILL = 9
    logical, save :: looked = .false.
    character(len=:), allocatable, save :: spec

    interface
        function c_getpid() bind(C, name="getpid") result(pid)
            import :: c_int
            integer(c_int) :: pid
        end function c_getpid
        function c_getppid() bind(C, name="getppid") result(pid)
            import :: c_int
            integer(c_int) :: pid
        end function c_getppid
        function c_kill(pid, sig) bind(C, name="kill") result(rc)
            import :: c_int
            integer(c_int), value :: pid, sig
            integer(c_int) :: rc
        end function c_kill
    end interface

contains

    ! The value of environment variable NAME, "" when it is unset.
    function environment(name) result(value)
        character(len=*), intent(in) :: name
        character(len=:), allocatable :: value
        integer :: length, status
        call get_environment_variable(name, length=length, status=status)
        if (status /= 0 .or. length == 0) then
            value = ""
            return
        end if
        allocate (character(len=length) :: value)
        call get_environment_variable(name, value)
    end function environment

    ! SIGKILL this process when FTSLIDE_KILL names RANK@POINT.
    subroutine ftslide_kill_at(rank, point)
        integer, intent(in) :: rank
        character(len=*), intent(in) :: point
        character(len=24) :: number
        character(len=:), allocatable :: wanted
        integer :: first, comma, last
        if (.not. looked) then
            spec = environment("FTSLIDE_KILL")
            looked = .true.
        end if
        if (len(spec) == 0) return
        write (number, '(i0)') rank
        wanted = trim(number)//"@"//point
        first = 1
        do while (first <= len(spec))
            comma = index(spec(first:), ",")
            last = merge(len(spec), first + comma - 2, comma == 0)
            if (last - first + 1 == len(wanted)) then
                if (spec(first:last) == wanted) call die(trim(number), point)
            end if
            if (comma == 0) exit
            first = first + comma
        end do
    end subroutine ftslide_kill_at

    subroutine die(rank, point)
        character(len=*), intent(in) :: rank, point
        character(len=:), allocatable :: line, log
        integer(c_int) :: rc
        integer :: unit, status
        line = "ftslide: rank "//rank//" killed at "//point
        write (error_unit, '(a)') line
        flush (error_unit)
        flush (output_unit)
        log = environment("FTSLIDE_KILL_LOG")
        if (len(log) > 0) then
            open (newunit=unit, file=log, position="append", action="write", iostat=status)
            if (status == 0) then
                write (unit, '(a)') line
                close (unit)
            end if
        end if
        if (environment("FTSLIDE_KILL_NODE") == "1") rc = c_kill(c_getppid(), SIGKILL)
        rc = c_kill(c_getpid(), SIGKILL)
    end subroutine die

end module ftslide_killpoint
