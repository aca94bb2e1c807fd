! fortran_twin.F90: the Fortran half of the Fortran/C twin test (t/test_fortran_twin.sh):
! exactly what twin_c.c does, through the module; the parameters must be bit-identical.
!   fortran_twin manual OUT            30 steps on batches made in memory, x(features, batch)
!   fortran_twin cnn OUT               the same with twin_c.c's CNN, built layer by layer
!   fortran_twin train OUT MANIFEST    hpct_train for 20 steps on sharded HDF5 data
! Rank 0 writes the parameters (raw fp32, in buffer order) to OUT.
program fortran_twin
    use, intrinsic :: iso_c_binding
    use hpctrain
    implicit none
    integer, parameter :: FEATURES = 16, CLASSES = 4, GLOBAL_BATCH = 24, STEPS = 30
    character(4096) :: mode, out, manifest
    type(hpct_ctx_t) :: ctx
    type(hpct_config_t) :: cfg
    type(hpct_topology_t) :: topo
    type(hpct_model_t) :: model
    type(hpct_optimizer_t) :: opt
    type(hpct_params_t) :: params
    type(hpct_dataset_t) :: ds
    type(hpct_train_config_t) :: tc
    type(hpct_train_result_t) :: res
    integer :: max_batch

    call get_command_argument(1, mode)
    call get_command_argument(2, out)
    call get_command_argument(3, manifest)
    cfg%seed = 11
    cfg%collective_timeout_s = 60
    call hpct_init(ctx, cfg)
    call hpct_topology(ctx, topo)
    max_batch = GLOBAL_BATCH
    if (mode == "train") max_batch = 48 / topo%size
    call build(max_batch)
    call hpct_model_params(model, params)
    if (mode == "train") then
        call hpct_dataset_open(ctx, manifest, ds)
        tc%global_batch = 48
        tc%max_steps = 20
        tc%log_interval = 0
        call hpct_train(model, opt, ds, tc, res)
        call hpct_dataset_close(ds)
    else
        call manual()
    end if
    if (topo%rank == 0) call write_params()
    call hpct_optimizer_destroy(opt)
    call hpct_model_destroy(model)
    call hpct_finalize(ctx)

contains

    !> Sample i, feature f (both 0-based): the integer arithmetic and fp32 division of twin_c.c.
    real(c_float) function feature(i, f)
        integer, intent(in) :: i, f
        feature = real(mod((i + 1) * (f + 3) * 7919, 2001) - 1000, c_float) / 1000.0_c_float
    end function

    subroutine build(max_batch)
        integer, intent(in) :: max_batch
        type(hpct_optim_config_t) :: oc
        type(hpct_params_t) :: p
        call hpct_model_create(ctx, FEATURES, model)
        if (mode == "cnn") then ! x(16, batch) seen as [1, 4, 4] per sample
            call hpct_model_add_reshape(model, 1, [4, 4])
            call hpct_model_add_conv(model, 6, 3, 1, HPCT_PAD_SAME, HPCT_ACT_TANH) ! init: AUTO
            call hpct_model_add_pool(model, HPCT_POOL_MAX, 2, 2, HPCT_ACT_IDENTITY)
            call hpct_model_add_upsample(model, 2, HPCT_ACT_IDENTITY)
            call hpct_model_add_conv(model, 4, 2, 2, HPCT_PAD_VALID, HPCT_ACT_RELU, HPCT_INIT_AUTO)
            call hpct_model_add_pool(model, HPCT_POOL_AVG, 2, 1, HPCT_ACT_IDENTITY)
        else
            call hpct_model_add_dense(model, 32, HPCT_ACT_TANH, HPCT_INIT_AUTO)
        end if
        call hpct_model_add_dense(model, CLASSES, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO)
        call hpct_model_build(model, max_batch)
        call hpct_model_params(model, p)
        oc%lr = 0.1
        oc%momentum = 0.9
        oc%weight_decay = 1e-4
        call hpct_optimizer_create(p, oc, opt)
    end subroutine

    subroutine manual()
        real(c_float), allocatable :: x(:, :) ! (features, local batch)
        integer(c_int32_t), allocatable :: y(:)
        integer :: local, offset, s, k, f, i
        real(c_float) :: loss
        call hpct_batch_split(ctx, GLOBAL_BATCH, local, offset)
        allocate (x(FEATURES, local), y(local))
        do s = 0, STEPS - 1
            do k = 1, local
                i = mod(s * GLOBAL_BATCH + offset + k - 1, 256)
                do f = 1, FEATURES
                    x(f, k) = feature(i, f - 1)
                end do
                y(k) = int(mod(i * 31 + 7, CLASSES), c_int32_t)
            end do
            call hpct_model_loss_grad(model, x, y, loss)
            call hpct_params_average_grads(params)
            call hpct_optimizer_step(opt)
        end do
    end subroutine

    subroutine write_params()
        real(c_float), pointer :: p(:)
        integer :: n, i, u
        call hpct_params_size(params, n)
        open (newunit=u, file=trim(out), access="stream", form="unformatted", status="replace")
        do i = 0, n - 1
            call hpct_params_get(params, i, param=p)
            write (u) p
        end do
        close (u)
    end subroutine
end program fortran_twin
