! hpctrain.F90: the Fortran module "hpctrain" of libhpctrain (doc/fortran.md).
!
! Two layers:
!   c_hpct_*  BIND(C) interfaces, one per public C function of include/hpctrain.h, taking
!             what the C function takes (type(c_ptr) handles, values, addresses);
!   hpct_*    Fortran wrappers with the C names: typed handles, OPTIONAL arguments where the
!             C call accepts NULL (they follow the required ones), character(*) strings,
!             arrays checked for shape and contiguity, and a last OPTIONAL ierr: present, it
!             receives the status (detail from hpct_last_error); absent, an error (negative
!             status) prints the call, the status and the detail and stops the job
!             (MPI_Abort on a distributed context), like MPI_ERRORS_ARE_FATAL.
!
! Arrays are used in place, never copied: a Fortran x(features, samples) is the library's
! row-major [samples][features]. A non-contiguous array is refused (HPCT_ERR_INVALID_ARG).
! Indices, ranks, steps and epochs are 0-based, as in C. Strings are passed without their
! trailing blanks; the library copies every input string during the call.
module hpctrain
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: error_unit
    use mpi_f08, only: MPI_Comm
    implicit none
    private

    ! ---- Version -------------------------------------------------------------------------
    ! HPCT_VERSION_MAJOR, _MINOR, _PATCH and HPCT_VERSION_STRING, written by configure
    include "hpctrain_version.inc"
    integer, parameter, public :: HPCT_VERSION = &
        HPCT_VERSION_MAJOR * 65536 + HPCT_VERSION_MINOR * 256 + HPCT_VERSION_PATCH
    !> The API this module declares, HPCT_MAKE_VERSION(major, minor, 0); the linked library
    !> implements it when hpct_get_api_version() has the same major (ishft(v, -16)) and is >= it.
    integer, parameter, public :: HPCT_API_VERSION = &
        HPCT_VERSION_MAJOR * 65536 + HPCT_VERSION_MINOR * 256

    ! ---- Status codes --------------------------------------------------------------------
    integer, parameter, public :: HPCT_SUCCESS = 0
    integer, parameter, public :: HPCT_PREEMPTED = 1
    integer, parameter, public :: HPCT_ERR_INVALID_ARG = -1
    integer, parameter, public :: HPCT_ERR_NO_MEMORY = -2
    integer, parameter, public :: HPCT_ERR_STATE = -3
    integer, parameter, public :: HPCT_ERR_UNSUPPORTED = -4
    integer, parameter, public :: HPCT_ERR_IO = -5
    integer, parameter, public :: HPCT_ERR_FORMAT = -6
    integer, parameter, public :: HPCT_ERR_CHECKSUM = -7
    integer, parameter, public :: HPCT_ERR_NOT_FOUND = -8
    integer, parameter, public :: HPCT_ERR_NONFINITE = -9
    integer, parameter, public :: HPCT_ERR_COMM = -10
    integer, parameter, public :: HPCT_ERR_TIMEOUT = -11
    integer, parameter, public :: HPCT_ERR_DIVERGED = -12
    integer, parameter, public :: HPCT_ERR_INTERNAL = -13
    integer, parameter, public :: HPCT_ERR_DEVICE = -14
    integer, parameter, public :: HPCT_ERR_BUSY = -15
    integer, parameter, public :: HPCT_ERR_LOSS_DIVERGED = -16

    ! ---- Enumerations and limits (C enums are C int) ------------------------------------
    integer(c_int), parameter, public :: HPCT_BACKEND_CPU = 0, HPCT_BACKEND_CUDA = 1
    integer(c_int), parameter, public :: HPCT_LOG_NONE = 0, HPCT_LOG_ERROR = 1, &
        HPCT_LOG_WARN = 2, HPCT_LOG_INFO = 3, HPCT_LOG_DEBUG = 4
    integer(c_int), parameter, public :: HPCT_CONFIG_VERSION = 1
    integer, parameter, public :: HPCT_RNG_STATE_WORDS = 4
    integer, parameter, public :: HPCT_PARAM_NAME_MAX = 200
    integer(c_int), parameter, public :: HPCT_ACT_IDENTITY = 0, HPCT_ACT_RELU = 1, &
        HPCT_ACT_TANH = 2, HPCT_ACT_GELU = 3
    integer(c_int), parameter, public :: HPCT_LOSS_SOFTMAX_CE = 0, HPCT_LOSS_MSE = 1
    integer(c_int), parameter, public :: HPCT_INIT_AUTO = 0, HPCT_INIT_HE = 1, HPCT_INIT_XAVIER = 2
    ! convolution models: hpct_model_add_conv's padding, hpct_model_add_pool's kind
    integer(c_int), parameter, public :: HPCT_PAD_SAME = 0, HPCT_PAD_VALID = 1
    integer(c_int), parameter, public :: HPCT_POOL_MAX = 0, HPCT_POOL_AVG = 1
    integer(c_int), parameter, public :: HPCT_OPT_SGD = 0, HPCT_OPT_ADAMW = 1
    integer(c_int), parameter, public :: HPCT_SCHED_CONSTANT = 0, HPCT_SCHED_STEP = 1, &
        HPCT_SCHED_COSINE = 2
    integer(c_int), parameter, public :: HPCT_OPTIM_CONFIG_VERSION = 1
    integer(c_int), parameter, public :: HPCT_CHECKSUM_FULL = 0, HPCT_CHECKSUM_SIZE = 1, &
        HPCT_CHECKSUM_OFF = 2
    integer(c_int), parameter, public :: HPCT_NONFINITE_ERROR = 0, HPCT_NONFINITE_SKIP = 1
    integer(c_int), parameter, public :: HPCT_DTYPE_FLOAT32 = 0, HPCT_DTYPE_INT32 = 1
    integer(c_int), parameter, public :: HPCT_STORE_AUTO = 0, HPCT_STORE_OFF = 1, &
        HPCT_STORE_JOB = 2, HPCT_STORE_NODE = 3
    integer(c_int), parameter, public :: HPCT_DATA_CONFIG_VERSION = 2
    integer(c_int), parameter, public :: HPCT_DATA_STATS_VERSION = 1
    integer, parameter, public :: HPCT_SHARD_MAX_RANK = 9 ! N and up to 8 per-sample dimensions
    integer(c_int), parameter, public :: HPCT_SHARD_CONFIG_VERSION = 1
    integer(c_int), parameter, public :: HPCT_TRANSPORT_FP32 = 0, HPCT_TRANSPORT_BF16 = 1, &
        HPCT_TRANSPORT_FP16 = 2
    integer, parameter, public :: HPCT_EXIT_HANG = 124
    integer(c_int), parameter, public :: HPCT_TOPO_SINGLE = 0, HPCT_TOPO_PMIX = 1, &
        HPCT_TOPO_OPENMPI_ENV = 2, HPCT_TOPO_SLURM_ENV = 3, HPCT_TOPO_OVERRIDE = 4
    integer(c_int), parameter, public :: HPCT_TOPOLOGY_VERSION = 1
    integer(c_int), parameter, public :: HPCT_TUNABLE_INFO_VERSION = 1
    integer(c_int), parameter, public :: HPCT_CHECK_OK = 0, HPCT_CHECK_WARN = 1, HPCT_CHECK_FAIL = 2
    integer(c_int), parameter, public :: HPCT_DOCTOR_CONFIG_VERSION = 1
    integer(c_int), parameter, public :: HPCT_CKPT_CONFIG_VERSION = 1
    integer(c_int), parameter, public :: HPCT_CKPT_META_VERSION = 1
    integer(c_int), parameter, public :: HPCT_CKPT_F32 = 0, HPCT_CKPT_F64 = 1, HPCT_CKPT_I32 = 2, &
        HPCT_CKPT_I64 = 3, HPCT_CKPT_U8 = 4, HPCT_CKPT_U64 = 5, HPCT_CKPT_STRING = 6, &
        HPCT_CKPT_OTHER = 7
    integer, parameter, public :: HPCT_CKPT_SCHEMA_VERSION = 2 ! the checkpoint file layout
    integer, parameter, public :: HPCT_CKPT_DUE_STEPS = 1, HPCT_CKPT_DUE_SECONDS = 2, &
        HPCT_CKPT_DUE_WALLTIME = 4, HPCT_CKPT_DUE_SIGNAL = 8
    integer(c_int), parameter, public :: HPCT_TRAIN_CONFIG_VERSION = 3
    integer(c_int), parameter, public :: HPCT_INSITU_CONFIG_VERSION = 4
    ! settings files (hpctrain.conf(5)): hpct_settings_t, hpct_settings_check's use
    integer(c_int), parameter, public :: HPCT_SETTINGS_VERSION = 2, HPCT_SETTINGS_PATH_MAX = 1024, &
        HPCT_SETTINGS_MAX_HIDDEN = 16, HPCT_SETTINGS_LAYERS_MAX = 1024, HPCT_SETTINGS_TRAIN = 0, &
        HPCT_SETTINGS_INSITU = 1

    ! ---- Handles: the C pointer and the context that owns it (for error detail) ----------
    type, public :: hpct_ctx_t
        type(c_ptr) :: ptr = c_null_ptr
    end type
    type, public :: hpct_params_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_model_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_optimizer_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_dataset_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_ckpt_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_ckpt_file_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_ckpt_list_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_shard_writer_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_manifest_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_signals_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
    end type
    type, public :: hpct_insitu_t
        type(c_ptr) :: ptr = c_null_ptr, ctx = c_null_ptr
        type(c_ptr) :: model = c_null_ptr ! the session's built-in model, for the shape checks
        logical :: opened = .false.       ! made by hpct_insitu_open (finish_session)
    end type

    ! ---- Versioned config structs: the C layouts, initialised as the C INITIALIZER macros.
    ! const char * fields are type(c_ptr); c_null_ptr stands for the C initializer's string
    ! (the wrappers take the strings as character(*) arguments). Function pointers are
    ! type(c_funptr) (c_funloc of a BIND(C) subroutine). unsigned and uint64_t fields are
    ! c_int and c_int64_t (values above huge() wrap to negative numbers).
    type, bind(C), public :: hpct_config_t
        integer(c_int) :: version = HPCT_CONFIG_VERSION
        integer(c_int) :: backend = HPCT_BACKEND_CPU
        integer(c_int) :: device = -1                 ! GPU ordinal; -1 picks the local rank
        integer(c_int) :: log_level = HPCT_LOG_NONE
        integer(c_int64_t) :: seed = 42
        integer(c_int) :: num_threads = 0             ! 0 leaves the BLAS default
        real(c_double) :: collective_timeout_s = 300.0_c_double
        integer(c_size_t) :: fusion_bytes = 16 * 1048576
        integer(c_long) :: consistency_interval = 0
        integer(c_int) :: grad_transport = HPCT_TRANSPORT_FP32
    end type

    type, bind(C), public :: hpct_optim_config_t
        integer(c_int) :: version = HPCT_OPTIM_CONFIG_VERSION
        integer(c_int) :: kind = HPCT_OPT_SGD
        real(c_float) :: lr = 0.01_c_float
        real(c_float) :: momentum = 0.0_c_float
        integer(c_int) :: nesterov = 0
        real(c_float) :: weight_decay = 0.0_c_float
        real(c_float) :: beta1 = 0.9_c_float, beta2 = 0.999_c_float, eps = 1e-8_c_float
        real(c_float) :: clip_norm = 0.0_c_float
        integer(c_int) :: schedule = HPCT_SCHED_CONSTANT
        integer(c_long) :: warmup_steps = 0
        integer(c_long) :: step_size = 1
        real(c_float) :: gamma = 0.1_c_float
        integer(c_long) :: total_steps = 1
        real(c_float) :: min_lr = 0.0_c_float
    end type

    type, bind(C), public :: hpct_data_config_t
        integer(c_int) :: version = HPCT_DATA_CONFIG_VERSION
        type(c_ptr) :: inputs_name = c_null_ptr      ! c_null_ptr: "inputs"
        type(c_ptr) :: targets_name = c_null_ptr     ! c_null_ptr: "targets"
        integer(c_int) :: checksum = HPCT_CHECKSUM_FULL
        integer(c_int) :: nonfinite = HPCT_NONFINITE_ERROR
        integer(c_int) :: shuffle = 1
        integer(c_int64_t) :: seed = 42
        integer(c_int) :: prefetch_depth = 2
        integer(c_size_t) :: memory_budget_bytes = 1073741824_c_size_t
        integer(c_int) :: store = HPCT_STORE_AUTO    ! HPCT_STORE_AUTO, _OFF, _JOB or _NODE
    end type

    type, bind(C), public :: hpct_data_stats_t
        integer(c_int) :: version = HPCT_DATA_STATS_VERSION
        integer(c_int) :: store = HPCT_STORE_OFF
        integer(c_int64_t) :: bytes_read = 0, epoch_bytes_read = 0, hashed_bytes = 0
        integer(c_int64_t) :: resident_bytes = 0, node_resident_bytes = 0, exchange_bytes = 0
    end type

    type, bind(C), public :: hpct_shard_config_t
        integer(c_int) :: version = HPCT_SHARD_CONFIG_VERSION
        integer(c_long) :: chunk_rows = 0             ! samples per chunk; 0: about 1 MiB per chunk
        integer(c_int) :: deflate = 0                 ! 0: no filters; 1-9: shuffle + deflate
    end type

    type, bind(C), public :: hpct_topology_t
        integer(c_int) :: version = HPCT_TOPOLOGY_VERSION
        integer(c_int) :: rank = 0, size = 0
        integer(c_int) :: local_rank = 0, local_size = 0
        integer(c_int) :: node_id = 0, num_nodes = 0
        integer(c_int) :: node_comm_size = 0
        integer(c_int) :: cross_comm_size = 0
        integer(c_int) :: hierarchical = 0
        integer(c_int) :: source = HPCT_TOPO_SINGLE
        character(kind=c_char) :: hostname(256) = c_null_char ! hpct_f_string(topo%hostname)
        character(kind=c_char) :: job_id(128) = c_null_char
    end type

    !> One environment setting (hpct_tunable_get); hpct_f_string(info%name) etc.
    type, bind(C), public :: hpct_tunable_info_t
        integer(c_int) :: version = HPCT_TUNABLE_INFO_VERSION
        type(c_ptr) :: name = c_null_ptr, value = c_null_ptr, default_value = c_null_ptr
        type(c_ptr) :: accepted = c_null_ptr, help = c_null_ptr
        integer(c_int) :: ranks_agree = 0
    end type

    !> hpct_doctor's settings; the wrapper's settings= argument sets settings.
    type, bind(C), public :: hpct_doctor_config_t
        integer(c_int) :: version = HPCT_DOCTOR_CONFIG_VERSION
        type(c_ptr) :: settings = c_null_ptr
        integer(c_size_t) :: fabric_bytes = 1048576_c_size_t
        integer(c_int) :: fabric_reps = 5
        real(c_double) :: fabric_threshold = 0.5_c_double
        integer(c_int) :: fabric = 1
        integer(c_int) :: caller_verdict = HPCT_CHECK_OK
    end type

    type, bind(C), public :: hpct_ckpt_config_t
        integer(c_int) :: version = HPCT_CKPT_CONFIG_VERSION
        type(c_ptr) :: directory = c_null_ptr        ! the wrappers' directory= argument
        integer(c_int) :: keep_last = 3
        integer(c_int) :: keep_every = 0
        integer(c_long) :: every_steps = 0
        real(c_double) :: every_seconds = 0.0_c_double
        integer(c_int) :: async = 0
        integer(c_int) :: writer_rank = 0
        integer(c_int) :: allow_config_change = 0
        integer(c_int64_t) :: config_hash = 0
        real(c_double) :: walltime_margin = 120.0_c_double
        integer(c_int) :: defer_copy = 0
    end type

    type, bind(C), public :: hpct_ckpt_meta_t
        integer(c_int) :: version = HPCT_CKPT_META_VERSION
        integer(c_long) :: step = 0
        integer(c_long) :: epoch = 0
        integer(c_long) :: cursor_epoch = 0
        integer(c_long) :: cursor_step = 0
        integer(c_int) :: world_size = 1
        integer(c_long) :: global_batch = 0
        type(c_ptr) :: model = c_null_ptr            ! load: points into the handle
        integer(c_int64_t) :: config_hash = 0
        real(c_double) :: saved_at = 0.0_c_double
        integer(c_int) :: rejected = 0
        type(c_ptr) :: path = c_null_ptr             ! load: points into the handle
    end type

    type, bind(C), public :: hpct_progress_t
        integer(c_long) :: epoch = 0, step = 0
        integer(c_long) :: steps_per_epoch = 0, total_steps = 0
        real(c_double) :: loss = 0, lr = 0, samples_per_s = 0
        real(c_double) :: data_wait_share = 0, comm_share = 0, eta_s = 0
        real(c_double) :: data_epoch_bytes_read = 0, data_resident_bytes = 0
        real(c_double) :: data_node_resident_bytes = 0, data_exchange_bytes = 0
    end type

    type, bind(C), public :: hpct_train_config_t
        integer(c_int) :: version = HPCT_TRAIN_CONFIG_VERSION
        integer(c_int) :: global_batch = 256
        integer(c_int) :: micro_batches = 1
        integer(c_long) :: epochs = 1
        integer(c_long) :: max_steps = 0
        integer(c_long) :: log_interval = 50
        integer(c_int) :: resume = 1
        type(c_funptr) :: progress = c_null_funptr   ! subroutine (p, arg) bind(C)
        type(c_ptr) :: progress_arg = c_null_ptr
        type(c_ptr) :: metrics_path = c_null_ptr     ! version 2: const char *, c_null_ptr = off
        type(c_ptr) :: eval_data = c_null_ptr        ! hpct_dataset_t
        integer(c_long) :: eval_interval = 0
        real(c_double) :: straggler_threshold = 0.2d0
        type(c_funptr) :: evaluated = c_null_funptr  ! subroutine (step, loss, acc, n, arg) bind(C)
        type(c_ptr) :: timeline_path = c_null_ptr    ! const char *, c_null_ptr = off
        integer(c_long) :: timeline_steps = 100
        integer(c_long) :: timeline_first = 0
        real(c_double) :: divergence_factor = 10d0   ! version 3: the divergence guard; 0 = off
        integer(c_long) :: divergence_reports = 3
    end type

    type, bind(C), public :: hpct_train_result_t
        integer(c_long) :: steps = 0, resumed_from = 0, checkpoints = 0
        real(c_double) :: final_loss = 0
        real(c_double) :: wall_s = 0, data_wait_s = 0, comm_wait_s = 0
        real(c_double) :: ckpt_wait_s = 0
        integer(c_long) :: skipped_batches = 0
        integer(c_int) :: stop_signal = 0
        integer(c_int) :: rejected_checkpoints = 0
    end type

    type, bind(C), public :: hpct_insitu_config_t
        integer(c_int) :: version = HPCT_INSITU_CONFIG_VERSION
        integer(c_int) :: resume = 1
        integer(c_int) :: catch_signals = 1
        integer(c_long) :: log_interval = 0
        type(c_funptr) :: progress = c_null_funptr   ! subroutine (p, arg) bind(C)
        type(c_ptr) :: progress_arg = c_null_ptr
        type(c_ptr) :: metrics_path = c_null_ptr     ! version 2: const char *, c_null_ptr = off
        real(c_double) :: straggler_threshold = 0.2d0
        type(c_ptr) :: timeline_path = c_null_ptr    ! const char *, c_null_ptr = off
        integer(c_long) :: timeline_steps = 100
        integer(c_long) :: timeline_first = 0
        type(c_ptr) :: eval_data = c_null_ptr        ! version 3: hpct_dataset_t
        integer(c_long) :: eval_interval = 0
        type(c_funptr) :: evaluated = c_null_funptr  ! subroutine (step, loss, acc, n, arg) bind(C)
        real(c_double) :: divergence_factor = 0d0    ! version 4: the divergence guard, 0 = off
        integer(c_long) :: divergence_reports = 3
    end type
    !> Every key of hpctrain.conf(5) (fill with hpct_settings_defaults; strings are
    !> NUL-terminated character arrays: hpct_settings_format gives a value as a string).
    type, bind(C), public :: hpct_settings_t
        integer(c_int) :: version = 0
        character(kind=c_char) :: train_manifest(HPCT_SETTINGS_PATH_MAX) = c_null_char
        character(kind=c_char) :: eval_manifest(HPCT_SETTINGS_PATH_MAX) = c_null_char
        integer(c_int) :: hidden(HPCT_SETTINGS_MAX_HIDDEN) = 0
        integer(c_int) :: num_hidden = 0
        character(kind=c_char) :: activation(16) = c_null_char, loss(16) = c_null_char
        integer(c_long) :: outputs = 0
        character(kind=c_char) :: optimizer(16) = c_null_char
        real(c_double) :: lr = 0, momentum = 0, weight_decay = 0, beta1 = 0, beta2 = 0, eps = 0, &
            clip_norm = 0, gamma = 0, min_lr = 0
        integer(c_int) :: nesterov = 0
        character(kind=c_char) :: schedule(16) = c_null_char
        integer(c_long) :: warmup_steps = 0, step_size = 0, total_steps = 0
        integer(c_long) :: global_batch = 0, micro_batches = 0, epochs = 0, seed = 0, threads = 0, &
            log_interval = 0
        real(c_double) :: collective_timeout = 0
        character(kind=c_char) :: checkpoint_dir(HPCT_SETTINGS_PATH_MAX) = c_null_char
        integer(c_long) :: checkpoint_every_steps = 0, checkpoint_keep = 0, checkpoint_keep_every = 0
        real(c_double) :: checkpoint_every_seconds = 0, walltime_margin = 0
        integer(c_int) :: checkpoint_async = 0
        character(kind=c_char) :: resume(16) = c_null_char, backend(16) = c_null_char
        integer(c_long) :: consistency_interval = 0
        character(kind=c_char) :: metrics_file(HPCT_SETTINGS_PATH_MAX) = c_null_char
        integer(c_long) :: eval_every_steps = 0, eval_every_epochs = 0
        real(c_double) :: straggler_threshold = 0
        character(kind=c_char) :: timeline_file(HPCT_SETTINGS_PATH_MAX) = c_null_char
        integer(c_long) :: timeline_steps = 0, timeline_first = 0
        real(c_double) :: divergence_factor = 0
        integer(c_long) :: divergence_reports = 0
        character(kind=c_char) :: data_store(8) = c_null_char
        integer(c_long) :: data_memory_mib = 0
        integer(c_long) :: inputs = 0
        ! version 2: the model's layers (hpct_model_add_layers' syntax; "": hidden's dense layers)
        character(kind=c_char) :: layers(HPCT_SETTINGS_LAYERS_MAX) = c_null_char
    end type

    ! ---- BIND(C) interfaces: every public C function --------------------------------------
    public :: c_hpct_get_version, c_hpct_strerror, c_hpct_ctx_create, c_hpct_ctx_destroy, &
        c_hpct_last_error, c_hpct_last_error_shared, c_hpct_rng_get_state, c_hpct_rng_set_state, c_hpct_params_create, &
        c_hpct_params_destroy, c_hpct_params_register, c_hpct_params_size, c_hpct_params_get, &
        c_hpct_params_zero_grads, c_hpct_params_scale_grads, c_hpct_params_grad_norm, &
        c_hpct_model_create, c_hpct_model_destroy, c_hpct_model_add_dense, &
        c_hpct_model_add_reshape, c_hpct_model_add_conv, c_hpct_model_add_pool, &
        c_hpct_model_add_upsample, c_hpct_model_add_layers, c_hpct_model_set_loss, &
        c_hpct_model_build, c_hpct_model_params, c_hpct_model_shape, c_hpct_model_describe, &
        c_hpct_model_forward, c_hpct_model_loss_grad, c_hpct_model_evaluate, &
        c_hpct_optimizer_create, c_hpct_optimizer_destroy, c_hpct_optimizer_step, &
        c_hpct_optimizer_lr_at, c_hpct_optimizer_get_step, c_hpct_optimizer_set_step, &
        c_hpct_optimizer_state, c_hpct_optimizer_state_slots, c_hpct_dataset_open, &
        c_hpct_dataset_close, c_hpct_dataset_info, c_hpct_dataset_partition, &
        c_hpct_dataset_steps_per_epoch, c_hpct_dataset_next, c_hpct_dataset_next_into, &
        c_hpct_dataset_get_cursor, c_hpct_dataset_set_cursor, c_hpct_dataset_skipped, &
        c_hpct_dataset_stats, c_hpct_data_permutation, c_hpct_init, c_hpct_init_comm, c_hpct_finalize, c_hpct_topology, &
        c_hpct_abort_job, c_hpct_allreduce_mean, c_hpct_allreduce_mean_device, &
        c_hpct_alloc_grads, c_hpct_free_grads, c_hpct_params_average_grads, &
        c_hpct_params_broadcast, c_hpct_params_check_replicas, c_hpct_params_check_replicas_at, &
        c_hpct_params_hash, c_hpct_model_set_grad_averaging, c_hpct_batch_split, c_hpct_comm_stats, &
        c_hpct_doctor, &
        c_hpct_ckpt_open, c_hpct_ckpt_close, c_hpct_ckpt_add_array, c_hpct_ckpt_add_scalar, &
        c_hpct_ckpt_due, c_hpct_ckpt_save, c_hpct_ckpt_before_update, c_hpct_ckpt_wait, &
        c_hpct_ckpt_load_latest, c_hpct_ckpt_last_path, c_hpct_ckpt_rejected, &
        c_hpct_ckpt_file_versions, c_hpct_ckpt_file_meta, c_hpct_ckpt_file_num_datasets, &
        c_hpct_ckpt_file_dataset, c_hpct_ckpt_file_find, c_hpct_ckpt_file_verify, &
        c_hpct_ckpt_file_read, c_hpct_crc32c, c_hpct_signals_install, c_hpct_signals_uninstall, &
        c_hpct_walltime_remaining, c_hpct_train, c_hpct_evaluate, c_hpct_output_losses
    public :: c_hpct_insitu_create, c_hpct_insitu_start, c_hpct_insitu_step, &
        c_hpct_insitu_step_grads, c_hpct_insitu_progress, c_hpct_insitu_finish, &
        c_hpct_insitu_destroy, c_hpct_insitu_add_block, c_hpct_insitu_open, c_hpct_insitu_close, &
        c_hpct_insitu_predict, c_hpct_insitu_last_error, c_hpct_settings_defaults, &
        c_hpct_settings_set, c_hpct_settings_read_file, c_hpct_settings_read_env, &
        c_hpct_settings_check, c_hpct_settings_key, c_hpct_settings_format, c_hpct_settings_hash
    public :: c_hpct_get_api_version, c_hpct_shard_create, c_hpct_shard_write, c_hpct_shard_close, &
        c_hpct_manifest_create, c_hpct_manifest_add_shard, c_hpct_manifest_write, &
        c_hpct_manifest_destroy, c_hpct_manifest_check_path, c_hpct_ckpt_file_open, &
        c_hpct_ckpt_file_close, c_hpct_ckpt_list_open, c_hpct_ckpt_list_size, c_hpct_ckpt_list_path, &
        c_hpct_ckpt_list_close, c_hpct_signals_pending, c_hpct_signals_clear
    public :: c_hpct_tunables_count, c_hpct_tunable_get, c_hpct_tunables_check

    interface
        ! -- version, status, context
        subroutine c_hpct_get_version(major, minor, patch) bind(C, name="hpct_get_version")
            import :: c_int
            integer(c_int), intent(out) :: major, minor, patch
        end subroutine
        function c_hpct_get_api_version() bind(C, name="hpct_get_api_version") result(v)
            import :: c_int
            integer(c_int) :: v ! unsigned in C; 0x00MMmm00 fits
        end function
        function c_hpct_tunables_count() bind(C, name="hpct_tunables_count") result(n)
            import :: c_int
            integer(c_int) :: n
        end function
        function c_hpct_tunable_get(i, info) bind(C, name="hpct_tunable_get") result(s)
            import :: c_int, hpct_tunable_info_t
            integer(c_int), value :: i
            type(hpct_tunable_info_t), intent(inout) :: info
            integer(c_int) :: s
        end function
        function c_hpct_tunables_check(detail, len) bind(C, name="hpct_tunables_check") result(s)
            import :: c_int, c_char, c_size_t
            character(kind=c_char), intent(out) :: detail(*)
            integer(c_size_t), value :: len
            integer(c_int) :: s
        end function
        function c_hpct_strerror(status) bind(C, name="hpct_strerror") result(s)
            import :: c_int, c_ptr
            integer(c_int), value :: status
            type(c_ptr) :: s
        end function
        function c_hpct_ctx_create(cfg, ctx) bind(C, name="hpct_ctx_create") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: cfg
            type(c_ptr), intent(out) :: ctx
            integer(c_int) :: s
        end function
        subroutine c_hpct_ctx_destroy(ctx) bind(C, name="hpct_ctx_destroy")
            import :: c_ptr
            type(c_ptr), value :: ctx
        end subroutine
        function c_hpct_last_error(ctx) bind(C, name="hpct_last_error") result(s)
            import :: c_ptr
            type(c_ptr), value :: ctx
            type(c_ptr) :: s
        end function
        function c_hpct_last_error_shared(ctx) bind(C, name="hpct_last_error_shared") result(s)
            import :: c_ptr, c_int
            type(c_ptr), value :: ctx
            integer(c_int) :: s
        end function
        function c_hpct_rng_get_state(ctx, state) bind(C, name="hpct_rng_get_state") result(s)
            import :: c_int, c_ptr, c_int64_t
            type(c_ptr), value :: ctx
            integer(c_int64_t), intent(out) :: state(*)
            integer(c_int) :: s
        end function
        function c_hpct_rng_set_state(ctx, state) bind(C, name="hpct_rng_set_state") result(s)
            import :: c_int, c_ptr, c_int64_t
            type(c_ptr), value :: ctx
            integer(c_int64_t), intent(in) :: state(*)
            integer(c_int) :: s
        end function
        ! -- parameter sets
        function c_hpct_params_create(ctx, params) bind(C, name="hpct_params_create") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx
            type(c_ptr), intent(out) :: params
            integer(c_int) :: s
        end function
        subroutine c_hpct_params_destroy(params) bind(C, name="hpct_params_destroy")
            import :: c_ptr
            type(c_ptr), value :: params
        end subroutine
        function c_hpct_params_register(params, name, param, grad, count) &
            bind(C, name="hpct_params_register") result(s)
            import :: c_int, c_ptr, c_char, c_size_t
            type(c_ptr), value :: params, param, grad
            character(kind=c_char), intent(in) :: name(*)
            integer(c_size_t), value :: count
            integer(c_int) :: s
        end function
        function c_hpct_params_size(params, num_buffers, total_count) &
            bind(C, name="hpct_params_size") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: params, num_buffers, total_count
            integer(c_int) :: s
        end function
        function c_hpct_params_get(params, i, name, param, grad, count) &
            bind(C, name="hpct_params_get") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: params
            integer(c_int), value :: i
            type(c_ptr), value :: name, param, grad, count
            integer(c_int) :: s
        end function
        function c_hpct_params_zero_grads(params) bind(C, name="hpct_params_zero_grads") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: params
            integer(c_int) :: s
        end function
        function c_hpct_params_scale_grads(params, factor) &
            bind(C, name="hpct_params_scale_grads") result(s)
            import :: c_int, c_ptr, c_float
            type(c_ptr), value :: params
            real(c_float), value :: factor
            integer(c_int) :: s
        end function
        function c_hpct_params_grad_norm(params, norm) bind(C, name="hpct_params_grad_norm") result(s)
            import :: c_int, c_ptr, c_double
            type(c_ptr), value :: params
            real(c_double), intent(out) :: norm
            integer(c_int) :: s
        end function
        ! -- built-in models
        function c_hpct_model_create(ctx, input_features, model) &
            bind(C, name="hpct_model_create") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx
            integer(c_int), value :: input_features
            type(c_ptr), intent(out) :: model
            integer(c_int) :: s
        end function
        subroutine c_hpct_model_destroy(model) bind(C, name="hpct_model_destroy")
            import :: c_ptr
            type(c_ptr), value :: model
        end subroutine
        function c_hpct_model_add_dense(model, out_features, act, init) &
            bind(C, name="hpct_model_add_dense") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), value :: out_features, act, init
            integer(c_int) :: s
        end function
        function c_hpct_model_add_reshape(model, channels, dims, spatial) &
            bind(C, name="hpct_model_add_reshape") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), value :: channels, dims
            type(c_ptr), value :: spatial ! const int [dims]; NULL for dims 0
            integer(c_int) :: s
        end function
        function c_hpct_model_add_conv(model, out_channels, kernel, stride, padding, act, init) &
            bind(C, name="hpct_model_add_conv") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), value :: out_channels, kernel, stride, padding, act, init
            integer(c_int) :: s
        end function
        function c_hpct_model_add_pool(model, kind, window, stride, act) &
            bind(C, name="hpct_model_add_pool") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), value :: kind, window, stride, act
            integer(c_int) :: s
        end function
        function c_hpct_model_add_upsample(model, factor, act) &
            bind(C, name="hpct_model_add_upsample") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), value :: factor, act
            integer(c_int) :: s
        end function
        function c_hpct_model_add_layers(model, spec, act) bind(C, name="hpct_model_add_layers") &
            result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: model
            character(kind=c_char), intent(in) :: spec(*)
            integer(c_int), value :: act
            integer(c_int) :: s
        end function
        function c_hpct_model_set_loss(model, loss) bind(C, name="hpct_model_set_loss") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), value :: loss
            integer(c_int) :: s
        end function
        function c_hpct_model_build(model, max_batch) bind(C, name="hpct_model_build") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), value :: max_batch
            integer(c_int) :: s
        end function
        function c_hpct_model_params(model, params) bind(C, name="hpct_model_params") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            type(c_ptr), intent(out) :: params
            integer(c_int) :: s
        end function
        function c_hpct_model_shape(model, inputs, outputs) bind(C, name="hpct_model_shape") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model, inputs, outputs
            integer(c_int) :: s
        end function
        function c_hpct_model_describe(model, buf, len) bind(C, name="hpct_model_describe") result(s)
            import :: c_int, c_ptr, c_char, c_size_t
            type(c_ptr), value :: model
            character(kind=c_char), intent(out) :: buf(*)
            integer(c_size_t), value :: len
            integer(c_int) :: s
        end function
        function c_hpct_model_forward(model, x, batch, out) bind(C, name="hpct_model_forward") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model, x, out
            integer(c_int), value :: batch
            integer(c_int) :: s
        end function
        function c_hpct_model_loss_grad(model, x, targets, batch, accumulate, loss) &
            bind(C, name="hpct_model_loss_grad") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model, x, targets
            integer(c_int), value :: batch, accumulate
            type(c_ptr), value :: loss
            integer(c_int) :: s
        end function
        function c_hpct_model_evaluate(model, x, targets, n, loss, accuracy) &
            bind(C, name="hpct_model_evaluate") result(s)
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: model, x, targets
            integer(c_size_t), value :: n
            type(c_ptr), value :: loss, accuracy
            integer(c_int) :: s
        end function
        ! -- optimizers
        function c_hpct_optimizer_create(params, cfg, opt) bind(C, name="hpct_optimizer_create") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: params, cfg
            type(c_ptr), intent(out) :: opt
            integer(c_int) :: s
        end function
        subroutine c_hpct_optimizer_destroy(opt) bind(C, name="hpct_optimizer_destroy")
            import :: c_ptr
            type(c_ptr), value :: opt
        end subroutine
        function c_hpct_optimizer_step(opt) bind(C, name="hpct_optimizer_step") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: opt
            integer(c_int) :: s
        end function
        function c_hpct_optimizer_lr_at(opt, step, lr) bind(C, name="hpct_optimizer_lr_at") result(s)
            import :: c_int, c_ptr, c_long, c_float
            type(c_ptr), value :: opt
            integer(c_long), value :: step
            real(c_float), intent(out) :: lr
            integer(c_int) :: s
        end function
        function c_hpct_optimizer_get_step(opt, step) bind(C, name="hpct_optimizer_get_step") result(s)
            import :: c_int, c_ptr, c_long
            type(c_ptr), value :: opt
            integer(c_long), intent(out) :: step
            integer(c_int) :: s
        end function
        function c_hpct_optimizer_set_step(opt, step) bind(C, name="hpct_optimizer_set_step") result(s)
            import :: c_int, c_ptr, c_long
            type(c_ptr), value :: opt
            integer(c_long), value :: step
            integer(c_int) :: s
        end function
        function c_hpct_optimizer_state(opt, i, k, state, count) &
            bind(C, name="hpct_optimizer_state") result(s)
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: opt
            integer(c_int), value :: i, k
            type(c_ptr), intent(out) :: state
            integer(c_size_t), intent(out) :: count
            integer(c_int) :: s
        end function
        function c_hpct_optimizer_state_slots(opt, slots) &
            bind(C, name="hpct_optimizer_state_slots") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: opt
            integer(c_int), intent(out) :: slots
            integer(c_int) :: s
        end function
        ! -- sharded HDF5 datasets
        function c_hpct_dataset_open(ctx, manifest_path, cfg, ds) bind(C, name="hpct_dataset_open") result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: ctx
            character(kind=c_char), intent(in) :: manifest_path(*)
            type(c_ptr), value :: cfg
            type(c_ptr), intent(out) :: ds
            integer(c_int) :: s
        end function
        subroutine c_hpct_dataset_close(ds) bind(C, name="hpct_dataset_close")
            import :: c_ptr
            type(c_ptr), value :: ds
        end subroutine
        function c_hpct_dataset_info(ds, num_samples, input_features, target_width, target_dtype) &
            bind(C, name="hpct_dataset_info") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ds, num_samples, input_features, target_width, target_dtype
            integer(c_int) :: s
        end function
        function c_hpct_dataset_partition(ds, rank, world_size, global_batch) &
            bind(C, name="hpct_dataset_partition") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ds
            integer(c_int), value :: rank, world_size, global_batch
            integer(c_int) :: s
        end function
        function c_hpct_dataset_steps_per_epoch(ds, steps) &
            bind(C, name="hpct_dataset_steps_per_epoch") result(s)
            import :: c_int, c_ptr, c_long
            type(c_ptr), value :: ds
            integer(c_long), intent(out) :: steps
            integer(c_int) :: s
        end function
        function c_hpct_dataset_next(ds, inputs, targets) bind(C, name="hpct_dataset_next") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ds
            type(c_ptr), intent(out) :: inputs, targets
            integer(c_int) :: s
        end function
        function c_hpct_dataset_next_into(ds, inputs, targets) bind(C, name="hpct_dataset_next_into") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ds, inputs, targets
            integer(c_int) :: s
        end function
        function c_hpct_dataset_get_cursor(ds, epoch, step) bind(C, name="hpct_dataset_get_cursor") result(s)
            import :: c_int, c_ptr, c_long
            type(c_ptr), value :: ds
            integer(c_long), intent(out) :: epoch, step
            integer(c_int) :: s
        end function
        function c_hpct_dataset_set_cursor(ds, epoch, step) bind(C, name="hpct_dataset_set_cursor") result(s)
            import :: c_int, c_ptr, c_long
            type(c_ptr), value :: ds
            integer(c_long), value :: epoch, step
            integer(c_int) :: s
        end function
        function c_hpct_dataset_skipped(ds, count) bind(C, name="hpct_dataset_skipped") result(s)
            import :: c_int, c_ptr, c_long
            type(c_ptr), value :: ds
            integer(c_long), intent(out) :: count
            integer(c_int) :: s
        end function
        function c_hpct_dataset_stats(ds, stats) bind(C, name="hpct_dataset_stats") result(s)
            import :: c_int, c_ptr, hpct_data_stats_t
            type(c_ptr), value :: ds
            type(hpct_data_stats_t), intent(inout) :: stats
            integer(c_int) :: s
        end function
        function c_hpct_data_permutation(seed, epoch, n, perm) bind(C, name="hpct_data_permutation") result(s)
            import :: c_int, c_ptr, c_int64_t, c_long, c_size_t
            integer(c_int64_t), value :: seed
            integer(c_long), value :: epoch
            integer(c_size_t), value :: n
            type(c_ptr), value :: perm
            integer(c_int) :: s
        end function
        ! -- writing shards and manifests
        function c_hpct_shard_create(ctx, path, cfg, shard) bind(C, name="hpct_shard_create") result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: ctx
            character(kind=c_char), intent(in) :: path(*)
            type(c_ptr), value :: cfg
            type(c_ptr), intent(out) :: shard
            integer(c_int) :: s
        end function
        function c_hpct_shard_write(shard, name, dtype, rank, dims, data) &
            bind(C, name="hpct_shard_write") result(s)
            import :: c_int, c_ptr, c_char, c_int64_t
            type(c_ptr), value :: shard
            character(kind=c_char), intent(in) :: name(*)
            integer(c_int), value :: dtype, rank
            integer(c_int64_t), intent(in) :: dims(*) ! uint64_t [rank], C order: dims(1) = N
            type(c_ptr), value :: data
            integer(c_int) :: s
        end function
        function c_hpct_shard_close(shard) bind(C, name="hpct_shard_close") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: shard
            integer(c_int) :: s
        end function
        function c_hpct_manifest_create(ctx, path, inputs_name, targets_name, manifest) &
            bind(C, name="hpct_manifest_create") result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: ctx
            character(kind=c_char), intent(in) :: path(*)
            type(c_ptr), value :: inputs_name, targets_name ! NUL-terminated or c_null_ptr
            type(c_ptr), intent(out) :: manifest
            integer(c_int) :: s
        end function
        function c_hpct_manifest_add_shard(manifest, shard_path) &
            bind(C, name="hpct_manifest_add_shard") result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: manifest
            character(kind=c_char), intent(in) :: shard_path(*)
            integer(c_int) :: s
        end function
        function c_hpct_manifest_write(manifest) bind(C, name="hpct_manifest_write") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: manifest
            integer(c_int) :: s
        end function
        subroutine c_hpct_manifest_destroy(manifest) bind(C, name="hpct_manifest_destroy")
            import :: c_ptr
            type(c_ptr), value :: manifest
        end subroutine
        function c_hpct_manifest_check_path(path) bind(C, name="hpct_manifest_check_path") result(s)
            import :: c_int, c_char
            character(kind=c_char), intent(in) :: path(*)
            integer(c_int) :: s
        end function
        ! -- distributed runtime
        function c_hpct_init(cfg, ctx) bind(C, name="hpct_init") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: cfg
            type(c_ptr), intent(out) :: ctx
            integer(c_int) :: s
        end function
        function c_hpct_init_comm(cfg, fortran_comm, ctx) bind(C, name="hpct_init_comm") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: cfg
            integer(c_int), value :: fortran_comm
            type(c_ptr), intent(out) :: ctx
            integer(c_int) :: s
        end function
        function c_hpct_finalize(ctx) bind(C, name="hpct_finalize") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx
            integer(c_int) :: s
        end function
        function c_hpct_topology(ctx, topo) bind(C, name="hpct_topology") result(s)
            import :: c_int, c_ptr, hpct_topology_t
            type(c_ptr), value :: ctx
            type(hpct_topology_t), intent(inout) :: topo
            integer(c_int) :: s
        end function
        function c_hpct_abort_job(ctx, exit_code) bind(C, name="hpct_abort_job") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx
            integer(c_int), value :: exit_code
            integer(c_int) :: s
        end function
        function c_hpct_allreduce_mean(ctx, buf, n) bind(C, name="hpct_allreduce_mean") result(s)
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: ctx, buf
            integer(c_size_t), value :: n
            integer(c_int) :: s
        end function
        function c_hpct_allreduce_mean_device(ctx, buf, n) &
            bind(C, name="hpct_allreduce_mean_device") result(s)
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: ctx, buf
            integer(c_size_t), value :: n
            integer(c_int) :: s
        end function
        function c_hpct_alloc_grads(ctx, count, grads) bind(C, name="hpct_alloc_grads") result(s)
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: ctx
            integer(c_size_t), value :: count
            type(c_ptr) :: grads
            integer(c_int) :: s
        end function
        function c_hpct_free_grads(ctx, grads) bind(C, name="hpct_free_grads") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx, grads
            integer(c_int) :: s
        end function
        function c_hpct_params_average_grads(params) bind(C, name="hpct_params_average_grads") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: params
            integer(c_int) :: s
        end function
        function c_hpct_params_broadcast(params, root) bind(C, name="hpct_params_broadcast") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: params
            integer(c_int), value :: root
            integer(c_int) :: s
        end function
        function c_hpct_params_check_replicas(params) bind(C, name="hpct_params_check_replicas") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: params
            integer(c_int) :: s
        end function
        function c_hpct_params_check_replicas_at(params, step) &
            bind(C, name="hpct_params_check_replicas_at") result(s)
            import :: c_int, c_ptr, c_long
            type(c_ptr), value :: params
            integer(c_long), value :: step
            integer(c_int) :: s
        end function
        function c_hpct_params_hash(params, hash) bind(C, name="hpct_params_hash") result(s)
            import :: c_int, c_ptr, c_int64_t
            type(c_ptr), value :: params
            integer(c_int64_t), intent(out) :: hash
            integer(c_int) :: s
        end function
        function c_hpct_model_set_grad_averaging(model, enable) &
            bind(C, name="hpct_model_set_grad_averaging") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), value :: enable
            integer(c_int) :: s
        end function
        function c_hpct_batch_split(ctx, global_batch, local_batch, offset) &
            bind(C, name="hpct_batch_split") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx
            integer(c_int), value :: global_batch
            type(c_ptr), value :: local_batch, offset
            integer(c_int) :: s
        end function
        function c_hpct_comm_stats(ctx, wait_seconds, operations) bind(C, name="hpct_comm_stats") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx, wait_seconds, operations
            integer(c_int) :: s
        end function
        function c_hpct_doctor(ctx, cfg, report, len, worst) bind(C, name="hpct_doctor") result(s)
            import :: c_int, c_ptr, c_char, c_size_t
            type(c_ptr), value :: ctx, cfg
            character(kind=c_char), intent(out) :: report(*)
            integer(c_size_t), value :: len
            integer(c_int), intent(out) :: worst
            integer(c_int) :: s
        end function
        function c_hpct_output_losses(ctx, metrics_records, timeline_rewrites, detail) &
            bind(C, name="hpct_output_losses") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx, metrics_records, timeline_rewrites, detail
            integer(c_int) :: s
        end function
        ! -- checkpoints and preemption
        function c_hpct_ckpt_open(ctx, cfg, ck) bind(C, name="hpct_ckpt_open") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx, cfg
            type(c_ptr), intent(out) :: ck
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_close(ck) bind(C, name="hpct_ckpt_close") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ck
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_add_array(ck, name, dtype, data, count) &
            bind(C, name="hpct_ckpt_add_array") result(s)
            import :: c_int, c_ptr, c_char, c_size_t
            type(c_ptr), value :: ck
            character(kind=c_char), intent(in) :: name(*)
            integer(c_int), value :: dtype
            type(c_ptr), value :: data
            integer(c_size_t), value :: count
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_add_scalar(ck, name, dtype, value) &
            bind(C, name="hpct_ckpt_add_scalar") result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: ck
            character(kind=c_char), intent(in) :: name(*)
            integer(c_int), value :: dtype
            type(c_ptr), value :: value
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_due(ck, step, due) bind(C, name="hpct_ckpt_due") result(s)
            import :: c_int, c_ptr, c_long
            type(c_ptr), value :: ck
            integer(c_long), value :: step
            integer(c_int), intent(out) :: due
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_save(ck, params, opt, meta) bind(C, name="hpct_ckpt_save") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ck, params, opt, meta
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_before_update(ck) bind(C, name="hpct_ckpt_before_update") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ck
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_wait(ck) bind(C, name="hpct_ckpt_wait") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ck
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_load_latest(ck, params, opt, meta) bind(C, name="hpct_ckpt_load_latest") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ck, params, opt, meta
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_last_path(ck, path) bind(C, name="hpct_ckpt_last_path") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ck
            type(c_ptr), intent(out) :: path
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_rejected(ck, detail) bind(C, name="hpct_ckpt_rejected") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ck
            type(c_ptr), intent(out) :: detail
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_file_open(ctx, path, file) bind(C, name="hpct_ckpt_file_open") result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: ctx
            character(kind=c_char), intent(in) :: path(*)
            type(c_ptr), intent(out) :: file
            integer(c_int) :: s
        end function
        subroutine c_hpct_ckpt_file_close(file) bind(C, name="hpct_ckpt_file_close")
            import :: c_ptr
            type(c_ptr), value :: file
        end subroutine
        function c_hpct_ckpt_file_versions(file, schema, library) &
            bind(C, name="hpct_ckpt_file_versions") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: file
            integer(c_int), intent(out) :: schema
            type(c_ptr), intent(out) :: library
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_file_meta(file, meta) bind(C, name="hpct_ckpt_file_meta") result(s)
            import :: c_int, c_ptr, hpct_ckpt_meta_t
            type(c_ptr), value :: file
            type(hpct_ckpt_meta_t), intent(inout) :: meta
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_file_num_datasets(file, n) bind(C, name="hpct_ckpt_file_num_datasets") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: file
            integer(c_int), intent(out) :: n
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_file_dataset(file, i, name, dtype, count, scalar) &
            bind(C, name="hpct_ckpt_file_dataset") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: file
            integer(c_int), value :: i
            type(c_ptr), value :: name, dtype, count, scalar
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_file_find(file, name, index) bind(C, name="hpct_ckpt_file_find") result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: file
            character(kind=c_char), intent(in) :: name(*)
            integer(c_int), intent(out) :: index
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_file_verify(file, i) bind(C, name="hpct_ckpt_file_verify") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: file
            integer(c_int), value :: i
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_file_read(file, name, as, out, count) bind(C, name="hpct_ckpt_file_read") result(s)
            import :: c_int, c_ptr, c_char, c_size_t
            type(c_ptr), value :: file
            character(kind=c_char), intent(in) :: name(*)
            integer(c_int), value :: as
            type(c_ptr), value :: out
            integer(c_size_t), value :: count
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_list_open(ctx, dir, list) bind(C, name="hpct_ckpt_list_open") result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: ctx
            character(kind=c_char), intent(in) :: dir(*)
            type(c_ptr), intent(out) :: list
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_list_size(list, n) bind(C, name="hpct_ckpt_list_size") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: list
            integer(c_int), intent(out) :: n
            integer(c_int) :: s
        end function
        function c_hpct_ckpt_list_path(list, i, path) bind(C, name="hpct_ckpt_list_path") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: list
            integer(c_int), value :: i
            type(c_ptr), intent(out) :: path ! const char *, owned by the list
            integer(c_int) :: s
        end function
        subroutine c_hpct_ckpt_list_close(list) bind(C, name="hpct_ckpt_list_close")
            import :: c_ptr
            type(c_ptr), value :: list
        end subroutine
        function c_hpct_crc32c(crc, data, n) bind(C, name="hpct_crc32c") result(r)
            import :: c_int32_t, c_ptr, c_size_t
            integer(c_int32_t), value :: crc
            type(c_ptr), value :: data
            integer(c_size_t), value :: n
            integer(c_int32_t) :: r
        end function
        function c_hpct_signals_install(ctx, signals, n, handle) bind(C, name="hpct_signals_install") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ctx, signals
            integer(c_int), value :: n
            type(c_ptr), intent(out) :: handle
            integer(c_int) :: s
        end function
        subroutine c_hpct_signals_uninstall(handle) bind(C, name="hpct_signals_uninstall")
            import :: c_ptr
            type(c_ptr), value :: handle
        end subroutine
        function c_hpct_signals_pending(signo, count) bind(C, name="hpct_signals_pending") result(r)
            import :: c_int, c_ptr
            type(c_ptr), value :: signo, count
            integer(c_int) :: r
        end function
        subroutine c_hpct_signals_clear() bind(C, name="hpct_signals_clear")
        end subroutine
        function c_hpct_walltime_remaining(ctx, seconds) bind(C, name="hpct_walltime_remaining") result(s)
            import :: c_int, c_ptr, c_double
            type(c_ptr), value :: ctx
            real(c_double), intent(out) :: seconds
            integer(c_int) :: s
        end function
        ! -- training loop
        function c_hpct_train(model, opt, ds, ck, cfg, res) bind(C, name="hpct_train") result(s)
            import :: c_int, c_ptr, hpct_train_config_t, hpct_train_result_t
            type(c_ptr), value :: model, opt, ds, ck
            type(hpct_train_config_t), intent(in) :: cfg
            type(hpct_train_result_t), intent(out) :: res
            integer(c_int) :: s
        end function
        function c_hpct_evaluate(model, ds, loss, accuracy, samples) bind(C, name="hpct_evaluate") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model, ds, loss, accuracy, samples
            integer(c_int) :: s
        end function
        ! -- in-situ training
        function c_hpct_insitu_create(model, params, opt, ck, cfg, session) &
            bind(C, name="hpct_insitu_create") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model, params, opt, ck, cfg
            type(c_ptr), intent(out) :: session
            integer(c_int) :: s
        end function
        function c_hpct_insitu_start(session, step) bind(C, name="hpct_insitu_start") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: session, step
            integer(c_int) :: s
        end function
        function c_hpct_insitu_step(session, x, targets, local_batch, loss) &
            bind(C, name="hpct_insitu_step") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: session, x, targets
            integer(c_int), value :: local_batch
            type(c_ptr), value :: loss
            integer(c_int) :: s
        end function
        function c_hpct_insitu_step_grads(session, local_batch, local_loss, loss) &
            bind(C, name="hpct_insitu_step_grads") result(s)
            import :: c_int, c_ptr, c_float
            type(c_ptr), value :: session
            integer(c_int), value :: local_batch
            real(c_float), value :: local_loss
            type(c_ptr), value :: loss
            integer(c_int) :: s
        end function
        function c_hpct_insitu_progress(session, progress) bind(C, name="hpct_insitu_progress") result(s)
            import :: c_int, c_ptr, hpct_progress_t
            type(c_ptr), value :: session
            type(hpct_progress_t), intent(out) :: progress
            integer(c_int) :: s
        end function
        function c_hpct_insitu_finish(session) bind(C, name="hpct_insitu_finish") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: session
            integer(c_int) :: s
        end function
        subroutine c_hpct_insitu_destroy(session) bind(C, name="hpct_insitu_destroy")
            import :: c_ptr
            type(c_ptr), value :: session
        end subroutine
        ! -- helpers of this module (lib/fortran/shim.c) and libc
        function hpcti_f_error(ctx, status, msg) bind(C, name="hpcti_f_error") result(s)
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: ctx
            integer(c_int), value :: status
            character(kind=c_char), intent(in) :: msg(*)
            integer(c_int) :: s
        end function
        function hpcti_f_model_io(model, inputs, outputs, loss) bind(C, name="hpcti_f_model_io") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), intent(out) :: inputs, outputs, loss
            integer(c_int) :: s
        end function
        function hpcti_f_loss_grad_refused(model, status) bind(C, name="hpcti_f_loss_grad_refused") &
            result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: model
            integer(c_int), value :: status
            integer(c_int) :: s
        end function
        function hpcti_f_insitu_refused(session, status) bind(C, name="hpcti_f_insitu_refused") &
            result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: session
            integer(c_int), value :: status
            integer(c_int) :: s
        end function
        function c_hpct_insitu_open(fortran_comm, settings, overrides, flags, session) &
            bind(C, name="hpct_insitu_open") result(s)
            import :: c_int, c_ptr, c_char
            integer(c_int), value :: fortran_comm
            character(kind=c_char), intent(in) :: settings(*)
            type(c_ptr), value :: overrides
            integer(c_int), value :: flags ! unsigned in C: the flags fit in 31 bits
            type(c_ptr), intent(out) :: session
            integer(c_int) :: s
        end function
        function c_hpct_insitu_last_error(session) bind(C, name="hpct_insitu_last_error") result(p)
            import :: c_ptr
            type(c_ptr), value :: session
            type(c_ptr) :: p
        end function
        function hpcti_f_rank(fortran_comm, has_comm) bind(C, name="hpcti_f_rank") result(rank)
            import :: c_int
            integer(c_int), value :: fortran_comm, has_comm
            integer(c_int) :: rank
        end function
        function c_hpct_settings_defaults(s) bind(C, name="hpct_settings_defaults") result(r)
            import :: c_int, hpct_settings_t
            type(hpct_settings_t), intent(inout) :: s
            integer(c_int) :: r
        end function
        function c_hpct_settings_set(s, key, value, source) bind(C, name="hpct_settings_set") &
            result(r)
            import :: c_int, c_char, hpct_settings_t
            type(hpct_settings_t), intent(inout) :: s
            character(kind=c_char), intent(in) :: key(*), value(*), source(*)
            integer(c_int) :: r
        end function
        function c_hpct_settings_read_file(s, path) bind(C, name="hpct_settings_read_file") &
            result(r)
            import :: c_int, c_char, hpct_settings_t
            type(hpct_settings_t), intent(inout) :: s
            character(kind=c_char), intent(in) :: path(*)
            integer(c_int) :: r
        end function
        function c_hpct_settings_read_env(s) bind(C, name="hpct_settings_read_env") result(r)
            import :: c_int, hpct_settings_t
            type(hpct_settings_t), intent(inout) :: s
            integer(c_int) :: r
        end function
        function c_hpct_settings_check(s, use) bind(C, name="hpct_settings_check") result(r)
            import :: c_int, hpct_settings_t
            type(hpct_settings_t), intent(in) :: s
            integer(c_int), value :: use
            integer(c_int) :: r
        end function
        function c_hpct_settings_key(i) bind(C, name="hpct_settings_key") result(p)
            import :: c_int, c_ptr
            integer(c_int), value :: i
            type(c_ptr) :: p
        end function
        function c_hpct_settings_format(s, key, value, n) bind(C, name="hpct_settings_format") &
            result(r)
            import :: c_int, c_char, c_size_t, hpct_settings_t
            type(hpct_settings_t), intent(in) :: s
            character(kind=c_char), intent(in) :: key(*)
            character(kind=c_char), intent(out) :: value(*)
            integer(c_size_t), value :: n
            integer(c_int) :: r
        end function
        function c_hpct_settings_hash(s) bind(C, name="hpct_settings_hash") result(h)
            import :: c_int64_t, hpct_settings_t
            type(hpct_settings_t), intent(in) :: s
            integer(c_int64_t) :: h ! uint64_t in C
        end function
        function c_hpct_insitu_close(session) bind(C, name="hpct_insitu_close") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: session
            integer(c_int) :: s
        end function
        function c_hpct_insitu_predict(session, x, batch, out) bind(C, name="hpct_insitu_predict") &
            result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: session, x, out
            integer(c_int), value :: batch
            integer(c_int) :: s
        end function
        function hpcti_f_insitu_ctx(session) bind(C, name="hpcti_f_insitu_ctx") result(ctx)
            import :: c_ptr
            type(c_ptr), value :: session
            type(c_ptr) :: ctx
        end function
        function hpcti_f_insitu_model(session) bind(C, name="hpcti_f_insitu_model") result(model)
            import :: c_ptr
            type(c_ptr), value :: session
            type(c_ptr) :: model
        end function
        function hpcti_f_block_refused(session, status) bind(C, name="hpcti_f_block_refused") &
            result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: session
            integer(c_int), value :: status
            integer(c_int) :: s
        end function
        function c_hpct_insitu_add_block(session, name, dtype, data, ndims, global_shape, offset, &
            count) bind(C, name="hpct_insitu_add_block") result(s)
            import :: c_int, c_ptr, c_char, c_size_t
            type(c_ptr), value :: session
            character(kind=c_char), intent(in) :: name(*)
            integer(c_int), value :: dtype
            type(c_ptr), value :: data
            integer(c_int), value :: ndims
            integer(c_size_t), intent(in) :: global_shape(*), offset(*), count(*)
            integer(c_int) :: s
        end function
        function hpcti_f_dataset_local_batch(ds, local_batch) &
            bind(C, name="hpcti_f_dataset_local_batch") result(s)
            import :: c_int, c_ptr
            type(c_ptr), value :: ds
            integer(c_int), intent(out) :: local_batch
            integer(c_int) :: s
        end function
        function c_strlen(p) bind(C, name="strlen") result(n)
            import :: c_ptr, c_size_t
            type(c_ptr), value :: p
            integer(c_size_t) :: n
        end function
    end interface

    ! ---- Fortran wrappers -----------------------------------------------------------------
    public :: hpct_get_version, hpct_get_api_version, hpct_make_version, hpct_strerror, &
        hpct_last_error, hpct_last_error_shared, hpct_f_string
    public :: hpct_ctx_create, hpct_ctx_destroy, hpct_rng_get_state, hpct_rng_set_state
    public :: hpct_tunables_count, hpct_tunable_get, hpct_tunables_check
    public :: hpct_params_create, hpct_params_destroy, hpct_params_register, hpct_params_size, &
        hpct_params_get, hpct_params_zero_grads, hpct_params_scale_grads, hpct_params_grad_norm
    public :: hpct_model_create, hpct_model_destroy, hpct_model_add_dense, hpct_model_add_reshape, &
        hpct_model_add_conv, hpct_model_add_pool, hpct_model_add_upsample, hpct_model_add_layers, &
        hpct_model_set_loss, hpct_model_build, hpct_model_params, hpct_model_shape, &
        hpct_model_describe, &
        hpct_model_forward, hpct_model_loss_grad, hpct_model_evaluate
    public :: hpct_optimizer_create, hpct_optimizer_destroy, hpct_optimizer_step, &
        hpct_optimizer_lr_at, hpct_optimizer_get_step, hpct_optimizer_set_step, &
        hpct_optimizer_state, hpct_optimizer_state_slots
    public :: hpct_dataset_open, hpct_dataset_close, hpct_dataset_info, hpct_dataset_partition, &
        hpct_dataset_steps_per_epoch, hpct_dataset_next, hpct_dataset_next_into, &
        hpct_dataset_get_cursor, hpct_dataset_set_cursor, hpct_dataset_skipped, &
        hpct_dataset_stats, hpct_data_permutation
    public :: hpct_shard_create, hpct_shard_write, hpct_shard_close, hpct_manifest_create, &
        hpct_manifest_add_shard, hpct_manifest_write, hpct_manifest_destroy, hpct_manifest_check_path
    public :: hpct_init, hpct_init_comm, hpct_finalize, hpct_topology, hpct_abort_job, &
        hpct_allreduce_mean, hpct_allreduce_mean_device, hpct_alloc_grads, hpct_free_grads, &
        hpct_params_average_grads, &
        hpct_params_broadcast, &
        hpct_params_check_replicas, hpct_params_check_replicas_at, hpct_params_hash, &
        hpct_model_set_grad_averaging, hpct_batch_split, hpct_comm_stats, hpct_doctor
    public :: hpct_ckpt_open, hpct_ckpt_close, hpct_ckpt_add_array, hpct_ckpt_add_scalar, &
        hpct_ckpt_due, hpct_ckpt_save, hpct_ckpt_before_update, hpct_ckpt_wait, &
        hpct_ckpt_load_latest, hpct_ckpt_last_path, hpct_ckpt_rejected, hpct_ckpt_file_open, &
        hpct_ckpt_file_close, &
        hpct_ckpt_file_versions, hpct_ckpt_file_meta, hpct_ckpt_file_num_datasets, &
        hpct_ckpt_file_dataset, hpct_ckpt_file_find, hpct_ckpt_file_verify, hpct_ckpt_file_read, &
        hpct_ckpt_list_open, hpct_ckpt_list_size, hpct_ckpt_list_path, hpct_ckpt_list_close, &
        hpct_crc32c, hpct_signals_install, hpct_signals_uninstall, hpct_signals_pending, &
        hpct_signals_clear, hpct_walltime_remaining
    public :: hpct_train, hpct_evaluate, hpct_output_losses
    public :: hpct_insitu_create, hpct_insitu_start, hpct_insitu_step, hpct_insitu_step_grads, &
        hpct_insitu_progress, hpct_insitu_finish, hpct_insitu_destroy, hpct_insitu_add_block, &
        hpct_insitu_open, hpct_insitu_close, hpct_insitu_predict, hpct_insitu_last_error
    public :: hpct_settings_defaults, hpct_settings_set, hpct_settings_read_file, &
        hpct_settings_read_env, hpct_settings_check, hpct_settings_key, hpct_settings_format, &
        hpct_settings_hash
    integer, parameter, public :: HPCT_INSITU_ALLOW_SETTINGS_CHANGE = 1, HPCT_COMM_WORLD = -1

    !> The detail of the most recent error of the context that owns any handle.
    interface hpct_last_error
        module procedure last_error_ctx, last_error_params, last_error_model, last_error_opt, &
            last_error_ds, last_error_ck, last_error_file, last_error_insitu, last_error_list, &
            last_error_shard, last_error_manifest
    end interface
    !> A C string (type(c_ptr)) or a NUL-terminated character array as a Fortran string.
    interface hpct_f_string
        module procedure fstr, fstr_chars
    end interface
    !> The in-situ session from a settings file on type(MPI_Comm) or an integer communicator.
    interface hpct_insitu_open
        module procedure insitu_open_f08, insitu_open_int
    end interface
    !> The context on a communicator: type(MPI_Comm) (mpi_f08) or an integer handle (mpi).
    interface hpct_init_comm
        module procedure init_comm_f08, init_comm_int
    end interface
    !> Targets: int32 class labels y(batch) (softmax CE) or fp32 y(outputs, batch) (MSE).
    interface hpct_model_loss_grad
        module procedure loss_grad_labels, loss_grad_values
    end interface
    interface hpct_model_evaluate
        module procedure evaluate_labels, evaluate_values
    end interface
    !> Targets as int32 labels y(batch) (width 1), int32 y(width, batch) or fp32 y(width, batch).
    interface hpct_dataset_next
        module procedure next_labels, next_int, next_values
    end interface
    interface hpct_dataset_next_into
        module procedure next_into_labels, next_into_int, next_into_values
    end interface
    !> The element type follows the Fortran array: real32/real64/int32/int64/int8.
    interface hpct_ckpt_add_array
        module procedure add_array_f32, add_array_f64, add_array_i32, add_array_i64, add_array_u8
    end interface
    interface hpct_ckpt_add_scalar
        module procedure add_scalar_f32, add_scalar_f64, add_scalar_i32, add_scalar_i64, add_scalar_u8
    end interface
    interface hpct_ckpt_file_read
        module procedure file_read_f32, file_read_f64, file_read_i32, file_read_i64, file_read_u8
    end interface
    !> CRC32C of a string's or an array's bytes (int32 bit pattern of the uint32).
    interface hpct_crc32c
        module procedure crc32c_string, crc32c_u8, crc32c_i32, crc32c_i64, crc32c_f32, crc32c_f64
    end interface
    interface hpct_insitu_step
        module procedure insitu_step_labels, insitu_step_values
    end interface
    !> The element type follows the Fortran array: real32/real64/int32/int64/int8.
    interface hpct_insitu_add_block
        module procedure add_block_f32, add_block_f64, add_block_i32, add_block_i64, add_block_u8
    end interface
    !> data(..., samples): real(c_float) (HPCT_DTYPE_FLOAT32) or integer(c_int32_t) (INT32).
    interface hpct_shard_write
        module procedure shard_write_f32, shard_write_i32
    end interface

