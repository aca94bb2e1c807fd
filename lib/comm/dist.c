/* dist.c: distributed contexts: MPI and communicator setup, topology, teardown, abort,
 * batch split, and the generic averaging call. */
#include "config.h"
#include "dist.h"
#include "live.h"
#include "agree.h"
#include "avg/vsum.h"
#include "runtime/versions.h"
#include "../device/ops.h"
#include "../../kernels/gpu_logic.h"
#include "../obs/obs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Deadline of the start-up exchange when cfg.collective_timeout_s is shorter (seconds). */
#define STARTUP_DEADLINE_S 120.0

static hpct_status_t check_dist_config(hpct_ctx_t ctx)
{
    const hpct_config_t *c = &ctx->cfg; /* the numeric fields: hpcti_ctx_alloc checked them */
    int transport = (int)c->grad_transport;
    if (transport < HPCT_TRANSPORT_FP32 || transport > HPCT_TRANSPORT_FP16)
        return hpcti_error(
            ctx, HPCT_ERR_INVALID_ARG,
            "hpct_config_t.grad_transport is %d, must be HPCT_TRANSPORT_FP32, _BF16 or _FP16",
            transport);
    return HPCT_SUCCESS;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* This process's node key: the override, the resource manager's node id, or (Open MPI
 * variables only) the lowest rank of its MPI shared-memory domain. */
static hpct_status_t node_key(hpct_ctx_t ctx, long *key)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (d->boot.ranks_per_node) {
        d->source = HPCT_TOPO_OVERRIDE;
        *key = d->rank / d->boot.ranks_per_node;
        return HPCT_SUCCESS;
    }
    d->source = d->boot.source;
    if (d->boot.have_node_key) {
        *key = d->boot.node_key;
        return HPCT_SUCCESS;
    }
    MPI_Comm shm;
    if (MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &shm) !=
        MPI_SUCCESS)
        return hpcti_error(ctx, HPCT_ERR_COMM,
                           "hpct_init: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed on rank %d",
                           d->rank);
    int lowest = d->rank;
    MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, shm);
    MPI_Comm_free(&shm);
    *key = lowest;
    return HPCT_SUCCESS;
}

/* Exchange node keys (deadline-bounded), then derive node id, sizes and the hierarchy. */
static hpct_status_t learn_nodes(hpct_ctx_t ctx, long *keys)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    long mine;
    hpct_status_t s = node_key(ctx, &mine);
    if (!s) s = hpcti_op_begin(ctx, "hpct_init (node exchange)", 0, 0);
    if (s) return s;
    MPI_Request req;
    MPI_Iallgather(&mine, 1, MPI_LONG, keys, 1, MPI_LONG, d->comm, &req);
    /* launchers may start ranks seconds apart: start-up waits at least STARTUP_DEADLINE_S */
    d->deadline_s = d->deadline_s > STARTUP_DEADLINE_S ? d->deadline_s : STARTUP_DEADLINE_S;
    s = hpcti_op_end(ctx, &req, 1);
    d->deadline_s = ctx->cfg.collective_timeout_s;
    if (s) return s;
    long *sorted = keys + d->size;
    memcpy(sorted, keys, sizeof *keys * (size_t)d->size);
    qsort(sorted, (size_t)d->size, sizeof *sorted, cmp_long);
    int nodes = 0, uniform = 1, run = 0, first_run = -1;
    for (int i = 0; i < d->size; i++) {
        if (i == 0 || sorted[i] != sorted[i - 1]) {
            if (sorted[i] == mine) d->node_id = nodes;
            if (i && first_run < 0) first_run = run;
            if (i && run != first_run) uniform = 0;
            nodes++, run = 0;
        }
        run++;
    }
    if (first_run >= 0 && run != first_run) uniform = 0;
    d->num_nodes = nodes;
    MPI_Comm_split(d->comm, d->node_id, d->rank, &d->node_rs);
    MPI_Comm_dup(d->node_rs, &d->node_ag);
    MPI_Comm_rank(d->node_rs, &d->local_rank);
    MPI_Comm_size(d->node_rs, &d->local_size);
    MPI_Comm_split(d->comm, d->local_rank, d->rank, &d->cross);
    MPI_Comm_size(d->cross, &d->cross_size);
    d->hier = uniform && nodes > 1 && d->local_size > 1;
    if (!uniform)
        hpcti_log(
            ctx, HPCT_LOG_INFO,
            "topology: nodes hold different numbers of ranks: averaging uses one flat allreduce");
    return HPCT_SUCCESS;
}

