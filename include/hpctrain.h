/*
 * hpctrain.h: the one public header of libhpctrain, a static C library for
 * synchronous data-parallel training on HPC batch clusters.
 *
 * Conventions: every call returns an hpct_status_t (0 success, negative
 * error, positive informational); handles are opaque; arrays are fp32,
 * row-major [rows, cols]; sizes are element counts unless named *_bytes.
 * The library never exits, aborts, or prints unless a log level is set.
 *
 * Config structs are versioned and append-only; start each from its ..._INITIALIZER. Those
 * are positional, one value per field in field order with the field named in a comment, not
 * designated (.field = value): C++ before C++20 rejects designated initialisers, and the
 * Fortran bind(C) mirrors of the structs follow the same order. Fields documented "0/1"
 * are flags; the others that take one of a set of named values are enums (int-sized).
 */
#ifndef HPCTRAIN_H
#define HPCTRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ---------------------------------------------------------- */

/* HPCT_VERSION_MAJOR, _MINOR, _PATCH and HPCT_VERSION_STRING: the release of this header,
 * which configure writes (the version of configure.ac's AC_INIT) into hpctrain_version.h,
 * installed beside this file. */
#include "hpctrain_version.h"
/* A version as one comparable integer, 0x00MMmmpp. */
#define HPCT_MAKE_VERSION(major, minor, patch) (((major) << 16) | ((minor) << 8) | (patch))
/* This header's release as one integer that grows with every release. */
#define HPCT_VERSION HPCT_MAKE_VERSION(HPCT_VERSION_MAJOR, HPCT_VERSION_MINOR, HPCT_VERSION_PATCH)
/* The API this header declares: HPCT_MAKE_VERSION(major, minor, 0), as patch releases never
 * change it. At compile time, #if HPCT_API_VERSION >= HPCT_MAKE_VERSION(0, 2, 0) guards
 * calls added in 0.2. At run time, the linked library implements this header's API when
 *   hpct_get_api_version() >> 16 == HPCT_API_VERSION >> 16      (same major) and
 *   hpct_get_api_version() >= HPCT_API_VERSION                  (at least as new);
 * deprecated names are removed one minor release after NEWS announces them. */
#define HPCT_API_VERSION HPCT_MAKE_VERSION(HPCT_VERSION_MAJOR, HPCT_VERSION_MINOR, 0)

/* Version of the library actually linked (may differ from the header's). */
void hpct_get_version(int *major, int *minor, int *patch);
/* HPCT_API_VERSION of the library actually linked. */
unsigned hpct_get_api_version(void);

/* Marks a name kept for one release after it was renamed (NEWS names its successor);
 * compilers without the attribute see a plain declaration. */
#if defined(__GNUC__) || defined(__clang__)
#define HPCT_DEPRECATED(successor) __attribute__((deprecated("use " successor)))
#else
#define HPCT_DEPRECATED(successor)
#endif

/* ---- Status codes ----------------------------------------------------- */

typedef int hpct_status_t;

#define HPCT_SUCCESS         0   /* it worked */
#define HPCT_PREEMPTED       1   /* stopped cleanly at a step boundary on a signal */
#define HPCT_ERR_INVALID_ARG -1  /* a NULL handle, bad size, or out-of-range value */
#define HPCT_ERR_NO_MEMORY   -2  /* an allocation failed */
#define HPCT_ERR_STATE       -3  /* called in the wrong order (e.g. train before build) */
#define HPCT_ERR_UNSUPPORTED -4  /* feature or backend not built into this library */
#define HPCT_ERR_IO          -5  /* a file could not be opened, read or written */
#define HPCT_ERR_FORMAT      -6  /* a file or dataset has the wrong layout or syntax */
#define HPCT_ERR_CHECKSUM    -7  /* stored and computed checksums differ */
#define HPCT_ERR_NOT_FOUND   -8  /* a named file, dataset or parameter does not exist */
#define HPCT_ERR_NONFINITE   -9  /* NaN or Inf in inputs, loss or gradients */
#define HPCT_ERR_COMM        -10 /* a collective failed */
#define HPCT_ERR_TIMEOUT     -11 /* a collective missed its deadline (a rank hung) */
#define HPCT_ERR_DIVERGED    -12 /* replicas no longer hold identical parameters */
#define HPCT_ERR_INTERNAL    -13 /* a bug in libhpctrain: please report it */
#define HPCT_ERR_DEVICE      -14 /* a CUDA, cuBLAS or NCCL call failed (named in the detail) */
#define HPCT_ERR_BUSY        -15 /* held by another run (a locked checkpoint directory) */
#define HPCT_ERR_LOSS_DIVERGED -16 /* the training loss blew up (hpct_train's divergence guard) */

/* Static, never-NULL description of a status code. */
const char *hpct_strerror(hpct_status_t status);

/* ---- Context ---------------------------------------------------------- */

typedef struct hpct_ctx *hpct_ctx_t;

typedef enum { HPCT_BACKEND_CPU = 0, HPCT_BACKEND_CUDA = 1 } hpct_backend_t;

typedef enum {
    HPCT_LOG_NONE = 0,  /* silent (default) */
    HPCT_LOG_ERROR = 1, /* errors, on stderr */
    HPCT_LOG_WARN = 2,
    HPCT_LOG_INFO = 3,
    HPCT_LOG_DEBUG = 4
} hpct_log_level_t;

/* Wire format of gradients in the averaging collectives; accumulation is always fp32. */
typedef enum {
    HPCT_TRANSPORT_FP32 = 0, /* exact fp32 (default) */
    HPCT_TRANSPORT_BF16 = 1, /* bfloat16 on the wire, round to nearest even */
    HPCT_TRANSPORT_FP16 = 2  /* IEEE half on the wire (values beyond 65504 become Inf) */
} hpct_transport_t;

/* Versioned, append-only; always start from HPCT_CONFIG_INITIALIZER. */
#define HPCT_CONFIG_VERSION 1
typedef struct hpct_config {
    unsigned version;           /* HPCT_CONFIG_VERSION */
    hpct_backend_t backend;     /* where tensors live */
    int device;                 /* GPU ordinal; -1 picks the local rank */
    hpct_log_level_t log_level; /* HPCT_LOG_NONE (default) .. HPCT_LOG_DEBUG */
    uint64_t seed;              /* seeds initialisation and the context RNG */
    int num_threads;            /* threads for CPU math (BLAS); 0 leaves the BLAS default */
    /* Distributed runtime (used by hpct_init / hpct_init_comm; see that section). */
    double collective_timeout_s;     /* deadline of every collective, seconds (default 300) */
    size_t fusion_bytes;             /* gradient fusion buffer, bytes (default 16 MiB) */
    long consistency_interval;       /* steps between replica-consistency checks; 0 = never */
    hpct_transport_t grad_transport; /* HPCT_TRANSPORT_FP32 (default), _BF16 or _FP16 */
} hpct_config_t;

/* clang-format off */
#define HPCT_CONFIG_INITIALIZER {                                                                  \
    HPCT_CONFIG_VERSION, /* version */                                                             \
    HPCT_BACKEND_CPU,    /* backend */                                                             \
    -1,                  /* device: the local rank */                                              \
    HPCT_LOG_NONE,       /* log_level: silent */                                                   \
    42,                  /* seed */                                                                \
    0,                   /* num_threads: the BLAS default */                                       \
    300.0,               /* collective_timeout_s */                                                \
    (size_t)16 << 20,    /* fusion_bytes: 16 MiB */                                                \
    0,                   /* consistency_interval: never */                                         \
    HPCT_TRANSPORT_FP32  /* grad_transport */                                                      \
}
/* clang-format on */

/* Create a context from cfg (NULL means the defaults). */
hpct_status_t hpct_ctx_create(const hpct_config_t *cfg, hpct_ctx_t *ctx);
/* Free a context; NULL is accepted. Free its models and optimizers first. */
void hpct_ctx_destroy(hpct_ctx_t ctx);
/* Detail of the context's most recent error ("" if none); valid until the next call. With
 * ctx NULL: the detail of this thread's last failed hpct_init or hpct_init_comm (they free
 * the context they fail to make); else, for a call given a NULL context or handle (never
 * created, or its creation failed: HPCT_ERR_INVALID_ARG with nowhere to put a detail), it
 * says that. */
const char *hpct_last_error(hpct_ctx_t ctx);
/* 1 when the last error was agreed across the ranks: every rank returned the same status and
 * holds the same detail, which names the failing rank; print it once (rank 0). 0 for an
 * error of this rank alone: print it with the rank. */
int hpct_last_error_shared(hpct_ctx_t ctx);

/* The context RNG (xoshiro256**): 4 words of state, saved and restored by checkpoints. */
#define HPCT_RNG_STATE_WORDS 4
hpct_status_t hpct_rng_get_state(hpct_ctx_t ctx, uint64_t state[HPCT_RNG_STATE_WORDS]);
hpct_status_t hpct_rng_set_state(hpct_ctx_t ctx, const uint64_t state[HPCT_RNG_STATE_WORDS]);

/* ---- Parameter sets (built-in models and bring-your-own-gradients) ----- */

/* Named (parameter, gradient) buffer pairs that an optimizer updates. */
typedef struct hpct_params *hpct_params_t;

/* An empty set whose buffers the caller owns. */
hpct_status_t hpct_params_create(hpct_ctx_t ctx, hpct_params_t *params);
/* Free a set made by hpct_params_create (never the caller's buffers). */
void hpct_params_destroy(hpct_params_t params);
/* Longest parameter name. Names are checkpoint dataset paths: '/' separates non-empty parts
 * (not "." or ".."), and "a" and "a/b" cannot both be registered. */
#define HPCT_PARAM_NAME_MAX 200
/* Add a buffer pair of count floats in the backend's memory (device pointers on the cuda
 * backend, host memory on cpu); name is copied and must be unique. Register every
 * buffer before creating an optimizer over the set (HPCT_ERR_STATE afterwards). Gradients
 * written on a CUDA stream of the caller's own: synchronise it before averaging them. */
hpct_status_t hpct_params_register(hpct_params_t params, const char *name, float *param,
                                   float *grad, size_t count);
/* Number of registered buffers and their total element count. */
hpct_status_t hpct_params_size(hpct_params_t params, int *num_buffers, size_t *total_count);
/* Look up buffer i: its name, parameter and gradient pointers and element count. A built-in
 * model's gradients move once, on a cpu context whose node window averages in place, at the
 * first hpct_params_broadcast, hpct_params_average_grads or hpct_model_set_grad_averaging
 * (model, 1): take gradient pointers after it (the ones taken before are stale). */
