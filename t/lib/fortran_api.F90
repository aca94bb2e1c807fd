! fortran_api.F90: the Fortran module "hpctrain" wrapper by wrapper (TAP), one process under
! mpirun -np 1 (run by t/test_fortran_api.sh, which makes the shards):
!   fortran_api MANIFEST NAMED_MANIFEST WORKDIR
! MANIFEST: 2048 samples x 16 features, int32 labels 0..3 ("inputs"/"targets"); NAMED_MANIFEST:
! the same data under the dataset names "feats"/"labels"; WORKDIR: checkpoints, and shards
! and manifests written from Fortran arrays, go there.
! Layouts and defaults of the BIND(C) types are compared with the C structs (fortran_layout.c);
! every array is checked to be used in place; every error is checked with ierr.
! hpct_train's progress callback: a BIND(C) module procedure the library calls through c_funloc.
module fortran_api_progress
    use, intrinsic :: iso_c_binding
    use hpctrain
    implicit none
contains
    !> hpct_train's progress callback, a BIND(C) Fortran subroutine; arg: a counter.
    subroutine on_progress(p, arg) bind(C)
        type(hpct_progress_t), intent(in) :: p
        type(c_ptr), value :: arg
        integer, pointer :: calls
        call c_f_pointer(arg, calls)
        if (p%step > 0 .and. p%loss > 0) calls = calls + 1
    end subroutine

end module fortran_api_progress

program fortran_api
    use, intrinsic :: iso_c_binding
    use hpctrain
    use fortran_api_progress
    use tapf
    implicit none

    interface
        function hpct_test_layout(s, f) bind(C, name="hpct_test_layout") result(off)
            import :: c_int, c_long
            integer(c_int), value :: s, f
            integer(c_long) :: off
        end function
        subroutine hpct_test_defaults(s, out) bind(C, name="hpct_test_defaults")
            import :: c_int, c_ptr
            integer(c_int), value :: s
            type(c_ptr), value :: out
        end subroutine
        function c_raise(sig) bind(C, name="raise") result(r)
            import :: c_int
            integer(c_int), value :: sig
            integer(c_int) :: r
        end function
    end interface

    character(4096) :: manifest, named, workdir
    integer, target :: progress_calls = 0
    character(:), allocatable :: saved_path ! the checkpoint test_checkpoints wrote

    if (command_argument_count() /= 3) error stop "usage: fortran_api MANIFEST NAMED_MANIFEST WORKDIR"
    call get_command_argument(1, manifest)
    call get_command_argument(2, named)
    call get_command_argument(3, workdir)

    call test_version_status()
    call test_layouts()
    call test_defaults()
    call test_context()
    call test_params()
    call test_model()
    call test_cnn()
    call test_optimizer()
    call test_dataset()
    call test_shards()
    call test_distributed()
    call test_checkpoints()
    call test_inspect()
    call test_signals_walltime()
    call test_train()
    call test_insitu()
    call test_settings()
    call tap_done()
    if (tap_failures() > 0) stop 1