static void free_comm(MPI_Comm *c)
{
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

/* Lend lib/data its own dups of the job and node communicators (d->data_comms). */
static hpct_status_t share_data_comms(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    MPI_Comm world = MPI_COMM_NULL, node = MPI_COMM_NULL;
    if (MPI_Comm_dup(d->comm, &world) != MPI_SUCCESS ||
        MPI_Comm_dup(d->node_rs, &node) != MPI_SUCCESS) {
        free_comm(&world);
        return hpcti_error(ctx, HPCT_ERR_COMM, "hpct_init: MPI_Comm_dup for the data store failed");
    }
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    hpcti_data_comms_t *c = &d->data_comms;
    c->world = (int)MPI_Comm_c2f(world), c->node = (int)MPI_Comm_c2f(node);
    c->rank = d->rank, c->size = d->size;
    c->local_rank = d->local_rank, c->local_size = d->local_size;
    c->node_id = d->node_id, c->num_nodes = d->num_nodes;
    c->deadline_s = d->deadline_s;
    int sizes[2] = {d->local_size, -d->local_size};
    MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MIN, d->comm);
    c->uniform = sizes[0] == -sizes[1];
    double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    MPI_Allreduce(&mem, &c->node_memory_bytes, 1, MPI_DOUBLE, MPI_MIN, d->comm);
    c->valid = 1;
    return hpcti_data_use_comms(ctx, c);
}

/* HPCT_VECTOR_ISA (unset: auto): the instruction set of the averages' sums (vsum.h). A set
 * this rank cannot use fails hpct_init on every rank, naming this one; every set gives the
 * same bits, so ranks need not use the same. */
static hpct_status_t vector_setup(hpct_ctx_t ctx)
{
    const char *v = hpcti_tunable_value("HPCT_VECTOR_ISA"); /* a word of the registry */
    v = v ? v : "auto";
    const char *why = hpcti_vec_use(v);
    if (why)
        hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_init: HPCT_VECTOR_ISA is '%s': %s", v, why);
    hpct_status_t s =
        hpcti_agree_status(ctx, "hpct_init (HPCT_VECTOR_ISA)",
                           why ? HPCT_ERR_INVALID_ARG : HPCT_SUCCESS, why ? ctx->last_error : NULL);
    if (!s)
        hpcti_log(ctx, HPCT_LOG_INFO, "averaging sums: %s kernels (HPCT_VECTOR_ISA=%s)",
                  hpcti_vec_name(), v);
    return s;
}

/* Test hook HPCT_TEST_STOP_IN_OP=OP,RANK (with HPCT_TEST_HOOKS=1): that rank stops itself
 * (SIGSTOP) once collective operation #OP has started, outside its waits. */
static void read_test_stop(struct hpcti_dist *d)
{
    const char *v = hpcti_test_hook("HPCT_TEST_STOP_IN_OP");
    unsigned long long op;
    int rank;
    if (v && sscanf(v, "%llu,%d", &op, &rank) == 2 && rank == d->rank) d->test_stop_op = op;
}

/* The communicators, the nodes and the averaging set-up on comm; env is this rank's
 * environment check (bad_env its detail), agreed first so a setting bad on one rank fails
 * hpct_init on every rank, naming it. */