hpct_status_t hpct_params_get(hpct_params_t params, int i, const char **name, float **param,
                              float **grad, size_t *count);
/* Set every gradient to zero. */
hpct_status_t hpct_params_zero_grads(hpct_params_t params);
/* Multiply every gradient by factor (e.g. 1/micro-batches). */
hpct_status_t hpct_params_scale_grads(hpct_params_t params, float factor);
/* L2 norm of all gradients together, computed in double precision. */
hpct_status_t hpct_params_grad_norm(hpct_params_t params, double *norm);

/* ---- Built-in models ------------------------------------------------- */

typedef struct hpct_model *hpct_model_t;

typedef enum {
    HPCT_ACT_IDENTITY = 0,
    HPCT_ACT_RELU = 1,
    HPCT_ACT_TANH = 2,
    HPCT_ACT_GELU = 3 /* tanh approximation */
} hpct_activation_t;

typedef enum {
    HPCT_LOSS_SOFTMAX_CE = 0, /* targets: int32 class labels [batch] */
    HPCT_LOSS_MSE = 1         /* targets: float [batch, outputs]; mean over all elements */
} hpct_loss_t;

typedef enum {
    HPCT_INIT_AUTO = 0,  /* He for ReLU/GELU, Xavier otherwise */
    HPCT_INIT_HE = 1,    /* normal(0, sqrt(2 / fan_in)) */
    HPCT_INIT_XAVIER = 2 /* uniform(+-sqrt(6 / (fan_in + fan_out))) */
} hpct_init_t;

/* An empty sequential model taking [batch, input_features] fp32 inputs. */
hpct_status_t hpct_model_create(hpct_ctx_t ctx, int input_features, hpct_model_t *model);
void hpct_model_destroy(hpct_model_t model);
/* Append y = act(x W^T + b), W [out, in], b [out] (x: the previous values, flat). */
hpct_status_t hpct_model_add_dense(hpct_model_t model, int out_features, hpct_activation_t act,
                                   hpct_init_t init);
/* Convolution stacks. Activations are channels-first per sample, [C, W], [C, H, W] or
 * [C, D, H, W] (doc/layers.md): a model's flat inputs get such a shape from
 * hpct_model_add_reshape; a dense layer takes any shape as its flat values. */
typedef enum {
    HPCT_PAD_SAME = 0, /* ceil(size / stride) outputs; zeros around the input, odd one after */
    HPCT_PAD_VALID = 1 /* windows inside the input only: (size - kernel) / stride + 1 outputs */
} hpct_padding_t;

typedef enum { HPCT_POOL_MAX = 0, HPCT_POOL_AVG = 1 } hpct_pool_t;

/* Give the current values the shape [channels, spatial[0 .. dims)] (dims 1 to 3), or flat
 * [channels] (dims 0); the value count must not change. No compute, no memory. */
hpct_status_t hpct_model_add_reshape(hpct_model_t model, int channels, int dims,
                                     const int *spatial);
/* Append y = act(conv(x, W) + b) over every spatial dimension: W [out_channels, in_channels,
 * kernel...] (PyTorch's layout), b [out_channels]; stride >= 1 (1 or 2 typical). */
hpct_status_t hpct_model_add_conv(hpct_model_t model, int out_channels, int kernel, int stride,
                                  hpct_padding_t padding, hpct_activation_t act, hpct_init_t init);
/* Append y = act(pool(x)): max or mean over window^dims inputs, every stride, no padding. */
hpct_status_t hpct_model_add_pool(hpct_model_t model, hpct_pool_t kind, int window, int stride,
                                  hpct_activation_t act);
/* Append y = act(x repeated factor times along every spatial dimension) (nearest neighbour). */
hpct_status_t hpct_model_add_upsample(hpct_model_t model, int factor, hpct_activation_t act);
/* Append the layers of a description (hpctrain.conf(5)'s layers key), comma-separated:
 * "reshape CxHxW", "conv C [kK] [sS] [same|valid]", "maxpool W [sS]", "avgpool W [sS]",
 * "upsample F", "dense N", each with an optional activation word (identity, relu, tanh, gelu):
 * by default act for conv and dense, identity for pooling and upsampling, and identity for the
 * last item (the output layer). Defaults: k3, s1, same; pooling stride = window. */
hpct_status_t hpct_model_add_layers(hpct_model_t model, const char *spec, hpct_activation_t act);
/* Choose the loss applied to the last layer's output (default softmax CE). */
hpct_status_t hpct_model_set_loss(hpct_model_t model, hpct_loss_t loss);
/* Allocate every buffer for batches up to max_batch and initialise the weights from
 * the context seed. No allocation happens after this call. */
hpct_status_t hpct_model_build(hpct_model_t model, int max_batch);
/* The model's parameters as a set (owned by the model; do not destroy). */
hpct_status_t hpct_model_params(hpct_model_t model, hpct_params_t *params);
/* Input and output widths. */
hpct_status_t hpct_model_shape(hpct_model_t model, int *inputs, int *outputs);
/* One-line description, e.g. "dense 784-512(relu)-10(identity) softmax_ce", into buf [len]. */
hpct_status_t hpct_model_describe(hpct_model_t model, char *buf, size_t len);

/* Inputs, targets and outputs of the model calls below (and of hpct_insitu_step and
 * hpct_insitu_predict) are host memory, or on the cuda backend device memory too: device (and
 * managed) arrays are read and written in place, host arrays are staged (doc/gpu.md). */
/* Forward only: out [batch, outputs] receives the last layer (logits for CE). */
hpct_status_t hpct_model_forward(hpct_model_t model, const float *x, int batch, float *out);
/* Forward and backward on one batch: loss is the batch mean; gradients are
 * overwritten (accumulate = 0) or added to (accumulate = 1). */
hpct_status_t hpct_model_loss_grad(hpct_model_t model, const float *x, const void *targets,
                                   int batch, int accumulate, float *loss);
/* Mean loss and accuracy (CE only; -1 for MSE) over n samples, weights unchanged. */
hpct_status_t hpct_model_evaluate(hpct_model_t model, const float *x, const void *targets, size_t n,
                                  double *loss, double *accuracy);

/* ---- Optimizers and learning-rate schedules --------------------------- */

typedef struct hpct_optimizer *hpct_optimizer_t;

typedef enum { HPCT_OPT_SGD = 0, HPCT_OPT_ADAMW = 1 } hpct_optimizer_kind_t;
typedef enum {
    HPCT_SCHED_CONSTANT = 0,
    HPCT_SCHED_STEP = 1,
    HPCT_SCHED_COSINE = 2
} hpct_schedule_t;

/* Versioned, append-only; always start from HPCT_OPTIM_CONFIG_INITIALIZER. */
#define HPCT_OPTIM_CONFIG_VERSION 1
typedef struct hpct_optim_config {
    unsigned version;           /* HPCT_OPTIM_CONFIG_VERSION */
    hpct_optimizer_kind_t kind; /* HPCT_OPT_SGD (default) or HPCT_OPT_ADAMW */
    float lr;                   /* peak learning rate */
    float momentum;             /* SGD */
    int nesterov;               /* SGD, 0/1: 1 for Nesterov momentum */
    float weight_decay;         /* SGD: L2 added to the gradient; AdamW: decoupled */
    float beta1, beta2, eps;    /* AdamW */
    float clip_norm;            /* clip the global gradient norm to this; 0 = off */
    hpct_schedule_t schedule;   /* HPCT_SCHED_CONSTANT (default), _STEP or _COSINE */
    long warmup_steps;          /* linear warmup from lr/warmup to lr; 0 = none */
    long step_size;             /* STEP: multiply by gamma every step_size steps */
    float gamma;                /* STEP decay factor */
    long total_steps;           /* COSINE: steps (after warmup) to reach min_lr */
    float min_lr;               /* COSINE floor */
} hpct_optim_config_t;

/* clang-format off */
#define HPCT_OPTIM_CONFIG_INITIALIZER {                                                            \
    HPCT_OPTIM_CONFIG_VERSION, /* version */                                                       \
    HPCT_OPT_SGD,              /* kind */                                                          \
    0.01f,                     /* lr */                                                            \
    0.0f,                      /* momentum */                                                      \
    0,                         /* nesterov */                                                      \
    0.0f,                      /* weight_decay */                                                  \
    0.9f,                      /* beta1 */                                                         \
    0.999f,                    /* beta2 */                                                         \
    1e-8f,                     /* eps */                                                           \
    0.0f,                      /* clip_norm: off */                                                \
    HPCT_SCHED_CONSTANT,       /* schedule */                                                      \
    0,                         /* warmup_steps */                                                  \
    1,                         /* step_size */                                                     \
    0.1f,                      /* gamma */                                                         \
    1,                         /* total_steps */                                                   \
    0.0f                       /* min_lr */                                                        \
}
/* clang-format on */

/* An optimizer over params (which must outlive it); it allocates its own state. */
hpct_status_t hpct_optimizer_create(hpct_params_t params, const hpct_optim_config_t *cfg,
                                    hpct_optimizer_t *opt);
void hpct_optimizer_destroy(hpct_optimizer_t opt);
/* Clip (if asked) and apply one update with the scheduled LR; advances the step. */
hpct_status_t hpct_optimizer_step(hpct_optimizer_t opt);
/* Learning rate the schedule gives at a step (0-based), without side effects. */
hpct_status_t hpct_optimizer_lr_at(hpct_optimizer_t opt, long step, float *lr);
/* Updates applied so far; set it when resuming. */
hpct_status_t hpct_optimizer_get_step(hpct_optimizer_t opt, long *step);
hpct_status_t hpct_optimizer_set_step(hpct_optimizer_t opt, long step);
/* Number of state buffers per parameter buffer (SGD with momentum 1, AdamW 2, else 0)
 * and the state of parameter buffer i, slot k (e.g. momentum, first/second moment). */
hpct_status_t hpct_optimizer_state(hpct_optimizer_t opt, int i, int k, float **state,
                                   size_t *count);
hpct_status_t hpct_optimizer_state_slots(hpct_optimizer_t opt, int *slots);

/* ---- Sharded HDF5 datasets (lib/data) ---------------------------------- */

/* A training set is a list of HDF5 shards named by a text manifest (doc/data-formats.md).
 * Sample i of the dataset is the i-th row of the concatenation of the shards, in manifest
 * order. Shuffle contract (relied on for resume at any world size):
 *   perm_e = hpct_data_permutation(seed, e, N)   (identity when shuffle is off)
 *   global batch (e, s) = samples perm_e[s*B .. s*B + B - 1], B = global_batch,
 *   s = 0 .. floor(N / B) - 1 (the last partial batch of each epoch is dropped),
 *   rank r of W takes the contiguous slice [r*B/W, (r+1)*B/W) of that batch.
 * The batch contents depend on (seed, epoch, step, B) only, never on W. */