contains

    ! ---- helpers ------------------------------------------------------------------------

    logical function contains_text(s, part)
        character(*), intent(in) :: s, part
        contains_text = index(s, part) > 0
    end function

    !> Byte address of anything (for offsets and "same memory" checks).
    integer(c_intptr_t) function addr(p)
        type(c_ptr), intent(in) :: p
        addr = transfer(p, 0_c_intptr_t)
    end function

    !> Compare the offsets of a BIND(C) type's fields (addresses given in order) with C's.
    subroutine check_layout(sid, name, base, size_f, fields)
        integer(c_int), intent(in) :: sid
        character(*), intent(in) :: name
        type(c_ptr), intent(in) :: base
        integer(c_size_t), intent(in) :: size_f
        type(c_ptr), intent(in) :: fields(:)
        integer :: i
        logical :: same
        same = hpct_test_layout(sid, -1_c_int) == int(size_f, c_long)
        if (.not. same) call tap_diag(name // ": sizeof differs")
        do i = 1, size(fields)
            if (hpct_test_layout(sid, int(i - 1, c_int)) /= addr(fields(i)) - addr(base)) then
                same = .false.
                call tap_diag(name // ": a field offset differs from C's")
            end if
        end do
        if (hpct_test_layout(sid, int(size(fields), c_int)) /= -2_c_long) then
            same = .false.
            call tap_diag(name // ": C has more fields than the Fortran type")
        end if
        call tap_ok(same, name // ": c_sizeof and every field offset equal C's")
    end subroutine

    ! ---- version, status ----------------------------------------------------------------

    subroutine test_version_status()
        integer :: major, minor, patch
        call hpct_get_version(major, minor, patch)
        call tap_ok(major == HPCT_VERSION_MAJOR .and. minor == HPCT_VERSION_MINOR .and. &
            patch == HPCT_VERSION_PATCH, "hpct_get_version equals the module's HPCT_VERSION_*")
        call tap_is(hpct_get_api_version(), HPCT_API_VERSION, "hpct_get_api_version equals HPCT_API_VERSION")
        call tap_ok(HPCT_API_VERSION == hpct_make_version(HPCT_VERSION_MAJOR, HPCT_VERSION_MINOR, 0) .and. &
            HPCT_VERSION == hpct_make_version(major, minor, patch) .and. &
            hpct_make_version(major, minor + 1, 0) > HPCT_VERSION .and. &
            ishft(hpct_get_api_version(), -16) == HPCT_VERSION_MAJOR, &
            "hpct_make_version builds HPCT_API_VERSION and HPCT_VERSION; the major is bits 16 up")
        call tap_is_str(hpct_strerror(HPCT_ERR_IO), "I/O error", "hpct_strerror(HPCT_ERR_IO)")
        call tap_is_str(hpct_strerror(HPCT_SUCCESS), "success", "hpct_strerror(HPCT_SUCCESS)")
        call check_tunables()
    end subroutine

    !> The settings registry: a name for each, and the environment's check.
    subroutine check_tunables()
        type(hpct_tunable_info_t) :: info
        character(:), allocatable :: detail, name
        integer :: ierr
        call tap_ok(hpct_tunables_count() > 10, "hpct_tunables_count lists the settings")
        call hpct_tunable_get(0, info, ierr)
        name = hpct_f_string(info%name)
        call tap_ok(ierr == HPCT_SUCCESS .and. index(name, "HPCT_") == 1, &
            "hpct_tunable_get(0) names " // name)
        call hpct_tunables_check(detail, ierr)
        call tap_ok(ierr == HPCT_SUCCESS .and. len(detail) == 0, "hpct_tunables_check: all valid")
    end subroutine

    ! ---- layouts of the BIND(C) types ---------------------------------------------------

    subroutine test_layouts()
        type(hpct_config_t), target :: a
        type(hpct_optim_config_t), target :: b
        type(hpct_data_config_t), target :: c
        type(hpct_topology_t), target :: d
        type(hpct_ckpt_config_t), target :: e
        type(hpct_ckpt_meta_t), target :: f
        type(hpct_progress_t), target :: g
        type(hpct_train_config_t), target :: h
        type(hpct_train_result_t), target :: r
        call check_layout(0_c_int, "hpct_config_t", c_loc(a), c_sizeof(a), [c_loc(a%version), &
            c_loc(a%backend), c_loc(a%device), c_loc(a%log_level), c_loc(a%seed), c_loc(a%num_threads), &
            c_loc(a%collective_timeout_s), c_loc(a%fusion_bytes), c_loc(a%consistency_interval), &
            c_loc(a%grad_transport)])
        call check_layout(1_c_int, "hpct_optim_config_t", c_loc(b), c_sizeof(b), [c_loc(b%version), &
            c_loc(b%kind), c_loc(b%lr), c_loc(b%momentum), c_loc(b%nesterov), c_loc(b%weight_decay), &
            c_loc(b%beta1), c_loc(b%beta2), c_loc(b%eps), c_loc(b%clip_norm), c_loc(b%schedule), &
            c_loc(b%warmup_steps), c_loc(b%step_size), c_loc(b%gamma), c_loc(b%total_steps), &
            c_loc(b%min_lr)])
        call check_layout(2_c_int, "hpct_data_config_t", c_loc(c), c_sizeof(c), [c_loc(c%version), &
            c_loc(c%inputs_name), c_loc(c%targets_name), c_loc(c%checksum), c_loc(c%nonfinite), &
            c_loc(c%shuffle), c_loc(c%seed), c_loc(c%prefetch_depth), c_loc(c%memory_budget_bytes), &
            c_loc(c%store)])
        call check_layout(3_c_int, "hpct_topology_t", c_loc(d), c_sizeof(d), [c_loc(d%version), &
            c_loc(d%rank), c_loc(d%size), c_loc(d%local_rank), c_loc(d%local_size), c_loc(d%node_id), &
            c_loc(d%num_nodes), c_loc(d%node_comm_size), c_loc(d%cross_comm_size), &
            c_loc(d%hierarchical), c_loc(d%source), c_loc(d%hostname), c_loc(d%job_id)])
        call check_layout(4_c_int, "hpct_ckpt_config_t", c_loc(e), c_sizeof(e), [c_loc(e%version), &
            c_loc(e%directory), c_loc(e%keep_last), c_loc(e%keep_every), c_loc(e%every_steps), &
            c_loc(e%every_seconds), c_loc(e%async), c_loc(e%writer_rank), c_loc(e%allow_config_change), &
            c_loc(e%config_hash), c_loc(e%walltime_margin), c_loc(e%defer_copy)])
        call check_layout(5_c_int, "hpct_ckpt_meta_t", c_loc(f), c_sizeof(f), [c_loc(f%version), &
            c_loc(f%step), c_loc(f%epoch), c_loc(f%cursor_epoch), c_loc(f%cursor_step), &
            c_loc(f%world_size), c_loc(f%global_batch), c_loc(f%model), c_loc(f%config_hash), &
            c_loc(f%saved_at), c_loc(f%rejected), c_loc(f%path)])
        call check_layout(6_c_int, "hpct_progress_t", c_loc(g), c_sizeof(g), [c_loc(g%epoch), &
            c_loc(g%step), c_loc(g%steps_per_epoch), c_loc(g%total_steps), c_loc(g%loss), c_loc(g%lr), &
            c_loc(g%samples_per_s), c_loc(g%data_wait_share), c_loc(g%comm_share), c_loc(g%eta_s), &
            c_loc(g%data_epoch_bytes_read), c_loc(g%data_resident_bytes), &
            c_loc(g%data_node_resident_bytes), c_loc(g%data_exchange_bytes)])
        call check_layout(7_c_int, "hpct_train_config_t", c_loc(h), c_sizeof(h), [c_loc(h%version), &
            c_loc(h%global_batch), c_loc(h%micro_batches), c_loc(h%epochs), c_loc(h%max_steps), &
            c_loc(h%log_interval), c_loc(h%resume), c_loc(h%progress), c_loc(h%progress_arg), &
            c_loc(h%metrics_path), c_loc(h%eval_data), c_loc(h%eval_interval), &
            c_loc(h%straggler_threshold), c_loc(h%evaluated), c_loc(h%timeline_path), &
            c_loc(h%timeline_steps), c_loc(h%timeline_first), c_loc(h%divergence_factor), &
            c_loc(h%divergence_reports)])
        call check_layout(8_c_int, "hpct_train_result_t", c_loc(r), c_sizeof(r), [c_loc(r%steps), &
            c_loc(r%resumed_from), c_loc(r%checkpoints), c_loc(r%final_loss), c_loc(r%wall_s), &
            c_loc(r%data_wait_s), c_loc(r%comm_wait_s), c_loc(r%ckpt_wait_s), c_loc(r%skipped_batches), &
            c_loc(r%stop_signal), c_loc(r%rejected_checkpoints)])
        call layout_insitu()
        call layout_shard()
        call layout_settings()
    end subroutine

    subroutine layout_settings()
        type(hpct_settings_t), target :: s
        call check_layout(12_c_int, "hpct_settings_t", c_loc(s), c_sizeof(s), [c_loc(s%version), &
            c_loc(s%train_manifest), c_loc(s%eval_manifest), c_loc(s%hidden), c_loc(s%num_hidden), &
            c_loc(s%activation), c_loc(s%outputs), c_loc(s%lr), c_loc(s%min_lr), c_loc(s%nesterov), &
            c_loc(s%schedule), c_loc(s%total_steps), c_loc(s%log_interval), &
            c_loc(s%collective_timeout), c_loc(s%checkpoint_dir), c_loc(s%walltime_margin), &
            c_loc(s%checkpoint_async), c_loc(s%backend), c_loc(s%consistency_interval), &
            c_loc(s%metrics_file), c_loc(s%straggler_threshold), c_loc(s%timeline_file), &
            c_loc(s%timeline_first), c_loc(s%divergence_factor), c_loc(s%data_store), &
            c_loc(s%data_memory_mib), c_loc(s%inputs), c_loc(s%layers)])
    end subroutine

    subroutine layout_shard()
        type(hpct_shard_config_t), target :: c
        type(hpct_data_stats_t), target :: d
        call check_layout(10_c_int, "hpct_shard_config_t", c_loc(c), c_sizeof(c), [c_loc(c%version), &
            c_loc(c%chunk_rows), c_loc(c%deflate)])
        call check_layout(11_c_int, "hpct_data_stats_t", c_loc(d), c_sizeof(d), [c_loc(d%version), &
            c_loc(d%store), c_loc(d%bytes_read), c_loc(d%epoch_bytes_read), c_loc(d%hashed_bytes), &
            c_loc(d%resident_bytes), c_loc(d%node_resident_bytes), c_loc(d%exchange_bytes)])
    end subroutine

    subroutine layout_insitu()
        type(hpct_insitu_config_t), target :: i
        call check_layout(9_c_int, "hpct_insitu_config_t", c_loc(i), c_sizeof(i), [c_loc(i%version), &
            c_loc(i%resume), c_loc(i%catch_signals), c_loc(i%log_interval), c_loc(i%progress), &
            c_loc(i%progress_arg), c_loc(i%metrics_path), c_loc(i%straggler_threshold), &
            c_loc(i%timeline_path), c_loc(i%timeline_steps), c_loc(i%timeline_first)])
    end subroutine

    ! ---- default initialisation == the C INITIALIZER macros -----------------------------

    subroutine test_defaults()
        type(hpct_config_t), target :: a, a0
        type(hpct_optim_config_t), target :: b, b0
        type(hpct_data_config_t), target :: c, c0
        type(hpct_topology_t), target :: d, d0
        type(hpct_ckpt_config_t), target :: e, e0
        type(hpct_ckpt_meta_t), target :: f, f0
        type(hpct_train_config_t), target :: h, h0
        call hpct_test_defaults(0_c_int, c_loc(a0))
        call tap_ok(a%version == a0%version .and. a%backend == a0%backend .and. a%device == a0%device .and. &
            a%log_level == a0%log_level .and. a%seed == a0%seed .and. a%num_threads == a0%num_threads .and. &
            a%collective_timeout_s == a0%collective_timeout_s .and. a%fusion_bytes == a0%fusion_bytes .and. &
            a%consistency_interval == a0%consistency_interval .and. a%grad_transport == a0%grad_transport, &
            "hpct_config_t() equals HPCT_CONFIG_INITIALIZER")
        call hpct_test_defaults(1_c_int, c_loc(b0))
        call tap_ok(b%version == b0%version .and. b%kind == b0%kind .and. b%lr == b0%lr .and. &
            b%momentum == b0%momentum .and. b%nesterov == b0%nesterov .and. &
            b%weight_decay == b0%weight_decay .and. b%beta1 == b0%beta1 .and. b%beta2 == b0%beta2 .and. &
            b%eps == b0%eps .and. b%clip_norm == b0%clip_norm .and. b%schedule == b0%schedule .and. &
            b%warmup_steps == b0%warmup_steps .and. b%step_size == b0%step_size .and. &
            b%gamma == b0%gamma .and. b%total_steps == b0%total_steps .and. b%min_lr == b0%min_lr, &
            "hpct_optim_config_t() equals HPCT_OPTIM_CONFIG_INITIALIZER (bit for bit)")
        call hpct_test_defaults(2_c_int, c_loc(c0))
        call tap_ok(c%version == c0%version .and. .not. c_associated(c%inputs_name) .and. &
            hpct_f_string(c0%inputs_name) == "inputs" .and. .not. c_associated(c%targets_name) .and. &
            hpct_f_string(c0%targets_name) == "targets" .and. c%checksum == c0%checksum .and. &
            c%nonfinite == c0%nonfinite .and. c%shuffle == c0%shuffle .and. c%seed == c0%seed .and. &
            c%prefetch_depth == c0%prefetch_depth .and. c%memory_budget_bytes == c0%memory_budget_bytes, &
            "hpct_data_config_t() equals HPCT_DATA_CONFIG_INITIALIZER (names: null = inputs, targets)")
        call hpct_test_defaults(3_c_int, c_loc(d0))
        call tap_ok(d%version == d0%version .and. d%rank == d0%rank .and. d%size == d0%size .and. &
            d%source == d0%source .and. hpct_f_string(d%hostname) == hpct_f_string(d0%hostname) .and. &
            hpct_f_string(d%job_id) == "", "hpct_topology_t() equals HPCT_TOPOLOGY_INITIALIZER")
        call hpct_test_defaults(4_c_int, c_loc(e0))
        call tap_ok(e%version == e0%version .and. .not. c_associated(e%directory) .and. &
            .not. c_associated(e0%directory) .and. e%keep_last == e0%keep_last .and. &
            e%keep_every == e0%keep_every .and. e%every_steps == e0%every_steps .and. &
            e%every_seconds == e0%every_seconds .and. e%async == e0%async .and. &
            e%writer_rank == e0%writer_rank .and. e%allow_config_change == e0%allow_config_change .and. &
            e%config_hash == e0%config_hash .and. e%walltime_margin == e0%walltime_margin .and. &
            e%defer_copy == e0%defer_copy, "hpct_ckpt_config_t() equals HPCT_CKPT_CONFIG_INITIALIZER")
        call hpct_test_defaults(5_c_int, c_loc(f0))
        call tap_ok(f%version == f0%version .and. f%step == f0%step .and. f%epoch == f0%epoch .and. &
            f%cursor_epoch == f0%cursor_epoch .and. f%cursor_step == f0%cursor_step .and. &
            f%world_size == f0%world_size .and. f%global_batch == f0%global_batch .and. &
            .not. c_associated(f%model) .and. hpct_f_string(f0%model) == "" .and. &
            f%config_hash == f0%config_hash .and. f%saved_at == f0%saved_at .and. &
            f%rejected == f0%rejected .and. .not. c_associated(f%path) .and. .not. c_associated(f0%path), &
            "hpct_ckpt_meta_t() equals HPCT_CKPT_META_INITIALIZER (model: null = empty)")
        call hpct_test_defaults(7_c_int, c_loc(h0))
        call tap_ok(h%version == h0%version .and. h%global_batch == h0%global_batch .and. &
            h%micro_batches == h0%micro_batches .and. h%epochs == h0%epochs .and. &
            h%max_steps == h0%max_steps .and. h%log_interval == h0%log_interval .and. &
            h%resume == h0%resume .and. .not. c_associated(h%progress) .and. &
            .not. c_associated(h0%progress) .and. .not. c_associated(h%progress_arg) .and. &
            .not. c_associated(h%metrics_path) .and. .not. c_associated(h0%metrics_path) .and. &
            .not. c_associated(h%eval_data) .and. h%eval_interval == h0%eval_interval .and. &
            h%straggler_threshold == h0%straggler_threshold .and. .not. c_associated(h%evaluated) .and. &
            .not. c_associated(h0%evaluated) .and. .not. c_associated(h%timeline_path) .and. &
            .not. c_associated(h0%timeline_path) .and. h%timeline_steps == h0%timeline_steps .and. &
            h%timeline_first == h0%timeline_first .and. &
            h%divergence_factor == h0%divergence_factor .and. &
            h%divergence_reports == h0%divergence_reports, &
            "hpct_train_config_t() equals HPCT_TRAIN_CONFIG_INITIALIZER")
        call defaults_insitu()
        call defaults_shard()
    end subroutine

    subroutine defaults_shard()
        type(hpct_shard_config_t), target :: c, c0
        call hpct_test_defaults(10_c_int, c_loc(c0))
        call tap_ok(c%version == c0%version .and. c%chunk_rows == c0%chunk_rows .and. &
            c%deflate == c0%deflate, "hpct_shard_config_t() equals HPCT_SHARD_CONFIG_INITIALIZER")
    end subroutine

    subroutine defaults_insitu()
        type(hpct_insitu_config_t), target :: i, i0
        call hpct_test_defaults(9_c_int, c_loc(i0))
        call tap_ok(i%version == i0%version .and. i%resume == i0%resume .and. &
            i%catch_signals == i0%catch_signals .and. i%log_interval == i0%log_interval .and. &
            .not. c_associated(i%progress) .and. .not. c_associated(i0%progress) .and. &
            .not. c_associated(i%progress_arg) .and. .not. c_associated(i%metrics_path) .and. &
            .not. c_associated(i0%metrics_path) .and. &
            i%straggler_threshold == i0%straggler_threshold .and. &
            .not. c_associated(i%timeline_path) .and. .not. c_associated(i0%timeline_path) .and. &
            i%timeline_steps == i0%timeline_steps .and. i%timeline_first == i0%timeline_first, &
            "hpct_insitu_config_t() equals HPCT_INSITU_CONFIG_INITIALIZER")
    end subroutine

    ! ---- context --------------------------------------------------------------------------

    subroutine test_context()
        type(hpct_ctx_t) :: ctx, ctx2
        type(hpct_config_t) :: cfg
        integer(c_int64_t) :: s1(HPCT_RNG_STATE_WORDS), s2(HPCT_RNG_STATE_WORDS)
        integer :: ierr
        cfg%seed = 7
        call hpct_ctx_create(ctx, cfg, ierr=ierr)
        call tap_ok(ierr == HPCT_SUCCESS .and. c_associated(ctx%ptr), "hpct_ctx_create with a config")
        call tap_is_str(hpct_last_error(ctx), "", "hpct_last_error is empty after success")
        call tap_ok(.not. hpct_last_error_shared(ctx), "hpct_last_error_shared is false with no error")
        call hpct_ctx_create(ctx2) ! defaults, no ierr: success does not stop
        call hpct_rng_get_state(ctx, s1)
        call hpct_rng_get_state(ctx2, s2)
        call tap_ok(any(s1 /= s2), "hpct_rng_get_state: seeds 7 and 42 give different states")
        call hpct_rng_set_state(ctx2, s1, ierr)
        call hpct_rng_get_state(ctx2, s2)
        call tap_ok(ierr == 0 .and. all(s1 == s2), "hpct_rng_set_state then get gives the state back")
        s1 = 0
        call hpct_rng_set_state(ctx2, s1, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. len(hpct_last_error(ctx2)) > 0, &
            "hpct_rng_set_state refuses an all-zero state, with detail: " // hpct_last_error(ctx2))
        cfg%backend = 99
        call hpct_ctx_create(ctx2, cfg, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. .not. c_associated(ctx2%ptr), &
            "hpct_ctx_create refuses backend 99 (ierr = " // hpct_strerror(ierr) // ")")
        call hpct_ctx_destroy(ctx)
        call tap_ok(.not. c_associated(ctx%ptr), "hpct_ctx_destroy nulls the handle")
        call hpct_ctx_destroy(ctx2) ! null is accepted
    end subroutine

    ! ---- parameter sets (bring your own gradients) ---------------------------------------

    subroutine test_params()
        type(hpct_ctx_t) :: ctx
        type(hpct_params_t) :: set
        real(c_float), target :: w(3, 2), dw(3, 2), b(2), db(2), big(4, 4), dbig(4, 4)
        real(c_float), pointer :: pw(:), pg(:)
        character(:), allocatable :: name
        integer(c_size_t) :: total, count
        integer(c_int64_t) :: h1, h2
        real(c_double) :: norm
        integer :: nb, ierr
        call hpct_ctx_create(ctx)
        call hpct_params_create(ctx, set)
        w = reshape([1, 2, 3, 4, 5, 6], [3, 2])
        dw = 1
        b = [-1, 4]
        db = [2, 0]
        call hpct_params_register(set, "layer/w", w, dw, ierr)
        call tap_is(ierr, HPCT_SUCCESS, "hpct_params_register of a rank-2 array")
        call hpct_params_register(set, "layer/b  ", b, db) ! trailing blanks are not part of the name
        call hpct_params_register(set, "strided", big(1:4:2, :), dbig(1:4:2, :), ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(set), "not contiguous"), &
            "a strided section is refused: " // hpct_last_error(set))
        call hpct_params_register(set, "short", big, dbig(:, 1:2), ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(set), "16 elements"), &
            "param and grad of different sizes are refused: " // hpct_last_error(set))
        call hpct_params_register(set, "bad" // c_null_char // "name", big, dbig, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(set), "NUL"), &
            "a name with a NUL inside is refused")
        call hpct_params_size(set, nb, total)
        call tap_ok(nb == 2 .and. total == 8, "hpct_params_size: 2 buffers, 8 elements")
        call hpct_params_get(set, 1, name, pw, pg, count)
        call tap_ok(name == "layer/b" .and. count == 2 .and. c_associated(c_loc(pw), c_loc(b)) .and. &
            c_associated(c_loc(pg), c_loc(db)), "hpct_params_get: the name and the caller's own arrays")
        call hpct_params_get(set, 0, param=pw)
        call tap_ok(c_associated(c_loc(pw), c_loc(w)) .and. all(pw == [1, 2, 3, 4, 5, 6]), &
            "buffer 0 is w in place, in Fortran storage order")
        call hpct_params_get(set, 2, name, ierr=ierr)
        call tap_ok(ierr == HPCT_ERR_NOT_FOUND, "hpct_params_get(2) is HPCT_ERR_NOT_FOUND (0-based)")
        call hpct_params_grad_norm(set, norm)
        call tap_ok(abs(norm - sqrt(6.0d0 + 4.0d0)) < 1d-9, "hpct_params_grad_norm")
        call hpct_params_scale_grads(set, 0.5_c_float)
        call tap_ok(all(dw == 0.5) .and. db(1) == 1, "hpct_params_scale_grads works on the Fortran arrays")
        call hpct_params_zero_grads(set)
        call tap_ok(all(dw == 0) .and. all(db == 0), "hpct_params_zero_grads")
        call hpct_params_hash(set, h1)
        w(1, 1) = 1.5
        call hpct_params_hash(set, h2)
        call tap_ok(h1 /= h2, "hpct_params_hash sees a change made through the Fortran array")
        call hpct_params_destroy(set)
        call tap_ok(.not. c_associated(set%ptr) .and. w(3, 2) == 6, "hpct_params_destroy leaves the arrays")
        call hpct_ctx_destroy(ctx)
    end subroutine

    ! ---- built-in models ------------------------------------------------------------------

    subroutine test_model()
        type(hpct_ctx_t) :: ctx
        type(hpct_model_t) :: model, mse
        type(hpct_params_t) :: params
        real(c_float), target :: x(3, 4), out(2, 4), yv(2, 4), wide(4, 4)
        real(c_float), pointer :: wt(:), bias(:)
        real(c_float) :: expect(2, 4), loss, loss2
        integer(c_int32_t), target :: labels(4)
        real(c_double) :: eloss, acc
        character(:), allocatable :: desc
        integer :: ni, no, ierr, i, o
        call hpct_ctx_create(ctx)
        call hpct_model_create(ctx, 3, model)
        call hpct_model_add_dense(model, 2, HPCT_ACT_IDENTITY, HPCT_INIT_XAVIER)
        call hpct_model_build(model, 4, ierr)
        call tap_is(ierr, HPCT_SUCCESS, "hpct_model_create, add_dense, build")
        call hpct_model_shape(model, ni, no)
        call tap_ok(ni == 3 .and. no == 2, "hpct_model_shape: 3 inputs, 2 outputs")
        call hpct_model_describe(model, desc)
        call tap_is_str(desc, "dense 3-2(identity) softmax_ce", "hpct_model_describe")
        ! x(features, samples) is [samples][features]: out(:, j) = W x(:, j) + b with the
        ! C weight W [out, in] seen from Fortran as wt(in, out) (rank 1 here).
        call hpct_model_params(model, params)
        call hpct_params_get(params, 0, param=wt)
        call hpct_params_get(params, 1, param=bias)
        bias = [0.25, -0.5]
        x = reshape([(real(i, c_float) / 8, i = 1, 12)], [3, 4])
        call hpct_model_forward(model, x, out)
        do i = 1, 4
            do o = 1, 2
                expect(o, i) = sum(wt((o - 1) * 3 + 1:o * 3) * x(:, i)) + bias(o)
            end do
        end do
        call tap_ok(maxval(abs(out - expect)) < 1e-5, &
            "hpct_model_forward: x(features, samples) is the library's [samples][features]")
        call hpct_model_forward(model, x(1:2, :), out, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(model), "(2, 4), expected (3, 4)"), &
            "x with the wrong feature count is refused: " // hpct_last_error(model))
        call hpct_model_forward(model, x, wide(1:2, :), ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(model), "not contiguous"), &
            "a strided out is refused")
        labels = [0, 1, 1, 0]
        call hpct_model_loss_grad(model, x, labels, loss)
        call hpct_model_loss_grad(model, x, labels, loss2, accumulate=.true.)
        call tap_ok(loss > 0 .and. loss == loss2, "hpct_model_loss_grad with int32 labels (and accumulate)")
        call hpct_model_loss_grad(model, x, labels(1:3), loss, ierr=ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(model), "y(batch)"), &
            "3 labels for 4 samples are refused: " // hpct_last_error(model))
        labels(2) = 7
        call hpct_model_loss_grad(model, x, labels, loss, ierr=ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG, "a label outside [0, 2) is refused by C: " // hpct_last_error(model))
        labels(2) = 1
        call hpct_model_evaluate(model, x, labels, eloss, acc)
        call tap_ok(abs(eloss - loss) < 1e-5 .and. acc >= 0 .and. acc <= 1, "hpct_model_evaluate with labels")
        call hpct_model_loss_grad(model, x, yv, loss, ierr=ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(model), "labels"), &
            "real targets for a softmax-CE model are refused: " // hpct_last_error(model))
        call hpct_model_set_grad_averaging(model, .false.)
        call hpct_model_set_grad_averaging(model, .true., ierr)
        call tap_ok(ierr == HPCT_ERR_STATE, "hpct_model_set_grad_averaging on a local context: HPCT_ERR_STATE")

        call hpct_model_create(ctx, 3, mse)
        call hpct_model_add_dense(mse, 2, HPCT_ACT_TANH) ! init absent: HPCT_INIT_AUTO
        call hpct_model_set_loss(mse, HPCT_LOSS_MSE)
        call hpct_model_build(mse, 0, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(mse), "max_batch"), &
            "an error with ierr: the status, and the detail from hpct_last_error: " // hpct_last_error(mse))
        call hpct_model_build(mse, 4)
        yv = 0.25
        call hpct_model_loss_grad(mse, x, yv, loss)
        call hpct_model_evaluate(mse, x, yv, eloss, acc)
        call tap_ok(loss > 0 .and. abs(eloss - loss) < 1e-6 .and. acc == -1, &
            "MSE: hpct_model_loss_grad and hpct_model_evaluate with y(outputs, batch)")
        call hpct_model_evaluate(mse, x, labels, eloss, acc, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG, "labels for an MSE model are refused")
        call hpct_model_build(mse, 8, ierr)
        call tap_ok(ierr == HPCT_ERR_STATE, "a second hpct_model_build: HPCT_ERR_STATE (" // hpct_last_error(mse) // ")")
        call hpct_model_destroy(mse)
        call hpct_model_destroy(model)
        call tap_ok(.not. c_associated(model%ptr), "hpct_model_destroy nulls the handle")
        call hpct_ctx_destroy(ctx)
    end subroutine

    !> A convolution model through the wrappers, one layer call at a time, and the same model
    !> from hpct_model_add_layers' text: the same description, parameters and bits.
    subroutine test_cnn()
        character(*), parameter :: want = "16-reshape[1x4x4]-conv2d/k3s1same[6x4x4](relu)" // &
            "-maxpool2s2[6x2x2](identity)-upsample2[6x4x4](identity)-conv2d/k2s2valid[4x2x2](tanh)" // &
            "-avgpool2s1[4x1x1](identity)-dense3(identity) softmax_ce"
        type(hpct_ctx_t) :: ctx
        type(hpct_model_t) :: cnn, text, bad
        type(hpct_params_t) :: params
        real(c_float), target :: x(16, 5), out(3, 5), out2(3, 5)
        real(c_float), pointer :: p(:)
        integer(c_int32_t), target :: labels(5)
        real(c_float) :: loss, loss2
        real(c_double) :: norm
        character(:), allocatable :: desc, desc2, name
        integer(c_size_t) :: count
        integer :: ni, no, nb, ierr, fails, i
        call hpct_ctx_create(ctx)
        call hpct_model_create(ctx, 16, cnn)
        fails = 0
        call hpct_model_add_reshape(cnn, 1, [4, 4], ierr)
        if (ierr /= 0) fails = fails + 1
        call hpct_model_add_conv(cnn, 6, 3, 1, HPCT_PAD_SAME, HPCT_ACT_RELU, ierr=ierr) ! init: AUTO
        if (ierr /= 0) fails = fails + 1
        call hpct_model_add_pool(cnn, HPCT_POOL_MAX, 2, 2, HPCT_ACT_IDENTITY, ierr)
        if (ierr /= 0) fails = fails + 1
        call hpct_model_add_upsample(cnn, 2, HPCT_ACT_IDENTITY, ierr)
        if (ierr /= 0) fails = fails + 1
        call hpct_model_add_conv(cnn, 4, 2, 2, HPCT_PAD_VALID, HPCT_ACT_TANH, HPCT_INIT_XAVIER, ierr)
        if (ierr /= 0) fails = fails + 1
        call hpct_model_add_pool(cnn, HPCT_POOL_AVG, 2, 1, HPCT_ACT_IDENTITY)
        call hpct_model_add_dense(cnn, 3, HPCT_ACT_IDENTITY)
        call hpct_model_build(cnn, 5, ierr)
        call tap_ok(fails == 0 .and. ierr == 0, "hpct_model_add_reshape, _conv, _pool, _upsample, " // &
            "then dense: a CNN built")
        call hpct_model_describe(cnn, desc)
        call tap_is_str(desc, want, "hpct_model_describe names every layer and its output shape")
        call hpct_model_shape(cnn, ni, no)
        call hpct_model_params(cnn, params)
        call hpct_params_size(params, nb)
        call hpct_params_get(params, 2, name, count=count)
        call tap_ok(ni == 16 .and. no == 3 .and. nb == 6 .and. name == "conv4.weight" .and. &
            count == 4 * 6 * 2 * 2, "16 -> 3, 6 buffers; the third is conv4.weight [4, 6, 2, 2] " // &
            "(layers counted from the reshape)")
        x = reshape([(real(mod(i * 37, 23), c_float) / 23 - 0.5_c_float, i = 1, 80)], [16, 5])
        labels = [0, 2, 1, 1, 0]
        call hpct_model_loss_grad(cnn, x, labels, loss)
        call hpct_params_grad_norm(params, norm)
        call tap_ok(loss > 0 .and. loss < huge(loss) .and. norm > 0 .and. norm < huge(norm), &
            "hpct_model_loss_grad on the CNN: a finite loss and a non-zero gradient")
        call hpct_model_forward(cnn, x, out)

        call hpct_model_create(ctx, 16, text)
        call hpct_model_add_layers(text, "reshape 1x4x4, conv 6 k3, maxpool 2, upsample 2, " // &
            "conv 4 k2 s2 valid tanh, avgpool 2 s1, dense 3", HPCT_ACT_RELU, ierr)
        call hpct_model_build(text, 5)
        call hpct_model_describe(text, desc2)
        call tap_ok(ierr == 0 .and. desc2 == desc, "hpct_model_add_layers: the same model from text")
        call hpct_model_forward(text, x, out2)
        call hpct_model_loss_grad(text, x, labels, loss2)
        call tap_ok(all(out2 == out) .and. loss2 == loss, &
            "the same initial weights, outputs and loss, bit for bit")
        call hpct_model_params(text, params)
        call hpct_params_get(params, 5, param=p)
        call tap_ok(size(p) == 3 .and. all(p == 0), "dense6.bias: 3 zeros")

        call hpct_model_create(ctx, 16, bad)
        call hpct_model_add_conv(bad, 2, 3, 1, HPCT_PAD_SAME, HPCT_ACT_RELU, ierr=ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. &
            contains_text(hpct_last_error(bad), "hpct_model_add_reshape"), &
            "a convolution of flat inputs is refused: " // hpct_last_error(bad))
        call hpct_model_add_reshape(bad, 1, [2, 2, 2, 2], ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(bad), "0 (flat) to 3"), &
            "a reshape with 4 spatial sizes is refused: " // hpct_last_error(bad))
        call hpct_model_add_reshape(bad, 16, ierr=ierr)
        call tap_ok(ierr == 0, "hpct_model_add_reshape without spatial sizes: flat [16]")
        call hpct_model_add_layers(bad, "reshape 1x4x4, pool 2", HPCT_ACT_RELU, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(bad), "item 2"), &
            "hpct_model_add_layers names the bad item: " // hpct_last_error(bad))
        call hpct_model_add_layers(bad, "dense 4" // c_null_char // ", dense 2", HPCT_ACT_RELU, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(bad), "NUL"), &
            "a description with a NUL inside is refused")
        call hpct_model_destroy(bad)
        call hpct_model_destroy(text)
        call hpct_model_destroy(cnn)
        call hpct_ctx_destroy(ctx)
    end subroutine

    ! ---- optimizers -----------------------------------------------------------------------

    subroutine test_optimizer()
        type(hpct_ctx_t) :: ctx
        type(hpct_params_t) :: set
        type(hpct_optimizer_t) :: opt
        type(hpct_optim_config_t) :: oc
        real(c_float), target :: a(3), ga(3)
        real(c_float), pointer :: v(:)
        real(c_float) :: lr
        integer(c_long) :: step
        integer :: slots, ierr
        call hpct_ctx_create(ctx)
        call hpct_params_create(ctx, set)
        a = [1, 2, 3]
        ga = [0.5, -1.0, 2.0]
        call hpct_params_register(set, "a", a, ga)
        oc%lr = 1
        oc%momentum = 0.5
        call hpct_optimizer_create(set, oc, opt)
        call hpct_optimizer_step(opt)
        call tap_ok(all(a == [0.5, 3.0, 1.0]), "hpct_optimizer_step updates the Fortran array in place")
        call hpct_optimizer_state_slots(opt, slots)
        call hpct_optimizer_state(opt, 0, 0, v)
        call tap_ok(slots == 1 .and. size(v) == 3 .and. all(v == ga), "hpct_optimizer_state: the momentum")
        call hpct_optimizer_get_step(opt, step)
        call tap_ok(step == 1, "hpct_optimizer_get_step")
        call hpct_optimizer_set_step(opt, 10_c_long)
        call hpct_optimizer_get_step(opt, step)
        call hpct_optimizer_lr_at(opt, 5_c_long, lr)
        call tap_ok(step == 10 .and. lr == 1, "hpct_optimizer_set_step and hpct_optimizer_lr_at")
        call hpct_optimizer_state(opt, 3, 0, v, ierr)
        call tap_ok(ierr /= 0 .and. .not. associated(v), "hpct_optimizer_state of a missing buffer fails")
        call hpct_params_register(set, "late", a, ga, ierr)
        call tap_ok(ierr == HPCT_ERR_STATE, "registering after the optimizer exists: HPCT_ERR_STATE")
        call hpct_optimizer_destroy(opt)
        call hpct_params_destroy(set)
        call hpct_ctx_destroy(ctx)
    end subroutine

    ! ---- datasets -------------------------------------------------------------------------

    subroutine test_dataset()
        type(hpct_ctx_t) :: ctx
        type(hpct_dataset_t) :: ds, ds2
        type(hpct_data_config_t) :: dc
        real(c_float), pointer :: px(:, :), pv(:, :), pt(:, :)
        integer(c_int32_t), pointer :: py(:)
        real(c_float), target :: x(16, 8)
        integer(c_int32_t), target :: y(8)
        integer(c_int64_t), target :: perm(10)
        integer(c_size_t) :: n
        integer(c_long) :: steps, epoch, step, skipped
        type(hpct_data_stats_t) :: dstats
        integer(c_int) :: dtype
        integer :: features, width, ierr, i
        call hpct_ctx_create(ctx)
        dc%shuffle = 0
        call hpct_dataset_open(ctx, manifest, ds, dc, ierr=ierr)
        call tap_is(ierr, HPCT_SUCCESS, "hpct_dataset_open (trailing blanks of the path dropped)")
        call hpct_dataset_info(ds, n, features, width, dtype)
        call tap_ok(n == 2048 .and. features == 16 .and. width == 1 .and. dtype == HPCT_DTYPE_INT32, &
            "hpct_dataset_info: 2048 x 16, int32 labels")
        call hpct_dataset_next(ds, px, py, ierr)
        call tap_ok(ierr == HPCT_ERR_STATE .and. contains_text(hpct_last_error(ds), "partition"), &
            "hpct_dataset_next before partition: " // hpct_last_error(ds))
        call hpct_dataset_partition(ds, 0, 1, 8)
        call hpct_dataset_steps_per_epoch(ds, steps)
        call tap_ok(steps == 256, "hpct_dataset_partition and hpct_dataset_steps_per_epoch")
        call hpct_dataset_next(ds, px, py)
        call tap_ok(size(px, 1) == 16 .and. size(px, 2) == 8 .and. size(py) == 8 .and. &
            all(py >= 0 .and. py <= 3) .and. all(abs(px) <= 1), &
            "hpct_dataset_next: inputs(16, 8) and labels(8) pointers")
        call hpct_dataset_next_into(ds, x, y)
        call hpct_dataset_get_cursor(ds, epoch, step)
        call tap_ok(epoch == 0 .and. step == 2 .and. all(y >= 0 .and. y <= 3), &
            "hpct_dataset_next_into and hpct_dataset_get_cursor")
        call hpct_dataset_set_cursor(ds, 0_c_long, 0_c_long)
        call hpct_dataset_next_into(ds, x, y)
        call hpct_dataset_set_cursor(ds, 0_c_long, 0_c_long)
        call hpct_dataset_next(ds, px, py)
        call tap_ok(all(px == x) .and. all(py == y), "hpct_dataset_set_cursor replays the same batch")
        call hpct_dataset_next(ds, pv, pt, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(ds), "int32"), &
            "real targets for an int32 dataset are refused: " // hpct_last_error(ds))
        call hpct_dataset_next_into(ds, x(:, 1:4), y, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(ds), "(16, 8)"), &
            "next_into with 4 instead of 8 samples is refused: " // hpct_last_error(ds))
        call hpct_dataset_skipped(ds, skipped)
        call tap_ok(skipped == 0, "hpct_dataset_skipped")
        call hpct_dataset_stats(ds, dstats)
        call tap_ok(dstats%version == HPCT_DATA_STATS_VERSION .and. dstats%store == HPCT_STORE_OFF &
            .and. dstats%resident_bytes > 0 .and. dstats%exchange_bytes == 0, "hpct_dataset_stats")
        call hpct_dataset_close(ds)
        call hpct_dataset_open(ctx, named, ds2, inputs_name="feats", targets_name="labels", ierr=ierr)
        call tap_is(ierr, HPCT_SUCCESS, "hpct_dataset_open with inputs_name and targets_name")
        call hpct_dataset_close(ds2)
        call hpct_dataset_open(ctx, named, ds2, ierr=ierr)
        call tap_ok(ierr /= 0 .and. contains_text(hpct_last_error(ctx), "inputs"), &
            "the default names are 'inputs'/'targets': " // hpct_last_error(ctx))
        call hpct_dataset_open(ctx, "/nonexistent/manifest.txt", ds2, ierr=ierr)
        call tap_ok(ierr /= 0 .and. contains_text(hpct_last_error(ctx), "/nonexistent/manifest.txt"), &
            "a missing manifest: the error names it")
        call hpct_data_permutation(9_c_int64_t, 1_c_long, perm)
        call tap_ok(all([(count(perm == i), i = 0, 9)] == 1), "hpct_data_permutation of 0..9")
        call hpct_ctx_destroy(ctx)
    end subroutine

    ! ---- shards and manifests written from Fortran arrays ------------------------------------

    !> The bit patterns of fp32 values (a bit-for-bit comparison, -0.0 and subnormals included).
    function bits(x) result(b)
        real(c_float), intent(in) :: x(:)
        integer(c_int32_t) :: b(size(x))
        b = transfer(x, b)
    end function

    !> Write a shard of inputs x(..., samples) and labels y(samples) at path, then close it.
    subroutine write_shard(ctx, path, x, y, cfg)
        type(hpct_ctx_t), intent(in) :: ctx
        character(*), intent(in) :: path
        real(c_float), intent(in) :: x(..)
        integer(c_int32_t), intent(in) :: y(:)
        type(hpct_shard_config_t), intent(in), optional :: cfg
        type(hpct_shard_writer_t) :: shard
        call hpct_shard_create(ctx, path, shard, cfg)
        call hpct_shard_write(shard, "inputs", x)
        call hpct_shard_write(shard, "targets", y)
        call hpct_shard_close(shard)
    end subroutine

    subroutine test_shards()
        type(hpct_ctx_t) :: ctx
        type(hpct_shard_writer_t) :: shard
        type(hpct_shard_config_t) :: sc
        type(hpct_manifest_t) :: mf, mf2
        type(hpct_dataset_t) :: ds
        type(hpct_data_config_t) :: dc
        real(c_float) :: xa(3, 5), xb(3, 3), x(3, 8), cube(2, 3, 4), wide(6, 5), one
        real(c_float) :: r10(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
        real(c_float), pointer :: px(:, :)
        integer(c_int32_t), pointer :: py(:)
        integer(c_int32_t) :: ya(5), yb(3), y(8), yc(4)
        integer(c_size_t) :: n
        character(:), allocatable :: dir
        integer :: features, width, ierr, i
        dir = trim(workdir)
        call hpct_ctx_create(ctx)
        ! Two shards of 5 and 3 samples with 3 features each: x(features, samples).
        xa = reshape([(real(i, c_float) / 3, i = 1, 15)], [3, 5])
        xa(1, 1) = -0.0_c_float
        xa(2, 1) = tiny(1.0_c_float) / 4 ! a subnormal
        xb = reshape([(-real(i, c_float) / 7, i = 1, 9)], [3, 3])
        ya = [3, 1, 0, 2, 1]
        yb = [2, 0, 3]
        call write_shard(ctx, dir // "/fortran-a.h5", xa, ya)
        sc%chunk_rows = 2
        sc%deflate = 4
        call write_shard(ctx, dir // "/fortran-b.h5", xb, yb, sc)
        call hpct_manifest_create(ctx, dir // "/fortran-manifest.txt", mf, ierr=ierr)
        call hpct_manifest_add_shard(mf, dir // "/fortran-a.h5")
        call hpct_manifest_add_shard(mf, dir // "/fortran-b.h5")
        call hpct_manifest_write(mf)
        call hpct_manifest_destroy(mf)
        call tap_ok(ierr == 0 .and. .not. c_associated(mf%ptr), &
            "hpct_shard_create/write/close and hpct_manifest_create/add_shard/write/destroy")
        dc%shuffle = 0
        call hpct_dataset_open(ctx, dir // "/fortran-manifest.txt", ds, dc)
        call hpct_dataset_info(ds, n, features, width)
        call tap_ok(n == 8 .and. features == 3 .and. width == 1, &
            "x(3, samples) was written as [samples][3]: 8 samples of 3 features")
        call hpct_dataset_partition(ds, 0, 1, 8)
        call hpct_dataset_next_into(ds, x, y)
        call tap_ok(all(bits(reshape(x, [24])) == bits([xa, xb])) .and. all(y == [ya, yb]), &
            "the batch read back is bit-identical to the Fortran arrays (-0.0, a subnormal, deflate)")
        call hpct_dataset_close(ds)
        ! Rank 3: cube(2, 3, samples) is the C [samples][3][2]; 6 features per sample.
        cube = reshape([(real(i, c_float) / 5, i = 1, 24)], [2, 3, 4])
        yc = [0, 1, 2, 3]
        call write_shard(ctx, dir // "/fortran-cube.h5", cube, yc)
        call hpct_manifest_create(ctx, dir // "/fortran-cube.txt", mf2, "inputs", "targets")
        call hpct_manifest_add_shard(mf2, dir // "/fortran-cube.h5")
        call hpct_manifest_write(mf2)
        call hpct_manifest_destroy(mf2)
        call hpct_dataset_open(ctx, dir // "/fortran-cube.txt", ds, dc)
        call hpct_dataset_partition(ds, 0, 1, 4)
        call hpct_dataset_next(ds, px, py)
        call tap_ok(size(px, 1) == 6 .and. size(px, 2) == 4 .and. &
            all(bits(reshape(px, [24])) == bits(reshape(cube, [24]))) .and. all(py == yc), &
            "cube(2, 3, 4) is 4 samples of 6 features, read back in place bit for bit")
        call hpct_dataset_close(ds)
        ! Errors found on the Fortran side and by C, each named.
        call hpct_shard_create(ctx, dir // "/fortran-bad.h5", shard)
        call hpct_shard_write(shard, "strided", wide(1:6:2, :), ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(shard), "not contiguous"), &
            "hpct_shard_write refuses a strided section: " // hpct_last_error(shard))
        call hpct_shard_write(shard, "empty", wide(:, 1:0), ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(shard), "(6, 0)"), &
            "hpct_shard_write refuses an empty array: " // hpct_last_error(shard))
        one = 1
        call hpct_shard_write(shard, "one", one, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(shard), "scalar"), &
            "hpct_shard_write refuses a scalar: " // hpct_last_error(shard))
        r10 = 1
        call hpct_shard_write(shard, "r10", r10, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(shard), "rank 10"), &
            "more than HPCT_SHARD_MAX_RANK dimensions are refused by C: " // hpct_last_error(shard))
        call hpct_shard_close(shard, ierr)
        call tap_ok(ierr == 0 .and. .not. c_associated(shard%ptr), "hpct_shard_close nulls the handle")
        sc%deflate = 12
        call hpct_shard_create(ctx, dir // "/fortran-bad.h5", shard, sc, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(ctx), "deflate") .and. &
            .not. c_associated(shard%ptr), "the shard config reaches C: " // hpct_last_error(ctx))
        call hpct_manifest_create(ctx, dir // "/fortran-mixed.txt", mf)
        call hpct_manifest_add_shard(mf, dir // "/fortran-a.h5")
        call hpct_manifest_add_shard(mf, dir // "/fortran-cube.h5", ierr)
        call tap_ok(ierr == HPCT_ERR_FORMAT .and. contains_text(hpct_last_error(mf), "fortran-cube.h5"), &
            "hpct_manifest_add_shard refuses a shard of another layout: " // hpct_last_error(mf))
        call hpct_manifest_destroy(mf)
        call hpct_manifest_check_path("shards/part-0.h5", ierr)
        call tap_is(ierr, HPCT_SUCCESS, "hpct_manifest_check_path accepts shards/part-0.h5")
        call hpct_manifest_check_path("../part-0.h5", ierr)
        call hpct_manifest_check_path("part 0.h5", i)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. i == HPCT_ERR_INVALID_ARG, &
            "hpct_manifest_check_path refuses ../part-0.h5 and 'part 0.h5'")
        call hpct_ctx_destroy(ctx)
    end subroutine

    ! ---- distributed runtime (one rank) ---------------------------------------------------

    subroutine test_distributed()
        use mpi_f08, only: MPI_COMM_WORLD
        type(hpct_ctx_t) :: ctx, c1, c2
        type(hpct_topology_t) :: topo
        type(hpct_params_t) :: set
        type(hpct_config_t) :: cfg
        real(c_float), target :: buf(4, 3), p(5), g(5)
        real(c_float), pointer :: gb(:)
        real(c_double) :: wait_s
        integer(c_long) :: ops, lost_m, lost_t
        integer :: local, offset, ierr
        cfg%collective_timeout_s = 60
        cfg%consistency_interval = 2
        call hpct_init(ctx, cfg, ierr)
        call tap_is(ierr, HPCT_SUCCESS, "hpct_init")
        call hpct_topology(ctx, topo)
        call tap_ok(topo%rank == 0 .and. topo%size == 1 .and. len(hpct_f_string(topo%hostname)) > 0, &
            "hpct_topology: rank 0 of 1 on " // hpct_f_string(topo%hostname))
        call hpct_batch_split(ctx, 48, local, offset)
        call tap_ok(local == 48 .and. offset == 0, "hpct_batch_split")
        buf = 3
        call hpct_allreduce_mean(ctx, buf)
        call hpct_allreduce_mean(ctx, buf(1:2, :), ierr)
        call tap_ok(all(buf == 3) .and. ierr == HPCT_ERR_INVALID_ARG, &
            "hpct_allreduce_mean in place; a strided section refused")
        call hpct_allreduce_mean_device(ctx, c_loc(buf), int(size(buf), c_size_t), ierr)
        call tap_ok(all(buf == 3) .and. ierr == HPCT_SUCCESS, &
            "hpct_allreduce_mean_device on the cpu backend (host memory via c_loc)")
        call hpct_alloc_grads(ctx, 6_c_size_t, gb, ierr)
        call tap_ok(ierr == HPCT_SUCCESS .and. associated(gb), "hpct_alloc_grads: a buffer")
        if (associated(gb)) then
            call tap_ok(size(gb) == 6 .and. all(gb == 0), "hpct_alloc_grads: 6 zeroed floats")
            gb = 5
            call hpct_allreduce_mean(ctx, gb)
            call tap_ok(all(gb == 5), "hpct_allreduce_mean of an hpct_alloc_grads buffer")
        end if
        call hpct_free_grads(ctx, gb, ierr)
        call tap_ok(ierr == HPCT_SUCCESS .and. .not. associated(gb), "hpct_free_grads nullifies it")
        call hpct_params_create(ctx, set)
        p = 1
        g = 2
        call hpct_params_register(set, "p", p, g)
        call hpct_params_average_grads(set)
        call hpct_params_broadcast(set, 0)
        call hpct_params_check_replicas(set)
        call hpct_params_check_replicas_at(set, 4_c_long, ierr)
        call tap_ok(ierr == 0 .and. all(g == 2), &
            "hpct_params_average_grads, broadcast, check_replicas(_at) on one rank")
        call hpct_comm_stats(ctx, wait_s, ops)
        call tap_ok(ops >= 1 .and. wait_s >= 0, "hpct_comm_stats counts the averaging")
        call hpct_output_losses(ctx, lost_m, lost_t, ierr)
        call tap_ok(ierr == 0 .and. lost_m == 0 .and. lost_t == 0, &
            "hpct_output_losses: nothing lost on a context that wrote nothing")
        call hpct_params_destroy(set)
        call hpct_init_comm(MPI_COMM_WORLD, c1, cfg, ierr)
        call hpct_init_comm(MPI_COMM_WORLD%MPI_VAL, c2, ierr=ierr)
        call tap_ok(ierr == 0 .and. c_associated(c1%ptr) .and. c_associated(c2%ptr), &
            "hpct_init_comm with type(MPI_Comm) and with an integer handle")
        call hpct_finalize(c1)
        call hpct_finalize(c2)
        call hpct_finalize(ctx, ierr)
        call tap_ok(ierr == 0 .and. .not. c_associated(ctx%ptr), "hpct_finalize")
    end subroutine

    ! ---- checkpoints ----------------------------------------------------------------------

    subroutine test_checkpoints()
        type(hpct_ctx_t) :: ctx
        type(hpct_params_t) :: set
        type(hpct_optimizer_t) :: opt
        type(hpct_optim_config_t) :: oc
        type(hpct_ckpt_t) :: ck
        type(hpct_ckpt_config_t) :: kc
        type(hpct_ckpt_meta_t) :: meta, loaded
        real(c_float), target :: w(4), dw(4)
        real(c_double), target :: field(3, 2), t
        integer(c_int32_t), target :: counts(5)
        integer(c_int64_t), target :: stepno, steps(1)
        real(c_float), target :: f32, w_saved(4)
        integer(c_int8_t), target :: flags(3), flag
        real(c_double), target :: strided(4, 2)
        character(:), allocatable :: path
        integer :: due, ierr
        call hpct_ctx_create(ctx)
        call hpct_params_create(ctx, set)
        w = [1, 2, 3, 4]
        dw = 0.5
        call hpct_params_register(set, "w", w, dw)
        oc%momentum = 0.9
        call hpct_optimizer_create(set, oc, opt)
        call hpct_optimizer_step(opt)
        kc%every_steps = 2
        call hpct_ckpt_open(ctx, kc, ck, ierr=ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG, "hpct_ckpt_open without a directory: " // hpct_last_error(ctx))
        call hpct_ckpt_open(ctx, kc, ck, directory=trim(workdir) // "/ckpt")
        field = reshape([1d0, 2d0, 3d0, 4d0, 5d0, 6d0], [3, 2])
        counts = [1, 2, 3, 4, 5]
        flags = [1_c_int8_t, 0_c_int8_t, 1_c_int8_t]
        t = 0.125d0
        stepno = 77
        f32 = 2.5
        flag = 1
        call hpct_ckpt_add_array(ck, "sim/field", field)
        call hpct_ckpt_add_array(ck, "sim/counts", counts)
        call hpct_ckpt_add_array(ck, "sim/flags", flags)
        call hpct_ckpt_add_array(ck, "sim/w_copy", w)
        steps = 77
        call hpct_ckpt_add_array(ck, "sim/steps", steps)
        call hpct_ckpt_add_array(ck, "sim/strided", strided(1:4:2, :), ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(ck), "not contiguous"), &
            "hpct_ckpt_add_array refuses a strided section: " // hpct_last_error(ck))
        call hpct_ckpt_add_scalar(ck, "sim/time", t)
        call hpct_ckpt_add_scalar(ck, "sim/step", stepno)
        call hpct_ckpt_add_scalar(ck, "sim/f32", f32)
        call hpct_ckpt_add_scalar(ck, "sim/flag", flag)
        call hpct_ckpt_add_scalar(ck, "sim/count", counts(1))
        call hpct_ckpt_due(ck, 2_c_long, due)
        call tap_ok(iand(due, HPCT_CKPT_DUE_STEPS) /= 0, "hpct_ckpt_due after every_steps")
        meta%step = 2
        meta%global_batch = 8
        call hpct_optimizer_set_step(opt, 2_c_long) ! a load refuses optimizer/step /= meta/step
        call hpct_ckpt_save(ck, set, meta, opt, model="byog w(4)")
        call hpct_ckpt_before_update(ck)
        call hpct_ckpt_wait(ck)
        call hpct_ckpt_last_path(ck, path)
        call tap_ok(contains_text(path, trim(workdir) // "/ckpt/"), "hpct_ckpt_save wrote " // path)
        saved_path = path
        ! change everything, then load it back into the same Fortran arrays
        w_saved = w
        w = -1
        steps = 0
        field = 0
        counts = 0
        flags = 0
        t = -1
        stepno = 0
        f32 = 0
        flag = 0
        call hpct_ckpt_load_latest(ck, set, loaded, opt)
        call tap_ok(all(w == w_saved) .and. steps(1) == 77 .and. field(3, 2) == 6 .and. field(1, 2) == 4 .and. &
            all(counts == [1, 2, 3, 4, 5]) .and. all(flags == [1, 0, 1]) .and. t == 0.125d0 .and. &
            stepno == 77 .and. f32 == 2.5 .and. flag == 1, &
            "hpct_ckpt_load_latest restores params and every extra in place")
        call tap_ok(loaded%step == 2 .and. loaded%global_batch == 8 .and. &
            hpct_f_string(loaded%model) == "byog w(4)" .and. hpct_f_string(loaded%path) == path, &
            "the loaded meta: step, model description and path")
        call hpct_ckpt_close(ck)
        call tap_ok(.not. c_associated(ck%ptr), "hpct_ckpt_close")
        kc%directory = c_null_ptr
        call hpct_ckpt_open(ctx, kc, ck, directory=trim(workdir) // "/empty")
        call hpct_ckpt_load_latest(ck, set, loaded, ierr=ierr)
        call tap_ok(ierr == HPCT_ERR_NOT_FOUND, "hpct_ckpt_load_latest in an empty directory: HPCT_ERR_NOT_FOUND")
        call hpct_ckpt_close(ck, ierr)
        call hpct_optimizer_destroy(opt)
        call hpct_params_destroy(set)
        call hpct_ctx_destroy(ctx)
    end subroutine

    ! ---- inspection of a checkpoint file ----------------------------------------------------

    subroutine test_inspect()
        type(hpct_ctx_t) :: ctx
        type(hpct_ckpt_t) :: ck
        type(hpct_ckpt_config_t) :: kc
        type(hpct_ckpt_file_t) :: file
        type(hpct_ckpt_meta_t) :: meta
        character(:), allocatable :: path, library, name
        real(c_double), target :: field(3, 2)
        real(c_float), target :: field32(6), w(4)
        integer(c_int32_t), target :: counts(5)
        integer(c_int64_t), target :: hash, stepno(1)
        integer(c_int8_t), target :: flags(3)
        integer(c_size_t) :: count
        integer(c_int) :: dtype
        logical :: scalar
        integer :: schema, n, i, idx, ierr, bad
        call hpct_ctx_create(ctx)
        call hpct_ckpt_open(ctx, kc, ck, directory=trim(workdir) // "/ckpt")
        call hpct_ckpt_last_path(ck, path)
        call tap_is_str(path, "", "hpct_ckpt_last_path before any save on this handle")
        call hpct_ckpt_rejected(ck, path)
        call tap_is_str(path, "", "hpct_ckpt_rejected before any load on this handle")
        call hpct_ckpt_close(ck)
        path = saved_path
        call hpct_ckpt_file_open(ctx, path, file, ierr)
        call tap_is(ierr, HPCT_SUCCESS, "hpct_ckpt_file_open " // path)
        call hpct_ckpt_file_versions(file, schema, library)
        call tap_ok(schema >= 1 .and. library == HPCT_VERSION_STRING, "hpct_ckpt_file_versions: " // library)
        call hpct_ckpt_file_meta(file, meta)
        call tap_ok(meta%step == 2 .and. hpct_f_string(meta%model) == "byog w(4)" .and. &
            hpct_f_string(meta%path) == path, "hpct_ckpt_file_meta")
        call hpct_ckpt_file_num_datasets(file, n)
        bad = 0
        do i = 0, n - 1
            call hpct_ckpt_file_dataset(file, i, name, dtype, count, scalar)
            call hpct_ckpt_file_verify(file, i, ierr)
            if (ierr /= 0 .or. len(name) == 0) bad = bad + 1
        end do
        call tap_ok(n > 10 .and. bad == 0, "hpct_ckpt_file_dataset and hpct_ckpt_file_verify over every dataset")
        call hpct_ckpt_file_find(file, "extra/sim/time", idx)
        call hpct_ckpt_file_dataset(file, idx, dtype=dtype, count=count, scalar=scalar)
        call tap_ok(dtype == HPCT_CKPT_F64 .and. count == 1 .and. scalar, &
            "hpct_ckpt_file_find: extra/sim/time is an fp64 scalar")
        call hpct_ckpt_file_find(file, "no/such/dataset", idx, ierr)
        call tap_ok(ierr == HPCT_ERR_NOT_FOUND, "hpct_ckpt_file_find of a missing name: HPCT_ERR_NOT_FOUND")
        call hpct_ckpt_file_read(file, "extra/sim/field", field)
        call hpct_ckpt_file_read(file, "extra/sim/field", field32)
        call hpct_ckpt_file_read(file, "extra/sim/counts", counts)
        call hpct_ckpt_file_read(file, "extra/sim/flags", flags)
        call hpct_ckpt_file_read(file, "extra/sim/steps", stepno)
        call hpct_ckpt_file_read(file, "params/w", w)
        call tap_ok(field(2, 2) == 5 .and. field32(6) == 6 .and. counts(5) == 5 .and. flags(3) == 1 .and. &
            stepno(1) == 77 .and. w(4) > 3.99, "hpct_ckpt_file_read as fp64, fp32 (converted), int32, u8, int64")
        call hpct_ckpt_file_read(file, "meta/config_hash", hash, as=HPCT_CKPT_U64)
        call hpct_ckpt_file_read(file, "extra/sim/field", counts(1:4), ierr=ierr)
        call tap_ok(ierr /= 0 .and. len(hpct_last_error(file)) > 0, &
            "reading 6 values into 4 fails: " // hpct_last_error(file))
        call hpct_ckpt_file_close(file)
        call tap_ok(.not. c_associated(file%ptr), "hpct_ckpt_file_close nulls the handle")
        call hpct_ckpt_file_open(ctx, trim(workdir) // "/no-such-file.h5", file, ierr)
        call tap_ok(ierr /= 0 .and. .not. c_associated(file%ptr) .and. &
            contains_text(hpct_last_error(file), "no-such-file.h5"), &
            "hpct_ckpt_file_open of a missing file fails naming it")
        call tap_ok(hpct_crc32c(0_c_int32_t, "123456789") == int(z'E3069283', c_int32_t), &
            "hpct_crc32c('123456789') is the CRC-32C check value E3069283")
        call tap_ok(hpct_crc32c(0_c_int32_t, [49_c_int8_t, 50_c_int8_t, 51_c_int8_t]) == &
            hpct_crc32c(0_c_int32_t, "123") .and. hpct_crc32c(hpct_crc32c(0_c_int32_t, "1234"), "56789") == &
            int(z'E3069283', c_int32_t) .and. hpct_crc32c(0_c_int32_t, [1.0_c_float]) == &
            hpct_crc32c(0_c_int32_t, [int(z'3F800000', c_int32_t)]) .and. &
            hpct_crc32c(0_c_int32_t, [1.0_c_double]) == hpct_crc32c(0_c_int32_t, [4607182418800017408_c_int64_t]), &
            "hpct_crc32c over bytes, chained, and over fp32/int32/fp64/int64 arrays")
        call hpct_ctx_destroy(ctx)
    end subroutine

    ! ---- signals and walltime ---------------------------------------------------------------

    subroutine test_signals_walltime()
        integer(c_int), parameter :: SIGUSR1 = 10, SIGUSR2 = 12
        type(hpct_ctx_t) :: ctx
        type(hpct_signals_t) :: sig
        real(c_double) :: seconds
        integer :: signo, count, ierr
        call hpct_ctx_create(ctx)
        call hpct_signals_install(ctx, sig, [int(SIGUSR2)])
        call tap_ok(.not. hpct_signals_pending(), "no signal pending after hpct_signals_install")
        if (c_raise(SIGUSR2) /= 0) call tap_diag("raise failed")
        call tap_ok(hpct_signals_pending(signo, count) .and. signo == SIGUSR2 .and. count == 1, &
            "hpct_signals_pending after raise(SIGUSR2)")
        call hpct_signals_clear()
        call tap_ok(.not. hpct_signals_pending(signo) .and. signo == 0, "hpct_signals_clear")
        call hpct_signals_uninstall(sig)
        call hpct_signals_install(ctx, sig) ! the defaults: SIGTERM and SIGUSR1
        if (c_raise(SIGUSR1) /= 0) call tap_diag("raise failed")
        call tap_ok(hpct_signals_pending(signo) .and. signo == SIGUSR1, "the default signals include SIGUSR1")
        call hpct_signals_clear()
        call hpct_signals_uninstall(sig)
        call tap_ok(.not. c_associated(sig%ptr), "hpct_signals_uninstall")
        call hpct_walltime_remaining(ctx, seconds, ierr)
        call tap_ok(ierr == 0 .and. seconds > 100 .and. seconds <= 1000, &
            "hpct_walltime_remaining from HPCT_JOB_END_TIME (set by the test)")
        call hpct_ctx_destroy(ctx)
    end subroutine

    ! ---- the training loop ------------------------------------------------------------------

    subroutine test_train()
        type(hpct_ctx_t) :: ctx
        type(hpct_model_t) :: model
        type(hpct_params_t) :: params
        type(hpct_optimizer_t) :: opt
        type(hpct_optim_config_t) :: oc
        type(hpct_dataset_t) :: train, eval
        type(hpct_data_config_t) :: dc
        type(hpct_train_config_t) :: tc
        type(hpct_train_result_t) :: res
        type(hpct_ckpt_t) :: ck
        type(hpct_ckpt_config_t) :: kc
        real(c_double) :: loss, acc
        integer(c_long) :: samples
        integer :: ierr
        call hpct_ctx_create(ctx)
        call hpct_dataset_open(ctx, manifest, train)
        dc%shuffle = 0
        call hpct_dataset_open(ctx, manifest, eval, dc)
        call hpct_model_create(ctx, 16, model)
        call hpct_model_add_dense(model, 32, HPCT_ACT_TANH)
        call hpct_model_add_dense(model, 4, HPCT_ACT_IDENTITY)
        call hpct_model_build(model, 64)
        call hpct_model_params(model, params)
        oc%lr = 0.1
        oc%momentum = 0.9
        call hpct_optimizer_create(params, oc, opt)
        kc%every_steps = 16
        call hpct_ckpt_open(ctx, kc, ck, directory=trim(workdir) // "/train")
        tc%global_batch = 64
        tc%epochs = 2
        tc%log_interval = 8
        tc%progress = c_funloc(on_progress)
        tc%progress_arg = c_loc(progress_calls)
        call hpct_train(model, opt, train, tc, res, ck, ierr)
        call tap_ok(ierr == HPCT_SUCCESS .and. res%steps == 64 .and. res%resumed_from == -1 .and. &
            res%checkpoints >= 4, "hpct_train: 2 epochs of 32 steps with checkpoints")
        call tap_ok(progress_calls == 8, "the BIND(C) Fortran progress callback ran every 8 steps")
        call check_ckpt_list(ctx, ck, kc, trim(workdir) // "/train", res%steps)
        call hpct_evaluate(model, eval, loss, acc, samples)
        call tap_ok(samples == 2048 .and. acc > 0.5, "hpct_evaluate after training (accuracy > 0.5)")
        tc%epochs = 3
        call hpct_train(model, opt, train, tc, res, ierr=ierr)
        call tap_ok(ierr == HPCT_SUCCESS .and. res%steps == 96, "hpct_train without checkpoints continues")
        call hpct_ckpt_close(ck)
        call hpct_optimizer_destroy(opt)
        call hpct_model_destroy(model)
        call hpct_dataset_close(eval)
        call hpct_dataset_close(train)
        call hpct_ctx_destroy(ctx)
    end subroutine

    !> List the checkpoints a run wrote in dir through ck (cadence kc): keep_last files,
    !> newest first, the first the handle's last one at the run's final step.
    subroutine check_ckpt_list(ctx, ck, kc, dir, final_step)
        type(hpct_ctx_t), intent(in) :: ctx
        type(hpct_ckpt_t), intent(in) :: ck
        type(hpct_ckpt_config_t), intent(in) :: kc
        character(*), intent(in) :: dir
        integer(c_long), intent(in) :: final_step
        type(hpct_ckpt_list_t) :: list
        type(hpct_ckpt_file_t) :: file
        type(hpct_ckpt_meta_t) :: meta
        character(:), allocatable :: path, last, first
        integer(c_long) :: prev
        integer :: n, i, ierr
        logical :: newest_first
        call hpct_ckpt_list_open(ctx, dir, list, ierr)
        call hpct_ckpt_list_size(list, n)
        call tap_ok(ierr == 0 .and. n == kc%keep_last, "hpct_ckpt_list_open and _size: keep_last files in " // dir)
        call hpct_ckpt_last_path(ck, last)
        newest_first = .true.
        first = ""
        prev = final_step + 1
        do i = 0, n - 1
            call hpct_ckpt_list_path(list, i, path)
            if (i == 0) first = path
            call hpct_ckpt_file_open(ctx, path, file)
            call hpct_ckpt_file_meta(file, meta)
            call hpct_ckpt_file_close(file)
            if (meta%step >= prev .or. (i == 0 .and. (meta%step /= final_step .or. path /= last))) &
                newest_first = .false.
            prev = meta%step
        end do
        call tap_ok(newest_first, "hpct_ckpt_list_path: newest first, the first is hpct_ckpt_last_path " // last)
        call hpct_ckpt_list_path(list, n, path, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. path == "" .and. &
            contains_text(hpct_last_error(list), "outside"), &
            "hpct_ckpt_list_path past the end is refused: " // hpct_last_error(list))
        call hpct_ckpt_list_close(list)
        call tap_ok(.not. c_associated(list%ptr) .and. len(last) > 0 .and. first == last, &
            "hpct_ckpt_list_close nulls the handle; the paths copied from it stay")
        call hpct_ckpt_list_open(ctx, dir // "/missing", list, ierr)
        call tap_ok(ierr == HPCT_ERR_NOT_FOUND .and. contains_text(hpct_last_error(ctx), dir // "/missing") .and. &
            .not. c_associated(list%ptr), "hpct_ckpt_list_open of a missing directory: " // hpct_last_error(ctx))
    end subroutine

    ! ---- the in-situ session ------------------------------------------------------------

    !> A 4-8(tanh)-2 softmax-CE model, its SGD optimizer and a checkpoint directory.
    subroutine insitu_parts(ctx, model, opt, ck, dir)
        type(hpct_ctx_t), intent(in) :: ctx
        type(hpct_model_t), intent(out) :: model
        type(hpct_optimizer_t), intent(out) :: opt
        type(hpct_ckpt_t), intent(out) :: ck
        character(*), intent(in) :: dir
        type(hpct_params_t) :: params
        type(hpct_optim_config_t) :: oc
        type(hpct_ckpt_config_t) :: kc
        call hpct_model_create(ctx, 4, model)
        call hpct_model_add_dense(model, 8, HPCT_ACT_TANH)
        call hpct_model_add_dense(model, 2, HPCT_ACT_IDENTITY)
        call hpct_model_build(model, 8)
        call hpct_model_params(model, params)
        oc%lr = 0.1
        call hpct_optimizer_create(params, oc, opt)
        kc%every_steps = 2
        call hpct_ckpt_open(ctx, kc, ck, directory=dir)
    end subroutine

    !> The settings of hpctrain.conf(5) through the module: defaults, set, a file, the checks,
    !> the keys, a value in file syntax and the hash (the same value as C's).
    subroutine test_settings()
        type(hpct_settings_t) :: s
        type(hpct_ctx_t) :: none
        character(:), allocatable :: v, path
        integer(c_int64_t) :: h
        integer :: ierr, u
        call hpct_settings_defaults(s)
        call hpct_settings_format(s, "hidden", v)
        call tap_ok(s%version == HPCT_SETTINGS_VERSION .and. s%global_batch == 256 .and. &
            s%num_hidden == 2 .and. v == "512,512", "hpct_settings_defaults and hpct_settings_format")
        call tap_ok(hpct_settings_hash(s) == int(z'0ea579d243664734', c_int64_t), &
            "hpct_settings_hash of the defaults is C's (the one checkpoints hold)")
        call tap_ok(hpct_settings_key(0) == "train_manifest" .and. hpct_settings_key(9999) == "", &
            "hpct_settings_key: the first key, and none past the last")
        call hpct_settings_set(s, "lr", "0.1", "test", ierr)
        call tap_ok(ierr == 0 .and. s%lr == 0.1d0, "hpct_settings_set lr = 0.1")
        call hpct_settings_set(s, "lr", "fast", "test", ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. &
            contains_text(hpct_last_error(none), "test: lr = 'fast' must be a number"), &
            "a bad value: HPCT_ERR_INVALID_ARG, the message in hpct_last_error of no context")
        path = trim(workdir) // "/settings.conf"
        open (newunit=u, file=path, status="replace", action="write")
        write (u, "(a)") "hidden = 8, 4", "inputs = 3  # the model's input width"
        close (u)
        call hpct_settings_read_file(s, path, ierr)
        call tap_ok(ierr == 0 .and. all(s%hidden(1:2) == [8, 4]) .and. s%num_hidden == 2 .and. &
            s%inputs == 3, "hpct_settings_read_file")
        call hpct_settings_read_env(s, ierr)
        call tap_ok(ierr == 0, "hpct_settings_read_env")
        call hpct_settings_check(s, HPCT_SETTINGS_TRAIN, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_insitu_last_error( &
            hpct_insitu_t()), "train_manifest is not set"), "hpct_settings_check for hpctrain train")
        call hpct_settings_set(s, "outputs", "2")
        call hpct_settings_check(s, HPCT_SETTINGS_INSITU, ierr)
        call tap_ok(ierr == 0, "hpct_settings_check for an in-situ session")
        h = hpct_settings_hash(s)
        call hpct_settings_set(s, "layers", "reshape 1x3, conv 4 k3 tanh, maxpool 3, dense 2")
        call hpct_settings_format(s, "layers", v)
        call tap_ok(hpct_f_string(s%layers) == "reshape 1x3, conv 4 k3 tanh, maxpool 3, dense 2" .and. &
            v == hpct_f_string(s%layers) .and. hpct_settings_hash(s) /= h, &
            "layers: the version 2 field, its value in file syntax, hashed when set")
        call hpct_settings_set(s, "layers", "reshape 1x3, conv 4 k3 wide", "test", ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. &
            contains_text(hpct_last_error(none), "item 2") .and. &
            contains_text(hpct_last_error(none), "'wide' is not an option of conv"), &
            "a bad layers value names the item: " // hpct_last_error(none))
    end subroutine

    subroutine test_insitu()
        type(hpct_ctx_t) :: ctx
        type(hpct_model_t) :: model
        type(hpct_optimizer_t) :: opt, opt2
        type(hpct_ckpt_t) :: ck
        type(hpct_insitu_t) :: session
        type(hpct_insitu_config_t) :: icfg
        type(hpct_progress_t) :: prog
        type(hpct_params_t) :: set
        type(hpct_optim_config_t) :: oc
        real(c_float), target :: x(4, 8), yv(2, 8), w(3), dw(3)
        integer(c_int32_t), target :: y(8)
        real(c_double), target :: sim_time
        real(c_float) :: loss, losses(5)
        integer(c_long) :: step
        integer :: i, ierr, bad
        call hpct_ctx_create(ctx)
        call insitu_parts(ctx, model, opt, ck, trim(workdir) // "/insitu")
        sim_time = 0
        call hpct_ckpt_add_scalar(ck, "sim/time", sim_time)
        icfg%catch_signals = 0
        call hpct_insitu_create(opt, session, model=model, ck=ck, cfg=icfg, ierr=ierr)
        call hpct_insitu_start(session, step)
        call tap_ok(ierr == 0 .and. step == 0, "hpct_insitu_create and hpct_insitu_start: a fresh start at step 0")
        x = reshape([(real(mod(i * 7, 11), c_float) / 11, i = 1, 32)], [4, 8])
        y = [(int(mod(i, 2), c_int32_t), i = 1, 8)]
        bad = 0
        do i = 1, 5
            sim_time = sim_time + 0.5d0
            call hpct_insitu_step(session, x, y, losses(i), ierr)
            if (ierr /= 0) bad = bad + 1
        end do
        call tap_ok(bad == 0 .and. losses(5) < losses(1), "hpct_insitu_step: 5 steps on labels, the loss falls")
        call hpct_insitu_step(session, x(1:3, :), y, loss, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(session), "(3, 8), expected (4, 8)"), &
            "hpct_insitu_step checks x against the model: " // hpct_last_error(session))
        call hpct_insitu_step(session, x, yv, loss, ierr)
        call tap_ok(ierr == HPCT_ERR_INVALID_ARG .and. contains_text(hpct_last_error(session), "labels"), &
            "hpct_insitu_step refuses real targets for a softmax-CE model")
        call hpct_insitu_progress(session, prog)
        call tap_ok(prog%step == 5, "hpct_insitu_progress: 5 steps")
        call hpct_insitu_finish(session)
        call hpct_insitu_destroy(session)
        call tap_ok(.not. c_associated(session%ptr), "hpct_insitu_finish and hpct_insitu_destroy")
        call hpct_ckpt_close(ck)
        call hpct_optimizer_destroy(opt)
        call hpct_model_destroy(model)
        ! resume: a new model, optimizer and session on the same directory
        call insitu_parts(ctx, model, opt, ck, trim(workdir) // "/insitu")
        sim_time = -1
        call hpct_ckpt_add_scalar(ck, "sim/time", sim_time)
        call hpct_insitu_create(opt, session, model=model, ck=ck, cfg=icfg)
        call hpct_insitu_start(session, step)
        call tap_ok(step == 5 .and. sim_time == 2.5d0, "a new session resumes at step 5 with the registered time 2.5")
        call hpct_insitu_destroy(session)
        call hpct_ckpt_close(ck)
        call hpct_optimizer_destroy(opt)
        call hpct_model_destroy(model)
        ! bring your own gradients
        call hpct_params_create(ctx, set)
        w = 1
        call hpct_params_register(set, "w", w, dw)
        oc%lr = 0.5
        call hpct_optimizer_create(set, oc, opt2)
        call hpct_insitu_create(opt2, session, params=set) ! cfg absent: the defaults
        call hpct_insitu_start(session)
        dw = [1.0, -1.0, 0.0]
        call hpct_insitu_step_grads(session, 4, 0.25_c_float, loss)
        call tap_ok(loss == 0.25 .and. all(w == [0.5, 1.5, 1.0]), &
            "hpct_insitu_step_grads: the caller's gradients step its own array")
        call hpct_insitu_finish(session)
        call hpct_insitu_destroy(session)
        call hpct_optimizer_destroy(opt2)
        call hpct_params_destroy(set)
        call hpct_ctx_destroy(ctx)
    end subroutine
end program fortran_api
