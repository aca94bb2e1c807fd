/*
 * hpctrain.h: the one public header of libhpctrain, a static C library for
 * synchronous data-parallel training on HPC batch clusters.
 *
 * Conventions: every call returns an hpct_status_t (0 success, negative
 * error, positive informational); handles are opaque; arrays are fp32,
 * row-major [rows, cols]; sizes are element counts unless named *_bytes.
 * The library never exits, aborts, or prints unless a log level is set.
 */
#ifndef HPCTRAIN_H
#define HPCTRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ---------------------------------------------------------- */

#define HPCT_VERSION_MAJOR 0
#define HPCT_VERSION_MINOR 1
#define HPCT_VERSION_PATCH 0
#define HPCT_VERSION_STRING "0.1.0"
/* One integer that grows with every release: 0x00MMmmpp. */
#define HPCT_VERSION ((HPCT_VERSION_MAJOR << 16) | (HPCT_VERSION_MINOR << 8) | HPCT_VERSION_PATCH)

/* Version of the library actually linked (may differ from the header's). */
void hpct_get_version(int *major, int *minor, int *patch);

/* ---- Status codes ----------------------------------------------------- */

typedef int hpct_status_t;

#define HPCT_SUCCESS          0   /* it worked */
#define HPCT_PREEMPTED        1   /* stopped cleanly at a step boundary on a signal */
#define HPCT_ERR_INVALID_ARG  -1  /* a NULL handle, bad size, or out-of-range value */
#define HPCT_ERR_NO_MEMORY    -2  /* an allocation failed */
#define HPCT_ERR_STATE        -3  /* called in the wrong order (e.g. train before build) */
#define HPCT_ERR_UNSUPPORTED  -4  /* feature or backend not built into this library */
#define HPCT_ERR_IO           -5  /* a file could not be opened, read or written */
#define HPCT_ERR_FORMAT       -6  /* a file or dataset has the wrong layout or syntax */
#define HPCT_ERR_CHECKSUM     -7  /* stored and computed checksums differ */
#define HPCT_ERR_NOT_FOUND    -8  /* a named file, dataset or parameter does not exist */
#define HPCT_ERR_NONFINITE    -9  /* NaN or Inf in inputs, loss or gradients */
#define HPCT_ERR_COMM         -10 /* a collective failed */
#define HPCT_ERR_TIMEOUT      -11 /* a collective missed its deadline (a rank hung) */
#define HPCT_ERR_DIVERGED     -12 /* replicas no longer hold identical parameters */
#define HPCT_ERR_INTERNAL     -13 /* a bug in libhpctrain: please report it */

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

/* Versioned, append-only; always start from HPCT_CONFIG_INITIALIZER. */
#define HPCT_CONFIG_VERSION 1
typedef struct hpct_config {
    unsigned version;         /* HPCT_CONFIG_VERSION */
    hpct_backend_t backend;   /* where tensors live */
    int device;               /* GPU ordinal; -1 picks the local rank */
    hpct_log_level_t log_level;
    uint64_t seed;            /* seeds initialisation and the context RNG */
    int num_threads;          /* threads for CPU math (BLAS); 0 leaves the BLAS default */
    /* Distributed runtime (used by hpct_init / hpct_init_comm; see that section). */
    double collective_timeout_s; /* deadline of every collective, seconds (default 300) */
    size_t fusion_bytes;      /* gradient fusion buffer, bytes (default 16 MiB) */
    long consistency_interval; /* steps between replica-consistency checks; 0 = never */
    int grad_transport;       /* HPCT_TRANSPORT_FP32 (default), _BF16 or _FP16 */
} hpct_config_t;

#define HPCT_CONFIG_INITIALIZER                                                                  \
    {HPCT_CONFIG_VERSION, HPCT_BACKEND_CPU, -1, HPCT_LOG_NONE, 42, 0, 300.0, (size_t)16 << 20, 0, 0}

/* Create a context from cfg (NULL means the defaults). */
hpct_status_t hpct_ctx_create(const hpct_config_t *cfg, hpct_ctx_t *ctx);
/* Free a context; NULL is accepted. Free its models and optimizers first. */
void hpct_ctx_destroy(hpct_ctx_t ctx);
/* Detail of the context's most recent error ("" if none); valid until the next call. */
const char *hpct_last_error(hpct_ctx_t ctx);

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
/* Add a buffer pair of count floats; name is copied and must be unique. */
hpct_status_t hpct_params_register(hpct_params_t params, const char *name, float *param,
                                   float *grad, size_t count);