typedef struct hpct_dataset *hpct_dataset_t;

typedef enum {
    HPCT_CHECKSUM_FULL = 0, /* hash every shard's bytes before HDF5 opens it */
    HPCT_CHECKSUM_SIZE = 1, /* compare file sizes only */
    HPCT_CHECKSUM_OFF = 2   /* trust the files */
} hpct_checksum_mode_t;

typedef enum {
    HPCT_NONFINITE_ERROR = 0, /* a NaN/Inf input makes hpct_dataset_next fail */
    HPCT_NONFINITE_SKIP = 1   /* skip (on every rank) each global batch holding one; counted */
} hpct_nonfinite_policy_t;

typedef enum { HPCT_DTYPE_FLOAT32 = 0, HPCT_DTYPE_INT32 = 1 } hpct_dtype_t;

/* Where a distributed job keeps the samples (environment HPCT_DATA_STORE=auto|off|job|node
 * overrides the config on every rank; the choice is logged at INFO). */
typedef enum {
    HPCT_STORE_AUTO = 0, /* with a context from hpct_init, W > 1, and a set that does not fit
                            memory_budget_bytes (or whose W_node copies would take over half
                            the node's memory): node store when the set takes at most half the
                            node's memory and the nodes hold equal rank counts, else job store
                            when its 1/W share fits the budget, else streaming */
    HPCT_STORE_OFF = 1,  /* every rank loads the whole set or streams it (hpct_ctx_create) */
    HPCT_STORE_JOB = 2,  /* each rank reads and holds ~N/W samples once; batches are exchanged
                            (MPI_Alltoallv) each step; open is collective over the job */
    HPCT_STORE_NODE = 3  /* each rank reads ~N/W once; the nodes share their parts, and each
                            node holds the whole set once in an MPI-3 shared window that its
                            ranks read with no MPI per step; open is collective */
} hpct_store_mode_t;

/* Versioned, append-only; always start from HPCT_DATA_CONFIG_INITIALIZER. */
#define HPCT_DATA_CONFIG_VERSION 2
typedef struct hpct_data_config {
    unsigned version;         /* HPCT_DATA_CONFIG_VERSION */
    const char *inputs_name;  /* HDF5 dataset of inputs [N, ...] in every shard */
    const char *targets_name; /* HDF5 dataset of targets [N, ...] in every shard */
    hpct_checksum_mode_t checksum;
    hpct_nonfinite_policy_t nonfinite;
    int shuffle;                /* 0/1: 1 permutes per epoch (training), 0 keeps file order */
    uint64_t seed;              /* shuffle seed */
    int prefetch_depth;         /* batches a background thread reads ahead; 0: read in next() */
    size_t memory_budget_bytes; /* load the whole set when it fits, else stream with pread */
    hpct_store_mode_t store;    /* version 2: HPCT_STORE_AUTO, _OFF, _JOB or _NODE */
} hpct_data_config_t;

/* clang-format off */
#define HPCT_DATA_CONFIG_INITIALIZER {                                                             \
    HPCT_DATA_CONFIG_VERSION, /* version */                                                        \
    "inputs",                 /* inputs_name */                                                    \
    "targets",                /* targets_name */                                                   \
    HPCT_CHECKSUM_FULL,       /* checksum */                                                       \
    HPCT_NONFINITE_ERROR,     /* nonfinite */                                                      \
    1,                        /* shuffle */                                                        \
    42,                       /* seed */                                                           \
    2,                        /* prefetch_depth */                                                 \
    (size_t)1 << 30,          /* memory_budget_bytes: 1 GiB */                                     \
    HPCT_STORE_AUTO           /* store */                                                          \
}
/* clang-format on */

/* Open the shards listed by the manifest; checks the manifest, then every shard's checksum
 * (per cfg) before HDF5 parses it, then dtypes and shapes. cfg NULL means the defaults.
 * All HDF5 calls of the reader happen here, on the calling thread. With a context from
 * hpct_init at W > 1 it is collective in every store mode: a failure on one rank fails it on
 * every rank, naming that rank and its error. */
hpct_status_t hpct_dataset_open(hpct_ctx_t ctx, const char *manifest_path,
                                const hpct_data_config_t *cfg, hpct_dataset_t *ds);
/* Stop the prefetch thread and free everything; NULL is accepted. */
void hpct_dataset_close(hpct_dataset_t ds);
/* Samples N, input features per sample (product of the per-sample dims), target values per
 * sample (1 for class labels) and the type hpct_dataset_next returns targets in
 * (INT32 for integer targets, FLOAT32 otherwise). Any pointer may be NULL. */
hpct_status_t hpct_dataset_info(hpct_dataset_t ds, size_t *num_samples, int *input_features,
                                int *target_width, hpct_dtype_t *target_dtype);
/* Choose this rank's share: rank in [0, world_size), global_batch % world_size == 0 and
 * global_batch <= N. Resets the cursor to (0, 0). Must precede hpct_dataset_next. */
hpct_status_t hpct_dataset_partition(hpct_dataset_t ds, int rank, int world_size, int global_batch);
/* Full global batches per epoch: floor(N / global_batch). */
hpct_status_t hpct_dataset_steps_per_epoch(hpct_dataset_t ds, long *steps);
/* This rank's slice of the next global batch: inputs [local_batch, features] fp32 and
 * targets [local_batch, target_width] (int32 or fp32), in reader-owned buffers valid until
 * the next call on ds. local_batch = global_batch / world_size. Epochs roll over forever. */
hpct_status_t hpct_dataset_next(hpct_dataset_t ds, const float **inputs, const void **targets);
/* As hpct_dataset_next, copying into caller buffers of the same shapes. */
hpct_status_t hpct_dataset_next_into(hpct_dataset_t ds, float *inputs, void *targets);
/* Position of the batch the next call returns; saving and restoring it resumes exactly. */
hpct_status_t hpct_dataset_get_cursor(hpct_dataset_t ds, long *epoch, long *step);
/* Move to (epoch, step), 0 <= step < steps per epoch; any world size may resume it. */
hpct_status_t hpct_dataset_set_cursor(hpct_dataset_t ds, long epoch, long step);
/* Global batches skipped so far for non-finite inputs (HPCT_NONFINITE_SKIP). */
hpct_status_t hpct_dataset_skipped(hpct_dataset_t ds, long *count);
/* A dataset's accounting on this rank (hpct_dataset_stats fills it; bytes of samples as
 * served, fp32 inputs and int32/fp32 targets, except the bytes read, which are as stored). */
#define HPCT_DATA_STATS_VERSION 1
typedef struct hpct_data_stats {
    unsigned version;             /* HPCT_DATA_STATS_VERSION */
    hpct_store_mode_t store;      /* HPCT_STORE_OFF, _JOB or _NODE, as chosen at open */
    uint64_t bytes_read;          /* read from the shard files since open (checksums apart) */
    uint64_t epoch_bytes_read;    /* the same since the cursor's epoch began */
    uint64_t hashed_bytes;        /* read at open to verify checksums */
    uint64_t resident_bytes;      /* sample bytes this rank holds in memory */
    uint64_t node_resident_bytes; /* sample bytes the ranks of this rank's node hold together */
    uint64_t exchange_bytes;      /* sample bytes the job store sent to other ranks since open */
} hpct_data_stats_t;
/* Fill *stats (HPCT_ERR_INVALID_ARG for NULL). */
hpct_status_t hpct_dataset_stats(hpct_dataset_t ds, hpct_data_stats_t *stats);
/* The epoch permutation of the contract above: perm [n] receives 0..n-1 shuffled by a
 * Fisher-Yates pass driven by xoshiro256** seeded with hpct's mix of (seed, epoch). */
hpct_status_t hpct_data_permutation(uint64_t seed, long epoch, size_t n, uint64_t *perm);

/* Writing shards and manifests (converters such as `hpctrain shard`). A shard is an HDF5 file
 * of datasets [N, ...] chunked along N; the manifest names each shard (relative to its own
 * directory) with its sample count, size and checksum, and the element type and per-sample
 * shape every shard's inputs and targets share. HDF5 runs under the library's lock. */

/* Most dimensions of a shard dataset: N and up to 8 per-sample dimensions. */
#define HPCT_SHARD_MAX_RANK 9

/* Versioned, append-only; always start from HPCT_SHARD_CONFIG_INITIALIZER. */
#define HPCT_SHARD_CONFIG_VERSION 1
typedef struct hpct_shard_config {
    unsigned version; /* HPCT_SHARD_CONFIG_VERSION */
    long chunk_rows;  /* samples per HDF5 chunk; 0: about 1 MiB of the dataset per chunk */
    int deflate;      /* 0: no filters (the reader can stream it); 1-9: shuffle + deflate */
} hpct_shard_config_t;

/* clang-format off */
#define HPCT_SHARD_CONFIG_INITIALIZER {                                                            \
    HPCT_SHARD_CONFIG_VERSION, /* version */                                                       \
    0,                         /* chunk_rows: about 1 MiB per chunk */                             \
    0                          /* deflate: none */                                                 \
}
/* clang-format on */

typedef struct hpct_shard_writer *hpct_shard_writer_t;
/* Create (or truncate) the shard file path; cfg NULL means the defaults. */
hpct_status_t hpct_shard_create(hpct_ctx_t ctx, const char *path, const hpct_shard_config_t *cfg,
                                hpct_shard_writer_t *shard);
/* Write dataset name [dims[0] = N, dims[1] ...] (rank dims, every one >= 1) of dtype from data,
 * row-major. No timestamps are stored: the same arrays give the same bytes. name: 1-255
 * bytes, components split by single slashes (none empty, "." or ".."), no control chars. */
hpct_status_t hpct_shard_write(hpct_shard_writer_t shard, const char *name, hpct_dtype_t dtype,
                               int rank, const uint64_t *dims, const void *data);
/* Close the file (HPCT_ERR_IO naming it when it cannot be completed); NULL is accepted. */
hpct_status_t hpct_shard_close(hpct_shard_writer_t shard);

typedef struct hpct_manifest *hpct_manifest_t;
/* A manifest to be written at path, for shards holding datasets inputs_name and targets_name
 * (NULL: "inputs", "targets"). Nothing is written before hpct_manifest_write. */
hpct_status_t hpct_manifest_create(hpct_ctx_t ctx, const char *path, const char *inputs_name,
                                   const char *targets_name, hpct_manifest_t *manifest);
/* Append the shard file at shard_path (which must lie inside the manifest's directory): its
 * datasets' dtype and per-sample shape (equal to the first shard's), sample count and checksum. */
