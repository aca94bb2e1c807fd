! fortran_mpi.F90: the Fortran module under mpirun (run by t/test_fortran_mpi.sh):
!   fortran_mpi comm         3+ ranks: contexts on subsets of MPI_COMM_WORLD given as
!                            type(MPI_Comm) (mpi_f08, with hpct_doctor's report) and as an
!                            integer handle (use mpi)
!   fortran_mpi fatal RANK   an error without ierr on rank RANK while the others wait in a
!                            collective: message on stderr and the whole job ends (MPI_Abort)
!   fortran_mpi fatal_local  the same on a local context (no MPI): message and ERROR STOP
!   fortran_mpi nocontext CALL  a call on a handle never created (model: hpct_model_create
!                            on a context never created; insitu: hpct_insitu_step on a
!                            session never created), no ierr: the message and ERROR STOP
!   fortran_mpi abort CODE   hpct_abort_job ends the job with exit code CODE
!   fortran_mpi insitu       2 ranks: in-situ steps with uneven local batches (one of them
!                            empty), MSE targets y(outputs, local_batch)
!   fortran_mpi badshape CALL  2 ranks: rank 1 passes x(4, 8) to a 3-input model, rank 0
!                            x(3, 8), in CALL (insitu: hpct_insitu_step; grad:
!                            hpct_model_loss_grad with averaging on): both ranks fail at
!                            once naming rank 1, and hpct_finalize succeeds afterwards
!   fortran_mpi open DIR     2 ranks: hpct_insitu_open without a communicator (it initialises
!                            MPI) on overrides alone, 3 steps, hpct_insitu_predict,
!                            hpct_insitu_close (MPI_Finalize); a second open is refused with
!                            the reason in hpct_insitu_last_error of no session
!   fortran_mpi badblock DIR 2 ranks: rank 1 passes a strided section to
!                            hpct_insitu_add_block: both ranks fail at once naming rank 1;
!                            then blocks that tile an array of 8 register, and the session
!                            starts and finishes with checkpoints in DIR
! Prints "PASS ..." / "FAIL ..." lines (one per check and rank); exits 1 after a FAIL.
program fortran_mpi
    use, intrinsic :: iso_c_binding
    use hpctrain
    implicit none
    character(32) :: mode, arg
    integer :: fails = 0

    call get_command_argument(1, mode)
    call get_command_argument(2, arg)
    select case (mode)
    case ("comm")
        call comm_f08()
        call comm_int()
    case ("fatal")
        call fatal_on_rank(arg)
    case ("fatal_local")
        call fatal_local()
    case ("nocontext")
        call no_context(trim(arg))
    case ("abort")
        call abort_with(arg)
    case ("insitu")
        call insitu_uneven()
    case ("badshape")
        call bad_shape(trim(arg))
    case ("badblock")
        call bad_block(trim(arg))
    case ("open")
        call open_session(trim(arg))
    case default
        error stop "usage: fortran_mpi comm | fatal RANK | fatal_local | abort CODE | insitu | badshape CALL"
    end select
    if (fails > 0) stop 1

contains

    subroutine check(cond, what, rank)
        logical, intent(in) :: cond
        character(*), intent(in) :: what
        integer, intent(in) :: rank
        if (cond) then
            write (*, "('PASS rank ', i0, ': ', a)") rank, what
        else
            write (*, "('FAIL rank ', i0, ': ', a)") rank, what
            fails = fails + 1
        end if
    end subroutine

    !> On a communicator of world ranks {0, 1}, {2, 3}, ... given as type(MPI_Comm): topology,
    !> a mean over the group only, gradient averaging over the group only.
    subroutine comm_f08()
        use mpi_f08
        type(MPI_Comm) :: sub
        type(hpct_ctx_t) :: ctx
        type(hpct_topology_t) :: topo
        type(hpct_params_t) :: set
        type(hpct_config_t) :: cfg
        type(hpct_doctor_config_t) :: dcfg
        character(:), allocatable :: report
        integer :: wrank, wsize, color, ierr, worst
        real(c_float), target :: buf(3), p(2), g(2)
        real(c_float) :: mean
        call MPI_Init()
        call MPI_Comm_rank(MPI_COMM_WORLD, wrank)
        call MPI_Comm_size(MPI_COMM_WORLD, wsize)
        color = wrank / 2
        call MPI_Comm_split(MPI_COMM_WORLD, color, wrank, sub)
        cfg%collective_timeout_s = 60
        call hpct_init_comm(sub, ctx, cfg, ierr)
        call check(ierr == HPCT_SUCCESS, "mpi_f08: hpct_init_comm(type(MPI_Comm)) on a subset", wrank)
        call hpct_topology(ctx, topo)
        call check(topo%size == min(2, wsize - 2 * color) .and. topo%rank == mod(wrank, 2), &
            "mpi_f08: hpct_topology gives the subset's rank and size", wrank)
        buf = real(wrank, c_float)
        call hpct_allreduce_mean(ctx, buf)
        mean = real(2 * color, c_float)
        if (topo%size == 2) mean = mean + 0.5
        call check(all(buf == mean), "mpi_f08: hpct_allreduce_mean over the subset only", wrank)
        call hpct_params_create(ctx, set)
        p = 0
        g = real(wrank, c_float)
        call hpct_params_register(set, "p", p, g)
        call hpct_params_average_grads(set)
        call check(all(g == mean), "mpi_f08: hpct_params_average_grads over the subset only", wrank)
        call hpct_params_destroy(set)
        dcfg%fabric_bytes = 65536
        call hpct_doctor(ctx, report, worst, dcfg, settings="0x1234", ierr=ierr)
        call check(ierr == HPCT_SUCCESS .and. worst /= HPCT_CHECK_FAIL .and. &
            index(report, "libhpctrain" // achar(9) // "ok" // achar(9)) == 1 .and. &
            index(report, "0x1234 on all") > 0, &
            "mpi_f08: hpct_doctor on the subset: versions agree, settings compared", wrank)
        call hpct_finalize(ctx)
        call hpct_init_comm(MPI_COMM_NULL, ctx, ierr=ierr)
        call check(ierr == HPCT_ERR_INVALID_ARG .and. .not. c_associated(ctx%ptr), &
            "mpi_f08: MPI_COMM_NULL is refused", wrank)
        call MPI_Comm_free(sub)
    end subroutine

    !> The same with an integer handle from "use mpi" (MPI_COMM_SPLIT of the old bindings).
    subroutine comm_int()
        use mpi
        integer :: sub, wrank, wsize, color, ierr, i2
        type(hpct_ctx_t) :: ctx
        type(hpct_topology_t) :: topo
        real(c_float), target :: buf(5)
        real(c_float) :: mean
        call MPI_COMM_RANK(MPI_COMM_WORLD, wrank, ierr)
        call MPI_COMM_SIZE(MPI_COMM_WORLD, wsize, ierr)
        color = mod(wrank, 2) ! {0, 2, ...} and {1, 3, ...}
        call MPI_COMM_SPLIT(MPI_COMM_WORLD, color, wrank, sub, ierr)
        call hpct_init_comm(sub, ctx, ierr=ierr)
        call check(ierr == HPCT_SUCCESS, "use mpi: hpct_init_comm(integer handle) on a subset", wrank)
        call hpct_topology(ctx, topo)
        call check(topo%size == (wsize + 1 - color) / 2 .and. topo%rank == wrank / 2, &
            "use mpi: hpct_topology gives the subset's rank and size", wrank)
        buf = real(wrank, c_float)
        call hpct_allreduce_mean(ctx, buf)
        mean = real(sum([(i2, i2 = color, wsize - 1, 2)]), c_float) / real(topo%size, c_float)
        call check(all(abs(buf - mean) < 1e-6), "use mpi: hpct_allreduce_mean over the subset only", wrank)
        call hpct_finalize(ctx)
        call MPI_COMM_FREE(sub, ierr)
        call MPI_FINALIZE(ierr)
    end subroutine

    !> Rank `which` makes an error without ierr while the others wait in a collective.
    subroutine fatal_on_rank(which)
        character(*), intent(in) :: which
        type(hpct_ctx_t) :: ctx
        type(hpct_model_t) :: model
        type(hpct_topology_t) :: topo
        type(hpct_config_t) :: cfg
        real(c_float), target :: buf(4)
        integer :: bad
        read (which, *) bad
        cfg%collective_timeout_s = 120 ! far longer than the test waits: MPI_Abort must end it
        call hpct_init(ctx, cfg)
        call hpct_topology(ctx, topo)
        call hpct_model_create(ctx, 4, model)
        call hpct_model_add_dense(model, 2, HPCT_ACT_RELU)
        write (*, "('PASS rank ', i0, ': set up')") topo%rank
        flush (6)
        if (topo%rank == bad) then
            call hpct_model_build(model, 0) ! no ierr: stops the job here
            write (*, "('FAIL rank ', i0, ': still running after the error')") topo%rank
        else
            buf = 1
            call hpct_allreduce_mean(ctx, buf)
            write (*, "('FAIL rank ', i0, ': the collective completed')") topo%rank
        end if
        call hpct_finalize(ctx)
        stop 1
    end subroutine

    !> A local context: the message, then ERROR STOP.
    subroutine fatal_local()
        type(hpct_ctx_t) :: ctx
        type(hpct_params_t) :: set
        real(c_float), target :: w(4, 4), g(4, 4)
        call hpct_ctx_create(ctx)
        call hpct_params_create(ctx, set)
        write (*, "(a)") "PASS rank 0: set up"
        flush (6)
        call hpct_params_register(set, "w", w(1:4:2, :), g(1:4:2, :)) ! no ierr: stops here
        write (*, "(a)") "FAIL rank 0: still running after the error"
        stop 1
    end subroutine

    subroutine no_context(call)
        character(*), intent(in) :: call
        type(hpct_ctx_t) :: ctx
        type(hpct_model_t) :: model
        type(hpct_insitu_t) :: session
        real(c_float) :: x(4, 2), y(1, 2), loss
        integer :: ierr
        x = 0
        y = 0
        call hpct_model_create(ctx, 4, model, ierr)
        call check(ierr == HPCT_ERR_INVALID_ARG, "model_create on a context never created: ierr", 0)
        call hpct_insitu_step(session, x, y, loss, ierr)
        call check(ierr == HPCT_ERR_INVALID_ARG, "insitu_step on a session never created: ierr", 0)
        flush (6)
        if (call == "model") call hpct_model_create(ctx, 4, model) ! no ierr: stops here
        if (call == "insitu") call hpct_insitu_step(session, x, y, loss)
        write (*, "(a)") "FAIL rank 0: still running after the error"
        stop 1
    end subroutine

    subroutine abort_with(code_text)
        character(*), intent(in) :: code_text
        type(hpct_ctx_t) :: ctx
        integer :: code
        read (code_text, *) code
        call hpct_init(ctx)
        write (*, "(a)") "PASS rank 0: set up"
        flush (6)
        call hpct_abort_job(ctx, code)
        write (*, "(a)") "FAIL: hpct_abort_job returned"
        stop 1
    end subroutine
    !> Rank r holds samples [first, first + n) of a fixed set of 12: uneven, one rank empty
    !> in some steps; every rank sees the same global loss and keeps the same parameters.
    subroutine open_session(dir)
        use mpi_f08, only: MPI_Comm_rank, MPI_COMM_WORLD
        character(*), intent(in) :: dir
        type(hpct_insitu_t) :: session, none
        real(c_float), target :: x(3, 6), y(2, 6), out(2, 6)
        real(c_float) :: loss
        integer :: i, rank, ierr, bad
        logical :: preempted
        call hpct_insitu_open("", session, overrides="inputs = 3; outputs = 2; loss = mse; " // &
            "hidden = 8; global_batch = 6; log_interval = 0; metrics_file = none; " // &
            "checkpoint_dir = " // dir, ierr=ierr)
        call MPI_Comm_rank(MPI_COMM_WORLD, rank)
        call check(ierr == 0, "hpct_insitu_open on overrides alone, MPI initialised by it", rank)
        call hpct_insitu_start(session)
        x = reshape([(real(mod(i * 5 + rank, 13), c_float) / 13, i = 1, 18)], [3, 6])
        y(1, :) = sum(x, 1) / 3
        y(2, :) = x(1, :) - x(3, :)
        bad = 0
        do i = 1, 3
            call hpct_insitu_step(session, x, y, loss, preempted=preempted)
            if (preempted .or. .not. (loss >= 0)) bad = bad + 1
        end do
        call check(bad == 0, "3 steps, loss finite, not preempted", rank)
        call hpct_insitu_predict(session, x, out)
        call check(all(abs(out) < 1e3) .and. hpct_insitu_last_error(session) == "", &
            "hpct_insitu_predict: finite outputs, no error", rank)
        call hpct_insitu_close(session, ierr)
        call check(ierr == 0, "hpct_insitu_close: the final checkpoint, MPI finalized", rank)
        call hpct_insitu_open("", session, overrides="inputs = 3; outputs = 2", ierr=ierr)
        call check(ierr == HPCT_ERR_STATE .and. index(hpct_insitu_last_error(none), &
            "MPI is finalized already") > 0, "a second open: refused, the reason in " // &
            "hpct_insitu_last_error of no session", rank)
    end subroutine

    subroutine insitu_uneven()
        type(hpct_ctx_t) :: ctx
        type(hpct_topology_t) :: topo
        type(hpct_model_t) :: model
        type(hpct_params_t) :: params
        type(hpct_optimizer_t) :: opt
        type(hpct_optim_config_t) :: oc
        type(hpct_insitu_t) :: session
        type(hpct_insitu_config_t) :: icfg
        type(hpct_config_t) :: cfg
        real(c_float), target :: x(3, 12), y(2, 12)
        real(c_float) :: loss(4)
        integer :: i, s, n, first, ierr, bad
        cfg%collective_timeout_s = 60
        call hpct_init(ctx, cfg)
        call hpct_topology(ctx, topo)
        call hpct_model_create(ctx, 3, model)
        call hpct_model_add_dense(model, 8, HPCT_ACT_TANH)
        call hpct_model_add_dense(model, 2, HPCT_ACT_IDENTITY)
        call hpct_model_set_loss(model, HPCT_LOSS_MSE)
        call hpct_model_build(model, 12)
        call hpct_model_params(model, params)
        oc%lr = 0.05
        call hpct_optimizer_create(params, oc, opt)
        icfg%catch_signals = 0
        call hpct_insitu_create(opt, session, model=model, cfg=icfg)
        call hpct_insitu_start(session)
        x = reshape([(real(mod(i * 5, 13), c_float) / 13, i = 1, 36)], [3, 12])
        y(1, :) = sum(x, 1) / 3
        y(2, :) = x(1, :) - x(3, :)
        bad = 0
        do s = 1, 4
            ! step 1: rank 0 has all 12; steps 2-4: 12 split unevenly (4 + 8, 8 + 4, ...)
            n = 12
            first = 1
            if (s > 1) n = merge(4 * (1 + mod(s, 2)), 12 - 4 * (1 + mod(s, 2)), topo%rank == 0)
            if (s > 1 .and. topo%rank == 1) first = 13 - n
            if (s == 1 .and. topo%rank /= 0) n = 0
            call hpct_insitu_step(session, x(:, first:first + n - 1), y(:, first:first + n - 1), loss(s), ierr)
            if (ierr /= 0) bad = bad + 1
        end do
        call check(bad == 0, "4 in-situ steps with uneven local batches, one empty", topo%rank)
        call hpct_params_check_replicas(params, ierr)
        call check(ierr == HPCT_SUCCESS, "the replicas stay identical", topo%rank)
        write (*, "('LOSS rank ', i0, 4(1x, z8.8))") topo%rank, loss
        call hpct_insitu_finish(session)
        call hpct_insitu_destroy(session)
        call hpct_optimizer_destroy(opt)
        call hpct_model_destroy(model)
        call hpct_finalize(ctx)
    end subroutine

    !> Rank 1's batch has 4 features for a 3-input model; rank 0's is right. The wrapper's
    !> refusal on rank 1 joins the call's agreement: both ranks fail with rank 1 named,
    !> well before the 60 s deadline, and the context still finalizes on both.
    subroutine bad_shape(call_name)
        character(*), intent(in) :: call_name
        type(hpct_ctx_t) :: ctx
        type(hpct_topology_t) :: topo
        type(hpct_model_t) :: model
        type(hpct_params_t) :: params
        type(hpct_optimizer_t) :: opt
        type(hpct_optim_config_t) :: oc
        type(hpct_insitu_t) :: session
        type(hpct_insitu_config_t) :: icfg
        type(hpct_config_t) :: cfg
        real(c_float), allocatable, target :: x(:, :)
        real(c_float), target :: y(2, 8)
        integer :: ierr
        character(:), allocatable :: msg
        cfg%collective_timeout_s = 60
        call hpct_init(ctx, cfg)
        call hpct_topology(ctx, topo)
        call hpct_model_create(ctx, 3, model)
        call hpct_model_add_dense(model, 2, HPCT_ACT_IDENTITY)
        call hpct_model_set_loss(model, HPCT_LOSS_MSE)
        call hpct_model_build(model, 8)
        call hpct_model_params(model, params)
        call hpct_optimizer_create(params, oc, opt)
        allocate (x(merge(4, 3, topo%rank == 1), 8))
        x = 0.5
        y = 0.25
        if (call_name == "insitu") then
            icfg%catch_signals = 0
            call hpct_insitu_create(opt, session, model=model, cfg=icfg)
            call hpct_insitu_start(session)
            call hpct_insitu_step(session, x, y, ierr=ierr)
            msg = hpct_last_error(session)
            call hpct_insitu_destroy(session)
        else
            call hpct_model_set_grad_averaging(model, .true.)
            call hpct_model_loss_grad(model, x, y, ierr=ierr)
            msg = hpct_last_error(model)
        end if
        write (*, "('DETAIL rank ', i0, ': ', a)") topo%rank, msg
        call check(ierr == HPCT_ERR_INVALID_ARG, call_name // ": the call fails on every rank", topo%rank)
        call check(index(msg, "rank 1 of 2") > 0 .and. index(msg, "(4, 8), expected (3, 8)") > 0, &
            call_name // ": the detail names rank 1 and its shape", topo%rank)
        call hpct_optimizer_destroy(opt)
        call hpct_model_destroy(model)
        call hpct_finalize(ctx, ierr)
        call check(ierr == HPCT_SUCCESS, call_name // ": hpct_finalize succeeds afterwards", topo%rank)
    end subroutine

    !> The wrapper's own refusal of hpct_insitu_add_block (a strided section on rank 1) joins
    !> the other rank's agreement; a good registration then works.
    subroutine bad_block(dir)
        character(*), intent(in) :: dir
        type(hpct_ctx_t) :: ctx
        type(hpct_topology_t) :: topo
        type(hpct_model_t) :: model
        type(hpct_params_t) :: params
        type(hpct_optimizer_t) :: opt
        type(hpct_optim_config_t) :: oc
        type(hpct_ckpt_config_t) :: kc
        type(hpct_ckpt_t) :: ck
        type(hpct_insitu_t) :: session
        type(hpct_insitu_config_t) :: icfg
        type(hpct_config_t) :: cfg
        real(c_double), target :: a(8)
        integer :: ierr, start
        character(:), allocatable :: msg
        cfg%collective_timeout_s = 60
        call hpct_init(ctx, cfg)
        call hpct_topology(ctx, topo)
        call hpct_model_create(ctx, 3, model)
        call hpct_model_add_dense(model, 2, HPCT_ACT_IDENTITY)
        call hpct_model_set_loss(model, HPCT_LOSS_MSE)
        call hpct_model_build(model, 8)
        call hpct_model_params(model, params)
        call hpct_optimizer_create(params, oc, opt)
        call hpct_ckpt_open(ctx, kc, ck, directory=dir)
        icfg%catch_signals = 0
        call hpct_insitu_create(opt, session, model=model, ck=ck, cfg=icfg)
        a = 1
        start = 1 + 4 * topo%rank
        if (topo%rank == 1) then
            call hpct_insitu_add_block(session, "a", a(1:8:2), [8], [start], ierr)
        else
            call hpct_insitu_add_block(session, "a", a(1:4), [8], [start], ierr)
        end if
        msg = hpct_last_error(session)
        write (*, "('DETAIL rank ', i0, ': ', a)") topo%rank, msg
        call check(ierr == HPCT_ERR_INVALID_ARG .and. index(msg, "rank 1 of 2") > 0 .and. &
            index(msg, "not contiguous") > 0, "a strided block on rank 1: both fail, naming it", topo%rank)
        call hpct_insitu_add_block(session, "a", a(1:4), [8], [start], ierr)
        call check(ierr == HPCT_SUCCESS, "then blocks that tile 8 elements register", topo%rank)
        call hpct_insitu_start(session, ierr=ierr)
        if (ierr == HPCT_SUCCESS) call hpct_insitu_finish(session, ierr)
        call check(ierr == HPCT_SUCCESS, "the session starts and finishes (a checkpoint)", topo%rank)
        call hpct_insitu_destroy(session)
        call hpct_ckpt_close(ck)
        call hpct_optimizer_destroy(opt)
        call hpct_model_destroy(model)
        call hpct_finalize(ctx)
    end subroutine
end program fortran_mpi
