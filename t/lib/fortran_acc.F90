! fortran_acc.F90: the in-situ step fed from an OpenACC data region, as doc/fortran.md says
! (the call inside !$acc host_data use_device(x, y)), against the same steps fed the host
! arrays: the parameters after 12 steps must be bit-identical. Built with the compiler's OpenACC
! flag (configure's HPCT_OPENACC_FCFLAGS). Without an accelerator the OpenACC runtime runs on
! the host and use_device hands the host addresses on: this shows that the recipe compiles and
! trains through the module's wrappers, not that device memory is read in place (that needs an
! OpenACC compiler for the GPU and the cuda backend). TAP on stdout; 1..0 # SKIP when built
! without OpenACC.
program fortran_acc
    use, intrinsic :: iso_c_binding
    use hpctrain
    use tapf
    implicit none
    integer, parameter :: FEATURES = 6, CLASSES = 3, BATCH = 8, STEPS = 12
    type(hpct_ctx_t) :: ctx
    type(hpct_config_t) :: cfg
    integer(c_int64_t) :: plain, acc
    real(c_float) :: lplain, lacc
#ifndef _OPENACC
    call skip_all()
#else
    cfg%seed = 7
    call hpct_ctx_create(ctx, cfg)
    call train(.false., plain, lplain)
    call train(.true., acc, lacc)
    call tap_plan(2)
    call tap_ok(plain == acc .and. lplain == lacc, "12 in-situ steps fed through !$acc host_data " // &
        "use_device(x, y) end with the host arrays' parameters and loss")
    call tap_ok(lplain > 0, "the steps trained (a positive loss)")
    call hpct_ctx_destroy(ctx)
    call tap_done()
#endif

contains

#ifndef _OPENACC
    subroutine skip_all()
        print "(a)", "1..0 # SKIP built without an OpenACC flag (configure: HPCT_OPENACC_FCFLAGS)"
        stop
    end subroutine
#else
    !> A fresh model and session, STEPS steps on batches made in memory; *hash of the
    !> parameters and the last loss. With use_acc the arrays live in an OpenACC data region,
    !> updated on the device each step, and the step is called inside host_data use_device.
    subroutine train(use_acc, hash, loss)
        logical, intent(in) :: use_acc
        integer(c_int64_t), intent(out) :: hash
        real(c_float), intent(out) :: loss
        type(hpct_model_t) :: model
        type(hpct_params_t) :: params
        type(hpct_optimizer_t) :: opt
        type(hpct_optim_config_t) :: oc
        type(hpct_insitu_t) :: session
        type(hpct_insitu_config_t) :: icfg
        real(c_float), target :: x(FEATURES, BATCH)
        integer(c_int32_t), target :: y(BATCH)
        integer :: step
        call hpct_model_create(ctx, FEATURES, model)
        call hpct_model_add_dense(model, 10, HPCT_ACT_TANH)
        call hpct_model_add_dense(model, CLASSES, HPCT_ACT_IDENTITY)
        call hpct_model_build(model, BATCH)
        call hpct_model_params(model, params)
        oc%lr = 0.1
        oc%momentum = 0.9
        call hpct_optimizer_create(params, oc, opt)
        icfg%catch_signals = 0
        call hpct_insitu_create(opt, session, model=model, cfg=icfg)
        call hpct_insitu_start(session)
        !$acc data create(x, y) if(use_acc)
        do step = 1, STEPS
            call make_batch(step, x, y)
            if (use_acc) then
                !$acc update device(x, y)
                !$acc host_data use_device(x, y)
                call hpct_insitu_step(session, x, y, loss)
                !$acc end host_data
            else
                call hpct_insitu_step(session, x, y, loss)
            end if
        end do
        !$acc end data
        call hpct_params_hash(params, hash)
        call hpct_insitu_destroy(session)
        call hpct_optimizer_destroy(opt)
        call hpct_model_destroy(model)
    end subroutine

    !> The batch of a step: features from a fixed formula, labels from their sign pattern.
    subroutine make_batch(step, x, y)
        integer, intent(in) :: step
        real(c_float), intent(out) :: x(FEATURES, BATCH)
        integer(c_int32_t), intent(out) :: y(BATCH)
        integer :: i, j
        do j = 1, BATCH
            do i = 1, FEATURES
                x(i, j) = sin(real(i * 3 + j * 7 + step * 11, c_float) * 0.37)
            end do
            y(j) = int(mod(j + step, CLASSES), c_int32_t)
        end do
    end subroutine
#endif
end program