hpct_status_t hpct_manifest_add_shard(hpct_manifest_t manifest, const char *shard_path);
/* Write the manifest text atomically (temporary file, then rename). */
hpct_status_t hpct_manifest_write(hpct_manifest_t manifest);
/* Free a manifest; NULL is accepted. */
void hpct_manifest_destroy(hpct_manifest_t manifest);
/* HPCT_SUCCESS when path may name a file in a manifest: relative, non-empty, no blanks, control
 * characters, backslashes or ".." parts; HPCT_ERR_INVALID_ARG otherwise. */
hpct_status_t hpct_manifest_check_path(const char *path);

/* ---- Distributed runtime (lib/bootstrap, lib/comm) ---------------------- */

/* Exit code that tools and tests pass to hpct_abort_job after HPCT_ERR_TIMEOUT (a hang),
 * the same as timeout(1). */
#define HPCT_EXIT_HANG 124

/* Where the topology came from (hpct_topology_t.source). */
typedef enum {
    HPCT_TOPO_SINGLE = 0,      /* no launcher: one process, one node */
    HPCT_TOPO_PMIX = 1,        /* PMIx_Get: PMIX_NODEID, PMIX_LOCAL_RANK, ... */
    HPCT_TOPO_OPENMPI_ENV = 2, /* OMPI_COMM_WORLD_* variables; nodes = MPI shared-memory domains */
    HPCT_TOPO_SLURM_ENV = 3,   /* SLURM_NODEID, SLURM_LOCALID, ... */
    HPCT_TOPO_OVERRIDE = 4     /* HPCT_RANKS_PER_NODE=k: virtual nodes of k consecutive ranks */
} hpct_topo_source_t;

/* Versioned, append-only; start from HPCT_TOPOLOGY_INITIALIZER, filled by hpct_topology().
 * Ranks are those of the context's communicator (MPI_COMM_WORLD for hpct_init, the
 * caller's for hpct_init_comm). */
#define HPCT_TOPOLOGY_VERSION 1
/* clang-format off */
#define HPCT_TOPOLOGY_INITIALIZER {                                                                \
    HPCT_TOPOLOGY_VERSION, /* version */                                                           \
    0,                     /* rank */                                                              \
    0,                     /* size */                                                              \
    0,                     /* local_rank */                                                        \
    0,                     /* local_size */                                                        \
    0,                     /* node_id */                                                           \
    0,                     /* num_nodes */                                                         \
    0,                     /* node_comm_size */                                                    \
    0,                     /* cross_comm_size */                                                   \
    0,                     /* hierarchical */                                                      \
    HPCT_TOPO_SINGLE,      /* source */                                                            \
    "",                    /* hostname */                                                          \
    ""                     /* job_id */                                                            \
}
/* clang-format on */
typedef struct hpct_topology {
    unsigned version;           /* HPCT_TOPOLOGY_VERSION */
    int rank, size;             /* in the context's communicator */
    int local_rank, local_size; /* on this (possibly virtual) node */
    int node_id, num_nodes;     /* dense node index in [0, num_nodes) */
    int node_comm_size;         /* ranks in the node-local communicator */
    int cross_comm_size;        /* ranks in the cross-node communicator (same local rank) */
    int hierarchical;           /* 0/1: two-level averaging (1) or one flat allreduce (0) */
    hpct_topo_source_t source;
    char hostname[256];
    char job_id[128]; /* Slurm job id, PMIx namespace, or "none" */
} hpct_topology_t;

/* Context plus distributed runtime: bootstrap (PMIx, then Open MPI env, Slurm env, single
 * process), MPI_Init_thread (MPI_THREAD_SERIALIZED) when MPI is not yet initialised,
 * communicators on MPI_COMM_WORLD. A context may be used from one thread at a time; from a
 * thread other than this call's only where MPI provides MPI_THREAD_SERIALIZED or more. */
hpct_status_t hpct_init(const hpct_config_t *cfg, hpct_ctx_t *ctx);
/* Same on the caller's communicator, given as a Fortran handle (MPI_Comm_c2f(comm) in C);
 * it may be a subset of MPI_COMM_WORLD. MPI must be initialised by the caller. */
hpct_status_t hpct_init_comm(const hpct_config_t *cfg, int fortran_comm, hpct_ctx_t *ctx);
/* Free the communicators and the context; MPI_Finalize only if hpct_init initialised MPI.
 * After HPCT_ERR_TIMEOUT call hpct_abort_job instead (peers may be stuck). */
hpct_status_t hpct_finalize(hpct_ctx_t ctx);
/* Rank, size, node membership and their source; HPCT_ERR_STATE on a local context. */
hpct_status_t hpct_topology(hpct_ctx_t ctx, hpct_topology_t *topo);
/* End the whole job: MPI_Abort(comm, exit_code) (use HPCT_EXIT_HANG after a timeout).
 * The only library call that ends processes; it returns only if MPI_Abort fails. */
hpct_status_t hpct_abort_job(hpct_ctx_t ctx, int exit_code);

/* buf [n] in HOST memory, on every backend = mean over ranks of buf, fp32 accumulation,
 * hierarchical when the nodes have equal rank counts (MPI only, never NCCL). Collective; n may
 * be 0; fails after the deadline with HPCT_ERR_TIMEOUT naming the ranks that did not arrive. */
hpct_status_t hpct_allreduce_mean(hpct_ctx_t ctx, float *buf, size_t n);
/* The same for buf [n] in the BACKEND's memory: a device pointer (cudaMalloc) on the cuda
 * backend (NCCL inside the node, MPI across), host memory on the cpu backend. The library
 * orders its reads after work on the legacy default stream only: where buf was written on a
 * stream of the caller's own, synchronise that stream (or the device) first. */
hpct_status_t hpct_allreduce_mean_device(hpct_ctx_t ctx, float *buf, size_t n);
/* A zeroed gradient buffer of count floats that the ranks of a node share (an MPI-3
 * shared-memory window) where averages go through the node window: an average of the
 * buffer, or of a part of it, then reads the peers' values in place instead of copying them
 * in first (the same bits). Elsewhere it is ordinary memory. Collective over the context's
 * ranks, called in the same order and with the same count on every rank (agreed:
 * HPCT_ERR_INVALID_ARG on every rank otherwise). A node where the ranks average different
 * parts (or some ordinary memory) averages by copying, with a warning once. Across nodes,
 * where the algorithm table sends a size point-to-point, an average of such buffers on every
 * rank still goes through the window in place (one integer agreement decides). Kept until
 * hpct_finalize. */
hpct_status_t hpct_alloc_grads(hpct_ctx_t ctx, size_t count, float **grads);
/* Give back a buffer of hpct_alloc_grads (local): the next hpct_alloc_grads of the same
 * count hands it out again where every rank gave one back (agreed; else it makes a new
 * one). NULL is ignored. */
hpct_status_t hpct_free_grads(hpct_ctx_t ctx, float *grads);
/* Average every registered gradient over ranks (bring-your-own-gradients), fused into
 * buckets of cfg.fusion_bytes (at most 1 MiB where the average goes point-to-point or
 * through MPI, so that several are in flight); buffers larger than a bucket, and buckets
 * of gradients that lie back to back in memory (registered in order from one array, e.g.
 * one buffer of hpct_alloc_grads), are averaged where they lie, the others packed into a
 * fusion slot. A built-in model's gradients are moved into a buffer of hpct_alloc_grads
 * first (once, where the node window averages in place; see hpct_params_get). */
hpct_status_t hpct_params_average_grads(hpct_params_t params);
/* Copy root's parameters into every rank's (call once after build: identical replicas).
 * A built-in model's gradients move into a buffer of hpct_alloc_grads here (once, where the
 * node window averages in place), so that every average of them runs in place. */
hpct_status_t hpct_params_broadcast(hpct_params_t params, int root);
/* Compare a 64-bit hash of the parameters across ranks; HPCT_ERR_DIVERGED names the first
 * rank that differs from rank 0 (every rank gets the same answer). */
hpct_status_t hpct_params_check_replicas(hpct_params_t params);
/* hpct_params_check_replicas when step is a multiple of cfg.consistency_interval (> 0). */
hpct_status_t hpct_params_check_replicas_at(hpct_params_t params, long step);
/* 64-bit hash of the parameter values (FNV-1a over 32-bit words, in registration order). */
hpct_status_t hpct_params_hash(hpct_params_t params, uint64_t *hash);
/* Average a built-in model's gradients inside hpct_model_loss_grad, layer by layer while
 * backward runs (overlap). Like DDP's no_sync: turn it off for all but the last micro-batch.
 * Collective the first time it enables averaging on a cpu context with the node window: the
 * model's gradients move into a buffer of hpct_alloc_grads (pointers from hpct_params_get
 * taken before then are stale). */
hpct_status_t hpct_model_set_grad_averaging(hpct_model_t model, int enable);
/* Split a global batch over the ranks: local = global / size, offset = rank * local.
 * HPCT_ERR_INVALID_ARG when global % size != 0. */
hpct_status_t hpct_batch_split(hpct_ctx_t ctx, int global_batch, int *local_batch, int *offset);
/* Communication timers since init: seconds spent waiting for collectives to complete
 * (exposed, not hidden by overlap), and the number of collective operations completed:
 * averages, and the integer agreements, broadcasts and hash exchanges (a training step with
 * gradient averaging counts two: the agreement on every rank's status, then the average). */
hpct_status_t hpct_comm_stats(hpct_ctx_t ctx, double *wait_seconds, long *operations);

/* ---- Preflight checks (hpctrain doctor) --------------------------------- */

/* The verdict of one row of hpct_doctor's report (and of the worst of them). */
#define HPCT_CHECK_OK   0 /* as it should be */
#define HPCT_CHECK_WARN 1 /* the job runs, slower or less safely than it could */
#define HPCT_CHECK_FAIL 2 /* the job would fail, or lose its work */

/* Versioned, append-only; start from HPCT_DOCTOR_CONFIG_INITIALIZER. */
#define HPCT_DOCTOR_CONFIG_VERSION 1
/* clang-format off */
#define HPCT_DOCTOR_CONFIG_INITIALIZER {                                                           \
    HPCT_DOCTOR_CONFIG_VERSION, /* version */                                                      \
    NULL,                       /* settings */                                                     \
    1048576,                    /* fabric_bytes */                                                 \
    5,                          /* fabric_reps */                                                  \
    0.5,                        /* fabric_threshold */                                             \
    1,                          /* fabric */                                                       \
    HPCT_CHECK_OK               /* caller_verdict */                                               \
}
/* clang-format on */
typedef struct hpct_doctor_config {
    unsigned version;        /* HPCT_DOCTOR_CONFIG_VERSION */
    const char *settings;    /* text every rank must share (a settings file's hash); NULL: none */
    size_t fabric_bytes;     /* of each timed allreduce and exchange, 4 to 2^30 */
    int fabric_reps;         /* timed repetitions of each (after one untimed), 1 to 1000 */
    double fabric_threshold; /* a node or link below this fraction of the median is named */
    int fabric;              /* 0: no fabric measurement */
    int caller_verdict;      /* the worst HPCT_CHECK_* of the caller's own checks on this rank */
} hpct_doctor_config_t;

