! tapf.F90: TAP output for the Fortran tests (the Fortran side of t/tap.h).
module tapf
    use, intrinsic :: iso_fortran_env, only: output_unit
    implicit none
    private
    public :: tap_plan, tap_ok, tap_is, tap_is_str, tap_diag, tap_skip, tap_done, tap_failures
    integer, save :: tests = 0, failed = 0, planned = -1
contains
    !> "1..n" (call once before the first result, or never and end with tap_done).
    subroutine tap_plan(n)
        integer, intent(in) :: n
        planned = n
        write (output_unit, "('1..', i0)") n
        flush (output_unit)
    end subroutine

    !> One result: "ok N - desc" or "not ok N - desc".
    subroutine tap_ok(cond, desc)
        logical, intent(in) :: cond
        character(*), intent(in) :: desc
        tests = tests + 1
        if (cond) then
            write (output_unit, "('ok ', i0, ' - ', a)") tests, desc
        else
            failed = failed + 1
            write (output_unit, "('not ok ', i0, ' - ', a)") tests, desc
        end if
        flush (output_unit)
    end subroutine

    !> One result comparing integers; the values are shown when they differ.
    subroutine tap_is(got, want, desc)
        integer, intent(in) :: got, want
        character(*), intent(in) :: desc
        call tap_ok(got == want, desc)
        if (got /= want) write (output_unit, "('#   got ', i0, ', expected ', i0)") got, want
    end subroutine

    subroutine tap_is_str(got, want, desc)
        character(*), intent(in) :: got, want
        character(*), intent(in) :: desc
        call tap_ok(got == want, desc)
        if (got /= want) write (output_unit, "('#   got ""', a, '"", expected ""', a, '""')") got, want
    end subroutine

    subroutine tap_diag(msg)
        character(*), intent(in) :: msg
        write (output_unit, "('# ', a)") msg
        flush (output_unit)
    end subroutine

    subroutine tap_skip(desc)
        character(*), intent(in) :: desc
        tests = tests + 1
        write (output_unit, "('ok ', i0, ' # SKIP ', a)") tests, desc
        flush (output_unit)
    end subroutine

    !> The plan when none was given; the number of failures.
    subroutine tap_done()
        if (planned < 0) write (output_unit, "('1..', i0)") tests
        flush (output_unit)
    end subroutine

    integer function tap_failures()
        tap_failures = failed
    end function
end module tapf
