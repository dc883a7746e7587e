! Reporting for the Fortran conformance programs, as tests/mpi/ftcheck.h does for C: each
! observation is one line "ftcheck rank=R KEY=VALUE" on stdout, collected per rank by the
! pytest harness. Error codes are reported by class name.
module ftcheck
    use mpi_f08, only: MPI_Comm, MPI_Comm_rank, MPI_Comm_dup, MPI_Comm_set_errhandler, MPI_Error_class, &
                       MPI_COMM_WORLD, MPI_ERRORS_RETURN, MPI_SUCCESS, MPI_ERR_PENDING, MPI_ERR_IN_STATUS
    use mpi_f08_ext, only: MPIX_ERR_PROC_FAILED, MPIX_ERR_PROC_FAILED_PENDING, MPIX_ERR_REVOKED
    use, intrinsic :: iso_fortran_env, only: output_unit
    implicit none
    private
    public :: ftcheck_rank, ftcheck_dup_world, ftcheck_class, report, report_int, report_rc

contains

    integer function ftcheck_rank()
        call MPI_Comm_rank(MPI_COMM_WORLD, ftcheck_rank)
    end function ftcheck_rank

    ! A dup of MPI_COMM_WORLD whose errors are returned, not fatal.
    function ftcheck_dup_world() result(comm)
        type(MPI_Comm) :: comm
        call MPI_Comm_dup(MPI_COMM_WORLD, comm)
        call MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)
    end function ftcheck_dup_world

    function ftcheck_class(rc) result(name)
        integer, intent(in) :: rc
        character(len=:), allocatable :: name
        integer :: eclass
        eclass = rc
        if (rc /= MPI_SUCCESS) call MPI_Error_class(rc, eclass)
        select case (eclass)
        case (MPI_SUCCESS); name = "MPI_SUCCESS"
        case (MPIX_ERR_PROC_FAILED); name = "MPIX_ERR_PROC_FAILED"
        case (MPIX_ERR_PROC_FAILED_PENDING); name = "MPIX_ERR_PROC_FAILED_PENDING"
        case (MPIX_ERR_REVOKED); name = "MPIX_ERR_REVOKED"
        case (MPI_ERR_PENDING); name = "MPI_ERR_PENDING"
        case (MPI_ERR_IN_STATUS); name = "MPI_ERR_IN_STATUS"
        case default; name = "OTHER_ERROR"
        end select
    end function ftcheck_class

    subroutine report(key, value)
        character(len=*), intent(in) :: key, value
        write (output_unit, '(a,i0,4a)') "ftcheck rank=", ftcheck_rank(), " ", key, "=", value
        flush (output_unit)
    end subroutine report

    subroutine report_int(key, value)
        character(len=*), intent(in) :: key
        integer, intent(in) :: value
        character(len=24) :: text
        write (text, '(i0)') value
        call report(key, trim(text))
    end subroutine report_int

    ! The error class of an MPI return code under KEY.
    subroutine report_rc(key, rc)
        character(len=*), intent(in) :: key
        integer, intent(in) :: rc
        call report(key, ftcheck_class(rc))
    end subroutine report_rc

end module ftcheck