/* Preflight checks, collective over the context's ranks: versions (library, MPI, HDF5, PMIx,
 * BLAS; CUDA, cuBLAS, NCCL on cuda; cfg->settings) the same on every rank; placement (ranks per
 * node, CPU binding overlaps, one GPU per rank); fabric (timed allreduces inside each node and
 * exchanges between nodes, against the job's median). report [len] gets one line per check,
 * the same on every rank, "CHECK\tRESULT\tDETAIL\n" (RESULT ok, WARN or FAIL; cut at a line
 * when len is short), naming ranks and hosts; *worst the worst HPCT_CHECK_* of the rows and of
 * every rank's cfg->caller_verdict, the same on every rank (may be NULL). */
hpct_status_t hpct_doctor(hpct_ctx_t ctx, const hpct_doctor_config_t *cfg, char *report, size_t len,
                          int *worst);

/* ---- Checkpoints and preemption (lib/ckpt) ------------------------------ */

/* One HDF5 file per checkpoint (format: doc/checkpoint-format.md), committed atomically
 * (temporary name, fsync, rename, fsync of the directory, then the "latest" pointer).
 * The library writes when told to; the training loop decides which rank calls save.
 * Debian's HDF5 is not thread-safe: the module serialises its HDF5 calls behind one
 * process-wide lock; other HDF5 users in the process must not run concurrently with an
 * asynchronous write (call hpct_ckpt_wait first). */
typedef struct hpct_ckpt *hpct_ckpt_t;

/* Versioned, append-only; always start from HPCT_CKPT_CONFIG_INITIALIZER. */
#define HPCT_CKPT_CONFIG_VERSION 1
typedef struct hpct_ckpt_config {
    unsigned version;        /* HPCT_CKPT_CONFIG_VERSION */
    const char *directory;   /* created if missing (mode 0777 & ~umask, never o+w) */
    int keep_last;           /* K newest checkpoints kept (>= 1; default 3); hpct_train also
                                keeps the newest one its divergence guard knows good */
    int keep_every;          /* every M-th checkpoint written is kept forever; 0 = none */
    long every_steps;        /* cadence in optimizer steps; 0 = off */
    double every_seconds;    /* cadence in wall-clock seconds; 0 = off */
    int async;               /* 0/1: 1 snapshots at the step boundary, writes on a thread */
    int writer_rank;         /* the rank that saves (the loop honours it; default 0) */
    int allow_config_change; /* 0/1: 1 loads a checkpoint whose config_hash differs */
    uint64_t config_hash;    /* hash of this run's training configuration */
    double walltime_margin;  /* seconds before the job's end at which a save is due; > 0
                                makes open ask Slurm once: at scale set it on the writer
                                rank only and OR-reduce hpct_ckpt_due's mask */
    int defer_copy;          /* 0/1, async on the cpu backend: 1 lets the writer thread copy
                                the state; call hpct_ckpt_before_update before changing it */
} hpct_ckpt_config_t;

/* clang-format off */
#define HPCT_CKPT_CONFIG_INITIALIZER {                                                             \
    HPCT_CKPT_CONFIG_VERSION, /* version */                                                        \
    NULL,                     /* directory: must be set */                                         \
    3,                        /* keep_last */                                                      \
    0,                        /* keep_every: none */                                               \
    0,                        /* every_steps: off */                                               \
    0.0,                      /* every_seconds: off */                                             \
    0,                        /* async */                                                          \
    0,                        /* writer_rank */                                                    \
    0,                        /* allow_config_change */                                            \
    0,                        /* config_hash */                                                    \
    120.0,                    /* walltime_margin */                                                \
    0                         /* defer_copy */                                                     \
}
/* clang-format on */

/* What a checkpoint says about the run; save reads it, load fills it. */
#define HPCT_CKPT_META_VERSION 1
typedef struct hpct_ckpt_meta {
    unsigned version;     /* HPCT_CKPT_META_VERSION */
    long step;            /* optimizer steps completed */
    long epoch;           /* current epoch */
    long cursor_epoch;    /* data cursor: epoch ... */
    long cursor_step;     /* ... and global step within that epoch */
    int world_size;       /* ranks at save */
    long global_batch;    /* samples per step over all ranks at save */
    const char *model;    /* model description; on load it points into the handle */
    uint64_t config_hash; /* load: the file's hash (save writes the config's) */
    double saved_at;      /* load: Unix time of the save */
    int rejected;         /* load: newer checkpoints rejected as corrupt or torn */
    const char *path;     /* load: the file loaded (valid until the next load/close) */
} hpct_ckpt_meta_t;

/* clang-format off */
#define HPCT_CKPT_META_INITIALIZER {                                                               \
    HPCT_CKPT_META_VERSION, /* version */                                                          \
    0,                      /* step */                                                             \
    0,                      /* epoch */                                                            \
    0,                      /* cursor_epoch */                                                     \
    0,                      /* cursor_step */                                                      \
    1,                      /* world_size */                                                       \
    0,                      /* global_batch */                                                     \
    "",                     /* model */                                                            \
    0,                      /* config_hash */                                                      \
    0.0,                    /* saved_at */                                                         \
    0,                      /* rejected */                                                         \
    NULL                    /* path */                                                             \
}
/* clang-format on */

/* Element types of caller-registered extra arrays (F32..U8) and of inspected datasets. */
typedef enum {
    HPCT_CKPT_F32 = 0,
    HPCT_CKPT_F64 = 1,
    HPCT_CKPT_I32 = 2,
    HPCT_CKPT_I64 = 3,
    HPCT_CKPT_U8 = 4,
    HPCT_CKPT_U64 = 5,    /* inspection only: config hash, RNG state */
    HPCT_CKPT_STRING = 6, /* inspection only: the model description (count = bytes) */
    HPCT_CKPT_OTHER = 7   /* inspection only: a type this library does not write */
} hpct_ckpt_dtype_t;

/* Reasons a save is due (bit mask from hpct_ckpt_due). Ranks may disagree on the time-based
 * ones: the loop should OR-reduce the mask across ranks at the step boundary. */
#define HPCT_CKPT_DUE_STEPS    1 /* every_steps reached */
#define HPCT_CKPT_DUE_SECONDS  2 /* every_seconds elapsed since the last save or open */
#define HPCT_CKPT_DUE_WALLTIME 4 /* the job ends within walltime_margin: save and stop */
#define HPCT_CKPT_DUE_SIGNAL   8 /* a preemption signal arrived: save and stop */

/* Open a checkpoint directory (creating it) with cfg; ck is NULL on failure. */
hpct_status_t hpct_ckpt_open(hpct_ctx_t ctx, const hpct_ckpt_config_t *cfg, hpct_ckpt_t *ck);
/* Drain any asynchronous write and free the handle; returns that write's status. */
hpct_status_t hpct_ckpt_close(hpct_ckpt_t ck);
/* Save `count` elements at data under /extra/<name> with every checkpoint and restore them
 * on load (bring-your-own-gradient state). The caller keeps data alive and host-resident. */
hpct_status_t hpct_ckpt_add_array(hpct_ckpt_t ck, const char *name, hpct_ckpt_dtype_t dtype,
                                  void *data, size_t count);
/* As hpct_ckpt_add_array for one value, stored as an HDF5 scalar dataset. */
hpct_status_t hpct_ckpt_add_scalar(hpct_ckpt_t ck, const char *name, hpct_ckpt_dtype_t dtype,
                                   void *value);
/* Which HPCT_CKPT_DUE_* reasons hold after `step` completed steps (0 if none). */
hpct_status_t hpct_ckpt_due(hpct_ckpt_t ck, long step, int *due);
/* Save params (by name), opt's state slots and step (opt may be NULL), the context RNG,
 * meta and the extras. Async mode: copy them and return; the previous write is waited for
 * first and its failure, if any, is returned here instead of starting a new one. Values a
 * load would refuse are HPCT_ERR_INVALID_ARG, nothing written: meta->step must equal opt's
 * step and meta->epoch meta->cursor_epoch (doc/checkpoint-format.md lists the checks). */
hpct_status_t hpct_ckpt_save(hpct_ckpt_t ck, hpct_params_t params, hpct_optimizer_t opt,
                             const hpct_ckpt_meta_t *meta);
/* With defer_copy: wait until the writer has copied the state of the last save, so params,
 * optimizer and extras may change (call before the optimizer update). Cheap otherwise. */
hpct_status_t hpct_ckpt_before_update(hpct_ckpt_t ck);
/* Wait for the asynchronous write in flight (if any); returns its status and detail. */
hpct_status_t hpct_ckpt_wait(hpct_ckpt_t ck);
/* Load the newest checkpoint that verifies into params, opt (may be NULL), the context RNG,
 * the extras and meta. A corrupt or torn newer one (any check of doc/checkpoint-format.md,
 * the same as hpct_ckpt_file_meta's) is logged, counted in meta->rejected and described by
 * hpct_last_error; the writer rank moves it aside to NAME.rejected, so no later save
 * overwrites it and retention never deletes it. HPCT_ERR_NOT_FOUND when the directory holds
 * no checkpoint, HPCT_ERR_CHECKSUM when every one failed (never a silent fresh start). A
 * sound file of other settings (configuration hash, a dataset's name or size, optimizer
 * slots) stops with HPCT_ERR_INVALID_ARG naming both values instead of falling back. */
hpct_status_t hpct_ckpt_load_latest(hpct_ckpt_t ck, hpct_params_t params, hpct_optimizer_t opt,
                                    hpct_ckpt_meta_t *meta);
/* Path of the newest checkpoint this handle committed ("" before the first). */
hpct_status_t hpct_ckpt_last_path(hpct_ckpt_t ck, const char **path);
/* Why the last hpct_ckpt_load_latest on this handle skipped newer checkpoints: each file and
 * its reason, "; "-separated ("" when none was skipped); valid until the next load. */
hpct_status_t hpct_ckpt_rejected(hpct_ckpt_t ck, const char **detail);