contains

    ! ==== helpers ============================================================================

    !> Give status to ierr when present; otherwise stop on an error (status < 0).
    subroutine finish(status, ctx, where, ierr)
        integer(c_int), intent(in) :: status
        type(c_ptr), intent(in) :: ctx
        character(*), intent(in) :: where
        integer, intent(out), optional :: ierr
        if (present(ierr)) then
            ierr = int(status)
        else if (status < 0) then
            call fatal(status, ctx, where)
        end if
    end subroutine

    !> Print "hpctrain: CALL failed: STATUS: DETAIL" on stderr and end the job: MPI_Abort on
    !> the context's communicator when it has one, else ERROR STOP.
    subroutine fatal(status, ctx, where)
        integer(c_int), intent(in) :: status
        type(c_ptr), intent(in) :: ctx
        character(*), intent(in) :: where
        character(:), allocatable :: msg
        integer(c_int) :: s
        msg = "hpctrain: " // where // " failed: " // hpct_strerror(int(status))
        if (c_associated(ctx)) then
            if (len(fstr(c_hpct_last_error(ctx))) > 0) msg = msg // ": " // fstr(c_hpct_last_error(ctx))
        else
            msg = msg // ": " // fstr(c_hpct_last_error(c_null_ptr))
        end if
        write (error_unit, "(a)") msg
        flush (error_unit)
        if (c_associated(ctx)) s = c_hpct_abort_job(ctx, 1_c_int) ! returns on a local context
        error stop 1
    end subroutine

    !> Record an error found on the Fortran side on ctx (hpct_last_error reports it).
    function ferror(ctx, status, msg) result(s)
        type(c_ptr), intent(in) :: ctx
        integer, intent(in) :: status
        character(*), intent(in) :: msg
        integer(c_int) :: s
        s = hpcti_f_error(ctx, int(status, c_int), msg // c_null_char)
    end function

    !> s without trailing blanks, NUL-terminated, for a C const char *.
    pure function cstr(s) result(c)
        character(*), intent(in) :: s
        character(kind=c_char, len=:), allocatable :: c
        c = trim(s) // c_null_char
    end function

    !> The same as an array, for c_loc (a C pointer stored in a config struct).
    pure function cchars(s) result(c)
        character(*), intent(in) :: s
        character(kind=c_char), allocatable :: c(:)
        integer :: i, n
        n = len_trim(s)
        allocate (c(n + 1))
        do i = 1, n
            c(i) = s(i:i)
        end do
        c(n + 1) = c_null_char
    end function

    !> Status of a string argument: a NUL inside it would cut the C string short.
    function check_string(ctx, s, what, where) result(st)
        type(c_ptr), intent(in) :: ctx
        character(*), intent(in) :: s, what, where
        integer(c_int) :: st
        st = HPCT_SUCCESS
        if (index(s, c_null_char) > 0) &
            st = ferror(ctx, HPCT_ERR_INVALID_ARG, where // ": " // what // " contains a NUL character")
    end function

    !> C string p as a Fortran string ("" for a NULL pointer).
    function fstr(p) result(s)
        type(c_ptr), intent(in) :: p
        character(:), allocatable :: s
        character(kind=c_char), pointer :: a(:)
        integer(c_size_t) :: n
        integer :: i
        if (.not. c_associated(p)) then
            s = ""
            return
        end if
        n = c_strlen(p)
        call c_f_pointer(p, a, [n])
        allocate (character(n) :: s)
        do i = 1, int(n)
            s(i:i) = a(i)
        end do
    end function

    !> A NUL-terminated character array (e.g. hpct_topology_t%hostname) as a Fortran string.
    function fstr_chars(a) result(s)
        character(kind=c_char), intent(in) :: a(:)
        character(:), allocatable :: s
        integer :: i, n
        n = size(a)
        do i = 1, size(a)
            if (a(i) == c_null_char) then
                n = i - 1
                exit
            end if
        end do
        allocate (character(n) :: s)
        do i = 1, n
            s(i:i) = a(i)
        end do
    end function

    !> Address, element count and contiguity of any array (the library uses it in place).
    subroutine array_ref(x, p, n, contiguous)
        type(*), intent(in), target :: x(..)
        type(c_ptr), intent(out) :: p
        integer(c_size_t), intent(out) :: n
        logical, intent(out) :: contiguous
        n = size(x, kind=c_size_t)
        contiguous = is_contiguous(x)
        p = c_null_ptr
        if (contiguous .and. n > 0) p = c_loc(x)
    end subroutine

    !> Status for an array argument that is not contiguous (a strided section).
    function not_contiguous(ctx, what, where) result(s)
        type(c_ptr), intent(in) :: ctx
        character(*), intent(in) :: what, where
        integer(c_int) :: s
        s = ferror(ctx, HPCT_ERR_INVALID_ARG, where // ": " // what // " is not contiguous (a strided " // &
            "section?); the library uses arrays in place and never copies them: pass a contiguous " // &
            "array (is_contiguous)")
    end function

    function itoa(i) result(s)
        integer(c_size_t), intent(in) :: i
        character(:), allocatable :: s
        character(24) :: buf
        write (buf, "(i0)") i
        s = trim(buf)
    end function

    !> Status of a rank-2 array that must be (rows, cols): its shape and contiguity.
    function check_matrix(ctx, x, rows, cols, what, where, p) result(s)
        type(c_ptr), intent(in) :: ctx
        type(*), intent(in), target :: x(:, :)
        integer(c_size_t), intent(in) :: rows, cols
        character(*), intent(in) :: what, where
        type(c_ptr), intent(out) :: p
        integer(c_int) :: s
        integer(c_size_t) :: n
        logical :: contiguous
        s = HPCT_SUCCESS
        call array_ref(x, p, n, contiguous)
        if (size(x, 1, c_size_t) /= rows .or. size(x, 2, c_size_t) /= cols) then
            s = ferror(ctx, HPCT_ERR_INVALID_ARG, where // ": " // what // " is (" // &
                itoa(size(x, 1, c_size_t)) // ", " // itoa(size(x, 2, c_size_t)) // "), expected (" // &
                itoa(rows) // ", " // itoa(cols) // ")")
        else if (.not. contiguous) then
            s = not_contiguous(ctx, what, where)
        end if
    end function

    !> Status of a rank-1 array that must hold n elements: its size and contiguity.
    function check_vector(ctx, x, n, what, where, p) result(s)
        type(c_ptr), intent(in) :: ctx
        type(*), intent(in), target :: x(:)
        integer(c_size_t), intent(in) :: n
        character(*), intent(in) :: what, where
        type(c_ptr), intent(out) :: p
        integer(c_int) :: s
        integer(c_size_t) :: m
        logical :: contiguous
        s = HPCT_SUCCESS
        call array_ref(x, p, m, contiguous)
        if (m /= n) then
            s = ferror(ctx, HPCT_ERR_INVALID_ARG, where // ": " // what // " has " // itoa(m) // &
                " elements, expected " // itoa(n))
        else if (.not. contiguous) then
            s = not_contiguous(ctx, what, where)
        end if
    end function

    ! ==== version, status, context ===========================================================

    !> Version of the library linked (may differ from HPCT_VERSION_* of this module).
    subroutine hpct_get_version(major, minor, patch)
        integer, intent(out) :: major, minor, patch
        integer(c_int) :: a, b, c
        call c_hpct_get_version(a, b, c)
        major = a
        minor = b
        patch = c
    end subroutine

    !> HPCT_API_VERSION of the library linked (0x00MMmm00; may differ from this module's).
    function hpct_get_api_version() result(v)
        integer :: v
        v = int(c_hpct_get_api_version())
    end function

    !> The number of environment settings the library reads.
    function hpct_tunables_count() result(n)
        integer :: n
        n = int(c_hpct_tunables_count())
    end function

    !> Setting i (0-based) into info.
    subroutine hpct_tunable_get(i, info, ierr)
        integer, intent(in) :: i
        type(hpct_tunable_info_t), intent(inout) :: info
        integer, intent(out), optional :: ierr
        call finish(c_hpct_tunable_get(int(i, c_int), info), c_null_ptr, "hpct_tunable_get", ierr)
    end subroutine

    !> Check the settings set in the environment; detail names the first bad one ("" if none).
    subroutine hpct_tunables_check(detail, ierr)
        character(:), allocatable, intent(out) :: detail
        integer, intent(out), optional :: ierr
        character(kind=c_char) :: buf(1024)
        integer(c_int) :: s
        s = c_hpct_tunables_check(buf, int(size(buf), c_size_t))
        detail = fstr_chars(buf)
        call finish(s, c_null_ptr, "hpct_tunables_check", ierr)
    end subroutine

    !> The C macro HPCT_MAKE_VERSION: a version as one comparable integer, 0x00MMmmpp.
    elemental function hpct_make_version(major, minor, patch) result(v)
        integer, intent(in) :: major, minor, patch
        integer :: v
        v = ior(ior(ishft(major, 16), ishft(minor, 8)), patch)
    end function

    !> Static description of a status code.
    function hpct_strerror(status) result(s)
        integer, intent(in) :: status
        character(:), allocatable :: s
        s = fstr(c_hpct_strerror(int(status, c_int)))
    end function

    !> .true. when the context's last error was agreed across the ranks (print it once).
    logical function hpct_last_error_shared(ctx)
        type(hpct_ctx_t), intent(in) :: ctx
        hpct_last_error_shared = c_hpct_last_error_shared(ctx%ptr) /= 0
    end function

    function last_error_ctx(ctx) result(s)
        type(hpct_ctx_t), intent(in) :: ctx
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(ctx%ptr))
    end function
    function last_error_params(h) result(s)
        type(hpct_params_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function
    function last_error_model(h) result(s)
        type(hpct_model_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function
    function last_error_opt(h) result(s)
        type(hpct_optimizer_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function
    function last_error_ds(h) result(s)
        type(hpct_dataset_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function
    function last_error_ck(h) result(s)
        type(hpct_ckpt_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function
    function last_error_file(h) result(s)
        type(hpct_ckpt_file_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function
    function last_error_insitu(h) result(s)
        type(hpct_insitu_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function
    function last_error_list(h) result(s)
        type(hpct_ckpt_list_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function
    function last_error_shard(h) result(s)
        type(hpct_shard_writer_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function
    function last_error_manifest(h) result(s)
        type(hpct_manifest_t), intent(in) :: h
        character(:), allocatable :: s
        s = fstr(c_hpct_last_error(h%ctx))
    end function

    !> A local context (no MPI) from cfg (absent: the defaults).
    subroutine hpct_ctx_create(ctx, cfg, ierr)
        type(hpct_ctx_t), intent(out) :: ctx
        type(hpct_config_t), intent(in), optional, target :: cfg
        integer, intent(out), optional :: ierr
        type(c_ptr) :: pc
        pc = c_null_ptr
        if (present(cfg)) pc = c_loc(cfg)
        call finish(c_hpct_ctx_create(pc, ctx%ptr), ctx%ptr, "hpct_ctx_create", ierr)
    end subroutine

    !> Free a context (its models and optimizers first); ctx becomes null.
    subroutine hpct_ctx_destroy(ctx)
        type(hpct_ctx_t), intent(inout) :: ctx
        call c_hpct_ctx_destroy(ctx%ptr)
        ctx%ptr = c_null_ptr
    end subroutine

    !> The context RNG's state, state(HPCT_RNG_STATE_WORDS).
    subroutine hpct_rng_get_state(ctx, state, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        integer(c_int64_t), intent(out) :: state(HPCT_RNG_STATE_WORDS)
        integer, intent(out), optional :: ierr
        call finish(c_hpct_rng_get_state(ctx%ptr, state), ctx%ptr, "hpct_rng_get_state", ierr)
    end subroutine

    subroutine hpct_rng_set_state(ctx, state, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        integer(c_int64_t), intent(in) :: state(HPCT_RNG_STATE_WORDS)
        integer, intent(out), optional :: ierr
        call finish(c_hpct_rng_set_state(ctx%ptr, state), ctx%ptr, "hpct_rng_set_state", ierr)
    end subroutine

    ! ==== parameter sets =====================================================================

    !> An empty set whose buffers the caller owns.
    subroutine hpct_params_create(ctx, params, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        type(hpct_params_t), intent(out) :: params
        integer, intent(out), optional :: ierr
        params%ctx = ctx%ptr
        call finish(c_hpct_params_create(ctx%ptr, params%ptr), ctx%ptr, "hpct_params_create", ierr)
    end subroutine

    subroutine hpct_params_destroy(params)
        type(hpct_params_t), intent(inout) :: params
        call c_hpct_params_destroy(params%ptr)
        params%ptr = c_null_ptr
    end subroutine

    !> Register param and grad (fp32, any rank, same size, contiguous, TARGET): the library
    !> keeps their addresses and reads and writes them in place.
    subroutine hpct_params_register(params, name, param, grad, ierr)
        type(hpct_params_t), intent(in) :: params
        character(*), intent(in) :: name
        real(c_float), intent(inout), target :: param(..), grad(..)
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_params_register"
        type(c_ptr) :: pp, pg
        integer(c_size_t) :: np, ng
        logical :: cp, cg
        integer(c_int) :: s
        call array_ref(param, pp, np, cp)
        call array_ref(grad, pg, ng, cg)
        s = check_string(params%ctx, name, "the name", fn)
        if (s == 0 .and. np /= ng) s = ferror(params%ctx, HPCT_ERR_INVALID_ARG, fn // ": param '" // &
            trim(name) // "' has " // itoa(np) // " elements and its grad " // itoa(ng))
        if (s == 0 .and. .not. cp) s = not_contiguous(params%ctx, "param '" // trim(name) // "'", fn)
        if (s == 0 .and. .not. cg) s = not_contiguous(params%ctx, "grad of '" // trim(name) // "'", fn)
        if (s == 0) s = c_hpct_params_register(params%ptr, cstr(name), pp, pg, np)
        call finish(s, params%ctx, fn, ierr)
    end subroutine

    !> Number of registered buffers and their total element count.
    subroutine hpct_params_size(params, num_buffers, total_count, ierr)
        type(hpct_params_t), intent(in) :: params
        integer, intent(out), optional :: num_buffers
        integer(c_size_t), intent(out), optional :: total_count
        integer, intent(out), optional :: ierr
        integer(c_int), target :: nb
        integer(c_size_t), target :: tc
        call finish(c_hpct_params_size(params%ptr, c_loc(nb), c_loc(tc)), params%ctx, "hpct_params_size", ierr)
        if (present(num_buffers)) num_buffers = nb
        if (present(total_count)) total_count = tc
    end subroutine

    !> Buffer i (0-based): its name, and param/grad as rank-1 pointers of its element count.
    subroutine hpct_params_get(params, i, name, param, grad, count, ierr)
        type(hpct_params_t), intent(in) :: params
        integer, intent(in) :: i
        character(:), allocatable, intent(out), optional :: name
        real(c_float), pointer, intent(out), optional :: param(:), grad(:)
        integer(c_size_t), intent(out), optional :: count
        integer, intent(out), optional :: ierr
        type(c_ptr), target :: pn, pp, pg
        integer(c_size_t), target :: n
        integer(c_int) :: s
        n = 0
        s = c_hpct_params_get(params%ptr, int(i, c_int), c_loc(pn), c_loc(pp), c_loc(pg), c_loc(n))
        if (s == 0) then
            if (present(name)) name = fstr(pn)
            if (present(param)) call c_f_pointer(pp, param, [n])
            if (present(grad)) call c_f_pointer(pg, grad, [n])
            if (present(count)) count = n
        end if
        call finish(s, params%ctx, "hpct_params_get", ierr)
    end subroutine

    subroutine hpct_params_zero_grads(params, ierr)
        type(hpct_params_t), intent(in) :: params
        integer, intent(out), optional :: ierr
        call finish(c_hpct_params_zero_grads(params%ptr), params%ctx, "hpct_params_zero_grads", ierr)
    end subroutine

    !> Multiply every gradient by factor.
    subroutine hpct_params_scale_grads(params, factor, ierr)
        type(hpct_params_t), intent(in) :: params
        real(c_float), intent(in) :: factor
        integer, intent(out), optional :: ierr
        call finish(c_hpct_params_scale_grads(params%ptr, factor), params%ctx, "hpct_params_scale_grads", ierr)
    end subroutine

    !> L2 norm of all gradients together (double precision).
    subroutine hpct_params_grad_norm(params, norm, ierr)
        type(hpct_params_t), intent(in) :: params
        real(c_double), intent(out) :: norm
        integer, intent(out), optional :: ierr
        call finish(c_hpct_params_grad_norm(params%ptr, norm), params%ctx, "hpct_params_grad_norm", ierr)
    end subroutine

    ! ==== built-in models ====================================================================

    !> An empty sequential model taking x(input_features, batch) fp32 inputs.
    subroutine hpct_model_create(ctx, input_features, model, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        integer, intent(in) :: input_features
        type(hpct_model_t), intent(out) :: model
        integer, intent(out), optional :: ierr
        model%ctx = ctx%ptr
        call finish(c_hpct_model_create(ctx%ptr, int(input_features, c_int), model%ptr), ctx%ptr, &
            "hpct_model_create", ierr)
    end subroutine

    subroutine hpct_model_destroy(model)
        type(hpct_model_t), intent(inout) :: model
        call c_hpct_model_destroy(model%ptr)
        model%ptr = c_null_ptr
    end subroutine

    !> Append y = act(W x + b), W(in, out) in Fortran order (the C [out, in]); init absent: AUTO.
    subroutine hpct_model_add_dense(model, out_features, act, init, ierr)
        type(hpct_model_t), intent(in) :: model
        integer, intent(in) :: out_features
        integer(c_int), intent(in) :: act
        integer(c_int), intent(in), optional :: init
        integer, intent(out), optional :: ierr
        integer(c_int) :: how
        how = HPCT_INIT_AUTO
        if (present(init)) how = init
        call finish(c_hpct_model_add_dense(model%ptr, int(out_features, c_int), act, how), model%ctx, &
            "hpct_model_add_dense", ierr)
    end subroutine

    !> Give the current values the shape [channels, spatial(1), ..., spatial(dims)] in C's
    !> order, dims = size(spatial) from 1 to 3 (x(28, 28, 1, batch) per sample in Fortran is
    !> channels = 1, spatial = [28, 28]); spatial absent: flat [channels]. No compute.
    subroutine hpct_model_add_reshape(model, channels, spatial, ierr)
        type(hpct_model_t), intent(in) :: model
        integer, intent(in) :: channels
        integer, intent(in), optional :: spatial(:)
        integer, intent(out), optional :: ierr
        integer(c_int), allocatable, target :: sizes(:)
        type(c_ptr) :: p
        integer(c_int) :: dims
        dims = 0
        p = c_null_ptr
        if (present(spatial)) then
            dims = int(size(spatial), c_int)
            allocate (sizes(max(size(spatial), 1)))
            sizes(1:size(spatial)) = int(spatial, c_int)
            if (dims > 0) p = c_loc(sizes)
        end if
        call finish(c_hpct_model_add_reshape(model%ptr, int(channels, c_int), dims, p), model%ctx, &
            "hpct_model_add_reshape", ierr)
    end subroutine

    !> Append y = act(conv(x, W) + b) over every spatial dimension, W [out_channels, in_channels,
    !> kernel...] in C (Fortran order: w(kernel..., in_channels, out_channels)); padding
    !> HPCT_PAD_SAME or HPCT_PAD_VALID; init absent: AUTO.
    subroutine hpct_model_add_conv(model, out_channels, kernel, stride, padding, act, init, ierr)
        type(hpct_model_t), intent(in) :: model
        integer, intent(in) :: out_channels, kernel, stride
        integer(c_int), intent(in) :: padding, act
        integer(c_int), intent(in), optional :: init
        integer, intent(out), optional :: ierr
        integer(c_int) :: how
        how = HPCT_INIT_AUTO
        if (present(init)) how = init
        call finish(c_hpct_model_add_conv(model%ptr, int(out_channels, c_int), int(kernel, c_int), &
            int(stride, c_int), padding, act, how), model%ctx, "hpct_model_add_conv", ierr)
    end subroutine

    !> Append y = act(pool(x)): kind HPCT_POOL_MAX or HPCT_POOL_AVG over window^dims inputs,
    !> every stride, no padding.
    subroutine hpct_model_add_pool(model, kind, window, stride, act, ierr)
        type(hpct_model_t), intent(in) :: model
        integer(c_int), intent(in) :: kind
        integer, intent(in) :: window, stride
        integer(c_int), intent(in) :: act
        integer, intent(out), optional :: ierr
        call finish(c_hpct_model_add_pool(model%ptr, kind, int(window, c_int), int(stride, c_int), &
            act), model%ctx, "hpct_model_add_pool", ierr)
    end subroutine

    !> Append y = act(x repeated factor times along every spatial dimension) (nearest neighbour).
    subroutine hpct_model_add_upsample(model, factor, act, ierr)
        type(hpct_model_t), intent(in) :: model
        integer, intent(in) :: factor
        integer(c_int), intent(in) :: act
        integer, intent(out), optional :: ierr
        call finish(c_hpct_model_add_upsample(model%ptr, int(factor, c_int), act), model%ctx, &
            "hpct_model_add_upsample", ierr)
    end subroutine

    !> Append the layers of a description in hpctrain.conf(5)'s layers syntax, e.g.
    !> "reshape 1x28x28, conv 32 k3, maxpool 2, dense 10"; act is the conv and dense layers'
    !> activation where an item gives none (the last item, the output layer: identity).
    subroutine hpct_model_add_layers(model, spec, act, ierr)
        type(hpct_model_t), intent(in) :: model
        character(*), intent(in) :: spec
        integer(c_int), intent(in) :: act
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_model_add_layers"
        integer(c_int) :: s
        s = check_string(model%ctx, spec, "the description", fn)
        if (s == 0) s = c_hpct_model_add_layers(model%ptr, cstr(spec), act)
        call finish(s, model%ctx, fn, ierr)
    end subroutine

    subroutine hpct_model_set_loss(model, loss, ierr)
        type(hpct_model_t), intent(in) :: model
        integer(c_int), intent(in) :: loss
        integer, intent(out), optional :: ierr
        call finish(c_hpct_model_set_loss(model%ptr, loss), model%ctx, "hpct_model_set_loss", ierr)
    end subroutine

    !> Allocate every buffer for batches up to max_batch; initialise the weights.
    subroutine hpct_model_build(model, max_batch, ierr)
        type(hpct_model_t), intent(in) :: model
        integer, intent(in) :: max_batch
        integer, intent(out), optional :: ierr
        call finish(c_hpct_model_build(model%ptr, int(max_batch, c_int)), model%ctx, "hpct_model_build", ierr)
    end subroutine

    !> The model's parameters (owned by the model: never destroy them).
    subroutine hpct_model_params(model, params, ierr)
        type(hpct_model_t), intent(in) :: model
        type(hpct_params_t), intent(out) :: params
        integer, intent(out), optional :: ierr
        params%ctx = model%ctx
        call finish(c_hpct_model_params(model%ptr, params%ptr), model%ctx, "hpct_model_params", ierr)
    end subroutine

    subroutine hpct_model_shape(model, inputs, outputs, ierr)
        type(hpct_model_t), intent(in) :: model
        integer, intent(out), optional :: inputs, outputs
        integer, intent(out), optional :: ierr
        integer(c_int), target :: ni, no
        call finish(c_hpct_model_shape(model%ptr, c_loc(ni), c_loc(no)), model%ctx, "hpct_model_shape", ierr)
        if (present(inputs)) inputs = ni
        if (present(outputs)) outputs = no
    end subroutine

    !> One-line description, e.g. "dense 784-512(relu)-10(identity) softmax_ce".
    subroutine hpct_model_describe(model, description, ierr)
        type(hpct_model_t), intent(in) :: model
        character(:), allocatable, intent(out) :: description
        integer, intent(out), optional :: ierr
        character(kind=c_char), allocatable :: buf(:)
        integer(c_size_t) :: n
        integer(c_int) :: s
        n = 256
        do
            allocate (buf(n))
            s = c_hpct_model_describe(model%ptr, buf, n)
            if (s /= HPCT_ERR_INVALID_ARG .or. n >= 1048576 .or. .not. c_associated(model%ptr)) exit
            deallocate (buf)
            n = n * 4 ! the description did not fit
        end do
        description = ""
        if (s == 0) description = fstr_chars(buf)
        call finish(s, model%ctx, "hpct_model_describe", ierr)
    end subroutine

    !> Status of x(inputs, batch) for a built model; sets p, batch, outputs and loss.
    function check_inputs(model, x, where, px, batch, outputs, loss) result(s)
        type(hpct_model_t), intent(in) :: model
        real(c_float), intent(in), target :: x(:, :)
        character(*), intent(in) :: where
        type(c_ptr), intent(out) :: px
        integer(c_int), intent(out) :: batch, outputs, loss
        integer(c_int) :: s, inputs
        px = c_null_ptr
        batch = int(size(x, 2), c_int)
        s = hpcti_f_model_io(model%ptr, inputs, outputs, loss)
        if (s == 0) s = check_matrix(model%ctx, x, int(inputs, c_size_t), size(x, 2, c_size_t), &
            "x(features, batch)", where, px)
        if (s == 0 .and. batch < 1) s = ferror(model%ctx, HPCT_ERR_INVALID_ARG, where // &
            ": x(features, batch) holds no samples")
    end function

    !> Status of targets of the wrong kind for the model's loss.
    function wrong_targets(model, loss, labels, where) result(s)
        type(hpct_model_t), intent(in) :: model
        integer(c_int), intent(in) :: loss
        logical, intent(in) :: labels
        character(*), intent(in) :: where
        integer(c_int) :: s
        s = HPCT_SUCCESS
        if (labels .and. loss /= HPCT_LOSS_SOFTMAX_CE) s = ferror(model%ctx, HPCT_ERR_INVALID_ARG, &
            where // ": the model's loss is MSE: targets are real(c_float) y(outputs, batch), not labels")
        if (.not. labels .and. loss /= HPCT_LOSS_MSE) s = ferror(model%ctx, HPCT_ERR_INVALID_ARG, &
            where // ": the model's loss is softmax CE: targets are integer(c_int32_t) labels y(batch)")
    end function

    !> Forward only: out(outputs, batch) receives the last layer for x(inputs, batch).
    subroutine hpct_model_forward(model, x, out, ierr)
        type(hpct_model_t), intent(in) :: model
        real(c_float), intent(in), target :: x(:, :)
        real(c_float), intent(inout), target :: out(:, :)
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_model_forward"
        type(c_ptr) :: px, po
        integer(c_int) :: s, batch, outputs, loss
        s = check_inputs(model, x, fn, px, batch, outputs, loss)
        if (s == 0) s = check_matrix(model%ctx, out, int(outputs, c_size_t), int(batch, c_size_t), &
            "out(outputs, batch)", fn, po)
        if (s == 0) s = c_hpct_model_forward(model%ptr, px, batch, po)
        call finish(s, model%ctx, fn, ierr)
    end subroutine

    !> Forward and backward on x(inputs, batch) with labels y(batch) (softmax CE); loss is
    !> the batch mean; accumulate (default .false.) adds to the gradients instead.
    subroutine loss_grad_labels(model, x, y, loss, accumulate, ierr)
        type(hpct_model_t), intent(in) :: model
        real(c_float), intent(in), target :: x(:, :)
        integer(c_int32_t), intent(in), target :: y(:)
        real(c_float), intent(out), optional, target :: loss
        logical, intent(in), optional :: accumulate
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_model_loss_grad"
        type(c_ptr) :: px, py
        integer(c_int) :: s, batch, outputs, kind
        s = check_inputs(model, x, fn, px, batch, outputs, kind)
        if (s == 0) s = wrong_targets(model, kind, .true., fn)
        if (s == 0) s = check_vector(model%ctx, y, int(batch, c_size_t), "y(batch)", fn, py)
        if (s == 0) then
            s = loss_grad_call(model, px, py, batch, loss, accumulate)
        else ! the peers' call agrees on every rank's status before averaging: join it
            s = hpcti_f_loss_grad_refused(model%ptr, s)
        end if
        call finish(s, model%ctx, fn, ierr)
    end subroutine

    !> As above with fp32 targets y(outputs, batch) (MSE).
    subroutine loss_grad_values(model, x, y, loss, accumulate, ierr)
        type(hpct_model_t), intent(in) :: model
        real(c_float), intent(in), target :: x(:, :)
        real(c_float), intent(in), target :: y(:, :)
        real(c_float), intent(out), optional, target :: loss
        logical, intent(in), optional :: accumulate
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_model_loss_grad"
        type(c_ptr) :: px, py
        integer(c_int) :: s, batch, outputs, kind
        s = check_inputs(model, x, fn, px, batch, outputs, kind)
        if (s == 0) s = wrong_targets(model, kind, .false., fn)
        if (s == 0) s = check_matrix(model%ctx, y, int(outputs, c_size_t), int(batch, c_size_t), &
            "y(outputs, batch)", fn, py)
        if (s == 0) then
            s = loss_grad_call(model, px, py, batch, loss, accumulate)
        else ! the peers' call agrees on every rank's status before averaging: join it
            s = hpcti_f_loss_grad_refused(model%ptr, s)
        end if
        call finish(s, model%ctx, fn, ierr)
    end subroutine

    function loss_grad_call(model, px, py, batch, loss, accumulate) result(s)
        type(hpct_model_t), intent(in) :: model
        type(c_ptr), intent(in) :: px, py
        integer(c_int), intent(in) :: batch
        real(c_float), intent(out), optional, target :: loss
        logical, intent(in), optional :: accumulate
        integer(c_int) :: s, acc
        real(c_float), target :: l
        acc = 0
        if (present(accumulate)) then
            if (accumulate) acc = 1
        end if
        s = c_hpct_model_loss_grad(model%ptr, px, py, batch, acc, c_loc(l))
        if (present(loss) .and. s == 0) loss = l
    end function

    !> Mean loss and accuracy over the samples x(inputs, n), labels y(n); weights unchanged.
    subroutine evaluate_labels(model, x, y, loss, accuracy, ierr)
        type(hpct_model_t), intent(in) :: model
        real(c_float), intent(in), target :: x(:, :)
        integer(c_int32_t), intent(in), target :: y(:)
        real(c_double), intent(out), optional :: loss, accuracy
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_model_evaluate"
        type(c_ptr) :: px, py
        integer(c_int) :: s, n, outputs, kind
        s = check_inputs(model, x, fn, px, n, outputs, kind)
        if (s == 0) s = wrong_targets(model, kind, .true., fn)
        if (s == 0) s = check_vector(model%ctx, y, int(n, c_size_t), "y(n)", fn, py)
        if (s == 0) s = evaluate_call(model, px, py, n, loss, accuracy)
        call finish(s, model%ctx, fn, ierr)
    end subroutine

    !> As above with fp32 targets y(outputs, n) (MSE; accuracy is -1).
    subroutine evaluate_values(model, x, y, loss, accuracy, ierr)
        type(hpct_model_t), intent(in) :: model
        real(c_float), intent(in), target :: x(:, :)
        real(c_float), intent(in), target :: y(:, :)
        real(c_double), intent(out), optional :: loss, accuracy
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_model_evaluate"
        type(c_ptr) :: px, py
        integer(c_int) :: s, n, outputs, kind
        s = check_inputs(model, x, fn, px, n, outputs, kind)
        if (s == 0) s = wrong_targets(model, kind, .false., fn)
        if (s == 0) s = check_matrix(model%ctx, y, int(outputs, c_size_t), int(n, c_size_t), &
            "y(outputs, n)", fn, py)
        if (s == 0) s = evaluate_call(model, px, py, n, loss, accuracy)
        call finish(s, model%ctx, fn, ierr)
    end subroutine

    function evaluate_call(model, px, py, n, loss, accuracy) result(s)
        type(hpct_model_t), intent(in) :: model
        type(c_ptr), intent(in) :: px, py
        integer(c_int), intent(in) :: n
        real(c_double), intent(out), optional :: loss, accuracy
        integer(c_int) :: s
        real(c_double), target :: l, a
        s = c_hpct_model_evaluate(model%ptr, px, py, int(n, c_size_t), c_loc(l), c_loc(a))
        if (s /= 0) return
        if (present(loss)) loss = l
        if (present(accuracy)) accuracy = a
    end function

    ! ==== optimizers =========================================================================

    !> An optimizer over params (which must outlive it).
    subroutine hpct_optimizer_create(params, cfg, opt, ierr)
        type(hpct_params_t), intent(in) :: params
        type(hpct_optim_config_t), intent(in), target :: cfg
        type(hpct_optimizer_t), intent(out) :: opt
        integer, intent(out), optional :: ierr
        opt%ctx = params%ctx
        call finish(c_hpct_optimizer_create(params%ptr, c_loc(cfg), opt%ptr), params%ctx, &
            "hpct_optimizer_create", ierr)
    end subroutine

    subroutine hpct_optimizer_destroy(opt)
        type(hpct_optimizer_t), intent(inout) :: opt
        call c_hpct_optimizer_destroy(opt%ptr)
        opt%ptr = c_null_ptr
    end subroutine

    !> Clip (if asked) and apply one update with the scheduled learning rate.
    subroutine hpct_optimizer_step(opt, ierr)
        type(hpct_optimizer_t), intent(in) :: opt
        integer, intent(out), optional :: ierr
        call finish(c_hpct_optimizer_step(opt%ptr), opt%ctx, "hpct_optimizer_step", ierr)
    end subroutine

    !> Learning rate the schedule gives at step (0-based).
    subroutine hpct_optimizer_lr_at(opt, step, lr, ierr)
        type(hpct_optimizer_t), intent(in) :: opt
        integer(c_long), intent(in) :: step
        real(c_float), intent(out) :: lr
        integer, intent(out), optional :: ierr
        call finish(c_hpct_optimizer_lr_at(opt%ptr, step, lr), opt%ctx, "hpct_optimizer_lr_at", ierr)
    end subroutine

    subroutine hpct_optimizer_get_step(opt, step, ierr)
        type(hpct_optimizer_t), intent(in) :: opt
        integer(c_long), intent(out) :: step
        integer, intent(out), optional :: ierr
        call finish(c_hpct_optimizer_get_step(opt%ptr, step), opt%ctx, "hpct_optimizer_get_step", ierr)
    end subroutine

    subroutine hpct_optimizer_set_step(opt, step, ierr)
        type(hpct_optimizer_t), intent(in) :: opt
        integer(c_long), intent(in) :: step
        integer, intent(out), optional :: ierr
        call finish(c_hpct_optimizer_set_step(opt%ptr, step), opt%ctx, "hpct_optimizer_set_step", ierr)
    end subroutine

    !> State slot k of parameter buffer i (0-based) as a rank-1 pointer.
    subroutine hpct_optimizer_state(opt, i, k, state, ierr)
        type(hpct_optimizer_t), intent(in) :: opt
        integer, intent(in) :: i, k
        real(c_float), pointer, intent(out) :: state(:)
        integer, intent(out), optional :: ierr
        type(c_ptr) :: p
        integer(c_size_t) :: n
        integer(c_int) :: s
        state => null()
        s = c_hpct_optimizer_state(opt%ptr, int(i, c_int), int(k, c_int), p, n)
        if (s == 0) call c_f_pointer(p, state, [n])
        call finish(s, opt%ctx, "hpct_optimizer_state", ierr)
    end subroutine

    subroutine hpct_optimizer_state_slots(opt, slots, ierr)
        type(hpct_optimizer_t), intent(in) :: opt
        integer, intent(out) :: slots
        integer, intent(out), optional :: ierr
        integer(c_int) :: n
        n = 0
        call finish(c_hpct_optimizer_state_slots(opt%ptr, n), opt%ctx, "hpct_optimizer_state_slots", ierr)
        slots = n
    end subroutine

    ! ==== sharded HDF5 datasets ==============================================================

    !> Open the shards listed by the manifest; cfg absent: the defaults; inputs_name and
    !> targets_name override cfg's (default "inputs" and "targets").
    subroutine hpct_dataset_open(ctx, manifest_path, ds, cfg, inputs_name, targets_name, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        character(*), intent(in) :: manifest_path
        type(hpct_dataset_t), intent(out) :: ds
        type(hpct_data_config_t), intent(in), optional :: cfg
        character(*), intent(in), optional :: inputs_name, targets_name
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_dataset_open"
        type(hpct_data_config_t), target :: c
        character(kind=c_char), allocatable, target :: in_name(:), tg_name(:)
        integer(c_int) :: s
        ds%ctx = ctx%ptr
        if (present(cfg)) c = cfg
        if (present(inputs_name)) then
            allocate (in_name, source=cchars(inputs_name))
        else
            allocate (in_name, source=cchars("inputs"))
        end if
        if (present(inputs_name) .or. .not. c_associated(c%inputs_name)) c%inputs_name = c_loc(in_name)
        if (present(targets_name)) then
            allocate (tg_name, source=cchars(targets_name))
        else
            allocate (tg_name, source=cchars("targets"))
        end if
        if (present(targets_name) .or. .not. c_associated(c%targets_name)) c%targets_name = c_loc(tg_name)
        s = check_string(ctx%ptr, manifest_path, "the manifest path", fn)
        if (s == 0 .and. present(inputs_name)) s = check_string(ctx%ptr, inputs_name, "inputs_name", fn)
        if (s == 0 .and. present(targets_name)) s = check_string(ctx%ptr, targets_name, "targets_name", fn)
        if (s == 0) s = c_hpct_dataset_open(ctx%ptr, cstr(manifest_path), c_loc(c), ds%ptr)
        call finish(s, ctx%ptr, fn, ierr)
    end subroutine

    subroutine hpct_dataset_close(ds)
        type(hpct_dataset_t), intent(inout) :: ds
        call c_hpct_dataset_close(ds%ptr)
        ds%ptr = c_null_ptr
    end subroutine

    !> Samples, input features per sample, target values per sample, target dtype.
    subroutine hpct_dataset_info(ds, num_samples, input_features, target_width, target_dtype, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        integer(c_size_t), intent(out), optional :: num_samples
        integer, intent(out), optional :: input_features, target_width
        integer(c_int), intent(out), optional :: target_dtype
        integer, intent(out), optional :: ierr
        integer(c_size_t), target :: n
        integer(c_int), target :: f, w, d
        call finish(c_hpct_dataset_info(ds%ptr, c_loc(n), c_loc(f), c_loc(w), c_loc(d)), ds%ctx, &
            "hpct_dataset_info", ierr)
        if (present(num_samples)) num_samples = n
        if (present(input_features)) input_features = f
        if (present(target_width)) target_width = w
        if (present(target_dtype)) target_dtype = d
    end subroutine

    !> This rank's share: rank in [0, world_size), global_batch % world_size == 0.
    subroutine hpct_dataset_partition(ds, rank, world_size, global_batch, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        integer, intent(in) :: rank, world_size, global_batch
        integer, intent(out), optional :: ierr
        call finish(c_hpct_dataset_partition(ds%ptr, int(rank, c_int), int(world_size, c_int), &
            int(global_batch, c_int)), ds%ctx, "hpct_dataset_partition", ierr)
    end subroutine

    subroutine hpct_dataset_steps_per_epoch(ds, steps, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        integer(c_long), intent(out) :: steps
        integer, intent(out), optional :: ierr
        call finish(c_hpct_dataset_steps_per_epoch(ds%ptr, steps), ds%ctx, "hpct_dataset_steps_per_epoch", ierr)
    end subroutine

    !> Shape of this rank's batch: features, local batch, target width and dtype.
    function batch_shape(ds, where, features, local, width, dtype) result(s)
        type(hpct_dataset_t), intent(in) :: ds
        character(*), intent(in) :: where
        integer(c_int), intent(out), target :: features, local, width, dtype
        integer(c_int) :: s
        s = c_hpct_dataset_info(ds%ptr, c_null_ptr, c_loc(features), c_loc(width), c_loc(dtype))
        if (s == 0) s = hpcti_f_dataset_local_batch(ds%ptr, local)
        if (s == 0 .and. local == 0) s = ferror(ds%ctx, HPCT_ERR_STATE, where // &
            ": call hpct_dataset_partition first")
    end function

    !> Status of targets whose type or rank does not fit the dataset's.
    function check_target_kind(ds, dtype, width, want, rank1, where) result(s)
        type(hpct_dataset_t), intent(in) :: ds
        integer(c_int), intent(in) :: dtype, width, want
        logical, intent(in) :: rank1
        character(*), intent(in) :: where
        integer(c_int) :: s
        s = HPCT_SUCCESS
        if (dtype /= want .and. dtype == HPCT_DTYPE_INT32) then
            s = ferror(ds%ctx, HPCT_ERR_INVALID_ARG, where // &
                ": the dataset's targets are int32: pass integer(c_int32_t) targets")
        else if (dtype /= want) then
            s = ferror(ds%ctx, HPCT_ERR_INVALID_ARG, where // &
                ": the dataset's targets are fp32: pass real(c_float) targets(width, batch)")
        else if (rank1 .and. width /= 1) then
            s = ferror(ds%ctx, HPCT_ERR_INVALID_ARG, where // ": the targets have " // &
                itoa(int(width, c_size_t)) // " values per sample: pass targets(width, batch)")
        end if
    end function

    !> Next batch in reader-owned memory (valid until the next call on ds): inputs(features,
    !> local_batch) and int32 class labels targets(local_batch).
    subroutine next_labels(ds, inputs, targets, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        real(c_float), pointer, intent(out) :: inputs(:, :)
        integer(c_int32_t), pointer, intent(out) :: targets(:)
        integer, intent(out), optional :: ierr
        type(c_ptr) :: px, py
        integer(c_int) :: s, f, b, w, d
        inputs => null()
        targets => null()
        s = batch_shape(ds, "hpct_dataset_next", f, b, w, d)
        if (s == 0) s = check_target_kind(ds, d, w, HPCT_DTYPE_INT32, .true., "hpct_dataset_next")
        if (s == 0) s = c_hpct_dataset_next(ds%ptr, px, py)
        if (s == 0) then
            call c_f_pointer(px, inputs, [f, b])
            call c_f_pointer(py, targets, [b])
        end if
        call finish(s, ds%ctx, "hpct_dataset_next", ierr)
    end subroutine

    !> As above with int32 targets(width, local_batch).
    subroutine next_int(ds, inputs, targets, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        real(c_float), pointer, intent(out) :: inputs(:, :)
        integer(c_int32_t), pointer, intent(out) :: targets(:, :)
        integer, intent(out), optional :: ierr
        type(c_ptr) :: px, py
        integer(c_int) :: s, f, b, w, d
        inputs => null()
        targets => null()
        s = batch_shape(ds, "hpct_dataset_next", f, b, w, d)
        if (s == 0) s = check_target_kind(ds, d, w, HPCT_DTYPE_INT32, .false., "hpct_dataset_next")
        if (s == 0) s = c_hpct_dataset_next(ds%ptr, px, py)
        if (s == 0) then
            call c_f_pointer(px, inputs, [f, b])
            call c_f_pointer(py, targets, [w, b])
        end if
        call finish(s, ds%ctx, "hpct_dataset_next", ierr)
    end subroutine

    !> As above with fp32 targets(width, local_batch).
    subroutine next_values(ds, inputs, targets, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        real(c_float), pointer, intent(out) :: inputs(:, :)
        real(c_float), pointer, intent(out) :: targets(:, :)
        integer, intent(out), optional :: ierr
        type(c_ptr) :: px, py
        integer(c_int) :: s, f, b, w, d
        inputs => null()
        targets => null()
        s = batch_shape(ds, "hpct_dataset_next", f, b, w, d)
        if (s == 0) s = check_target_kind(ds, d, w, HPCT_DTYPE_FLOAT32, .false., "hpct_dataset_next")
        if (s == 0) s = c_hpct_dataset_next(ds%ptr, px, py)
        if (s == 0) then
            call c_f_pointer(px, inputs, [f, b])
            call c_f_pointer(py, targets, [w, b])
        end if
        call finish(s, ds%ctx, "hpct_dataset_next", ierr)
    end subroutine

    !> Next batch copied into inputs(features, local_batch) and labels targets(local_batch).
    subroutine next_into_labels(ds, inputs, targets, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        real(c_float), intent(inout), target :: inputs(:, :)
        integer(c_int32_t), intent(inout), target :: targets(:)
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_dataset_next_into"
        type(c_ptr) :: px, py
        integer(c_int) :: s, f, b, w, d
        s = batch_shape(ds, fn, f, b, w, d)
        if (s == 0) s = check_target_kind(ds, d, w, HPCT_DTYPE_INT32, .true., fn)
        if (s == 0) s = check_matrix(ds%ctx, inputs, int(f, c_size_t), int(b, c_size_t), &
            "inputs(features, local_batch)", fn, px)
        if (s == 0) s = check_vector(ds%ctx, targets, int(b, c_size_t), "targets(local_batch)", fn, py)
        if (s == 0) s = c_hpct_dataset_next_into(ds%ptr, px, py)
        call finish(s, ds%ctx, fn, ierr)
    end subroutine

    subroutine next_into_int(ds, inputs, targets, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        real(c_float), intent(inout), target :: inputs(:, :)
        integer(c_int32_t), intent(inout), target :: targets(:, :)
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_dataset_next_into"
        type(c_ptr) :: px, py
        integer(c_int) :: s, f, b, w, d
        s = batch_shape(ds, fn, f, b, w, d)
        if (s == 0) s = check_target_kind(ds, d, w, HPCT_DTYPE_INT32, .false., fn)
        if (s == 0) s = check_matrix(ds%ctx, inputs, int(f, c_size_t), int(b, c_size_t), &
            "inputs(features, local_batch)", fn, px)
        if (s == 0) s = check_matrix(ds%ctx, targets, int(w, c_size_t), int(b, c_size_t), &
            "targets(width, local_batch)", fn, py)
        if (s == 0) s = c_hpct_dataset_next_into(ds%ptr, px, py)
        call finish(s, ds%ctx, fn, ierr)
    end subroutine

    subroutine next_into_values(ds, inputs, targets, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        real(c_float), intent(inout), target :: inputs(:, :)
        real(c_float), intent(inout), target :: targets(:, :)
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_dataset_next_into"
        type(c_ptr) :: px, py
        integer(c_int) :: s, f, b, w, d
        s = batch_shape(ds, fn, f, b, w, d)
        if (s == 0) s = check_target_kind(ds, d, w, HPCT_DTYPE_FLOAT32, .false., fn)
        if (s == 0) s = check_matrix(ds%ctx, inputs, int(f, c_size_t), int(b, c_size_t), &
            "inputs(features, local_batch)", fn, px)
        if (s == 0) s = check_matrix(ds%ctx, targets, int(w, c_size_t), int(b, c_size_t), &
            "targets(width, local_batch)", fn, py)
        if (s == 0) s = c_hpct_dataset_next_into(ds%ptr, px, py)
        call finish(s, ds%ctx, fn, ierr)
    end subroutine

    !> Position (epoch, step) of the batch the next call returns.
    subroutine hpct_dataset_get_cursor(ds, epoch, step, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        integer(c_long), intent(out) :: epoch, step
        integer, intent(out), optional :: ierr
        call finish(c_hpct_dataset_get_cursor(ds%ptr, epoch, step), ds%ctx, "hpct_dataset_get_cursor", ierr)
    end subroutine

    subroutine hpct_dataset_set_cursor(ds, epoch, step, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        integer(c_long), intent(in) :: epoch, step
        integer, intent(out), optional :: ierr
        call finish(c_hpct_dataset_set_cursor(ds%ptr, epoch, step), ds%ctx, "hpct_dataset_set_cursor", ierr)
    end subroutine

    subroutine hpct_dataset_skipped(ds, count, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        integer(c_long), intent(out) :: count
        integer, intent(out), optional :: ierr
        call finish(c_hpct_dataset_skipped(ds%ptr, count), ds%ctx, "hpct_dataset_skipped", ierr)
    end subroutine

    !> This rank's accounting of the dataset: bytes read, held (rank, node), exchanged.
    subroutine hpct_dataset_stats(ds, stats, ierr)
        type(hpct_dataset_t), intent(in) :: ds
        type(hpct_data_stats_t), intent(out) :: stats
        integer, intent(out), optional :: ierr
        call finish(c_hpct_dataset_stats(ds%ptr, stats), ds%ctx, "hpct_dataset_stats", ierr)
    end subroutine

    !> perm(n) = the epoch permutation of 0..n-1 of the shuffle contract.
    subroutine hpct_data_permutation(seed, epoch, perm, ierr)
        integer(c_int64_t), intent(in) :: seed
        integer(c_long), intent(in) :: epoch
        integer(c_int64_t), intent(inout), target :: perm(:)
        integer, intent(out), optional :: ierr
        type(c_ptr) :: p
        integer(c_size_t) :: n
        logical :: contiguous
        integer(c_int) :: s
        call array_ref(perm, p, n, contiguous)
        s = HPCT_ERR_INVALID_ARG ! perm is not contiguous: no context to record the detail on
        if (contiguous) s = c_hpct_data_permutation(seed, epoch, n, p)
        call finish(s, c_null_ptr, "hpct_data_permutation", ierr)
    end subroutine

    ! ==== writing shards and manifests =======================================================

    !> Create (or truncate) the shard file path; cfg absent: the defaults.
    subroutine hpct_shard_create(ctx, path, shard, cfg, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        character(*), intent(in) :: path
        type(hpct_shard_writer_t), intent(out) :: shard
        type(hpct_shard_config_t), intent(in), optional, target :: cfg
        integer, intent(out), optional :: ierr
        type(c_ptr) :: pc
        integer(c_int) :: s
        shard%ctx = ctx%ptr
        pc = c_null_ptr
        if (present(cfg)) pc = c_loc(cfg)
        s = check_string(ctx%ptr, path, "the path", "hpct_shard_create")
        if (s == 0) s = c_hpct_shard_create(ctx%ptr, cstr(path), pc, shard%ptr)
        call finish(s, ctx%ptr, "hpct_shard_create", ierr)
    end subroutine

    !> A Fortran shape as text: "(3, 5)".
    function shape_text(sh) result(t)
        integer(c_int64_t), intent(in) :: sh(:)
        character(:), allocatable :: t
        integer :: i
        t = "("
        do i = 1, size(sh)
            t = t // itoa(int(sh(i), c_size_t))
            if (i < size(sh)) t = t // ", "
        end do
        t = t // ")"
    end function

    !> Shared body of the typed hpct_shard_write specifics: data (rank >= 1, contiguous) is
    !> the row-major C dataset whose dims are the Fortran shape reversed, so the last Fortran
    !> dimension is N: x(features, samples) is [samples][features], y(samples) is [samples].
    subroutine shard_write(shard, name, dtype, data, ierr)
        type(hpct_shard_writer_t), intent(in) :: shard
        character(*), intent(in) :: name
        integer(c_int), intent(in) :: dtype
        type(*), intent(in), target :: data(..)
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_shard_write"
        integer(c_int64_t), allocatable :: sh(:)
        type(c_ptr) :: p
        integer(c_size_t) :: n
        logical :: contiguous
        integer(c_int) :: s
        integer :: r
        call array_ref(data, p, n, contiguous)
        r = rank(data)
        sh = shape(data, kind=c_int64_t)
        s = check_string(shard%ctx, name, "the dataset name", fn)
        if (s == 0 .and. r < 1) s = ferror(shard%ctx, HPCT_ERR_INVALID_ARG, fn // ": dataset /" // &
            trim(name) // ": data is a scalar; pass an array data(..., samples)")
        if (s == 0 .and. n == 0) s = ferror(shard%ctx, HPCT_ERR_INVALID_ARG, fn // ": dataset /" // &
            trim(name) // ": data is " // shape_text(sh) // ", every extent must be >= 1")
        if (s == 0 .and. .not. contiguous) s = not_contiguous(shard%ctx, "data of dataset /" // trim(name), fn)
        if (s == 0) s = c_hpct_shard_write(shard%ptr, cstr(name), dtype, int(r, c_int), sh(r:1:-1), p)
        call finish(s, shard%ctx, fn, ierr)
    end subroutine

    !> Write dataset name from data(..., samples), fp32: C dims = the Fortran shape reversed
    !> (x(features, samples) -> [samples, features]); at most HPCT_SHARD_MAX_RANK dimensions.
    subroutine shard_write_f32(shard, name, data, ierr)
        type(hpct_shard_writer_t), intent(in) :: shard
        character(*), intent(in) :: name
        real(c_float), intent(in), target :: data(..)
        integer, intent(out), optional :: ierr
        call shard_write(shard, name, HPCT_DTYPE_FLOAT32, data, ierr)
    end subroutine

    !> As above, int32 (class labels y(samples), or integer targets y(width, samples)).
    subroutine shard_write_i32(shard, name, data, ierr)
        type(hpct_shard_writer_t), intent(in) :: shard
        character(*), intent(in) :: name
        integer(c_int32_t), intent(in), target :: data(..)
        integer, intent(out), optional :: ierr
        call shard_write(shard, name, HPCT_DTYPE_INT32, data, ierr)
    end subroutine

    !> Complete and close the file (HPCT_ERR_IO naming it when that fails); shard becomes null.
    subroutine hpct_shard_close(shard, ierr)
        type(hpct_shard_writer_t), intent(inout) :: shard
        integer, intent(out), optional :: ierr
        integer(c_int) :: s
        s = c_hpct_shard_close(shard%ptr)
        shard%ptr = c_null_ptr
        call finish(s, shard%ctx, "hpct_shard_close", ierr)
    end subroutine

    !> A manifest to be written at path for shards holding the datasets inputs_name and
    !> targets_name (absent: "inputs", "targets"); nothing is written before hpct_manifest_write.
    subroutine hpct_manifest_create(ctx, path, manifest, inputs_name, targets_name, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        character(*), intent(in) :: path
        type(hpct_manifest_t), intent(out) :: manifest
        character(*), intent(in), optional :: inputs_name, targets_name
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_manifest_create"
        character(kind=c_char), allocatable, target :: in_name(:), tg_name(:)
        type(c_ptr) :: pi, pt
        integer(c_int) :: s
        manifest%ctx = ctx%ptr
        pi = c_null_ptr
        pt = c_null_ptr
        s = check_string(ctx%ptr, path, "the path", fn)
        if (present(inputs_name)) then
            if (s == 0) s = check_string(ctx%ptr, inputs_name, "inputs_name", fn)
            in_name = cchars(inputs_name)
            pi = c_loc(in_name)
        end if
        if (present(targets_name)) then
            if (s == 0) s = check_string(ctx%ptr, targets_name, "targets_name", fn)
            tg_name = cchars(targets_name)
            pt = c_loc(tg_name)
        end if
        if (s == 0) s = c_hpct_manifest_create(ctx%ptr, cstr(path), pi, pt, manifest%ptr)
        call finish(s, ctx%ptr, fn, ierr)
    end subroutine

    !> Append the shard file shard_path (inside the manifest's directory): its layouts are read
    !> back and checked against the first shard's, its samples counted, its bytes hashed.
    subroutine hpct_manifest_add_shard(manifest, shard_path, ierr)
        type(hpct_manifest_t), intent(in) :: manifest
        character(*), intent(in) :: shard_path
        integer, intent(out), optional :: ierr
        integer(c_int) :: s
        s = check_string(manifest%ctx, shard_path, "the shard path", "hpct_manifest_add_shard")
        if (s == 0) s = c_hpct_manifest_add_shard(manifest%ptr, cstr(shard_path))
        call finish(s, manifest%ctx, "hpct_manifest_add_shard", ierr)
    end subroutine

    !> Write the manifest text atomically (temporary file, then rename).
    subroutine hpct_manifest_write(manifest, ierr)
        type(hpct_manifest_t), intent(in) :: manifest
        integer, intent(out), optional :: ierr
        call finish(c_hpct_manifest_write(manifest%ptr), manifest%ctx, "hpct_manifest_write", ierr)
    end subroutine

    subroutine hpct_manifest_destroy(manifest)
        type(hpct_manifest_t), intent(inout) :: manifest
        call c_hpct_manifest_destroy(manifest%ptr)
        manifest%ptr = c_null_ptr
    end subroutine

    !> HPCT_SUCCESS when path may name a file in a manifest (relative, non-empty, no blanks,
    !> control characters, backslashes or ".."), else HPCT_ERR_INVALID_ARG. A check: pass ierr
    !> (there is no context, so no detail, and without ierr a "no" ends the program).
    subroutine hpct_manifest_check_path(path, ierr)
        character(*), intent(in) :: path
        integer, intent(out), optional :: ierr
        integer(c_int) :: s
        s = HPCT_ERR_INVALID_ARG ! a NUL inside would hide the rest of the path from C
        if (index(path, c_null_char) == 0) s = c_hpct_manifest_check_path(cstr(path))
        call finish(s, c_null_ptr, "hpct_manifest_check_path", ierr)
    end subroutine

    ! ==== distributed runtime ================================================================

    !> Context plus distributed runtime on MPI_COMM_WORLD (MPI_Init when not initialised).
    subroutine hpct_init(ctx, cfg, ierr)
        type(hpct_ctx_t), intent(out) :: ctx
        type(hpct_config_t), intent(in), optional, target :: cfg
        integer, intent(out), optional :: ierr
        type(c_ptr) :: pc
        pc = c_null_ptr
        if (present(cfg)) pc = c_loc(cfg)
        call finish(c_hpct_init(pc, ctx%ptr), ctx%ptr, "hpct_init", ierr)
    end subroutine

    !> The same on comm, a type(MPI_Comm) (mpi_f08) that may be a subset of MPI_COMM_WORLD.
    subroutine init_comm_f08(comm, ctx, cfg, ierr)
        type(MPI_Comm), intent(in) :: comm
        type(hpct_ctx_t), intent(out) :: ctx
        type(hpct_config_t), intent(in), optional, target :: cfg
        integer, intent(out), optional :: ierr
        call init_comm_int(comm%MPI_VAL, ctx, cfg, ierr)
    end subroutine

    !> The same on an integer communicator handle ("use mpi" / mpif.h).
    subroutine init_comm_int(comm, ctx, cfg, ierr)
        integer, intent(in) :: comm
        type(hpct_ctx_t), intent(out) :: ctx
        type(hpct_config_t), intent(in), optional, target :: cfg
        integer, intent(out), optional :: ierr
        type(c_ptr) :: pc
        pc = c_null_ptr
        if (present(cfg)) pc = c_loc(cfg)
        call finish(c_hpct_init_comm(pc, int(comm, c_int), ctx%ptr), ctx%ptr, "hpct_init_comm", ierr)
    end subroutine

    !> Free the communicators and the context (MPI_Finalize only if hpct_init called MPI_Init).
    subroutine hpct_finalize(ctx, ierr)
        type(hpct_ctx_t), intent(inout) :: ctx
        integer, intent(out), optional :: ierr
        integer(c_int) :: s
        s = c_hpct_finalize(ctx%ptr)
        ctx%ptr = c_null_ptr
        call finish(s, c_null_ptr, "hpct_finalize", ierr)
    end subroutine

    !> Rank, size and node membership in the context's communicator.
    subroutine hpct_topology(ctx, topo, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        type(hpct_topology_t), intent(inout) :: topo
        integer, intent(out), optional :: ierr
        call finish(c_hpct_topology(ctx%ptr, topo), ctx%ptr, "hpct_topology", ierr)
    end subroutine

    !> End the whole job (MPI_Abort); returns only if that fails.
    subroutine hpct_abort_job(ctx, exit_code, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        integer, intent(in) :: exit_code
        integer, intent(out), optional :: ierr
        call finish(c_hpct_abort_job(ctx%ptr, int(exit_code, c_int)), ctx%ptr, "hpct_abort_job", ierr)
    end subroutine

    !> buf (fp32, any rank, contiguous) = its mean over ranks, in place.
    subroutine hpct_allreduce_mean(ctx, buf, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        real(c_float), intent(inout), target :: buf(..)
        integer, intent(out), optional :: ierr
        type(c_ptr) :: p
        integer(c_size_t) :: n
        logical :: contiguous
        integer(c_int) :: s
        call array_ref(buf, p, n, contiguous)
        if (contiguous) then
            s = c_hpct_allreduce_mean(ctx%ptr, p, n)
        else
            s = not_contiguous(ctx%ptr, "buf", "hpct_allreduce_mean")
        end if
        call finish(s, ctx%ptr, "hpct_allreduce_mean", ierr)
    end subroutine

    !> buf: n floats in the backend's memory (a device pointer from C or CUDA Fortran on the
    !> cuda backend, c_loc of a host array on cpu) = their mean over ranks, in place.
    subroutine hpct_allreduce_mean_device(ctx, buf, n, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        type(c_ptr), intent(in) :: buf
        integer(c_size_t), intent(in) :: n
        integer, intent(out), optional :: ierr
        call finish(c_hpct_allreduce_mean_device(ctx%ptr, buf, n), ctx%ptr, &
            "hpct_allreduce_mean_device", ierr)
    end subroutine

    !> grads => a zeroed buffer of count floats that the ranks of a node share where averages
    !> go through the node window (collective, in the same order on every rank): its
    !> averages read the peers' values in place. Null on error.
    subroutine hpct_alloc_grads(ctx, count, grads, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        integer(c_size_t), intent(in) :: count
        real(c_float), pointer, intent(out) :: grads(:)
        integer, intent(out), optional :: ierr
        type(c_ptr) :: p
        integer(c_int) :: s
        p = c_null_ptr
        nullify(grads)
        s = c_hpct_alloc_grads(ctx%ptr, count, p)
        if (s == 0) call c_f_pointer(p, grads, [count])
        call finish(s, ctx%ptr, "hpct_alloc_grads", ierr)
    end subroutine

    !> Give back a buffer of hpct_alloc_grads; grads is nullified.
    subroutine hpct_free_grads(ctx, grads, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        real(c_float), pointer, intent(inout) :: grads(:)
        integer, intent(out), optional :: ierr
        type(c_ptr) :: p
        p = c_null_ptr
        if (associated(grads)) p = c_loc(grads)
        call finish(c_hpct_free_grads(ctx%ptr, p), ctx%ptr, "hpct_free_grads", ierr)
        nullify(grads)
    end subroutine

    !> Average every registered gradient over ranks.
    subroutine hpct_params_average_grads(params, ierr)
        type(hpct_params_t), intent(in) :: params
        integer, intent(out), optional :: ierr
        call finish(c_hpct_params_average_grads(params%ptr), params%ctx, "hpct_params_average_grads", ierr)
    end subroutine

    !> Copy root's parameters into every rank's.
    subroutine hpct_params_broadcast(params, root, ierr)
        type(hpct_params_t), intent(in) :: params
        integer, intent(in) :: root
        integer, intent(out), optional :: ierr
        call finish(c_hpct_params_broadcast(params%ptr, int(root, c_int)), params%ctx, &
            "hpct_params_broadcast", ierr)
    end subroutine

    subroutine hpct_params_check_replicas(params, ierr)
        type(hpct_params_t), intent(in) :: params
        integer, intent(out), optional :: ierr
        call finish(c_hpct_params_check_replicas(params%ptr), params%ctx, "hpct_params_check_replicas", ierr)
    end subroutine

    subroutine hpct_params_check_replicas_at(params, step, ierr)
        type(hpct_params_t), intent(in) :: params
        integer(c_long), intent(in) :: step
        integer, intent(out), optional :: ierr
        call finish(c_hpct_params_check_replicas_at(params%ptr, step), params%ctx, &
            "hpct_params_check_replicas_at", ierr)
    end subroutine

    !> 64-bit hash of the parameter values (bit pattern of the uint64).
    subroutine hpct_params_hash(params, hash, ierr)
        type(hpct_params_t), intent(in) :: params
        integer(c_int64_t), intent(out) :: hash
        integer, intent(out), optional :: ierr
        call finish(c_hpct_params_hash(params%ptr, hash), params%ctx, "hpct_params_hash", ierr)
    end subroutine

    subroutine hpct_model_set_grad_averaging(model, enable, ierr)
        type(hpct_model_t), intent(in) :: model
        logical, intent(in) :: enable
        integer, intent(out), optional :: ierr
        call finish(c_hpct_model_set_grad_averaging(model%ptr, merge(1_c_int, 0_c_int, enable)), model%ctx, &
            "hpct_model_set_grad_averaging", ierr)
    end subroutine

    !> local_batch = global_batch / size and this rank's 0-based sample offset.
    subroutine hpct_batch_split(ctx, global_batch, local_batch, offset, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        integer, intent(in) :: global_batch
        integer, intent(out) :: local_batch
        integer, intent(out), optional :: offset
        integer, intent(out), optional :: ierr
        integer(c_int), target :: lb, off
        lb = 0
        off = 0
        call finish(c_hpct_batch_split(ctx%ptr, int(global_batch, c_int), c_loc(lb), c_loc(off)), ctx%ptr, &
            "hpct_batch_split", ierr)
        local_batch = lb
        if (present(offset)) offset = off
    end subroutine

    !> Preflight checks, collective (hpct_doctor in hpctrain.h): report holds one line per check,
    !> "CHECK<TAB>RESULT<TAB>DETAIL" (RESULT ok, WARN or FAIL), the same on every rank; worst the
    !> worst HPCT_CHECK_*. settings: text every rank must share (e.g. a settings file's hash).
    subroutine hpct_doctor(ctx, report, worst, cfg, settings, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        character(:), allocatable, intent(out) :: report
        integer, intent(out) :: worst
        type(hpct_doctor_config_t), intent(in), optional :: cfg
        character(*), intent(in), optional :: settings
        integer, intent(out), optional :: ierr
        type(hpct_doctor_config_t), target :: c
        character(kind=c_char), allocatable, target :: text(:)
        character(kind=c_char), allocatable :: buf(:)
        integer(c_int) :: s, w
        if (present(cfg)) c = cfg
        s = HPCT_SUCCESS
        if (present(settings)) then
            s = check_string(ctx%ptr, settings, "the settings", "hpct_doctor")
            text = cchars(settings)
            c%settings = c_loc(text)
        end if
        allocate (buf(65536))
        buf(1) = c_null_char
        w = HPCT_CHECK_FAIL
        if (s == 0) s = c_hpct_doctor(ctx%ptr, c_loc(c), buf, int(size(buf), c_size_t), w)
        report = fstr_chars(buf)
        worst = int(w)
        call finish(s, ctx%ptr, "hpct_doctor", ierr)
    end subroutine

    !> Seconds spent waiting for collectives and the number of collective operations completed
    !> (averages, agreements, broadcasts, hash exchanges), as hpct_comm_stats in hpctrain.h.
    subroutine hpct_comm_stats(ctx, wait_seconds, operations, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        real(c_double), intent(out), optional :: wait_seconds
        integer(c_long), intent(out), optional :: operations
        integer, intent(out), optional :: ierr
        real(c_double), target :: w
        integer(c_long), target :: n
        call finish(c_hpct_comm_stats(ctx%ptr, c_loc(w), c_loc(n)), ctx%ptr, "hpct_comm_stats", ierr)
        if (present(wait_seconds)) wait_seconds = w
        if (present(operations)) operations = n
    end subroutine

    !> Metrics records and timeline rewrites this rank could not write (a full disk), as
    !> hpct_output_losses in hpctrain.h; the first loss's detail is in the library's log.
    subroutine hpct_output_losses(ctx, metrics_records, timeline_rewrites, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        integer(c_long), intent(out), optional :: metrics_records, timeline_rewrites
        integer, intent(out), optional :: ierr
        integer(c_long), target :: m, t
        call finish(c_hpct_output_losses(ctx%ptr, c_loc(m), c_loc(t), c_null_ptr), ctx%ptr, &
            "hpct_output_losses", ierr)
        if (present(metrics_records)) metrics_records = m
        if (present(timeline_rewrites)) timeline_rewrites = t
    end subroutine

    ! ==== checkpoints and preemption =========================================================

    !> Open a checkpoint directory; directory overrides cfg%directory.
    subroutine hpct_ckpt_open(ctx, cfg, ck, directory, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        type(hpct_ckpt_config_t), intent(in) :: cfg
        type(hpct_ckpt_t), intent(out) :: ck
        character(*), intent(in), optional :: directory
        integer, intent(out), optional :: ierr
        type(hpct_ckpt_config_t), target :: c
        character(kind=c_char), allocatable, target :: dir(:)
        integer(c_int) :: s
        ck%ctx = ctx%ptr
        c = cfg
        s = HPCT_SUCCESS
        if (present(directory)) then
            s = check_string(ctx%ptr, directory, "the directory", "hpct_ckpt_open")
            dir = cchars(directory)
            c%directory = c_loc(dir)
        end if
        if (s == 0) s = c_hpct_ckpt_open(ctx%ptr, c_loc(c), ck%ptr)
        call finish(s, ctx%ptr, "hpct_ckpt_open", ierr)
    end subroutine

    !> Drain any asynchronous write and free the handle (its status is returned).
    subroutine hpct_ckpt_close(ck, ierr)
        type(hpct_ckpt_t), intent(inout) :: ck
        integer, intent(out), optional :: ierr
        integer(c_int) :: s
        s = c_hpct_ckpt_close(ck%ptr)
        ck%ptr = c_null_ptr
        call finish(s, ck%ctx, "hpct_ckpt_close", ierr)
    end subroutine

    !> Shared body of the typed hpct_ckpt_add_array specifics.
    subroutine add_array(ck, name, dtype, data, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        integer(c_int), intent(in) :: dtype
        type(*), intent(in), target :: data(..)
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_ckpt_add_array"
        type(c_ptr) :: p
        integer(c_size_t) :: n
        logical :: contiguous
        integer(c_int) :: s
        call array_ref(data, p, n, contiguous)
        s = check_string(ck%ctx, name, "the name", fn)
        if (s == 0 .and. .not. contiguous) s = not_contiguous(ck%ctx, "array '" // trim(name) // "'", fn)
        if (s == 0) s = c_hpct_ckpt_add_array(ck%ptr, cstr(name), dtype, p, n)
        call finish(s, ck%ctx, fn, ierr)
    end subroutine

    !> Save data (any rank, contiguous, TARGET, alive while ck is) under /extra/<name> with
    !> every checkpoint and restore it on load.
    subroutine add_array_f32(ck, name, data, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        real(c_float), intent(inout), target :: data(..)
        integer, intent(out), optional :: ierr
        call add_array(ck, name, HPCT_CKPT_F32, data, ierr)
    end subroutine
    subroutine add_array_f64(ck, name, data, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        real(c_double), intent(inout), target :: data(..)
        integer, intent(out), optional :: ierr
        call add_array(ck, name, HPCT_CKPT_F64, data, ierr)
    end subroutine
    subroutine add_array_i32(ck, name, data, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        integer(c_int32_t), intent(inout), target :: data(..)
        integer, intent(out), optional :: ierr
        call add_array(ck, name, HPCT_CKPT_I32, data, ierr)
    end subroutine
    subroutine add_array_i64(ck, name, data, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        integer(c_int64_t), intent(inout), target :: data(..)
        integer, intent(out), optional :: ierr
        call add_array(ck, name, HPCT_CKPT_I64, data, ierr)
    end subroutine
    subroutine add_array_u8(ck, name, data, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        integer(c_int8_t), intent(inout), target :: data(..)
        integer, intent(out), optional :: ierr
        call add_array(ck, name, HPCT_CKPT_U8, data, ierr)
    end subroutine

    !> Shared body of the typed hpct_ckpt_add_scalar specifics.
    subroutine add_scalar(ck, name, dtype, p, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        integer(c_int), intent(in) :: dtype
        type(c_ptr), intent(in) :: p
        integer, intent(out), optional :: ierr
        integer(c_int) :: s
        s = check_string(ck%ctx, name, "the name", "hpct_ckpt_add_scalar")
        if (s == 0) s = c_hpct_ckpt_add_scalar(ck%ptr, cstr(name), dtype, p)
        call finish(s, ck%ctx, "hpct_ckpt_add_scalar", ierr)
    end subroutine

    !> As hpct_ckpt_add_array for one value (TARGET, alive while ck is; e.g. time, step).
    subroutine add_scalar_f32(ck, name, value, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        real(c_float), intent(inout), target :: value
        integer, intent(out), optional :: ierr
        call add_scalar(ck, name, HPCT_CKPT_F32, c_loc(value), ierr)
    end subroutine
    subroutine add_scalar_f64(ck, name, value, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        real(c_double), intent(inout), target :: value
        integer, intent(out), optional :: ierr
        call add_scalar(ck, name, HPCT_CKPT_F64, c_loc(value), ierr)
    end subroutine
    subroutine add_scalar_i32(ck, name, value, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        integer(c_int32_t), intent(inout), target :: value
        integer, intent(out), optional :: ierr
        call add_scalar(ck, name, HPCT_CKPT_I32, c_loc(value), ierr)
    end subroutine
    subroutine add_scalar_i64(ck, name, value, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        integer(c_int64_t), intent(inout), target :: value
        integer, intent(out), optional :: ierr
        call add_scalar(ck, name, HPCT_CKPT_I64, c_loc(value), ierr)
    end subroutine
    subroutine add_scalar_u8(ck, name, value, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(*), intent(in) :: name
        integer(c_int8_t), intent(inout), target :: value
        integer, intent(out), optional :: ierr
        call add_scalar(ck, name, HPCT_CKPT_U8, c_loc(value), ierr)
    end subroutine

    !> Which HPCT_CKPT_DUE_* reasons (bit mask) hold after step completed steps.
    subroutine hpct_ckpt_due(ck, step, due, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        integer(c_long), intent(in) :: step
        integer, intent(out) :: due
        integer, intent(out), optional :: ierr
        integer(c_int) :: d
        d = 0
        call finish(c_hpct_ckpt_due(ck%ptr, step, d), ck%ctx, "hpct_ckpt_due", ierr)
        due = d
    end subroutine

    !> Save params, opt's state (opt absent: none), the context RNG, meta and the extras;
    !> model (a description) overrides meta%model.
    subroutine hpct_ckpt_save(ck, params, meta, opt, model, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        type(hpct_params_t), intent(in) :: params
        type(hpct_ckpt_meta_t), intent(in) :: meta
        type(hpct_optimizer_t), intent(in), optional :: opt
        character(*), intent(in), optional :: model
        integer, intent(out), optional :: ierr
        type(hpct_ckpt_meta_t), target :: m
        character(kind=c_char), allocatable, target :: desc(:)
        type(c_ptr) :: po
        integer(c_int) :: s
        m = meta
        s = HPCT_SUCCESS
        if (present(model)) then
            s = check_string(ck%ctx, model, "the model description", "hpct_ckpt_save")
            desc = cchars(model)
            m%model = c_loc(desc)
        end if
        po = c_null_ptr
        if (present(opt)) po = opt%ptr
        if (s == 0) s = c_hpct_ckpt_save(ck%ptr, params%ptr, po, c_loc(m))
        call finish(s, ck%ctx, "hpct_ckpt_save", ierr)
    end subroutine

    subroutine hpct_ckpt_before_update(ck, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        integer, intent(out), optional :: ierr
        call finish(c_hpct_ckpt_before_update(ck%ptr), ck%ctx, "hpct_ckpt_before_update", ierr)
    end subroutine

    !> Wait for the asynchronous write in flight; its status.
    subroutine hpct_ckpt_wait(ck, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        integer, intent(out), optional :: ierr
        call finish(c_hpct_ckpt_wait(ck%ptr), ck%ctx, "hpct_ckpt_wait", ierr)
    end subroutine

    !> Load the newest checkpoint that verifies into params, opt (absent: none), the RNG, the
    !> extras and meta. HPCT_ERR_NOT_FOUND when there is none: pass ierr on a fresh start.
    subroutine hpct_ckpt_load_latest(ck, params, meta, opt, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        type(hpct_params_t), intent(in) :: params
        type(hpct_ckpt_meta_t), intent(inout), target :: meta
        type(hpct_optimizer_t), intent(in), optional :: opt
        integer, intent(out), optional :: ierr
        type(c_ptr) :: po
        po = c_null_ptr
        if (present(opt)) po = opt%ptr
        call finish(c_hpct_ckpt_load_latest(ck%ptr, params%ptr, po, c_loc(meta)), ck%ctx, &
            "hpct_ckpt_load_latest", ierr)
    end subroutine

    !> Path of the newest checkpoint this handle committed ("" before the first).
    subroutine hpct_ckpt_last_path(ck, path, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(:), allocatable, intent(out) :: path
        integer, intent(out), optional :: ierr
        type(c_ptr) :: p
        integer(c_int) :: s
        p = c_null_ptr
        s = c_hpct_ckpt_last_path(ck%ptr, p)
        path = fstr(p)
        call finish(s, ck%ctx, "hpct_ckpt_last_path", ierr)
    end subroutine

    !> Files the last hpct_ckpt_load_latest skipped, with reasons ("" when none).
    subroutine hpct_ckpt_rejected(ck, detail, ierr)
        type(hpct_ckpt_t), intent(in) :: ck
        character(:), allocatable, intent(out) :: detail
        integer, intent(out), optional :: ierr
        type(c_ptr) :: p
        integer(c_int) :: s
        p = c_null_ptr
        s = c_hpct_ckpt_rejected(ck%ptr, p)
        detail = fstr(p)
        call finish(s, ck%ctx, "hpct_ckpt_rejected", ierr)
    end subroutine

    !> Open one checkpoint file for inspection, list its datasets and verify each one's crc32c.
    subroutine hpct_ckpt_file_open(ctx, path, file, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        character(*), intent(in) :: path
        type(hpct_ckpt_file_t), intent(out) :: file
        integer, intent(out), optional :: ierr
        integer(c_int) :: s
        file%ctx = ctx%ptr
        s = check_string(ctx%ptr, path, "the path", "hpct_ckpt_file_open")
        if (s == 0) s = c_hpct_ckpt_file_open(ctx%ptr, cstr(path), file%ptr)
        call finish(s, ctx%ptr, "hpct_ckpt_file_open", ierr)
    end subroutine

    subroutine hpct_ckpt_file_close(file)
        type(hpct_ckpt_file_t), intent(inout) :: file
        call c_hpct_ckpt_file_close(file%ptr)
        file%ptr = c_null_ptr
    end subroutine

    !> The file's schema version (-1 if unreadable) and library version ("" if absent).
    subroutine hpct_ckpt_file_versions(file, schema, library, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        integer, intent(out), optional :: schema
        character(:), allocatable, intent(out), optional :: library
        integer, intent(out), optional :: ierr
        integer(c_int) :: sv, s
        type(c_ptr) :: p
        sv = -1
        p = c_null_ptr
        s = c_hpct_ckpt_file_versions(file%ptr, sv, p)
        if (present(schema)) schema = sv
        if (present(library)) library = fstr(p)
        call finish(s, file%ctx, "hpct_ckpt_file_versions", ierr)
    end subroutine

    !> The file's /meta values (meta%path: the file; hpct_f_string converts it).
    subroutine hpct_ckpt_file_meta(file, meta, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        type(hpct_ckpt_meta_t), intent(inout) :: meta
        integer, intent(out), optional :: ierr
        call finish(c_hpct_ckpt_file_meta(file%ptr, meta), file%ctx, "hpct_ckpt_file_meta", ierr)
    end subroutine

    subroutine hpct_ckpt_file_num_datasets(file, n, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        integer, intent(out) :: n
        integer, intent(out), optional :: ierr
        integer(c_int) :: m
        m = 0
        call finish(c_hpct_ckpt_file_num_datasets(file%ptr, m), file%ctx, "hpct_ckpt_file_num_datasets", ierr)
        n = m
    end subroutine

    !> Dataset i (0-based): its path, element type, element count and whether it is a scalar.
    subroutine hpct_ckpt_file_dataset(file, i, name, dtype, count, scalar, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        integer, intent(in) :: i
        character(:), allocatable, intent(out), optional :: name
        integer(c_int), intent(out), optional :: dtype
        integer(c_size_t), intent(out), optional :: count
        logical, intent(out), optional :: scalar
        integer, intent(out), optional :: ierr
        type(c_ptr), target :: pn
        integer(c_int), target :: d, sc
        integer(c_size_t), target :: n
        integer(c_int) :: s
        pn = c_null_ptr
        d = HPCT_CKPT_OTHER
        n = 0
        sc = 0
        s = c_hpct_ckpt_file_dataset(file%ptr, int(i, c_int), c_loc(pn), c_loc(d), c_loc(n), c_loc(sc))
        if (present(name)) name = fstr(pn)
        if (present(dtype)) dtype = d
        if (present(count)) count = n
        if (present(scalar)) scalar = sc /= 0
        call finish(s, file%ctx, "hpct_ckpt_file_dataset", ierr)
    end subroutine

    !> 0-based index of the dataset called name; HPCT_ERR_NOT_FOUND when absent.
    subroutine hpct_ckpt_file_find(file, name, index, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        character(*), intent(in) :: name
        integer, intent(out) :: index
        integer, intent(out), optional :: ierr
        integer(c_int) :: i, s
        i = -1
        s = check_string(file%ctx, name, "the name", "hpct_ckpt_file_find")
        if (s == 0) s = c_hpct_ckpt_file_find(file%ptr, cstr(name), i)
        index = i
        call finish(s, file%ctx, "hpct_ckpt_file_find", ierr)
    end subroutine

    !> Verdict of dataset i: HPCT_SUCCESS when its crc32c matches.
    subroutine hpct_ckpt_file_verify(file, i, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        integer, intent(in) :: i
        integer, intent(out), optional :: ierr
        call finish(c_hpct_ckpt_file_verify(file%ptr, int(i, c_int)), file%ctx, "hpct_ckpt_file_verify", ierr)
    end subroutine

    !> Shared body of the typed hpct_ckpt_file_read specifics.
    subroutine file_read(file, name, as, bytes, out, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        character(*), intent(in) :: name
        integer(c_int), intent(in) :: as
        integer, intent(in) :: bytes
        type(*), intent(inout), target :: out(..)
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_ckpt_file_read"
        type(c_ptr) :: p
        integer(c_size_t) :: n
        logical :: contiguous
        integer(c_int) :: s
        call array_ref(out, p, n, contiguous)
        s = check_string(file%ctx, name, "the name", fn)
        if (s == 0 .and. .not. contiguous) s = not_contiguous(file%ctx, "out", fn)
        if (s == 0 .and. element_bytes(as) /= bytes) s = ferror(file%ctx, HPCT_ERR_INVALID_ARG, fn // &
            ": the element type asked for does not match the Fortran array's")
        if (s == 0) s = c_hpct_ckpt_file_read(file%ptr, cstr(name), as, p, n)
        call finish(s, file%ctx, fn, ierr)
    end subroutine

    pure function element_bytes(dtype) result(b)
        integer(c_int), intent(in) :: dtype
        integer :: b
        select case (dtype)
        case (HPCT_CKPT_F32, HPCT_CKPT_I32)
            b = 4
        case (HPCT_CKPT_F64, HPCT_CKPT_I64, HPCT_CKPT_U64)
            b = 8
        case (HPCT_CKPT_U8, HPCT_CKPT_STRING)
            b = 1
        case default
            b = 0
        end select
    end function

    !> Read dataset name into out (size(out) must be its element count), as out's type:
    !> fp32/fp64 convert, the others are raw; as= overrides (e.g. HPCT_CKPT_U64 into int64).
    subroutine file_read_f32(file, name, out, as, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        character(*), intent(in) :: name
        real(c_float), intent(inout), target :: out(..)
        integer(c_int), intent(in), optional :: as
        integer, intent(out), optional :: ierr
        integer(c_int) :: t
        t = HPCT_CKPT_F32
        if (present(as)) t = as
        call file_read(file, name, t, 4, out, ierr)
    end subroutine
    subroutine file_read_f64(file, name, out, as, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        character(*), intent(in) :: name
        real(c_double), intent(inout), target :: out(..)
        integer(c_int), intent(in), optional :: as
        integer, intent(out), optional :: ierr
        integer(c_int) :: t
        t = HPCT_CKPT_F64
        if (present(as)) t = as
        call file_read(file, name, t, 8, out, ierr)
    end subroutine
    subroutine file_read_i32(file, name, out, as, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        character(*), intent(in) :: name
        integer(c_int32_t), intent(inout), target :: out(..)
        integer(c_int), intent(in), optional :: as
        integer, intent(out), optional :: ierr
        integer(c_int) :: t
        t = HPCT_CKPT_I32
        if (present(as)) t = as
        call file_read(file, name, t, 4, out, ierr)
    end subroutine
    subroutine file_read_i64(file, name, out, as, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        character(*), intent(in) :: name
        integer(c_int64_t), intent(inout), target :: out(..)
        integer(c_int), intent(in), optional :: as
        integer, intent(out), optional :: ierr
        integer(c_int) :: t
        t = HPCT_CKPT_I64
        if (present(as)) t = as
        call file_read(file, name, t, 8, out, ierr)
    end subroutine
    subroutine file_read_u8(file, name, out, as, ierr)
        type(hpct_ckpt_file_t), intent(in) :: file
        character(*), intent(in) :: name
        integer(c_int8_t), intent(inout), target :: out(..)
        integer(c_int), intent(in), optional :: as
        integer, intent(out), optional :: ierr
        integer(c_int) :: t
        t = HPCT_CKPT_U8
        if (present(as)) t = as
        call file_read(file, name, t, 1, out, ierr)
    end subroutine

    !> List the checkpoint files of dir, newest (highest step) first: the order
    !> hpct_ckpt_load_latest tries them in. An empty list is a success.
    subroutine hpct_ckpt_list_open(ctx, dir, list, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        character(*), intent(in) :: dir
        type(hpct_ckpt_list_t), intent(out) :: list
        integer, intent(out), optional :: ierr
        integer(c_int) :: s
        list%ctx = ctx%ptr
        s = check_string(ctx%ptr, dir, "the directory", "hpct_ckpt_list_open")
        if (s == 0) s = c_hpct_ckpt_list_open(ctx%ptr, cstr(dir), list%ptr)
        call finish(s, ctx%ptr, "hpct_ckpt_list_open", ierr)
    end subroutine

    !> Number of checkpoint files listed.
    subroutine hpct_ckpt_list_size(list, n, ierr)
        type(hpct_ckpt_list_t), intent(in) :: list
        integer, intent(out) :: n
        integer, intent(out), optional :: ierr
        integer(c_int) :: m
        m = 0
        call finish(c_hpct_ckpt_list_size(list%ptr, m), list%ctx, "hpct_ckpt_list_size", ierr)
        n = m
    end subroutine

    !> Path "dir/name" of file i in [0, n) (0-based), copied: it stays valid after close.
    subroutine hpct_ckpt_list_path(list, i, path, ierr)
        type(hpct_ckpt_list_t), intent(in) :: list
        integer, intent(in) :: i
        character(:), allocatable, intent(out) :: path
        integer, intent(out), optional :: ierr
        type(c_ptr) :: p
        integer(c_int) :: s
        p = c_null_ptr
        s = c_hpct_ckpt_list_path(list%ptr, int(i, c_int), p)
        path = ""
        if (s == 0) path = fstr(p)
        call finish(s, list%ctx, "hpct_ckpt_list_path", ierr)
    end subroutine

    subroutine hpct_ckpt_list_close(list)
        type(hpct_ckpt_list_t), intent(inout) :: list
        call c_hpct_ckpt_list_close(list%ptr)
        list%ptr = c_null_ptr
    end subroutine

    !> CRC32C continuing from crc (start at 0) over a string's characters.
    function crc32c_string(crc, data) result(r)
        integer(c_int32_t), intent(in) :: crc
        character(*), intent(in), target :: data
        integer(c_int32_t) :: r
        r = crc
        if (len(data) > 0) r = c_hpct_crc32c(crc, c_loc(data), int(len(data), c_size_t))
    end function

    !> Shared body of the array specifics: a non-contiguous array is refused (returns crc
    !> unchanged is not an option: it would look valid), so the whole array must be contiguous.
    function crc32c_array(crc, data, bytes) result(r)
        integer(c_int32_t), intent(in) :: crc
        type(*), intent(in), target :: data(..)
        integer, intent(in) :: bytes
        integer(c_int32_t) :: r
        type(c_ptr) :: p
        integer(c_size_t) :: n
        logical :: contiguous
        call array_ref(data, p, n, contiguous)
        if (.not. contiguous) call fatal(int(HPCT_ERR_INVALID_ARG, c_int), c_null_ptr, &
            "hpct_crc32c (the array is not contiguous)")
        r = crc
        if (n > 0) r = c_hpct_crc32c(crc, p, n * bytes)
    end function

    function crc32c_u8(crc, data) result(r)
        integer(c_int32_t), intent(in) :: crc
        integer(c_int8_t), intent(in), target :: data(..)
        integer(c_int32_t) :: r
        r = crc32c_array(crc, data, 1)
    end function
    function crc32c_i32(crc, data) result(r)
        integer(c_int32_t), intent(in) :: crc
        integer(c_int32_t), intent(in), target :: data(..)
        integer(c_int32_t) :: r
        r = crc32c_array(crc, data, 4)
    end function
    function crc32c_i64(crc, data) result(r)
        integer(c_int32_t), intent(in) :: crc
        integer(c_int64_t), intent(in), target :: data(..)
        integer(c_int32_t) :: r
        r = crc32c_array(crc, data, 8)
    end function
    function crc32c_f32(crc, data) result(r)
        integer(c_int32_t), intent(in) :: crc
        real(c_float), intent(in), target :: data(..)
        integer(c_int32_t) :: r
        r = crc32c_array(crc, data, 4)
    end function
    function crc32c_f64(crc, data) result(r)
        integer(c_int32_t), intent(in) :: crc
        real(c_double), intent(in), target :: data(..)
        integer(c_int32_t) :: r
        r = crc32c_array(crc, data, 8)
    end function

    !> Catch signals (absent: SIGTERM and SIGUSR1) until hpct_signals_uninstall. Call it first,
    !> before MPI_Init and hpct_init, with ctx not created yet: a signal during start-up is then
    !> kept and stops the run at its first step boundary instead of killing the process.
    subroutine hpct_signals_install(ctx, handle, signals, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        type(hpct_signals_t), intent(out) :: handle
        integer, intent(in), optional :: signals(:)
        integer, intent(out), optional :: ierr
        integer(c_int), allocatable, target :: sig(:)
        type(c_ptr) :: p
        integer(c_int) :: n
        handle%ctx = ctx%ptr
        p = c_null_ptr
        n = 0
        if (present(signals)) then
            sig = int(signals, c_int)
            n = int(size(sig), c_int)
            if (n > 0) p = c_loc(sig)
        end if
        call finish(c_hpct_signals_install(ctx%ptr, p, n, handle%ptr), ctx%ptr, "hpct_signals_install", ierr)
    end subroutine

    subroutine hpct_signals_uninstall(handle)
        type(hpct_signals_t), intent(inout) :: handle
        call c_hpct_signals_uninstall(handle%ptr)
        handle%ptr = c_null_ptr
    end subroutine

    !> .true. when a caught signal is pending; the first one's number (0 if none) and how
    !> many arrived. Callable at any time.
    function hpct_signals_pending(signo, count) result(pending)
        integer, intent(out), optional :: signo, count
        logical :: pending
        integer(c_int), target :: s, n
        pending = c_hpct_signals_pending(c_loc(s), c_loc(n)) /= 0
        if (present(signo)) signo = s
        if (present(count)) count = n
    end function

    !> Forget caught signals (e.g. after the checkpoint they asked for).
    subroutine hpct_signals_clear()
        call c_hpct_signals_clear()
    end subroutine

    !> Seconds until the batch job's end; HPCT_ERR_NOT_FOUND when none is known (pass ierr).
    subroutine hpct_walltime_remaining(ctx, seconds, ierr)
        type(hpct_ctx_t), intent(in) :: ctx
        real(c_double), intent(out) :: seconds
        integer, intent(out), optional :: ierr
        seconds = -1
        call finish(c_hpct_walltime_remaining(ctx%ptr, seconds), ctx%ptr, "hpct_walltime_remaining", ierr)
    end subroutine

    ! ==== training loop ======================================================================

    !> Synchronous data-parallel training of a built model on ds with opt; ck (absent: no
    !> checkpoints). HPCT_PREEMPTED is not an error: pass ierr to see it (exit 75 to requeue).
    subroutine hpct_train(model, opt, ds, cfg, res, ck, ierr)
        type(hpct_model_t), intent(in) :: model
        type(hpct_optimizer_t), intent(in) :: opt
        type(hpct_dataset_t), intent(in) :: ds
        type(hpct_train_config_t), intent(in) :: cfg
        type(hpct_train_result_t), intent(out) :: res
        type(hpct_ckpt_t), intent(in), optional :: ck
        integer, intent(out), optional :: ierr
        type(c_ptr) :: pk
        pk = c_null_ptr
        if (present(ck)) pk = ck%ptr
        call finish(c_hpct_train(model%ptr, opt%ptr, ds%ptr, pk, cfg, res), model%ctx, "hpct_train", ierr)
    end subroutine

    !> Mean loss and accuracy of the model over a whole dataset (opened with shuffle = 0).
    subroutine hpct_evaluate(model, ds, loss, accuracy, samples, ierr)
        type(hpct_model_t), intent(in) :: model
        type(hpct_dataset_t), intent(in) :: ds
        real(c_double), intent(out), optional :: loss, accuracy
        integer(c_long), intent(out), optional :: samples
        integer, intent(out), optional :: ierr
        real(c_double), target :: l, a
        integer(c_long), target :: n
        integer(c_int) :: s
        s = c_hpct_evaluate(model%ptr, ds%ptr, c_loc(l), c_loc(a), c_loc(n))
        if (s == 0) then
            if (present(loss)) loss = l
            if (present(accuracy)) accuracy = a
            if (present(samples)) samples = n
        end if
        call finish(s, model%ctx, "hpct_evaluate", ierr)
    end subroutine

    ! ==== in-situ training ===================================================================

    !> A session over a built model (params absent: the model's) or, without model, over a
    !> bring-your-own-gradients set params; ck (absent: none); cfg (absent: the defaults).
    subroutine hpct_insitu_create(opt, session, model, params, ck, cfg, ierr)
        type(hpct_optimizer_t), intent(in) :: opt
        type(hpct_insitu_t), intent(out) :: session
        type(hpct_model_t), intent(in), optional :: model
        type(hpct_params_t), intent(in), optional :: params
        type(hpct_ckpt_t), intent(in), optional :: ck
        type(hpct_insitu_config_t), intent(in), optional, target :: cfg
        integer, intent(out), optional :: ierr
        type(c_ptr) :: pm, pp, pk, pc
        pm = c_null_ptr
        pp = c_null_ptr
        pk = c_null_ptr
        pc = c_null_ptr
        if (present(model)) pm = model%ptr
        if (present(params)) pp = params%ptr
        if (present(ck)) pk = ck%ptr
        if (present(cfg)) pc = c_loc(cfg)
        session%ctx = opt%ctx
        session%model = pm
        call finish(c_hpct_insitu_create(pm, pp, opt%ptr, pk, pc, session%ptr), opt%ctx, &
            "hpct_insitu_create", ierr)
    end subroutine

    !> Collective: resume from the newest valid checkpoint (cfg%resume) or broadcast rank 0's
    !> parameters; step = optimizer steps already completed.
    subroutine hpct_insitu_start(session, step, ierr)
        type(hpct_insitu_t), intent(in) :: session
        integer(c_long), intent(out), optional :: step
        integer, intent(out), optional :: ierr
        integer(c_long), target :: n
        n = 0
        call finish_session(c_hpct_insitu_start(session%ptr, c_loc(n)), session, "hpct_insitu_start", ierr)
        if (present(step)) step = n
    end subroutine

    !> Status of an in-situ batch x(inputs, local_batch) (local_batch may be 0) and of the
    !> kind of its targets (labels or not); sets px, batch and the model's outputs.
    function check_insitu_inputs(session, x, labels, where, px, batch, outputs) result(s)
        type(hpct_insitu_t), intent(in) :: session
        real(c_float), intent(in), target :: x(:, :)
        logical, intent(in) :: labels
        character(*), intent(in) :: where
        type(c_ptr), intent(out) :: px
        integer(c_int), intent(out) :: batch, outputs
        integer(c_int) :: s, inputs, loss
        type(hpct_model_t) :: model
        px = c_null_ptr
        batch = int(size(x, 2), c_int)
        outputs = 0
        if (.not. c_associated(session%model)) then ! no model: C says what is wrong
            s = HPCT_SUCCESS
            if (.not. is_contiguous(x)) s = not_contiguous(session%ctx, "x(features, local_batch)", where)
            if (s == 0 .and. size(x) > 0) px = c_loc(x)
            return
        end if
        model%ptr = session%model
        model%ctx = session%ctx
        s = hpcti_f_model_io(model%ptr, inputs, outputs, loss)
        if (s == 0) s = check_matrix(session%ctx, x, int(inputs, c_size_t), size(x, 2, c_size_t), &
            "x(features, local_batch)", where, px)
        if (s == 0) s = wrong_targets(model, loss, labels, where)
    end function

    !> Collective: one step on x(inputs, local_batch) with int32 labels y(local_batch)
    !> (local_batch may differ between ranks, and be 0). HPCT_PREEMPTED (not an error: pass
    !> ierr) means the run stopped after this step's checkpoint: exit 75.
    subroutine insitu_step_labels(session, x, y, loss, ierr, preempted)
        type(hpct_insitu_t), intent(in) :: session
        real(c_float), intent(in), target :: x(:, :)
        integer(c_int32_t), intent(in), target :: y(:)
        real(c_float), intent(out), optional :: loss
        integer, intent(out), optional :: ierr
        logical, intent(out), optional :: preempted ! HPCT_PREEMPTED: without ierr, errors stop
        character(*), parameter :: fn = "hpct_insitu_step"
        type(c_ptr) :: px, py
        integer(c_int) :: s, batch, outputs
        s = check_insitu_inputs(session, x, .true., fn, px, batch, outputs)
        if (s == 0) s = check_vector(session%ctx, y, int(batch, c_size_t), "y(local_batch)", fn, py)
        if (s == 0) then
            s = insitu_step_call(session, px, py, batch, loss)
        else ! the step's agreement: every rank fails at once, naming this one
            s = hpcti_f_insitu_refused(session%ptr, s)
        end if
        if (present(preempted)) preempted = s == HPCT_PREEMPTED
        call finish_session(s, session, fn, ierr)
    end subroutine

    !> As above with fp32 targets y(outputs, local_batch) (MSE).
    subroutine insitu_step_values(session, x, y, loss, ierr, preempted)
        type(hpct_insitu_t), intent(in) :: session
        real(c_float), intent(in), target :: x(:, :)
        real(c_float), intent(in), target :: y(:, :)
        real(c_float), intent(out), optional :: loss
        integer, intent(out), optional :: ierr
        logical, intent(out), optional :: preempted ! HPCT_PREEMPTED: without ierr, errors stop
        character(*), parameter :: fn = "hpct_insitu_step"
        type(c_ptr) :: px, py
        integer(c_int) :: s, batch, outputs
        s = check_insitu_inputs(session, x, .false., fn, px, batch, outputs)
        if (.not. c_associated(session%model)) outputs = int(size(y, 1), c_int)
        if (s == 0) s = check_matrix(session%ctx, y, int(outputs, c_size_t), int(batch, c_size_t), &
            "y(outputs, local_batch)", fn, py)
        if (s == 0) then
            s = insitu_step_call(session, px, py, batch, loss)
        else ! the step's agreement: every rank fails at once, naming this one
            s = hpcti_f_insitu_refused(session%ptr, s)
        end if
        if (present(preempted)) preempted = s == HPCT_PREEMPTED
        call finish_session(s, session, fn, ierr)
    end subroutine

    function insitu_step_call(session, px, py, batch, loss) result(s)
        type(hpct_insitu_t), intent(in) :: session
        type(c_ptr), intent(in) :: px, py
        integer(c_int), intent(in) :: batch
        real(c_float), intent(out), optional :: loss
        integer(c_int) :: s
        real(c_float), target :: l
        l = 0
        s = c_hpct_insitu_step(session%ptr, px, py, batch, c_loc(l))
        if (present(loss)) loss = l
    end function

    !> Collective: a step on bring-your-own gradients (each the mean over local_batch samples
    !> whose mean loss was local_loss); loss = the global mean loss.
    subroutine hpct_insitu_step_grads(session, local_batch, local_loss, loss, ierr)
        type(hpct_insitu_t), intent(in) :: session
        integer, intent(in) :: local_batch
        real(c_float), intent(in) :: local_loss
        real(c_float), intent(out), optional :: loss
        integer, intent(out), optional :: ierr
        real(c_float), target :: l
        integer(c_int) :: s
        l = 0
        s = c_hpct_insitu_step_grads(session%ptr, int(local_batch, c_int), local_loss, c_loc(l))
        if (present(loss)) loss = l
        call finish_session(s, session, "hpct_insitu_step_grads", ierr)
    end subroutine

    subroutine hpct_insitu_progress(session, progress, ierr)
        type(hpct_insitu_t), intent(in) :: session
        type(hpct_progress_t), intent(out) :: progress
        integer, intent(out), optional :: ierr
        call finish_session(c_hpct_insitu_progress(session%ptr, progress), session, "hpct_insitu_progress", &
            ierr)
    end subroutine

    !> Collective: a final checkpoint (when due) and the asynchronous writes waited for.
    subroutine hpct_insitu_finish(session, ierr)
        type(hpct_insitu_t), intent(in) :: session
        integer, intent(out), optional :: ierr
        call finish_session(c_hpct_insitu_finish(session%ptr), session, "hpct_insitu_finish", ierr)
    end subroutine

    !> Shared body of the typed hpct_insitu_add_block specifics. The Fortran array order is
    !> reversed for the C call (row-major): the saved global array has the bytes of the
    !> Fortran global array.
    subroutine add_block(session, name, dtype, data, global_shape, first, ierr)
        type(hpct_insitu_t), intent(in) :: session
        character(*), intent(in) :: name
        integer(c_int), intent(in) :: dtype
        type(*), intent(in), target :: data(..)
        integer, intent(in) :: global_shape(:), first(:)
        integer, intent(out), optional :: ierr
        character(*), parameter :: fn = "hpct_insitu_add_block"
        type(c_ptr) :: p
        integer(c_size_t) :: n, g(3), o(3), c(3)
        integer(c_int) :: s, nd, k
        logical :: contiguous
        call array_ref(data, p, n, contiguous)
        nd = int(rank(data), c_int)
        s = check_string(session%ctx, name, "the name", fn)
        if (s == 0 .and. .not. contiguous) s = not_contiguous(session%ctx, "block '" // trim(name) // "'", fn)
        if (s == 0 .and. (nd < 1 .or. nd > 3 .or. size(global_shape) /= nd .or. size(first) /= nd)) &
            s = ferror(session%ctx, HPCT_ERR_INVALID_ARG, fn // ": '" // trim(name) // "': data of rank 1 to 3, " // &
            "with global_shape(:) and first(:) of that length")
        if (s == 0) then
            if (any(first < 1)) s = ferror(session%ctx, HPCT_ERR_INVALID_ARG, fn // ": '" // trim(name) // &
                "': first(:) holds 1-based global indices")
        end if
        if (s /= 0) then ! the other ranks' agreement: every rank fails at once, naming this one
            s = hpcti_f_block_refused(session%ptr, s)
        else
            do k = 1, nd
                g(nd + 1 - k) = int(global_shape(k), c_size_t)
                o(nd + 1 - k) = int(first(k) - 1, c_size_t)
                c(nd + 1 - k) = int(size(data, k), c_size_t)
            end do
            s = c_hpct_insitu_add_block(session%ptr, cstr(name), dtype, p, nd, g, o, c)
        end if
        call finish_session(s, session, fn, ierr)
    end subroutine

    !> Collective, before hpct_insitu_start: data is this rank's block (contiguous, TARGET,
    !> rank 1-3, alive while the session is) of a global array of global_shape(:), starting at
    !> the 1-based global index first(:). Saved as one global array and loaded at any number of
    !> ranks (hpctrain.h, doc/insitu.md); the blocks of all ranks must tile the global array.
    subroutine add_block_f32(session, name, data, global_shape, first, ierr)
        type(hpct_insitu_t), intent(in) :: session
        character(*), intent(in) :: name
        real(c_float), intent(inout), target :: data(..)
        integer, intent(in) :: global_shape(:), first(:)
        integer, intent(out), optional :: ierr
        call add_block(session, name, HPCT_CKPT_F32, data, global_shape, first, ierr)
    end subroutine
    subroutine add_block_f64(session, name, data, global_shape, first, ierr)
        type(hpct_insitu_t), intent(in) :: session
        character(*), intent(in) :: name
        real(c_double), intent(inout), target :: data(..)
        integer, intent(in) :: global_shape(:), first(:)
        integer, intent(out), optional :: ierr
        call add_block(session, name, HPCT_CKPT_F64, data, global_shape, first, ierr)
    end subroutine
    subroutine add_block_i32(session, name, data, global_shape, first, ierr)
        type(hpct_insitu_t), intent(in) :: session
        character(*), intent(in) :: name
        integer(c_int32_t), intent(inout), target :: data(..)
        integer, intent(in) :: global_shape(:), first(:)
        integer, intent(out), optional :: ierr
        call add_block(session, name, HPCT_CKPT_I32, data, global_shape, first, ierr)
    end subroutine
    subroutine add_block_i64(session, name, data, global_shape, first, ierr)
        type(hpct_insitu_t), intent(in) :: session
        character(*), intent(in) :: name
        integer(c_int64_t), intent(inout), target :: data(..)
        integer, intent(in) :: global_shape(:), first(:)
        integer, intent(out), optional :: ierr
        call add_block(session, name, HPCT_CKPT_I64, data, global_shape, first, ierr)
    end subroutine
    subroutine add_block_u8(session, name, data, global_shape, first, ierr)
        type(hpct_insitu_t), intent(in) :: session
        character(*), intent(in) :: name
        integer(c_int8_t), intent(inout), target :: data(..)
        integer, intent(in) :: global_shape(:), first(:)
        integer, intent(out), optional :: ierr
        call add_block(session, name, HPCT_CKPT_U8, data, global_shape, first, ierr)
    end subroutine

    subroutine hpct_insitu_destroy(session)
        type(hpct_insitu_t), intent(inout) :: session
        call c_hpct_insitu_destroy(session%ptr)
        session%ptr = c_null_ptr
    end subroutine

    !> The session of settings (a hpctrain.conf(5) file; "" for none) on comm, a
    !> type(MPI_Comm): see insitu_open_int.
    subroutine insitu_open_f08(settings, session, comm, overrides, allow_change, ierr)
        character(*), intent(in) :: settings
        type(hpct_insitu_t), intent(out) :: session
        type(MPI_Comm), intent(in) :: comm
        character(*), intent(in), optional :: overrides
        logical, intent(in), optional :: allow_change
        integer, intent(out), optional :: ierr
        call insitu_open_int(settings, session, comm%MPI_VAL, overrides, allow_change, ierr)
    end subroutine

    !> The same on an integer handle; comm absent: MPI_COMM_WORLD, with MPI_Init (and the
    !> preemption handlers installed before it) when the program did not call it, and
    !> MPI_Finalize in hpct_insitu_close. overrides: "key = value" items separated by ';';
    !> allow_change: resume from a checkpoint of other settings. Without ierr a failure (the
    !> same on every rank) ends the program after the first rank printed it: STOP 2 for a
    !> settings error (HPCT_ERR_INVALID_ARG, as hpctrain train exits 2), else STOP 1.
    subroutine insitu_open_int(settings, session, comm, overrides, allow_change, ierr)
        character(*), intent(in) :: settings
        type(hpct_insitu_t), intent(out) :: session
        integer, intent(in), optional :: comm
        character(*), intent(in), optional :: overrides
        logical, intent(in), optional :: allow_change
        integer, intent(out), optional :: ierr
        character(kind=c_char), allocatable, target :: over(:)
        type(c_ptr) :: po
        integer(c_int) :: s, flags, fcomm
        po = c_null_ptr
        flags = 0
        fcomm = HPCT_COMM_WORLD
        if (present(comm)) fcomm = int(comm, c_int)
        if (present(overrides)) then
            allocate (over, source=cchars(overrides))
            po = c_loc(over)
        end if
        if (present(allow_change)) then
            if (allow_change) flags = HPCT_INSITU_ALLOW_SETTINGS_CHANGE
        end if
        s = c_hpct_insitu_open(fcomm, cstr(settings), po, flags, session%ptr)
        session%ctx = hpcti_f_insitu_ctx(session%ptr)
        session%model = hpcti_f_insitu_model(session%ptr)
        session%opened = s == 0
        if (present(ierr)) then
            ierr = int(s)
        else if (s /= 0) then
            if (hpcti_f_rank(fcomm, merge(1_c_int, 0_c_int, present(comm))) <= 0) then ! every rank's: one prints
                write (error_unit, "(a)") "hpctrain: hpct_insitu_open failed: " // &
                    hpct_strerror(int(s)) // ": " // fstr(c_hpct_last_error(c_null_ptr))
                flush (error_unit)
            end if
            if (s == HPCT_ERR_INVALID_ARG) stop 2, quiet=.true. ! every rank's, agreed: a clean end
            stop 1, quiet=.true.
        end if
    end subroutine

    !> finish for a call on a session: one of hpct_insitu_open, without ierr, ends on an error
    !> every rank returned (agreed) as the open call does: the first rank prints it, then STOP 2
    !> (HPCT_ERR_INVALID_ARG: e.g. a checkpoint of other settings) or STOP 1 on every rank.
    subroutine finish_session(status, session, where, ierr)
        integer(c_int), intent(in) :: status
        type(hpct_insitu_t), intent(in) :: session
        character(*), intent(in) :: where
        integer, intent(out), optional :: ierr
        type(hpct_ctx_t) :: ctx
        type(hpct_topology_t) :: topo
        character(:), allocatable :: detail
        integer :: e
        if (.not. present(ierr) .and. status < 0 .and. session%opened) then
            if (c_hpct_last_error_shared(session%ctx) /= 0) then
                detail = fstr(c_hpct_last_error(session%ctx)) ! before hpct_topology clears it
                ctx%ptr = session%ctx
                call hpct_topology(ctx, topo, e)
                if (e /= 0 .or. topo%rank == 0) write (error_unit, "(a)") "hpctrain: " // where // &
                    " failed: " // hpct_strerror(int(status)) // ": " // detail
                flush (error_unit)
                if (status == HPCT_ERR_INVALID_ARG) stop 2, quiet=.true.
                stop 1, quiet=.true.
            end if
        end if
        call finish(status, session%ctx, where, ierr)
    end subroutine


    !> hpct_insitu_finish unless it succeeded, then free the session and what
    !> hpct_insitu_open made for it (model, optimizer, checkpoints, data, context).
    subroutine hpct_insitu_close(session, ierr)
        type(hpct_insitu_t), intent(inout) :: session
        integer, intent(out), optional :: ierr
        integer(c_int) :: s
        s = c_hpct_insitu_close(session%ptr)
        session%ptr = c_null_ptr
        session%ctx = c_null_ptr
        session%model = c_null_ptr
        call finish(s, c_null_ptr, "hpct_insitu_close", ierr) ! detail: hpct_last_error(NULL)
    end subroutine

    !> The session model's outputs out(outputs, batch) for x(inputs, batch).
    subroutine hpct_insitu_predict(session, x, out, ierr)
        type(hpct_insitu_t), intent(in) :: session
        real(c_float), intent(in), target :: x(:, :)
        real(c_float), intent(inout), target :: out(:, :)
        integer, intent(out), optional :: ierr
        type(hpct_model_t) :: m
        if (.not. c_associated(session%model)) then
            call finish(ferror(session%ctx, HPCT_ERR_STATE, "hpct_insitu_predict: the session " // &
                "has no model (it brings its own gradients)"), session%ctx, "hpct_insitu_predict", ierr)
            return
        end if
        m%ptr = session%model
        m%ctx = session%ctx
        call hpct_model_forward(m, x, out, ierr)
    end subroutine
    ! ==== settings files (hpctrain.conf(5)) ===================================================

    !> Every key at its documented default.
    subroutine hpct_settings_defaults(s, ierr)
        type(hpct_settings_t), intent(inout) :: s
        integer, intent(out), optional :: ierr
        call finish(c_hpct_settings_defaults(s), c_null_ptr, "hpct_settings_defaults", ierr)
    end subroutine

    !> One key from text; source names it in messages (absent: "argument").
    subroutine hpct_settings_set(s, key, value, source, ierr)
        type(hpct_settings_t), intent(inout) :: s
        character(*), intent(in) :: key, value
        character(*), intent(in), optional :: source
        integer, intent(out), optional :: ierr
        character(:), allocatable :: src
        src = "argument"
        if (present(source)) src = source
        call finish(c_hpct_settings_set(s, cstr(key), value // c_null_char, cstr(src)), c_null_ptr, &
            "hpct_settings_set", ierr)
    end subroutine

    !> A "key = value" file; errors name the file and line (hpct_last_error()).
    subroutine hpct_settings_read_file(s, path, ierr)
        type(hpct_settings_t), intent(inout) :: s
        character(*), intent(in) :: path
        integer, intent(out), optional :: ierr
        call finish(c_hpct_settings_read_file(s, cstr(path)), c_null_ptr, "hpct_settings_read_file", ierr)
    end subroutine

    !> The HPCT_<KEY> environment variables.
    subroutine hpct_settings_read_env(s, ierr)
        type(hpct_settings_t), intent(inout) :: s
        integer, intent(out), optional :: ierr
        call finish(c_hpct_settings_read_env(s), c_null_ptr, "hpct_settings_read_env", ierr)
    end subroutine

    !> The rules between keys for use (HPCT_SETTINGS_TRAIN or HPCT_SETTINGS_INSITU).
    subroutine hpct_settings_check(s, use, ierr)
        type(hpct_settings_t), intent(in) :: s
        integer, intent(in) :: use
        integer, intent(out), optional :: ierr
        call finish(c_hpct_settings_check(s, int(use, c_int)), c_null_ptr, "hpct_settings_check", ierr)
    end subroutine

    !> The name of key i (0, 1, ...); "" past the last.
    function hpct_settings_key(i) result(name)
        integer, intent(in) :: i
        character(:), allocatable :: name
        name = fstr(c_hpct_settings_key(int(i, c_int)))
    end function

    !> The value of key in file syntax.
    subroutine hpct_settings_format(s, key, value, ierr)
        type(hpct_settings_t), intent(in) :: s
        character(*), intent(in) :: key
        character(:), allocatable, intent(out) :: value
        integer, intent(out), optional :: ierr
        character(kind=c_char), target :: &
            buf(max(HPCT_SETTINGS_PATH_MAX, HPCT_SETTINGS_LAYERS_MAX) + 8) ! a path or the layers
        integer(c_int) :: st
        buf = c_null_char
        st = c_hpct_settings_format(s, cstr(key), buf, int(size(buf), c_size_t))
        value = fstr_chars(buf)
        call finish(st, c_null_ptr, "hpct_settings_format", ierr)
    end subroutine

    !> The 64-bit hash of the hashed keys (the checkpoints' configuration hash; the bits of
    !> C's uint64_t).
    function hpct_settings_hash(s) result(h)
        type(hpct_settings_t), intent(in) :: s
        integer(c_int64_t) :: h
        h = c_hpct_settings_hash(s)
    end function

    !> The detail of the session's last error; an unassociated session: of this thread's last
    !> failed hpct_insitu_open or hpct_insitu_close.
    function hpct_insitu_last_error(session) result(msg)
        type(hpct_insitu_t), intent(in) :: session
        character(:), allocatable :: msg
        msg = fstr(c_hpct_insitu_last_error(session%ptr))
    end function
end module hpctrain