static hpct_status_t setup(hpct_ctx_t ctx, MPI_Comm comm, hpct_status_t env, const char *bad_env)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (MPI_Comm_dup(comm, &d->comm) != MPI_SUCCESS || MPI_Comm_dup(comm, &d->ctl) != MPI_SUCCESS)
        return hpcti_error(ctx, HPCT_ERR_COMM,
                           "hpct_init: MPI_Comm_dup of the caller's communicator failed");
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(d->ctl, MPI_ERRORS_RETURN);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    read_test_stop(d);
    d->local_size = 1; /* until the node exchange sets it */
    d->deadline_s = ctx->cfg.collective_timeout_s;
    d->avg->transport = ctx->cfg.grad_transport;
    d->avg->fusion_floats = ctx->cfg.fusion_bytes / sizeof(float);
    d->partner = malloc(HPCTI_MAX_PARTNERS * sizeof *d->partner);
    d->npartners = d->partner ? hpcti_token_partners(d->rank, d->size, d->partner) : 0;
    size_t np = (size_t)d->npartners + 1; /* + 1: no zero-sized allocation at one rank */
    d->tok_req = calloc(2 * np, sizeof *d->tok_req);
    d->tok_in = calloc(2 * np, sizeof *d->tok_in);
    d->tok_last = calloc(2 * np, sizeof *d->tok_last);
    long *keys = calloc(2 * (size_t)d->size, sizeof *keys); /* the node exchange's, then freed */
    if (!d->partner || !d->tok_req || !d->tok_in || !d->tok_last || !keys) {
        free(keys);
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY,
                           "hpct_init: cannot allocate per-rank tables for %d ranks", d->size);
    }
    hpct_status_t live = hpcti_live_setup(ctx);
    if (live) return live;
    int *tag_ub, flag = 0;
    MPI_Comm_get_attr(d->comm, MPI_TAG_UB, &tag_ub, &flag);
    d->avg->tag_space = (flag ? *tag_ub : 32767) - 1000;
    hpct_status_t s =
        hpcti_agree_status(ctx, "hpct_init (environment settings)", env, env ? bad_env : NULL);
    if (!s) s = hpcti_versions_agree(ctx);
    if (!s) s = learn_nodes(ctx, keys);
    free(keys);
    if (!s) hpcti_wait_setup(ctx);
    if (!s) s = vector_setup(ctx);
    if (!s) s = hpcti_node_win_setup(ctx);
    if (!s) s = hpcti_algo_setup(ctx);
    if (!s) s = share_data_comms(ctx);
    if (s) return s;
    if (d->boot.source == HPCT_TOPO_PMIX && comm == MPI_COMM_WORLD && d->boot.rank != d->rank)
        hpcti_log(ctx, HPCT_LOG_WARN, "bootstrap: PMIx rank %d differs from MPI rank %d",
                  d->boot.rank, d->rank);
    hpcti_log(ctx, HPCT_LOG_INFO,
              "topology (%s): rank %d of %d, node %d of %d, local rank %d of %d, cross-node size "
              "%d, %s averaging",
              hpcti_topo_source_name(d->source), d->rank, d->size, d->node_id, d->num_nodes,
              d->local_rank, d->local_size, d->cross_size, d->hier ? "hierarchical" : "flat");
    return HPCT_SUCCESS;
}

static void free_data_comms(hpct_ctx_t ctx)
{
    hpcti_data_comms_t *c = &hpcti_dist(ctx)->data_comms;
    if (!c->valid) return;
    MPI_Comm world = MPI_Comm_f2c(c->world), node = MPI_Comm_f2c(c->node);
    free_comm(&node), free_comm(&world);
    c->valid = 0;
}

/* ctx without its distributed state and the store's communicators lent from it (clearing a
 * slot fails only when every slot is taken, which the slots' count rules out). */
static void dist_detach(hpct_ctx_t ctx)
{
    hpct_status_t lent = hpcti_data_use_comms(ctx, NULL), own = hpcti_dist_attach(ctx, NULL);
    (void)lent, (void)own;
}

