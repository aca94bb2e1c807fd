! mlp_shards.f90: the built-in MLP trained data-parallel on sharded HDF5 data with hpct_train,
! from Fortran: checkpoints on a cadence, on SIGTERM/SIGUSR1 and near the job's time limit,
! resume from the newest valid checkpoint, test accuracy at the end.
!
! Build: mpif90 mlp_shards.f90 $(pkg-config --static --cflags --libs hpctrain)
! Data:  hpctrain shard -o train data.csv        (doc/data-formats.md; int32 class labels)
! Run:   mpirun -np 2 ./mlp_shards --classes 4 train/manifest.txt
!        [--test MANIFEST] [--checkpoints DIR (default checkpoints)] [--epochs N (2)]
!        [--hidden N (64)] [--batch N (48, divisible by the number of ranks)]
! Exit:  0 done, 75 preempted (checkpoint written: requeue the job), 1 error.

! The progress callback lives in a module: the library calls it through a C function pointer.
module mlp_shards_progress
    use, intrinsic :: iso_c_binding
    use hpctrain
    implicit none
contains
    !> hpct_train's progress report, printed by rank 0 every log_interval steps;
    !> arg: the rank's hpct_topology_t.
    subroutine print_progress(p, arg) bind(C)
        type(hpct_progress_t), intent(in) :: p
        type(c_ptr), value :: arg
        type(hpct_topology_t), pointer :: t
        call c_f_pointer(arg, t)
        if (t%rank /= 0) return
        write (*, "('epoch ', i0, ' step ', i0, '/', i0, ' loss ', f8.5, ' lr ', es9.3, ' samples/s ', f9.0)") &
            p%epoch + 1, p%step, p%total_steps, p%loss, p%lr, p%samples_per_s
        flush (6)
    end subroutine
end module mlp_shards_progress

program mlp_shards
    use, intrinsic :: iso_c_binding
    use hpctrain
    use mlp_shards_progress
    implicit none
    integer, parameter :: EXIT_PREEMPTED = 75
    character(4096) :: train_manifest = "", test_manifest = "", ckpt_dir = "checkpoints"
    integer :: classes = 0, epochs = 2, hidden = 64, global_batch = 48
    type(hpct_ctx_t) :: ctx
    type(hpct_config_t) :: cfg
    type(hpct_topology_t), target :: topo
    type(hpct_dataset_t) :: train, test
    type(hpct_model_t) :: model
    type(hpct_params_t) :: params
    type(hpct_optimizer_t) :: opt
    type(hpct_ckpt_t) :: ck
    type(hpct_signals_t) :: signals
    type(hpct_train_result_t) :: res
    integer :: status

    call read_arguments()
    cfg%collective_timeout_s = 120
    call hpct_init(ctx, cfg)              ! no ierr: any error below stops the job with its detail
    call hpct_topology(ctx, topo)
    call hpct_signals_install(ctx, signals) ! SIGTERM and SIGUSR1 become a checkpoint and exit 75
    call open_data()
    call build_model()
    call open_checkpoints()
    status = run_training()
    if (status == HPCT_SUCCESS .and. len_trim(test_manifest) > 0) call evaluate()
    call hpct_ckpt_close(ck)
    call hpct_optimizer_destroy(opt)
    call hpct_model_destroy(model)
    call hpct_dataset_close(test)
    call hpct_dataset_close(train)
    call hpct_signals_uninstall(signals)
    call hpct_finalize(ctx)
    if (status == HPCT_PREEMPTED) stop EXIT_PREEMPTED

