! bench_fortran.F90: the Fortran wrappers' call overhead against C, in one run.
! A small step (hpct_model_loss_grad + hpct_optimizer_step on an 8-16(tanh)-4 MLP, batch 8)
! through the module's wrappers, against the same loop in C (bench_fortran_c.c) on the same
! model and arrays; and one trivial call (hpct_optimizer_get_step) through the wrapper, the
! raw BIND(C) interface and C. Rounds alternate (A B B A); each figure is the best one.
! Target: the wrapper overhead of a step <= 1 us.   Run: ./bench/bench_fortran [ROUNDS]
program bench_fortran
    use, intrinsic :: iso_c_binding
    use hpctrain
    implicit none
    interface
        function bench_now() bind(C) result(t)
            import :: c_double
            real(c_double) :: t
        end function
        function bench_c_steps(model, opt, x, y, batch, n) bind(C) result(s)
            import :: c_ptr, c_int, c_long
            type(c_ptr), value :: model, opt, x, y
            integer(c_int), value :: batch
            integer(c_long), value :: n
            integer(c_int) :: s
        end function
        function bench_c_calls(opt, n) bind(C) result(s)
            import :: c_ptr, c_int, c_long
            type(c_ptr), value :: opt
            integer(c_long), value :: n
            integer(c_int) :: s
        end function
    end interface
    integer, parameter :: FEATURES = 8, BATCH = 8
    integer(c_long), parameter :: STEPS = 500, CALLS = 100000
    real(c_float), target :: x(FEATURES, BATCH)
    integer(c_int32_t), target :: y(BATCH)
    type(hpct_ctx_t) :: ctx
    type(hpct_model_t) :: model
    type(hpct_params_t) :: params
    type(hpct_optimizer_t) :: opt
    type(hpct_optim_config_t) :: oc
    real(c_double) :: best_f = huge(1d0), best_c = huge(1d0)
    real(c_double) :: best_wrap = huge(1d0), best_raw = huge(1d0), best_ccall = huge(1d0)
    integer :: r, rounds, j
    character(32) :: arg

    rounds = 50
    if (command_argument_count() > 0) then
        call get_command_argument(1, arg)
        read (arg, *) rounds
    end if
    x = reshape([(real(mod(j * 37, 100), c_float) / 100, j = 1, FEATURES * BATCH)], [FEATURES, BATCH])
    y = [(int(mod(j, 4), c_int32_t), j = 1, BATCH)]
    call hpct_ctx_create(ctx)
    call hpct_model_create(ctx, FEATURES, model)
    call hpct_model_add_dense(model, 16, HPCT_ACT_TANH)
    call hpct_model_add_dense(model, 4, HPCT_ACT_IDENTITY)
    call hpct_model_build(model, BATCH)
    call hpct_model_params(model, params)
    oc%lr = 1e-30 ! the full update arithmetic, but the weights (so the cost of a step) stay put
    call hpct_optimizer_create(params, oc, opt)

    do r = 1, rounds ! A B B A: drifts of the machine's speed hit both sides alike
        best_f = min(best_f, fortran_steps())
        best_c = min(best_c, c_steps())
        best_c = min(best_c, c_steps())
        best_f = min(best_f, fortran_steps())
        best_wrap = min(best_wrap, wrapper_calls())
        best_raw = min(best_raw, raw_calls())
        best_ccall = min(best_ccall, c_calls())
    end do

    write (*, "(a)") "bench_fortran: a small step (8-16(tanh)-4 MLP, batch 8: loss_grad + optimizer step)"
    write (*, "('  Fortran wrappers  ', f9.3, ' us/step')") best_f * 1d6
    write (*, "('  C                 ', f9.3, ' us/step')") best_c * 1d6
    write (*, "('  wrapper overhead  ', f9.3, ' us/step (target <= 1 us: ', a, ')')") &
        (best_f - best_c) * 1d6, merge("met    ", "not met", best_f - best_c <= 1d-6)
    write (*, "(a)") "bench_fortran: one trivial call (hpct_optimizer_get_step)"
    write (*, "('  Fortran wrapper   ', f9.1, ' ns/call')") best_wrap * 1d9
    write (*, "('  raw BIND(C) call  ', f9.1, ' ns/call')") best_raw * 1d9
    write (*, "('  C                 ', f9.1, ' ns/call')") best_ccall * 1d9
    call hpct_optimizer_destroy(opt)
    call hpct_model_destroy(model)
    call hpct_ctx_destroy(ctx)

contains

    !> Seconds per step through the wrappers.
    real(c_double) function fortran_steps() result(t)
        integer(c_long) :: i
        real(c_float) :: loss
        t = bench_now()
        do i = 1, STEPS
            call hpct_model_loss_grad(model, x, y, loss)
            call hpct_optimizer_step(opt)
        end do
        t = (bench_now() - t) / STEPS
    end function

    !> Seconds per step of the same loop in C.
    real(c_double) function c_steps() result(t)
        t = bench_now()
        if (bench_c_steps(model%ptr, opt%ptr, c_loc(x), c_loc(y), BATCH, STEPS) /= 0) error stop "C loop failed"
        t = (bench_now() - t) / STEPS
    end function

    real(c_double) function wrapper_calls() result(t)
        integer(c_long) :: i, step
        t = bench_now()
        do i = 1, CALLS
            call hpct_optimizer_get_step(opt, step)
        end do
        t = (bench_now() - t) / CALLS
    end function

    real(c_double) function raw_calls() result(t)
        integer(c_long) :: i, step
        t = bench_now()
        do i = 1, CALLS
            if (c_hpct_optimizer_get_step(opt%ptr, step) /= 0) error stop "raw call failed"
        end do
        t = (bench_now() - t) / CALLS
    end function

    real(c_double) function c_calls() result(t)
        t = bench_now()
        if (bench_c_calls(opt%ptr, CALLS) /= 0) error stop "C calls failed"
        t = (bench_now() - t) / CALLS
    end function
end program bench_fortran