/* Free everything but the context; MPI_Finalize when we initialised MPI and peers are sane. */
static hpct_status_t teardown(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int finalized = 0, ok = !d->broken;
    MPI_Finalized(&finalized);
#ifdef HPCT_HAVE_NCCL
    /* NCCL before the communicators and the CUDA context it uses: collective over the node
     * (bounded by the deadline), or a local abort when peers may be stuck. */
    if (!finalized && ok)
        hpcti_nccl_destroy(d->avg->nccl, hpcti_now() + d->deadline_s);
    else
        hpcti_nccl_abort(d->avg->nccl);
    d->avg->nccl = NULL;
#endif
    hpcti_device_avg_release(ctx);
    if (d->avg->stage && ok) ctx->ops->free_host(ctx, d->avg->stage);
    if (d->avg->dev_fusion && ok) ctx->ops->free(ctx, d->avg->dev_fusion);
    hpcti_live_release(d, !finalized && ok, ok);
    if (!finalized && ok) {
        hpcti_grads_free_all(d, 1);
        hpcti_node_win_free(d, 1);
        free_comm(&d->cross), free_comm(&d->node_ag), free_comm(&d->node_rs);
        free_comm(&d->ctl), free_comm(&d->comm);
        if (d->owns_mpi) MPI_Finalize();
    }
    hpcti_grads_free_all(d, 0);
    hpcti_node_win_free(d, 0);
    hpcti_bootstrap_release(&d->boot);
    /* A broken runtime keeps the buffers that requests of an abandoned operation may still
     * use (receives into them, token sends from d->tok_out; MPI cannot cancel them): left
     * allocated until the process ends. */
    free(d->tok_req), free(d->tok_last), free(d->partner);
    if (ok && !d->avg->fusion_shared)
        free(d->avg->fusion); /* else a gradient buffer (freed above) */
#ifdef HPCT_SIM
    if (ok) hpcti_sim_pay_free(&d->avg->sim_pay);
#endif
    if (ok) free(d->tok_in), free(d->avg->red), free(d->avg->scratch), free(d->avg), free(d);
    return ok ? HPCT_SUCCESS : HPCT_ERR_STATE;
}

/* One deadline-bounded agreement over all ranks: *out = the MAX of mine (0 when the
 * operation failed here: the status says why). */
static hpct_status_t agree_max(hpct_ctx_t ctx, const char *what, int mine, int *out)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    MPI_Request req;
    hpct_status_t s = hpcti_op_begin(ctx, what, 0, 0);
    if (!s && MPI_Iallreduce(&mine, out, 1, MPI_INT, MPI_MAX, d->comm, &req) != MPI_SUCCESS)
        s = hpcti_error(ctx, HPCT_ERR_COMM, "%s: MPI_Iallreduce failed on rank %d", what, d->rank);
    return s ? s : hpcti_op_end(ctx, &req, 1);
}

/* Device identities of the node's ranks into ids [local_size] (deadline-bounded). */
static hpct_status_t node_identities(hpct_ctx_t ctx, uint64_t mine, uint64_t *ids)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    static const char what[] = "hpct_init (GPU identities of the node)";
    MPI_Request req;
    hpct_status_t s = hpcti_op_begin(ctx, what, 0, 0);
    if (!s && MPI_Iallgather(&mine, 1, MPI_UINT64_T, ids, 1, MPI_UINT64_T, d->node_rs, &req) !=
                  MPI_SUCCESS)
        s = hpcti_error(ctx, HPCT_ERR_COMM, "%s: MPI_Iallgather failed on rank %d", what, d->rank);
    return s ? s : hpcti_op_end(ctx, &req, 1);
}

enum { BIND_FAILED = 1, GPU_REFUSED = 2, GPU_SHARED = 4 };

/* This rank's verdict on the node's device identities: GPU_SHARED when another local rank has
 * the same device (GPU_REFUSED too, with the error, unless HPCT_ALLOW_GPU_SHARING is set). */