/* Inspection of one checkpoint file without a model or optimizer (tools, post-mortems).
 * Safe on damaged files: a file that is not HDF5, truncated or unreadable fails to open with
 * HPCT_ERR_FORMAT or HPCT_ERR_CHECKSUM naming it; a damaged dataset is listed with its
 * verdict instead of failing the whole file. Files are written with checksummed HDF5 headers;
 * in older files without them (superblock 0) HDF5 1.10 itself may crash on a damaged header,
 * so a tool reading untrusted old files should do it in a child process (hpctrain ckpt does). */
typedef struct hpct_ckpt_file *hpct_ckpt_file_t;

/* Open path, list every dataset (sorted by path) and verify each one's crc32c.
 * HPCT_ERR_NOT_FOUND/HPCT_ERR_IO when it cannot be read at all; *file is NULL on failure. */
hpct_status_t hpct_ckpt_file_open(hpct_ctx_t ctx, const char *path, hpct_ckpt_file_t *file);
/* Free a handle of hpct_ckpt_file_open; NULL is accepted. */
void hpct_ckpt_file_close(hpct_ckpt_file_t file);
/* The file's schema_version (-1 if unreadable) and library_version ("" if absent). */
hpct_status_t hpct_ckpt_file_versions(hpct_ckpt_file_t file, int *schema, const char **library);
/* The /meta values (meta->path is the file; rejected is 0) and the verdict on the whole file
 * that resume would give it on its own (the validator both share): HPCT_ERR_FORMAT,
 * _CHECKSUM or _NONFINITE naming the dataset and values when a dataset is missing, damaged
 * or breaks a check of doc/checkpoint-format.md; the values are filled all the same
 * (missing ones stay at HPCT_CKPT_META_INITIALIZER's values). hpctrain ckpt verify's test. */
hpct_status_t hpct_ckpt_file_meta(hpct_ckpt_file_t file, hpct_ckpt_meta_t *meta);
/* Number of datasets in the file. */
hpct_status_t hpct_ckpt_file_num_datasets(hpct_ckpt_file_t file, int *n);
/* Dataset i in [0, n): its path without the leading '/' ("params/dense0.weight"), element
 * type and count, and whether it is an HDF5 scalar. Any output pointer may be NULL. */
hpct_status_t hpct_ckpt_file_dataset(hpct_ckpt_file_t file, int i, const char **name,
                                     hpct_ckpt_dtype_t *dtype, size_t *count, int *scalar);
/* Index of the dataset called name, or HPCT_ERR_NOT_FOUND. */
hpct_status_t hpct_ckpt_file_find(hpct_ckpt_file_t file, const char *name, int *index);
/* Verdict of dataset i, found by hpct_ckpt_file_open: HPCT_SUCCESS when its stored crc32c
 * matches its bytes and it passes the checks of every dataset (type, rank, storage, finite
 * parameters), else HPCT_ERR_CHECKSUM (mismatch, unreadable, stored outside the file),
 * HPCT_ERR_FORMAT (no checksum, unknown type, rank above 1) or HPCT_ERR_NONFINITE, with
 * hpct_last_error naming the file and dataset. */
hpct_status_t hpct_ckpt_file_verify(hpct_ckpt_file_t file, int i);
/* Read dataset name's count elements (count must equal its element count) into out, as
 * HPCT_CKPT_F64 or HPCT_CKPT_F32 (converted), or as its own dtype (its raw bytes). The
 * checksum is checked again: HPCT_ERR_CHECKSUM after filling out when it fails. */
hpct_status_t hpct_ckpt_file_read(hpct_ckpt_file_t file, const char *name, hpct_ckpt_dtype_t as,
                                  void *out, size_t count);
/* The newest file layout (root attribute schema_version) this library writes and reads: it
 * reads 1 and 2, and writes 2 for models with convolution, pooling, upsampling or reshape
 * layers, 1 otherwise (doc/checkpoint-format.md, "Versioning"). */
#define HPCT_CKPT_SCHEMA_VERSION 2

/* The checkpoint files of a directory (ckpt-<step>.h5, ckpt-<step>-keep.h5), newest (highest
 * step) first: the order hpct_ckpt_load_latest tries them in. */
typedef struct hpct_ckpt_list *hpct_ckpt_list_t;
/* List dir; HPCT_ERR_NOT_FOUND or HPCT_ERR_IO naming dir when it cannot be read. An empty
 * list is a success. *list is NULL on failure. */
hpct_status_t hpct_ckpt_list_open(hpct_ctx_t ctx, const char *dir, hpct_ckpt_list_t *list);
/* Number of checkpoint files listed. */
hpct_status_t hpct_ckpt_list_size(hpct_ckpt_list_t list, int *n);
/* Path of file i in [0, n) as "dir/name", valid until hpct_ckpt_list_close. */
hpct_status_t hpct_ckpt_list_path(hpct_ckpt_list_t list, int i, const char **path);
/* Free a listing; NULL is accepted. */
void hpct_ckpt_list_close(hpct_ckpt_list_t list);

/* CRC32C (Castagnoli, reflected 0x82F63B78) of n bytes, continuing from crc (start at 0). */
uint32_t hpct_crc32c(uint32_t crc, const void *data, size_t n);

/* Preemption signals set one async-signal-safe flag that the loop polls at step boundaries.
 * One installation at a time per process. Install them first in main, before MPI_Init and
 * hpct_init (ctx NULL): a signal during start-up then stops the run at its first step
 * boundary (hpct_train: before its first step, exit 75) instead of killing the process. */
typedef struct hpct_signals *hpct_signals_t;
/* Catch signals[0..n-1] (NULL/0: SIGTERM and SIGUSR1); restores the old handlers on uninstall.
 * ctx may be NULL (before hpct_init: errors then have no detail). A signal caught earlier stays
 * pending: installing never clears the flag. */
hpct_status_t hpct_signals_install(hpct_ctx_t ctx, const int *signals, int n,
                                   hpct_signals_t *handle);
/* Restore the handlers that were in place before install; NULL is accepted. When a caught
 * signal is still pending (not cleared), or hpct_train or the in-situ session stopped for one
 * that another rank caught, the process is ending for that preemption: the signals are set
 * to SIG_IGN instead, so a SIGTERM during the rest of the shutdown (MPI_Finalize, closing
 * files) cannot kill it and turn exit 75 into 143. Call hpct_signals_clear first to get the
 * old handlers back in that case. */
void hpct_signals_uninstall(hpct_signals_t handle);
/* 1 when a caught signal is pending, else 0; signo receives the first one's number (0 if
 * none), count how many arrived (either may be NULL). Async-signal-safe; callable anytime. */
int hpct_signals_pending(int *signo, int *count);
/* Forget caught signals (e.g. after the checkpoint they asked for). */
void hpct_signals_clear(void);

/* Seconds until the batch job's end time: HPCT_JOB_END_TIME (Unix seconds) if set, else
 * Slurm's end time of $SLURM_JOB_ID when the library was built with libslurm.
 * HPCT_ERR_NOT_FOUND when no end time is known (not a batch job, or no limit). */
hpct_status_t hpct_walltime_remaining(hpct_ctx_t ctx, double *seconds);

/* ---- Training loop (lib/train) ------------------------------------------ */

/* What the loop reports every log_interval steps (the same on every rank). */
typedef struct hpct_progress {
    long epoch, step; /* 0-based epoch of the last step; steps completed in all */
    long steps_per_epoch, total_steps;
    double loss;            /* mean training loss over ranks and the steps since the last report */
    double lr;              /* learning rate of the last step */
    double samples_per_s;   /* global samples per second since the last report */
    double data_wait_share; /* share of wall time spent waiting for data (rank-local) */
    double comm_share;      /* share of wall time spent waiting for gradient averaging */
    double eta_s;           /* seconds to total_steps at the recent rate */
    /* data accounting of this rank (hpct_dataset_stats; 0 without a dataset) */
    double data_epoch_bytes_read;    /* bytes read from the shard files in the current epoch */
    double data_resident_bytes;      /* sample bytes held in memory */
    double data_node_resident_bytes; /* sample bytes the ranks of this node hold together */
    double data_exchange_bytes;      /* sample bytes the job store sent since the last report */
} hpct_progress_t;

/* Versioned, append-only; always start from HPCT_TRAIN_CONFIG_INITIALIZER. */
#define HPCT_TRAIN_CONFIG_VERSION 3
typedef struct hpct_train_config {
    unsigned version;  /* HPCT_TRAIN_CONFIG_VERSION */
    int global_batch;  /* samples per optimizer step over all ranks */
    int micro_batches; /* gradient accumulation steps per optimizer step (>= 1) */
    long epochs;       /* train until this many epochs are complete */
    long max_steps;    /* stop earlier after this many steps in all; 0 = no limit */
    long log_interval; /* steps between progress callbacks and metrics records; 0 = none */
    int resume;        /* 0/1: 1 continues from the newest valid checkpoint, if any */
    void (*progress)(const hpct_progress_t *p, void *arg); /* NULL = no reports */
    void *progress_arg;
    /* version 2 */
    const char *metrics_path;   /* JSON-lines file rank 0 appends to (doc/metrics.md); NULL or
                                   "" = off */
    hpct_dataset_t eval_data;   /* evaluated (hpct_evaluate) every eval_interval steps and at
                                   the end, recorded in the metrics; NULL = none */
    long eval_interval;         /* steps between evaluations; 0 = only at the end */
    double straggler_threshold; /* warn (HPCT_LOG_WARN) and record when a rank's step time is
                                   above the median by this fraction in 3 reports in a row;
                                   0 = off */
    void (*evaluated)(long step, double loss, double accuracy, long samples, void *arg);
    /* NULL = none; called on every rank after each evaluation, with progress_arg */
    const char *timeline_path; /* per-rank Chrome trace files <path>-rank<R>.json (Perfetto,
                                  chrome://tracing; doc/metrics.md); NULL or "" = off */
    long timeline_steps;       /* steps the timeline keeps (>= 1; default 100) ... */
    long timeline_first;       /* ... the last ones (0), or from this step on (> 0) */
    /* version 3: the divergence guard, on every step's loss (the mean over ranks), with or
       without progress reports */
    double divergence_factor; /* stop with HPCT_ERR_LOSS_DIVERGED when a step's loss is not
                                 finite (at that step), or when it and its running mean (EMA,
                                 0.1 per step) are both above this multiple of the best running
                                 mean (and above the first step's loss) for divergence_reports
                                 steps in a row (or at the last step); no cadence checkpoint
                                 is saved while above, and retention keeps the newest
                                 checkpoint known good (the next step's loss within the limit)
                                 besides keep_last; 0 = off */
    long divergence_reports;  /* >= 1: steps in a row (the name is from when it counted
                                 reports) */
} hpct_train_config_t;

