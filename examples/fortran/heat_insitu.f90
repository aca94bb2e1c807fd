! heat_insitu.f90: a simulation that trains a surrogate of itself while it runs.
!
! The 2-D heat equation u_t = laplace(u) on the unit square (hot left edge u = 1, the other
! edges u = 0, a warm blob inside at t = 0), explicit 5-point scheme, the grid split into
! slabs of columns over the MPI ranks with a halo exchange every step. From the fields it
! computes, each rank makes a batch every step at random interior points: the differences
! of u's 4 neighbours from u there as inputs and the solver's update (u_next - u) / R as
! targets, both divided by the largest difference (so every point counts alike, near the
! hot edge and in the flat far field); hpct_insitu_step trains an MLP on them (a surrogate
! of one time step: u_next = u + R * scale * mlp(differences / scale)), averaged over the
! ranks.
! Every REPORT steps rank 0 prints the surrogate's RMS error against the solver's next step
! over the whole grid, relative to the size of the step itself: it falls as the model
! trains.
!
! The surrogate, its optimizer, schedule and checkpoints come from a settings file
! (heat_insitu.conf, hpctrain.conf(5)): one call opens the session, one registers the field.
! The field is saved with every checkpoint (every 100 steps, on SIGTERM/SIGUSR1 and near the
! job's time limit) as one global array (the writer gathers the slabs), so a restarted run
! resumes exactly, on this or on another number of ranks: each rank takes its new slab and
! the first exchange refills the halos. The time and the step counter follow from the steps
! the session trained. A run with another grid is refused (the saved field has another
! shape).
!
! Library calls: 6. hpct_insitu_open (first: it installs the SIGTERM/SIGUSR1 handlers and
! then initialises MPI), hpct_insitu_add_block, hpct_insitu_start, hpct_insitu_step,
! hpct_insitu_predict (the surrogate's error) and hpct_insitu_close (the final checkpoint;
! it finalises MPI). Errors stop the program with the library's message.
!
! Build: mpif90 heat_insitu.f90 $(pkg-config --static --cflags --libs hpctrain)
! Run:   mpirun -np 2 ./heat_insitu [--settings FILE (heat_insitu.conf)] [--steps N (600)]
!        [--checkpoints DIR (heat-ckpt)] [--report N (50)] [--nx N (64)]; --help prints the
!        usage (exit 0)
! Exit:  0 done, 75 preempted (checkpoint written: run again to resume), 2 a bad settings
!        file, 1 error.
program heat_insitu
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: real64, int64
    use mpi_f08
    use hpctrain
    implicit none
    integer, parameter :: EXIT_PREEMPTED = 75, STENCIL = 4, LOCAL_BATCH = 64, CHUNK = 256
    real(real64), parameter :: R = 0.2d0               ! diffusion number dt / h**2 (<= 1/4)
    integer :: nsteps = 600, report = 50, nx = 64
    character(4096) :: ckpt_dir = "heat-ckpt", settings = "heat_insitu.conf"
    character(8) :: steps_arg = ""
    type(MPI_Comm) :: comm
    integer :: rank, nranks, ny, j0, down, up
    real(real64), allocatable, target :: u(:, :)     ! (0:nx+1, 0:ny+1): the slab and its halo
    real(real64), allocatable :: u_next(:, :)
    integer(int64) :: n                               ! time steps done
    real(c_float) :: x(STENCIL, LOCAL_BATCH), y(1, LOCAL_BATCH)
    type(hpct_insitu_t) :: session
    integer(c_long) :: trained
    real(c_float) :: loss
    logical :: preempted

    call read_arguments()                           ! before MPI: --help needs none
    write (steps_arg, "(i0)") nsteps
    call hpct_insitu_open(trim(settings), session, overrides="checkpoint_dir = " // &
        trim(ckpt_dir) // "; total_steps = " // trim(steps_arg))
    call MPI_Comm_dup(MPI_COMM_WORLD, comm)         ! the simulation's own communicator
    call MPI_Comm_rank(comm, rank)
    call MPI_Comm_size(comm, nranks)
    call make_grid()
    call hpct_insitu_add_block(session, "heat/u", u(:, 1:ny), [nx + 2, nx], [1, j0 + 1]) ! any W
    call hpct_insitu_start(session, trained)        ! resumes u, the model, the optimizer
    n = trained                                     ! one training step per time step
    if (rank == 0 .and. trained > 0) write (*, "('heat: resumed at step ', i0, ' (t ', f8.5, ')')") n, t()
    if (trained == 0) call print_error(0.0_c_float) ! the untrained surrogate

    do while (n < nsteps)
        call exchange_halo()
        call solver_step(u_next)                    ! the simulation
        call make_batch()                           ! from u and the solver's next field
        u = u_next
        n = n + 1                                   ! u and n are final for this step: train
        call hpct_insitu_step(session, x, y, loss, preempted=preempted)
        if (preempted) call stop_preempted()
        if (mod(n, int(report, int64)) == 0) call print_error(loss)
    end do

    call print_summary()
    call MPI_Comm_free(comm)
    call hpct_insitu_close(session)                 ! the final checkpoint; MPI_Finalize

contains

    !> The options, read on every rank before MPI starts.
    subroutine read_arguments()
        character(4096) :: arg, value
        integer :: i
        do i = 1, command_argument_count(), 2
            call get_command_argument(i, arg)
            if (arg == "--help" .or. arg == "-h") call usage_exit(0)
            if (i == command_argument_count()) call usage_exit(2) ! an option without its value
            call get_command_argument(i + 1, value)
            select case (arg)
            case ("--settings")
                settings = value
            case ("--steps")
                read (value, *) nsteps
            case ("--checkpoints")
                ckpt_dir = value
            case ("--report")
                read (value, *) report
            case ("--nx")
                read (value, *) nx
            case default
                call usage_exit(2)
            end select
        end do
    end subroutine

    !> The usage, printed by the first rank; code 0 (--help): a clean end without running.
    subroutine usage_exit(code)
        integer, intent(in) :: code
        call MPI_Init()
        call MPI_Comm_rank(MPI_COMM_WORLD, rank)
        if (rank == 0) write (*, "(a)") "usage: heat_insitu [--settings FILE (heat_insitu.conf)] " // &
            "[--steps N (600)] [--checkpoints DIR (heat-ckpt)] [--report N (50)] [--nx N (64)] | --help"
        if (code /= 0) call MPI_Abort(MPI_COMM_WORLD, code)
        call MPI_Finalize()
        stop
    end subroutine

    !> The simulated time after n steps: dt = R h**2, h = 1 / (nx + 1).
    real(real64) function t()
        t = n * (R / real((nx + 1)**2, real64))
    end function

    !> This rank's columns j0+1 .. j0+ny of the nx x nx interior, the boundary values and
    !> the initial field (a warm blob around (0.6, 0.5)).
    subroutine make_grid()
        integer :: i, j
        real(real64) :: h, xi, yj
        ny = nx / nranks + merge(1, 0, rank < mod(nx, nranks))
        j0 = rank * (nx / nranks) + min(rank, mod(nx, nranks))
        down = merge(MPI_PROC_NULL, rank - 1, rank == 0)
        up = merge(MPI_PROC_NULL, rank + 1, rank == nranks - 1)
        allocate (u(0:nx + 1, 0:ny + 1), u_next(0:nx + 1, 0:ny + 1))
        h = 1d0 / (nx + 1)
        do j = 0, ny + 1
            yj = (j0 + j) * h
            do i = 0, nx + 1
                xi = i * h
                u(i, j) = 0.8d0 * exp(-((xi - 0.6d0)**2 + (yj - 0.5d0)**2) / 0.01d0)
            end do
        end do
        u(0, :) = 1                                 ! the hot left edge
        u(nx + 1, :) = 0
        if (rank == 0) u(:, 0) = 0
        if (rank == nranks - 1) u(:, ny + 1) = 0
        u_next = u
    end subroutine

    !> The neighbours' edge columns into this slab's halo columns (contiguous in memory).
    subroutine exchange_halo()
        type(MPI_Comm) :: c
        c = comm
        call MPI_Sendrecv(u(:, ny), nx + 2, MPI_DOUBLE_PRECISION, up, 1, u(:, 0), nx + 2, &
            MPI_DOUBLE_PRECISION, down, 1, c, MPI_STATUS_IGNORE)
        call MPI_Sendrecv(u(:, 1), nx + 2, MPI_DOUBLE_PRECISION, down, 2, u(:, ny + 1), nx + 2, &
            MPI_DOUBLE_PRECISION, up, 2, c, MPI_STATUS_IGNORE)
    end subroutine

    !> One explicit step of the interior: v = u + R * (the 5-point Laplacian of u).
    subroutine solver_step(v)
        real(real64), intent(inout) :: v(0:, 0:)
        integer :: i, j
        do j = 1, ny
            do i = 1, nx
                v(i, j) = u(i, j) + R * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) - 4 * u(i, j))
            end do
        end do
    end subroutine

    !> The surrogate's input at (i, j): the differences of u's 4 neighbours from u there,
    !> divided by scale, the largest of them (1 where all are 0).
    subroutine stencil_of(f, i, j, s, scale)
        real(real64), intent(in) :: f(0:, 0:)
        integer, intent(in) :: i, j
        real(c_float), intent(out) :: s(STENCIL)
        real(real64), intent(out) :: scale
        real(real64) :: d(STENCIL)
        d = [f(i - 1, j), f(i + 1, j), f(i, j - 1), f(i, j + 1)] - f(i, j)
        scale = maxval(abs(d))
        if (scale == 0) scale = 1
        s = real(d / scale, c_float)
    end subroutine

    !> LOCAL_BATCH random interior points of this rank (Park-Miller, seeded by step and
    !> rank: the same points after a resume): x(5, batch) inputs, y(1, batch) targets.
    subroutine make_batch()
        integer(int64) :: state
        real(real64) :: scale
        integer :: k, i, j
        state = mod(1_int64 + 7919_int64 * n + 104729_int64 * rank, 2147483647_int64)
        do k = 1, LOCAL_BATCH
            state = mod(48271_int64 * state, 2147483647_int64)
            i = 1 + int(mod(state, int(nx, int64)))
            state = mod(48271_int64 * state, 2147483647_int64)
            j = 1 + int(mod(state, int(ny, int64)))
            call stencil_of(u, i, j, x(:, k), scale)
            y(1, k) = real((u_next(i, j) - u(i, j)) / (R * scale), c_float)
        end do
    end subroutine

    !> The surrogate's RMS error against the solver's next step over the whole grid, and
    !> that divided by the RMS of the step itself, printed by rank 0.
    subroutine print_error(last_loss)
        real(c_float), intent(in) :: last_loss
        real(c_float), target :: inputs(STENCIL, CHUNK), out(1, CHUNK)
        real(real64) :: scales(CHUNK), sums(2), total(2)
        integer :: i, j, m
        call exchange_halo()
        call solver_step(u_next)                    ! the solver's next field, not taken
        sums = 0
        m = 0
        do j = 1, ny
            do i = 1, nx
                m = m + 1
                call stencil_of(u, i, j, inputs(:, m), scales(m))
                if (m == CHUNK .or. (i == nx .and. j == ny)) then
                    call hpct_insitu_predict(session, inputs(:, 1:m), out(:, 1:m))
                    call add_errors(inputs(:, 1:m), scales(1:m), out(1, 1:m), sums)
                    m = 0
                end if
            end do
        end do
        call MPI_Allreduce(sums, total, 2, MPI_DOUBLE_PRECISION, MPI_SUM, comm)
        if (rank == 0) write (*, "('heat: step ', i0, ' t ', f8.5, ' loss ', es9.3, ' surrogate rms error ', &
            &es9.3, ', relative to the step ', es9.3)") n, t(), last_loss, sqrt(total(1) / nx**2), &
            sqrt(total(1) / total(2))
    end subroutine

    !> sums(1) += the squared error of the surrogate's step R * scale * pred against the
    !> solver's, R * (the sum of the differences); sums(2) += the squared solver step.
    subroutine add_errors(inputs, scales, pred, sums)
        real(c_float), intent(in) :: inputs(:, :), pred(:)
        real(real64), intent(in) :: scales(:)
        real(real64), intent(inout) :: sums(2)
        real(real64) :: solver
        integer :: k
        do k = 1, size(pred)
            solver = R * scales(k) * sum(real(inputs(:, k), real64))
            sums(1) = sums(1) + (R * scales(k) * pred(k) - solver)**2
            sums(2) = sums(2) + solver**2
        end do
    end subroutine

    !> The final field as one number to compare runs bit for bit: a checksum of the whole
    !> field (gathered on rank 0: the same at any number of ranks). The surrogate is in the
    !> final checkpoint (hpctrain ckpt diff compares two).
    subroutine print_summary()
        integer, allocatable :: counts(:), offsets(:)
        real(real64), allocatable :: interior(:, :), field(:)
        integer :: r
        allocate (interior, source=u(1:nx, 1:ny))   ! a contiguous copy (u has halo rows)
        allocate (counts(nranks), offsets(nranks), field(nx * nx))
        counts = [(nx * (nx / nranks + merge(1, 0, r < mod(nx, nranks))), r = 0, nranks - 1)]
        offsets = [(sum(counts(1:r)), r = 0, nranks - 1)]
        call MPI_Gatherv(interior, nx * ny, MPI_DOUBLE_PRECISION, field, counts, offsets, &
            MPI_DOUBLE_PRECISION, 0, comm)
        if (rank == 0) write (*, "('heat: done: ', i0, ' steps, t ', f8.5, ', field checksum ', z16.16)") &
            n, t(), checksum(field)
    end subroutine

    !> FNV-1a over the bits of f: equal fields give equal sums, any changed bit another one.
    integer(int64) function checksum(f)
        real(real64), intent(in) :: f(:)
        integer(int64), parameter :: PRIME = 1099511628211_int64
        integer(int64) :: bits
        integer :: k, b
        checksum = -3750763034362895579_int64        ! the FNV offset basis 0xcbf29ce484222325
        do k = 1, size(f)
            bits = transfer(f(k), bits)
            do b = 0, 56, 8
                checksum = ieor(checksum, iand(shiftr(bits, b), 255_int64)) * PRIME
            end do
        end do
    end function

    !> HPCT_PREEMPTED: the checkpoint of this step is written on every rank; exit 75.
    subroutine stop_preempted()
        if (rank == 0) write (*, "('heat: preempted after step ', i0, &
            &'; checkpoint written; exit ', i0)") n, EXIT_PREEMPTED
        flush (6)
        call MPI_Comm_free(comm)
        call hpct_insitu_close(session)             ! MPI_Finalize; a late signal is ignored
        stop EXIT_PREEMPTED, quiet=.true.
    end subroutine
end program heat_insitu