/* Number of registered buffers and their total element count. */
hpct_status_t hpct_params_size(hpct_params_t params, int *num_buffers, size_t *total_count);
/* Look up buffer i: its name, parameter and gradient pointers and element count. */
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
    HPCT_INIT_AUTO = 0,   /* He for ReLU/GELU, Xavier otherwise */
    HPCT_INIT_HE = 1,     /* normal(0, sqrt(2 / fan_in)) */
    HPCT_INIT_XAVIER = 2  /* uniform(+-sqrt(6 / (fan_in + fan_out))) */
} hpct_init_t;

/* An empty sequential model taking [batch, input_features] fp32 inputs. */
hpct_status_t hpct_model_create(hpct_ctx_t ctx, int input_features, hpct_model_t *model);
void hpct_model_destroy(hpct_model_t model);
/* Append y = act(x W^T + b), W [out, in], b [out]. */
hpct_status_t hpct_model_add_dense(hpct_model_t model, int out_features, hpct_activation_t act,
                                   hpct_init_t init);
/* Choose the loss applied to the last layer's output (default softmax CE). */
hpct_status_t hpct_model_set_loss(hpct_model_t model, hpct_loss_t loss);
/* Allocate every buffer for batches up to max_batch and initialise the weights from
 * the context seed. No allocation happens after this call. */
hpct_status_t hpct_model_build(hpct_model_t model, int max_batch);
/* The model's parameters as a set (owned by the model; do not destroy). */
hpct_status_t hpct_model_params(hpct_model_t model, hpct_params_t *params);
/* Input and output widths. */
hpct_status_t hpct_model_shape(hpct_model_t model, int *inputs, int *outputs);

/* Forward only: out [batch, outputs] receives the last layer (logits for CE). */
hpct_status_t hpct_model_forward(hpct_model_t model, const float *x, int batch, float *out);
/* Forward and backward on one batch: loss is the batch mean; gradients are
 * overwritten (accumulate = 0) or added to (accumulate = 1). */
hpct_status_t hpct_model_loss_grad(hpct_model_t model, const float *x, const void *targets,
                                   int batch, int accumulate, float *loss);
/* Mean loss and accuracy (CE only; -1 for MSE) over n samples, weights unchanged. */
hpct_status_t hpct_model_evaluate(hpct_model_t model, const float *x, const void *targets,
                                  size_t n, double *loss, double *accuracy);

/* ---- Optimizers and learning-rate schedules --------------------------- */

typedef struct hpct_optimizer *hpct_optimizer_t;

typedef enum { HPCT_OPT_SGD = 0, HPCT_OPT_ADAMW = 1 } hpct_optimizer_kind_t;
typedef enum { HPCT_SCHED_CONSTANT = 0, HPCT_SCHED_STEP = 1, HPCT_SCHED_COSINE = 2 } hpct_schedule_t;

/* Versioned, append-only; always start from HPCT_OPTIM_CONFIG_INITIALIZER. */
#define HPCT_OPTIM_CONFIG_VERSION 1
typedef struct hpct_optim_config {
    unsigned version;           /* HPCT_OPTIM_CONFIG_VERSION */
    hpct_optimizer_kind_t kind;
    float lr;                   /* peak learning rate */
    float momentum;             /* SGD */
    int nesterov;               /* SGD: 1 for Nesterov momentum */
    float weight_decay;         /* SGD: L2 added to the gradient; AdamW: decoupled */
    float beta1, beta2, eps;    /* AdamW */
    float clip_norm;            /* clip the global gradient norm to this; 0 = off */
    hpct_schedule_t schedule;
    long warmup_steps;          /* linear warmup from lr/warmup to lr; 0 = none */
    long step_size;             /* STEP: multiply by gamma every step_size steps */
    float gamma;                /* STEP decay factor */
    long total_steps;           /* COSINE: steps (after warmup) to reach min_lr */
    float min_lr;               /* COSINE floor */
} hpct_optim_config_t;