/* clang-format off */
#define HPCT_TRAIN_CONFIG_INITIALIZER {                                                            \
    HPCT_TRAIN_CONFIG_VERSION, /* version */                                                       \
    256,                       /* global_batch */                                                  \
    1,                         /* micro_batches */                                                 \
    1,                         /* epochs */                                                        \
    0,                         /* max_steps: no limit */                                           \
    50,                        /* log_interval */                                                  \
    1,                         /* resume */                                                        \
    NULL,                      /* progress: no reports */                                          \
    NULL,                      /* progress_arg */                                                  \
    NULL,                      /* metrics_path: off */                                             \
    NULL,                      /* eval_data: none */                                               \
    0,                         /* eval_interval: at the end only */                                \
    0.2,                       /* straggler_threshold: 20 % above the median */                    \
    NULL,                      /* evaluated */                                                     \
    NULL,                      /* timeline_path: off */                                            \
    100,                       /* timeline_steps */                                                \
    0,                         /* timeline_first: the last timeline_steps steps */                 \
    10.0,                      /* divergence_factor */                                             \
    3                          /* divergence_reports */                                            \
}
/* clang-format on */

/* What a call to hpct_train did. */
typedef struct hpct_train_result {
    long steps;        /* optimizer steps completed in all (including before a resume) */
    long resumed_from; /* step of the checkpoint resumed from; -1 when starting afresh */
    long checkpoints;  /* checkpoints saved by this call (on the writer rank) */
    double final_loss; /* mean loss over ranks of the last step */
    double wall_s, data_wait_s, comm_wait_s;
    double ckpt_wait_s;       /* training time spent saving or waiting for checkpoint copies */
    long skipped_batches;     /* global batches skipped for non-finite inputs */
    int stop_signal;          /* HPCT_PREEMPTED: the signal caught here (SIGTERM when only another
                                 rank caught one), or 0 when the walltime margin stopped the run */
    int rejected_checkpoints; /* newer checkpoints skipped on resume as corrupt or torn (each
                                 logged at HPCT_LOG_WARN naming the file and dataset) */
} hpct_train_result_t;

/* Synchronous data-parallel training of a built model on ds with opt; ck (may be NULL)
 * checkpoints on its cadence and at the end. Every rank of the context calls it.
 * A signal caught before the first step (the program installed the handlers first) stops it
 * there with HPCT_PREEMPTED and res->steps = the step it started from: nothing to save.
 * Returns HPCT_SUCCESS when done, HPCT_PREEMPTED after saving on a signal or near the
 * walltime, HPCT_ERR_TIMEOUT after an emergency save when a rank hung. An error found on
 * one rank only (bad data, non-finite loss) returns there at once while the others wait
 * out the collective deadline: call hpct_abort_job on that rank to end the job promptly. */
hpct_status_t hpct_train(hpct_model_t model, hpct_optimizer_t opt, hpct_dataset_t ds,
                         hpct_ckpt_t ck, const hpct_train_config_t *cfg, hpct_train_result_t *res);
/* Output this rank could not write since the context was made (a full disk, a quota, a
 * failing file system), which training survives: metrics records dropped (the writer rank)
 * and timeline rewrites that failed (the file keeps its last whole version). The first loss
 * is also logged at HPCT_LOG_ERROR; this call lets a program with logging off say it. detail
 * receives what the first loss said, naming the file and the reason ("" when none; valid
 * until the context is destroyed). Any of the three pointers may be NULL. */
hpct_status_t hpct_output_losses(hpct_ctx_t ctx, long *metrics_records, long *timeline_rewrites,
                                 const char **detail);
/* Mean loss and accuracy of the model over a whole dataset (opened with shuffle = 0), each
 * rank evaluating its share; samples receives how many were evaluated. */
hpct_status_t hpct_evaluate(hpct_model_t model, hpct_dataset_t ds, double *loss, double *accuracy,
                            long *samples);

/* ---- Settings files: hpctrain.conf(5) (lib/train) ------------------------------------ */

/* Every key of hpctrain.conf(5), read by `hpctrain train` and by hpct_insitu_open: the file's
 * "key = value" lines, HPCT_<KEY> environment variables and command-line options all go
 * through hpct_settings_set. Fill it with hpct_settings_defaults first. The failing calls
 * below return HPCT_ERR_INVALID_ARG and leave their message (naming the file and line, the
 * variable or the option) in hpct_last_error(NULL). */
#define HPCT_SETTINGS_VERSION    2
#define HPCT_SETTINGS_PATH_MAX   1024 /* bytes of a path value, with its terminating NUL */
#define HPCT_SETTINGS_MAX_HIDDEN 16   /* hidden layers */
#define HPCT_SETTINGS_LAYERS_MAX 1024 /* bytes of the layers value, with its NUL */
typedef struct hpct_settings {
    unsigned version; /* HPCT_SETTINGS_VERSION (set by hpct_settings_defaults) */
    /* data (hpctrain train) */
    char train_manifest[HPCT_SETTINGS_PATH_MAX];
    char eval_manifest[HPCT_SETTINGS_PATH_MAX];
    /* model: hidden widths; `hpctrain train` takes the input and output widths from the data */
    int hidden[HPCT_SETTINGS_MAX_HIDDEN];
    int num_hidden;
    char activation[16]; /* identity | relu | tanh | gelu */
    char loss[16];       /* softmax_ce | mse */
    long outputs;        /* classes for softmax_ce; for mse the target width (0: the data's) */
    /* optimizer and schedule */
    char optimizer[16]; /* sgd | adamw */
    double lr, momentum, weight_decay, beta1, beta2, eps, clip_norm, gamma, min_lr;
    int nesterov;
    char schedule[16]; /* constant | step | cosine */
    long warmup_steps, step_size, total_steps;
    /* run */
    long global_batch, micro_batches, epochs, seed, threads, log_interval;
    double collective_timeout; /* seconds */
    /* checkpoints */
    char checkpoint_dir[HPCT_SETTINGS_PATH_MAX];
    long checkpoint_every_steps, checkpoint_keep, checkpoint_keep_every;
    double checkpoint_every_seconds, walltime_margin; /* seconds */
    int checkpoint_async;
    char resume[16];           /* auto | never */
    char backend[16];          /* cpu | cuda (not hashed: a run may resume on the other one) */
    long consistency_interval; /* steps between replica hash checks across ranks; 0 = never */
    /* what the run leaves behind (doc/metrics.md) */
    char metrics_file[HPCT_SETTINGS_PATH_MAX];  /* auto: checkpoint_dir/metrics.jsonl; none */
    long eval_every_steps, eval_every_epochs;   /* evaluation cadence; 0 = at the end only */
    double straggler_threshold;                 /* fraction above the median step time; 0 off */
    char timeline_file[HPCT_SETTINGS_PATH_MAX]; /* none | auto: checkpoint_dir/timeline | prefix */
    long timeline_steps, timeline_first;        /* ring of the last steps, or a window from first */
    double divergence_factor; /* the divergence guard: limit over the best running loss; 0 off */
    long divergence_reports;  /* reports in a row above the limit before it stops the run */
    char data_store[8];       /* auto | off | job | node: hpct_data_config_t.store */
    long data_memory_mib;     /* MiB a rank may load the set into (0: always stream) */
    long inputs; /* input width: hpct_insitu_open's model (hpctrain train: 0, the data's) */
    /* version 2: the model's layers (hpct_model_add_layers' syntax; "": hidden's dense layers) */
    char layers[HPCT_SETTINGS_LAYERS_MAX];
} hpct_settings_t;

/* What hpct_settings_check checks a complete set of settings for. */
typedef enum hpct_settings_use {
    HPCT_SETTINGS_TRAIN = 0, /* hpctrain train: train_manifest set, ... */
    HPCT_SETTINGS_INSITU = 1 /* hpct_insitu_open: inputs and outputs set, no data keys */
} hpct_settings_use_t;

/* Every field at its documented default (hpctrain.conf(5)). */
hpct_status_t hpct_settings_defaults(hpct_settings_t *s);
/* Apply one setting: key as in the file, value as text; source names where it came from in
 * messages ("option --lr", "heat.conf:12"; NULL: "argument"). */
hpct_status_t hpct_settings_set(hpct_settings_t *s, const char *key, const char *value,
                                const char *source);
/* Apply a "key = value" file ('#' comments, each key at most once). */
hpct_status_t hpct_settings_read_file(hpct_settings_t *s, const char *path);
/* Apply the HPCT_<KEY> environment variables (HPCT_LR=0.1 sets lr). */
hpct_status_t hpct_settings_read_env(hpct_settings_t *s);
/* Check the rules between keys (min_lr <= lr, nesterov needs sgd, ...) for use. */
hpct_status_t hpct_settings_check(const hpct_settings_t *s, hpct_settings_use_t use);
/* The name of key i (0, 1, ...) in hpctrain.conf(5)'s order; NULL past the last. */
const char *hpct_settings_key(int i);
/* The value of key in file syntax into value [n] (truncated to fit). */
hpct_status_t hpct_settings_format(const hpct_settings_t *s, const char *key, char *value,
                                   size_t n);
/* A stable 64-bit hash of the keys that change what training computes (not paths, cadence,
 * threads or backend): the checkpoints' config_hash. */
uint64_t hpct_settings_hash(const hpct_settings_t *s);

/* ---- In-situ training: the caller owns the time loop (lib/train) ---------- */

/* A simulation that trains while it runs calls hpct_insitu_step once per training step on
 * batches it made in memory. Around each step the session does what hpct_train does:
 * averaging over ranks (weighted by each rank's batch), the optimizer step, replica checks,
 * cadence checkpoints, and SIGTERM/SIGUSR1/walltime agreement across ranks (doc/insitu.md). */
typedef struct hpct_insitu *hpct_insitu_t;