contains

    subroutine read_arguments()
        character(4096) :: arg, value
        integer :: i
        i = 1
        do while (i <= command_argument_count())
            call get_command_argument(i, arg)
            call get_command_argument(i + 1, value)
            i = i + 2
            select case (arg)
            case ("--classes")
                read (value, *) classes
            case ("--test")
                test_manifest = value
            case ("--checkpoints")
                ckpt_dir = value
            case ("--epochs")
                read (value, *) epochs
            case ("--hidden")
                read (value, *) hidden
            case ("--batch")
                read (value, *) global_batch
            case default
                train_manifest = arg
                i = i - 1
            end select
        end do
        if (len_trim(train_manifest) == 0 .or. classes < 2) &
            error stop "usage: mlp_shards --classes N TRAIN_MANIFEST [--test MANIFEST] " // &
            "[--checkpoints DIR] [--epochs N] [--hidden N] [--batch N]"
    end subroutine

    subroutine open_data()
        type(hpct_data_config_t) :: dc
        call hpct_dataset_open(ctx, train_manifest, train) ! shuffled, prefetched (the defaults)
        if (len_trim(test_manifest) == 0) return
        dc%shuffle = 0 ! evaluation reads the files in order
        call hpct_dataset_open(ctx, test_manifest, test, dc)
    end subroutine

    !> features -> hidden (tanh) -> hidden (tanh) -> classes, softmax cross-entropy.
    subroutine build_model()
        integer :: features, local_batch
        call hpct_dataset_info(train, input_features=features)
        call hpct_batch_split(ctx, global_batch, local_batch)
        call hpct_model_create(ctx, features, model)
        call hpct_model_add_dense(model, hidden, HPCT_ACT_TANH)
        call hpct_model_add_dense(model, hidden, HPCT_ACT_TANH)
        call hpct_model_add_dense(model, classes, HPCT_ACT_IDENTITY)
        call hpct_model_set_loss(model, HPCT_LOSS_SOFTMAX_CE)
        call hpct_model_build(model, local_batch)
        call hpct_model_params(model, params)
    end subroutine

    !> SGD with momentum on a cosine schedule over the whole run.
    subroutine build_optimizer(steps_per_epoch)
        integer(c_long), intent(in) :: steps_per_epoch
        type(hpct_optim_config_t) :: oc
        oc%kind = HPCT_OPT_SGD
        oc%lr = 0.1
        oc%momentum = 0.9
        oc%schedule = HPCT_SCHED_COSINE
        oc%total_steps = max(1_c_long, epochs * steps_per_epoch)
        oc%min_lr = 0.001
        call hpct_optimizer_create(params, oc, opt)
    end subroutine

    !> Checkpoints every 20 steps; a run with other settings refuses to resume from them
    !> (config_hash: the CRC32C of the settings that shape the model and the data order).
    subroutine open_checkpoints()
        type(hpct_ckpt_config_t) :: kc
        character(256) :: settings
        integer(c_size_t) :: samples
        write (settings, "(5(i0, 1x))") classes, epochs, hidden, global_batch
        call hpct_dataset_info(train, samples)
        call build_optimizer(int(samples / global_batch, c_long))
        kc%every_steps = 20
        kc%keep_last = 2
        kc%config_hash = int(hpct_crc32c(0_c_int32_t, trim(settings)), c_int64_t)
        if (topo%rank /= 0) kc%walltime_margin = 0 ! one rank asks the batch system
        call hpct_ckpt_open(ctx, kc, ck, directory=ckpt_dir)
    end subroutine

    integer function run_training() result(status)
        type(hpct_train_config_t) :: tc
        integer(c_int64_t) :: hash
        tc%global_batch = global_batch
        tc%epochs = epochs
        tc%log_interval = 10
        tc%resume = 1
        tc%progress = c_funloc(print_progress)
        tc%progress_arg = c_loc(topo)
        call hpct_train(model, opt, train, tc, res, ck, status) ! ierr: HPCT_PREEMPTED is no error
        if (status < 0) then
            write (*, "('mlp_shards: rank ', i0, ': ', a, ': ', a)") topo%rank, hpct_strerror(status), &
                hpct_last_error(model)
            call hpct_abort_job(ctx, 1) ! the other ranks may wait in a collective
        end if
        if (topo%rank /= 0) return
        if (res%resumed_from >= 0) write (*, "('mlp_shards: resumed from the checkpoint of step ', i0)") &
            res%resumed_from
        if (status == HPCT_PREEMPTED .and. res%stop_signal /= 0) then
            write (*, "('mlp_shards: stopped by signal ', i0, ' after step ', i0, '; checkpoint written; exit ', i0)") &
                res%stop_signal, res%steps, EXIT_PREEMPTED
        else if (status == HPCT_PREEMPTED) then
            write (*, "('mlp_shards: stopped after step ', i0, ': the job''s time limit is near; checkpoint ', &
                &'written; exit ', i0)") res%steps, EXIT_PREEMPTED
        else
            call hpct_params_hash(params, hash)
            write (*, "('mlp_shards: done: ', i0, ' steps, loss ', f8.5, ', params hash ', z16.16)") &
                res%steps, res%final_loss, hash
        end if
    end function

    subroutine evaluate()
        real(c_double) :: loss, accuracy
        integer(c_long) :: samples
        call hpct_evaluate(model, test, loss, accuracy, samples)
        if (topo%rank == 0) write (*, "('mlp_shards: test loss ', f8.5, ' accuracy ', f6.4, ' over ', i0, ' samples')") &
            loss, accuracy, samples
    end subroutine
end program mlp_shards