#define HPCT_OPTIM_CONFIG_INITIALIZER                                                            \
    {HPCT_OPTIM_CONFIG_VERSION, HPCT_OPT_SGD, 0.01f, 0.0f, 0, 0.0f, 0.9f, 0.999f, 1e-8f, 0.0f,   \
     HPCT_SCHED_CONSTANT, 0, 1, 0.1f, 1, 0.0f}

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

/* ---- Distributed runtime (lib/bootstrap, lib/comm) ---------------------- */

/* Wire format of gradients in the averaging collectives; accumulation is always fp32. */
#define HPCT_TRANSPORT_FP32 0 /* exact fp32 (default) */
#define HPCT_TRANSPORT_BF16 1 /* bfloat16 on the wire, round to nearest even */
#define HPCT_TRANSPORT_FP16 2 /* IEEE half on the wire (values beyond 65504 become Inf) */

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
#define HPCT_TOPOLOGY_INITIALIZER {HPCT_TOPOLOGY_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, HPCT_TOPO_SINGLE, "", ""}
typedef struct hpct_topology {
    unsigned version;         /* HPCT_TOPOLOGY_VERSION */
    int rank, size;           /* in the context's communicator */
    int local_rank, local_size; /* on this (possibly virtual) node */
    int node_id, num_nodes;   /* dense node index in [0, num_nodes) */
    int node_comm_size;       /* ranks in the node-local communicator */
    int cross_comm_size;      /* ranks in the cross-node communicator (same local rank) */
    int hierarchical;         /* 1: averaging uses the two-level path; 0: one flat allreduce */
    hpct_topo_source_t source;
    char hostname[256];
    char job_id[128];         /* Slurm job id, PMIx namespace, or "none" */
} hpct_topology_t;

/* Context plus distributed runtime: bootstrap (PMIx, then Open MPI env, Slurm env, single
 * process), MPI_Init when MPI is not yet initialised, communicators on MPI_COMM_WORLD. */
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

/* buf [n] (host memory) = mean over ranks of buf, fp32 accumulation, hierarchical when the
 * nodes have equal rank counts. Collective; n may be 0; fails after the deadline with
 * HPCT_ERR_TIMEOUT naming the ranks that did not arrive. */
hpct_status_t hpct_allreduce_mean(hpct_ctx_t ctx, float *buf, size_t n);
/* Average every registered gradient over ranks (bring-your-own-gradients), fused into
 * buckets of cfg.fusion_bytes; buffers larger than a bucket are reduced in place. */
hpct_status_t hpct_params_average_grads(hpct_params_t params);
/* Copy root's parameters into every rank's (call once after build: identical replicas). */
hpct_status_t hpct_params_broadcast(hpct_params_t params, int root);
/* Compare a 64-bit hash of the parameters across ranks; HPCT_ERR_DIVERGED names the first
 * rank that differs from rank 0 (every rank gets the same answer). */
hpct_status_t hpct_params_check_replicas(hpct_params_t params);
/* hpct_params_check_replicas when step is a multiple of cfg.consistency_interval (> 0). */
hpct_status_t hpct_params_check_replicas_at(hpct_params_t params, long step);
/* 64-bit hash of the parameter values (FNV-1a over 32-bit words, in registration order). */
hpct_status_t hpct_params_hash(hpct_params_t params, uint64_t *hash);
/* Average a built-in model's gradients inside hpct_model_loss_grad, layer by layer while
 * backward runs (overlap). Like DDP's no_sync: turn it off for all but the last micro-batch. */
hpct_status_t hpct_model_set_grad_averaging(hpct_model_t model, int enable);
/* Split a global batch over the ranks: local = global / size, offset = rank * local.
 * HPCT_ERR_INVALID_ARG when global % size != 0. */
hpct_status_t hpct_batch_split(hpct_ctx_t ctx, int global_batch, int *local_batch, int *offset);
/* Communication timers since init: seconds spent waiting for collectives to complete
 * (exposed, not hidden by overlap), and the number of averaging operations. */
hpct_status_t hpct_comm_stats(hpct_ctx_t ctx, double *wait_seconds, long *operations);

/* ---- Checkpoints and preemption (lib/ckpt) ------------------------------ */

/* ---- Training loop (lib/train) ------------------------------------------ */

#ifdef __cplusplus
}
#endif
#endif /* HPCTRAIN_H */