static int sharing_verdict(hpct_ctx_t ctx, const uint64_t *ids)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int other = hpcti_device_shared(ids, d->local_size, d->local_rank);
    if (other < 0) return 0;
    if (hpcti_gpu_sharing_allowed()) return GPU_SHARED;
    hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                "hpct_init: rank %d (local rank %d on %s) and local rank %d use the same GPU; "
                "start one rank per GPU (CUDA_VISIBLE_DEVICES=%s), or set "
                "HPCT_ALLOW_GPU_SHARING=1 to share (averaging then skips NCCL)",
                d->rank, d->local_rank, d->boot.hostname, other,
                getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
    return GPU_SHARED | GPU_REFUSED;
}

/* Start the backend for this rank's place on its node (cuda: the GPU from the local rank),
 * then agree over all ranks that every backend started and no GPU is shared unless allowed. */
static hpct_status_t bind_backend(hpct_ctx_t ctx, int *shared)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    hpct_status_t s = hpcti_ctx_bind(ctx, d->local_rank, d->local_size);
    if (ctx->ops == &hpcti_cpu_ops) return s; /* nothing to share, nothing to agree on */
    uint64_t id = 0, *ids = calloc((size_t)d->local_size, sizeof *ids);
    if (!ids) return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "hpct_init: device identity table");
    if (!s) s = hpcti_device_identity(ctx, &id);
    int verdict = s ? BIND_FAILED : 0, all = 0;
    hpct_status_t t = node_identities(ctx, s ? ~(uint64_t)d->rank : id, ids);
    if (!s && !t) verdict = sharing_verdict(ctx, ids);
    free(ids);
    if (!t) t = agree_max(ctx, "hpct_init (GPU selection)", verdict, &all);
    if (s || t) return s ? s : t;
    if (verdict & GPU_REFUSED) return HPCT_ERR_INVALID_ARG; /* detail recorded */
    if (all & (BIND_FAILED | GPU_REFUSED))
        return hpcti_error(ctx, HPCT_ERR_STATE,
                           "hpct_init: another rank could not start the %s backend or shares "
                           "its GPU (see that rank's error; seen by rank %d)",
                           ctx->ops->name, d->rank);
    *shared = (all & GPU_SHARED) != 0;
    return HPCT_SUCCESS;
}

#ifdef HPCT_HAVE_NCCL
/* HPCT_NCCL: whether the node phase of device averages uses NCCL where it applies. */
enum nccl_mode {
    NCCL_AUTO,    /* unset or "auto": yes; a failed set-up falls back to staging, with a warning */
    NCCL_OFF,     /* "0": never; device averages stage through host memory */
    NCCL_REQUIRED /* "1": yes, and a failed set-up fails hpct_init */
};

/* HPCT_NCCL (auto, 0, 1) and HPCT_NCCL_SOLO (0, 1: nodes of one rank make an NCCL
 * communicator of one rank too, so one GPU runs NCCL's paths). */
static hpct_status_t nccl_settings(hpct_ctx_t ctx, enum nccl_mode *mode, int *solo)
{
    int word = NCCL_AUTO, set; /* the words auto 0 1, in the enum's order */
    *solo = 0;
    hpct_status_t s = hpcti_tunable_flag(ctx, "HPCT_NCCL_SOLO", solo, &set);
    if (!s) s = hpcti_tunable_choice(ctx, "HPCT_NCCL", &word, &set);
    *mode = (enum nccl_mode)word;
    return s;
}

/* Why NCCL does not take this node phase ("" when it does): cpu, GPUs shared, HPCT_NCCL=0,
 * a node of one rank (unless HPCT_NCCL_SOLO=1 and every node has one), unequal nodes. */
static const char *no_nccl_reason(hpct_ctx_t ctx, int shared, enum nccl_mode mode, int solo)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int one_each = d->local_size == 1 && d->cross_size == d->size; /* every node one rank */
    if (ctx->ops == &hpcti_cpu_ops) return "cpu backend";
    if (shared) return "GPUs shared";
    if (mode == NCCL_OFF) return "HPCT_NCCL=0";
    if (d->local_size < 2 && !(solo && one_each)) return "one rank per node";
    if (!d->hier && d->num_nodes > 1 && !one_each) return "unequal nodes";
    return "";
}