/* Versioned, append-only; always start from HPCT_INSITU_CONFIG_INITIALIZER. */
#define HPCT_INSITU_CONFIG_VERSION 4
typedef struct hpct_insitu_config {
    unsigned version;  /* HPCT_INSITU_CONFIG_VERSION */
    int resume;        /* 1: hpct_insitu_start loads the newest valid checkpoint (default) */
    int catch_signals; /* 1: catch SIGTERM and SIGUSR1 while the session lives (default) */
    long log_interval; /* steps between progress reports and metrics records; 0 = none */
    void (*progress)(const hpct_progress_t *p, void *arg); /* NULL: log at HPCT_LOG_INFO */
    void *progress_arg;
    /* version 2 */
    const char *metrics_path;   /* as hpct_train_config_t.metrics_path; NULL or "" = off */
    double straggler_threshold; /* as hpct_train_config_t.straggler_threshold; 0 = off */
    const char *timeline_path;  /* as hpct_train_config_t.timeline_path; NULL or "" = off */
    long timeline_steps;        /* as hpct_train_config_t.timeline_steps (default 100) */
    long timeline_first;        /* as hpct_train_config_t.timeline_first (default 0) */
    /* version 3 */
    hpct_dataset_t eval_data; /* evaluated with the session's model (hpct_evaluate) every
                                 eval_interval steps and by hpct_insitu_finish; NULL = none */
    long eval_interval;       /* steps between evaluations; 0 = only in hpct_insitu_finish */
    /* each evaluation's result (NULL: none), with progress_arg; also an eval record */
    void (*evaluated)(long step, double loss, double accuracy, long samples, void *arg);
    /* version 4: the divergence guard, as hpct_train_config_t's (a step whose loss ran away
     * returns HPCT_ERR_LOSS_DIVERGED on every rank; the session then trains no more and
     * saves nothing of that state); 0 = off (the default here; hpct_insitu_open: 10) */
    double divergence_factor;
    long divergence_reports;
} hpct_insitu_config_t;

/* clang-format off */
#define HPCT_INSITU_CONFIG_INITIALIZER {                                                           \
    HPCT_INSITU_CONFIG_VERSION, /* version */                                                      \
    1,                          /* resume */                                                       \
    1,                          /* catch_signals */                                                \
    0,                          /* log_interval: no reports */                                     \
    NULL,                       /* progress: log at HPCT_LOG_INFO */                               \
    NULL,                       /* progress_arg */                                                 \
    NULL,                       /* metrics_path: off */                                            \
    0.2,                        /* straggler_threshold */                                          \
    NULL,                       /* timeline_path: off */                                           \
    100,                        /* timeline_steps */                                               \
    0,                          /* timeline_first: the last timeline_steps steps */                \
    NULL,                       /* eval_data: none */                                              \
    0,                          /* eval_interval: in hpct_insitu_finish only */                    \
    NULL,                       /* evaluated */                                                    \
    0.0,                        /* divergence_factor: off */                                       \
    3                           /* divergence_reports */                                           \
}
/* clang-format on */

/* A session over a built model (params NULL: the model's) or, with model NULL, over a
 * bring-your-own-gradients set params; opt updates the same set; ck (may be NULL) gets
 * cadence and preemption checkpoints, including the extras registered on it with
 * hpct_ckpt_add_array / hpct_ckpt_add_scalar (the simulation's state); cfg NULL means the
 * defaults. Turns the model's overlapped averaging off. Not collective. */
hpct_status_t hpct_insitu_create(hpct_model_t model, hpct_params_t params, hpct_optimizer_t opt,
                                 hpct_ckpt_t ck, const hpct_insitu_config_t *cfg,
                                 hpct_insitu_t *session);
/* Collective: load the newest valid checkpoint (parameters, optimizer, RNG and extras) when
 * cfg.resume is set and one exists, else make every replica equal to rank 0's.
 * *step (may be NULL) = optimizer steps already completed (0 on a fresh start). */
hpct_status_t hpct_insitu_start(hpct_insitu_t session, long *step);
/* Collective, before hpct_insitu_start: register a simulation array decomposed in blocks over
 * the ranks. data is this rank's block, count[0] x ... x count[ndims-1] elements row-major, at
 * offset[] in a global array of global_shape[] (ndims 1-3); blocks hold no halo. It is saved
 * with every checkpoint as one global array /extra/<name> (shape in /extra/<name>.shape: the
 * writer gathers the blocks) and loaded at any number of ranks: each rank gets the block it
 * registers in that run. The blocks of all ranks must tile the global shape (no gap, no
 * overlap; a block may be empty): HPCT_ERR_INVALID_ARG on every rank naming the rank or the
 * ranks otherwise. Needs the session's checkpoint; the writer holds one global copy. */
hpct_status_t hpct_insitu_add_block(hpct_insitu_t session, const char *name,
                                    hpct_ckpt_dtype_t dtype, void *data, int ndims,
                                    const size_t *global_shape, const size_t *offset,
                                    const size_t *count);
/* Collective: one step of the built-in model on this rank's batch: x [local_batch, inputs]
 * fp32, targets [local_batch] int32 (softmax CE) or [local_batch, outputs] fp32 (MSE).
 * local_batch may differ between ranks and may be 0 on some (not all); the gradient is the
 * mean over the global batch (sum of local batches). *loss (may be NULL) = global mean loss.
 * HPCT_PREEMPTED: a signal or the walltime margin stopped the run after this step and its
 * checkpoint is written (exit 75 to requeue). An error on any rank returns that error on
 * every rank, with the failing rank named by hpct_last_error; HPCT_ERR_NONFINITE on every rank
 * when the averaged gradient holds NaN or Inf (nothing is updated); HPCT_ERR_STATE after
 * hpct_insitu_finish. */
hpct_status_t hpct_insitu_step(hpct_insitu_t session, const float *x, const void *targets,
                               int local_batch, float *loss);
/* Collective: as hpct_insitu_step for bring-your-own gradients already in the set's gradient
 * buffers, each the mean over this rank's local_batch samples, whose mean loss was
 * local_loss. */
hpct_status_t hpct_insitu_step_grads(hpct_insitu_t session, int local_batch, float local_loss,
                                     float *loss);
/* The latest progress figures (the same on every rank after each report; step counts are
 * always current). */
hpct_status_t hpct_insitu_progress(hpct_insitu_t session, hpct_progress_t *progress);
/* Collective: save a final checkpoint (when ck is set and the last step was not saved yet)
 * and wait for asynchronous writes. Once it succeeded, a second call returns HPCT_ERR_STATE
 * (a failed one may be retried). */
hpct_status_t hpct_insitu_finish(hpct_insitu_t session);
/* Free the session (restores the signal handlers it installed); NULL is accepted. */
void hpct_insitu_destroy(hpct_insitu_t session);

/* ---- The in-situ session from a settings file (the short form) -------------------------- */

/* hpct_insitu_open's communicator: MPI_COMM_WORLD, and MPI_Init there when MPI is not yet
 * initialised (with the preemption handlers installed first; hpct_insitu_close then calls
 * MPI_Finalize). */
#define HPCT_COMM_WORLD (-1)
/* hpct_insitu_open's flags: resume from a checkpoint of other settings (its hash differs;
 * hpctrain train --allow-config-change). */
#define HPCT_INSITU_ALLOW_SETTINGS_CHANGE 1u

/* Collective over the caller's communicator (a Fortran handle: MPI_Comm_c2f(comm) in C, MPI
 * initialised by the caller) or HPCT_COMM_WORLD: what the long form does in about 15 calls.
 * Reads the settings file (hpctrain.conf(5); NULL or "": none), then overrides ("key = value"
 * items separated by ';' or newlines; NULL: none), checks them (HPCT_SETTINGS_INSITU) and
 * makes: the context on comm (seed, threads, backend, collective_timeout,
 * consistency_interval; no log), the model (inputs -> hidden (activation) -> outputs, loss;
 * local batches up to global_batch rows), the optimizer and its schedule, the checkpoint
 * directory (cadence, retention, walltime_margin; the settings' hash is its config_hash:
 * another hash is refused at hpct_insitu_start unless flags hold
 * HPCT_INSITU_ALLOW_SETTINGS_CHANGE), the evaluation data (eval_manifest, eval_every_steps),
 * metrics, timeline, log_interval (rank 0 prints a progress line on standard output),
 * resume, the divergence guard, and the session over them, catching SIGTERM and SIGUSR1. An
 * error on any rank (a settings error: HPCT_ERR_INVALID_ARG, the message of hpctrain train)
 * is every rank's, with its detail in hpct_last_error(NULL); nothing is left made. Free with
 * hpct_insitu_close. */
hpct_status_t hpct_insitu_open(int fortran_comm, const char *settings, const char *overrides,
                               unsigned flags, hpct_insitu_t *session);
/* Collective: hpct_insitu_finish unless it already succeeded, then free the session and what
 * hpct_insitu_open made for it (model, optimizer, checkpoints, data, context; not MPI).
 * Returns finish's status, its detail in hpct_last_error(NULL); the session is freed either
 * way. NULL is accepted. */
hpct_status_t hpct_insitu_close(hpct_insitu_t session);
/* The session model's outputs out [batch, outputs] for x [batch, inputs] (hpct_model_forward,
 * batch up to the model's; not collective); HPCT_ERR_STATE for a session without a model. */
hpct_status_t hpct_insitu_predict(hpct_insitu_t session, const float *x, int batch, float *out);
/* The detail of the session's last error ("" if none; valid until its next call); with
 * NULL: of this thread's last failed hpct_insitu_open or hpct_insitu_close. */
const char *hpct_insitu_last_error(hpct_insitu_t session);

/* ---- Environment settings ---------------------------------------------- */

/* One HPCT_* environment setting of the library (hpct_tunable_get); the strings are the
 * library's (value: the environment's, valid until it changes). */
#define HPCT_TUNABLE_INFO_VERSION 1
/* clang-format off */
#define HPCT_TUNABLE_INFO_INITIALIZER {                                                            \
    HPCT_TUNABLE_INFO_VERSION, /* version */                                                       \
    NULL,                      /* name */                                                          \
    NULL,                      /* value */                                                         \
    NULL,                      /* default_value */                                                 \
    NULL,                      /* accepted */                                                      \
    NULL,                      /* help */                                                          \
    0                          /* ranks_agree */                                                   \
}
/* clang-format on */
typedef struct hpct_tunable_info {
    unsigned version;          /* HPCT_TUNABLE_INFO_VERSION */
    const char *name;          /* "HPCT_NODE_REDUCE" */
    const char *value;         /* as set in the environment; NULL when unset or empty */
    const char *default_value; /* the value used when unset ("(...)": where it comes from) */
    const char *accepted;      /* the values accepted, in words */
    const char *help;          /* one line: what it does */
    int ranks_agree;           /* 0/1: every rank must set the same value */
} hpct_tunable_info_t;

/* The number of environment settings the library reads (the registry, doc/hpctrain.3). */
int hpct_tunables_count(void);
/* Setting i (0 <= i < hpct_tunables_count()) into *info (from HPCT_TUNABLE_INFO_INITIALIZER). */
hpct_status_t hpct_tunable_get(int i, hpct_tunable_info_t *info);
/* Check every setting that is set, as hpct_init does first, without a context: the first
 * bad one gives HPCT_ERR_INVALID_ARG and "NAME is 'VALUE': use ACCEPTED" in detail. */
hpct_status_t hpct_tunables_check(char *detail, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* HPCTRAIN_H */