/* NCCL's set-up failed on some rank and HPCT_NCCL is auto: every rank drops its communicator
 * and stages device averages; one warning, on rank 0, names the first rank that failed. */
static hpct_status_t nccl_fallback(hpct_ctx_t ctx, int failed_rank, hpct_status_t mine)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (mine) hpcti_log(ctx, HPCT_LOG_INFO, "NCCL set-up failed on this rank: %s", ctx->last_error);
    hpcti_clear_error(ctx);
    hpcti_nccl_abort(d->avg->nccl);
    d->avg->nccl = NULL;
    if (d->rank == 0)
        hpcti_log(ctx, HPCT_LOG_WARN,
                  "hpct_init: NCCL could not be set up (first on rank %d; its info log says "
                  "why): device averages are staged through host memory on every rank "
                  "(HPCT_NCCL=1 makes this an error)",
                  failed_rank);
    return HPCT_SUCCESS;
}

/* The node's NCCL communicator when NCCL takes the node phase (no_nccl_reason). A set-up
 * failure (HPCT_ERR_DEVICE) anywhere falls back to staging on every rank under HPCT_NCCL=auto
 * and fails hpct_init everywhere otherwise; any other failure fails hpct_init everywhere. The
 * verdict is one agreed integer: level (1 device, 2 other) x 2^24 + the failed rank + 1. */
static hpct_status_t start_nccl(hpct_ctx_t ctx, int shared)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    enum nccl_mode mode;
    int solo;
    hpct_status_t s = nccl_settings(ctx, &mode, &solo);
    if (s) return s;
    const char *why = no_nccl_reason(ctx, shared, mode, solo);
    if (*why) {
        if (ctx->ops != &hpcti_cpu_ops)
            hpcti_log(ctx, HPCT_LOG_INFO, "device averages: staged through host memory (%s)", why);
        return HPCT_SUCCESS;
    }
    if (d->local_size == 1)
        hpcti_log(ctx, HPCT_LOG_INFO, "HPCT_NCCL_SOLO=1: NCCL communicator of one rank per node");
    s = hpcti_device_nccl_start(ctx, &d->avg->nccl);
    int level = !s ? 0 : s == HPCT_ERR_DEVICE ? 1 : 2, all = 0;
    hpct_status_t t = agree_max(ctx, "hpct_init (NCCL communicator)",
                                level ? (level << 24) + d->rank + 1 : 0, &all);
    if (!t && (all >> 24) == 1 && mode == NCCL_AUTO)
        return nccl_fallback(ctx, (all & 0xffffff) - 1, s);
    if (!s && !t && all)
        s = hpcti_error(ctx, HPCT_ERR_DEVICE,
                        "hpct_init: rank %d could not join the node's NCCL communicator (seen by "
                        "rank %d)%s",
                        (all & 0xffffff) - 1, d->rank,
                        mode == NCCL_AUTO ? "" : "; HPCT_NCCL=auto would stage instead");
    if (s || t) {
        hpcti_nccl_abort(d->avg->nccl);
        d->avg->nccl = NULL;
    }
    return s ? s : t;
}
#endif

/* The backend on its device and, on cuda, NCCL; then the statistics start from zero. */
static hpct_status_t start_device(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int shared = 0;
    hpct_status_t s = bind_backend(ctx, &shared);
#ifdef HPCT_HAVE_NCCL
    if (!s) s = start_nccl(ctx, shared);
#endif
    d->ops = 0, d->wait_s = 0.0;
    return s;
}

/* Shared body of hpct_init and hpct_init_comm; comm is NULL-like for "world". */
static hpct_status_t init_on(const hpct_config_t *cfg, int use_world, int fcomm, hpct_ctx_t *out)
{
    if (!out) return HPCT_ERR_INVALID_ARG;
    *out = NULL;
    hpcti_set_init_error("");
    hpct_ctx_t ctx;
    hpct_status_t s = hpcti_ctx_create_unbound(cfg, &ctx); /* the device waits for the node */
    if (s) return s;
    struct hpcti_dist *d = calloc(1, sizeof *d);
    s = d ? hpcti_dist_attach(ctx, d) : HPCT_ERR_NO_MEMORY;
    if (!s && hpcti_avg_attach(d)) s = HPCT_ERR_NO_MEMORY;
    if (s) {
        free(d);
        dist_detach(ctx);
        hpcti_set_init_error(ctx->last_error);
        hpct_ctx_destroy(ctx);
        return s;
    }
    d->comm = d->ctl = d->node_rs = d->node_ag = d->cross = MPI_COMM_NULL;
    s = check_dist_config(ctx);
    /* a bad setting skips the bootstrap; setup agrees on it once the communicator is there */
    char bad_env[sizeof ctx->last_error];
    hpct_status_t env = s ? HPCT_SUCCESS : hpcti_env_check(ctx, "hpct_init: ", NULL, 0);
    snprintf(bad_env, sizeof bad_env, "%s", env ? ctx->last_error : "");
    if (!s && !env) s = hpcti_bootstrap_probe(ctx, &d->boot);
    int inited = 0;
    MPI_Initialized(&inited);
    if (!s && !inited && !use_world)
        s = hpcti_error(
            ctx, HPCT_ERR_STATE,
            "hpct_init_comm: MPI is not initialised; call MPI_Init first or use hpct_init");
    if (!s && !inited) {
        int provided;
        /* SERIALIZED: the caller may drive the context from any one thread at a time */
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
            s = hpcti_error(ctx, HPCT_ERR_COMM, "hpct_init: MPI_Init_thread failed");
        else
            d->owns_mpi = 1;
    }
    if (!s) MPI_Query_thread(&d->thread_level);
    d->init_thread = pthread_self();
    MPI_Comm comm = use_world ? MPI_COMM_WORLD : MPI_Comm_f2c(fcomm);
    if (!s && comm == MPI_COMM_NULL)
        s = hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                        "hpct_init_comm: the communicator handle %d is MPI_COMM_NULL", fcomm);
    if (!s) s = setup(ctx, comm, env, bad_env);
    if (!s) s = start_device(ctx);
    if (s) {
        hpcti_set_init_error(ctx->last_error); /* hpct_last_error(NULL) */
        teardown(ctx); /* the detail was logged (cfg.log_level >= HPCT_LOG_ERROR shows it) */
        dist_detach(ctx);
        hpct_ctx_destroy(ctx);
        return s;
    }
    d->ready_unix = hpcti_unix_now();
    *out = ctx;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_init(const hpct_config_t *cfg, hpct_ctx_t *ctx)
{
    return init_on(cfg, 1, 0, ctx);
}

hpct_status_t hpct_init_comm(const hpct_config_t *cfg, int fortran_comm, hpct_ctx_t *ctx)
{
    return init_on(cfg, 0, fortran_comm, ctx);
}

hpct_status_t hpct_finalize(hpct_ctx_t ctx)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    int finalized = 0;
    MPI_Finalized(&finalized);
    const struct hpcti_dist *d = hpcti_dist(ctx);
    if (d && !finalized && !d->broken) free_data_comms(ctx);
    hpct_status_t s = d ? teardown(ctx) : HPCT_SUCCESS;
    dist_detach(ctx);
    hpct_ctx_destroy(ctx);
    return s;
}

hpct_status_t hpct_topology(hpct_ctx_t ctx, hpct_topology_t *t)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    struct hpcti_dist *d = hpcti_dist_of(ctx, "hpct_topology");
    if (!d) return HPCT_ERR_STATE;
    if (!t) return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_topology: topo is NULL");
    memset(t, 0, sizeof *t);
    t->version = HPCT_TOPOLOGY_VERSION;
    t->rank = d->rank, t->size = d->size;
    t->local_rank = d->local_rank, t->local_size = d->local_size;
    t->node_id = d->node_id, t->num_nodes = d->num_nodes;
    t->node_comm_size = d->local_size, t->cross_comm_size = d->cross_size;
    t->hierarchical = d->hier;
    t->source = d->source;
    snprintf(t->hostname, sizeof t->hostname, "%s", d->boot.hostname);
    snprintf(t->job_id, sizeof t->job_id, "%s", d->boot.job_id);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_abort_job(hpct_ctx_t ctx, int exit_code)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized) {
        if (ctx)
            return hpcti_error(
                ctx, HPCT_ERR_STATE,
                "hpct_abort_job: MPI is not running; the caller must exit(%d) itself", exit_code);
        return HPCT_ERR_STATE;
    }
    if (ctx) hpcti_log(ctx, HPCT_LOG_ERROR, "aborting the job with exit code %d", exit_code);
    struct hpcti_dist *d = ctx ? hpcti_dist(ctx) : NULL;
    MPI_Abort(d ? d->comm : MPI_COMM_WORLD, exit_code);
    return ctx ? hpcti_error(ctx, HPCT_ERR_COMM, "hpct_abort_job: MPI_Abort returned")
               : HPCT_ERR_COMM;
}

hpct_status_t hpct_batch_split(hpct_ctx_t ctx, int global_batch, int *local_batch, int *offset)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    struct hpcti_dist *d = hpcti_dist(ctx);
    int rank = d ? d->rank : 0, size = d ? d->size : 1;
    if (!local_batch)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_batch_split: local_batch is NULL");
    if (global_batch <= 0 || global_batch % size != 0)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_batch_split: the global batch %d is not a positive multiple of "
                           "the world size %d (choose a batch divisible by %d)",
                           global_batch, size, size);
    *local_batch = global_batch / size;
    if (offset) *offset = rank * *local_batch;
    return HPCT_SUCCESS;
}

hpct_status_t hpct_comm_stats(hpct_ctx_t ctx, double *wait_seconds, long *operations)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    struct hpcti_dist *d = hpcti_dist_of(ctx, "hpct_comm_stats");
    if (!d) return HPCT_ERR_STATE;
    if (wait_seconds) *wait_seconds = d->wait_s;
    if (operations) *operations = d->ops;
    return HPCT_SUCCESS;
}

/* The distributed state for an average of buf [n], or NULL with the error recorded. */
static struct hpcti_dist *average_args(hpct_ctx_t ctx, const char *fn, const float *buf, size_t n)
{
    hpcti_clear_error(ctx);
    struct hpcti_dist *d = hpcti_dist_of(ctx, fn);
    if (d && !buf && n) {
        hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "%s: buf is NULL with n = %zu", fn, n);
        return NULL;
    }
    if (d && n > HPCTI_MAX_FLOATS) {
        hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "%s: n = %zu floats, more than the 2^40 allowed", fn,
                    n);
        return NULL;
    }
    return d;
}

/* Host memory on every backend: flags, statuses, losses (the train loop's agreements). */
hpct_status_t hpct_allreduce_mean(hpct_ctx_t ctx, float *buf, size_t n)
{
    static const char fn[] = "hpct_allreduce_mean";
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    if (!average_args(ctx, fn, buf, n))
        return hpcti_dist(ctx) ? HPCT_ERR_INVALID_ARG : HPCT_ERR_STATE;
    return hpcti_host_allreduce_mean(ctx, fn, buf, n);
}

/* The backend's memory: device buffers on cuda (device_avg.c), host buffers on cpu. */
hpct_status_t hpct_allreduce_mean_device(hpct_ctx_t ctx, float *buf, size_t n)
{
    static const char fn[] = "hpct_allreduce_mean_device";
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    if (!average_args(ctx, fn, buf, n))
        return hpcti_dist(ctx) ? HPCT_ERR_INVALID_ARG : HPCT_ERR_STATE;
    return hpcti_device_allreduce_mean(ctx, fn, buf, n);
}
