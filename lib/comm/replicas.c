/* replicas.c: mirrored replicas: averaging of registered gradients (fused buckets), the
 * overlapped per-layer averaging of built-in models, parameter broadcast, consistency hash.
 * Buffers live in the backend's memory: host on cpu (the host engine, reduce.c), device on
 * cuda (device_avg.c for averages; broadcast and hash staged through host memory). */
#include "dist.h"
#include "agree.h"
#include "../device/ops.h"
#include "../model/model.h"
#include "../model/params.h"
#include "../core/sim.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Floats of a bucket whose average stays in flight (p2p, allgather, mpi): 1 MiB. Over TCP
 * (W = 2, 1,000 tensors of 1-64 KiB) fused buckets of 256 KiB, 512 KiB, 1, 2 and 16 MiB took
 * 1.47, 1.42-1.44, 1.48-1.62, 1.27-1.40 and 0.97-1.03x per-tensor MPI_Allreduce: with
 * several buckets in flight the wire stays busy while the next is packed and summed. */
#define PIPE_FLOATS ((size_t)1 << 18)

/* 1 when the set's buffers are host memory (the cpu backend). */
static int on_host(hpct_params_t p)
{
    return p->ctx->ops == &hpcti_cpu_ops;
}

/* The distributed state behind a parameter set in *d, or an error status. */
static hpct_status_t params_dist(hpct_params_t p, const char *fn, struct hpcti_dist **d)
{
    hpct_ctx_t ctx = p->ctx;
    hpcti_clear_error(ctx);
    if (!(*d = hpcti_dist_of(ctx, fn))) return HPCT_ERR_STATE;
    for (int i = 0; i < p->num; i++)
        if (p->bufs[i].count > INT_MAX)
            return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                               "%s: parameter '%s' has %zu elements; at most %d per buffer", fn,
                               p->bufs[i].name, p->bufs[i].count, INT_MAX);
    return HPCT_SUCCESS;
}

/* A fusion slot's contents: gradients of buffers [first, last) packed back to back; red: its
 * reduction in flight (-1: none, or averaged already through the node window); full: the
 * slot holds an average still to be unpacked. */
struct slot_use {
    int first, last, red, full;
};

/* Copy a slot back into the gradients, letting the reductions in flight progress between buffers.
 */
static void unpack(hpct_params_t p, const float *slot, const struct slot_use *u)
{
    size_t off = 0;
    for (int i = u->first; i < u->last; i++) {
        hpcti_copy_payload(p->bufs[i].grad, slot + off, sizeof(float) * p->bufs[i].count);
        off += p->bufs[i].count;
        hpcti_red_progress(p->ctx);
    }
}

/* Pack buffers from *next that fit in one slot of cap elements (progressing the reductions in
 * flight between buffers); returns the count packed. */
static size_t pack(hpct_params_t p, float *slot, size_t cap, int *next)
{
    size_t used = 0;
    while (*next < p->num && p->bufs[*next].count < cap && used + p->bufs[*next].count <= cap) {
        hpcti_copy_payload(slot + used, p->bufs[*next].grad, sizeof(float) * p->bufs[*next].count);
        used += p->bufs[(*next)++].count;
        hpcti_red_progress(p->ctx); /* errors surface in the final wait */
    }
    return used;
}

/* Buffers from *next whose gradients lie back to back in memory (each right after the one
 * before, as a built-in model's do, or parts of one hpct_alloc_grads buffer) and fit in one
 * slot of cap floats, when there are at least two: their count of floats, *next moved past
 * them; else 0. Such a bucket is averaged where it lies (no packing, no unpacking). */
static size_t adjacent(hpct_params_t p, size_t cap, int *next)
{
    int i = *next;
    size_t used = p->bufs[i].count;
    while (i + 1 < p->num && p->bufs[i + 1].grad == p->bufs[i].grad + p->bufs[i].count &&
           used + p->bufs[i + 1].count <= cap)
        used += p->bufs[++i].count;
    if (i == *next) return 0;
    *next = i + 1;
    return used;
}

/* Two fusion slots of cap floats (grows, never shrinks). Where the node window averages in
 * place they are a gradient buffer of hpcti_grads_alloc, so a slot's average reads the peers'
 * slots in place (no copy into the window): collective, as is the call (every rank registers
 * the same sizes, so every rank grows at the same call). */
static hpct_status_t reserve_fusion(hpct_ctx_t ctx, size_t cap, const char *fn)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (d->avg->fusion_cap >= 2 * cap) return HPCT_SUCCESS;
    if (d->avg->fusion_shared)
        hpcti_grads_release(ctx, d->avg->fusion);
    else
        free(d->avg->fusion);
    d->avg->fusion = NULL, d->avg->fusion_cap = 0, d->avg->fusion_shared = 0;
    if (d->avg->nwin && d->avg->nwin->in_place) {
        hpct_status_t s = hpcti_grads_alloc(ctx, fn, 2 * cap, &d->avg->fusion);
        if (s) return s;
        d->avg->fusion_shared = 1;
    } else if (!(d->avg->fusion = malloc(sizeof(float) * 2 * cap))) {
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY,
                           "%s: cannot allocate the fusion buffer (2 x %zu floats)", fn, cap);
    }
    d->avg->fusion_cap = 2 * cap;
    return HPCT_SUCCESS;
}

/* Start averaging a bucket buf [n]: in_window, it lies in gradient buffers on every rank
 * (hpcti_red_start_grads), else by its size class. */
static hpct_status_t start_bucket(hpct_ctx_t ctx, float *buf, size_t n, int in_window, int *id)
{
    return in_window ? hpcti_red_start_grads(ctx, buf, n, id)
                     : hpcti_red_start_sized(ctx, buf, n, id);
}

/* Buckets run two at a time: packing one slot while the other's average is in flight (a
 * bucket of adjacent gradients is averaged where it lies, with no slot). Each
 * average takes the algorithm of its size class (hpcti_red_start_sized): mpi and p2p stay in
 * flight, the node window completes before it returns. in_window: the set's gradients lie
 * in gradient buffers on every rank (set_in_window). */
static hpct_status_t average_buckets(hpct_params_t p, size_t cap, int in_window)
{
    hpct_ctx_t ctx = p->ctx;
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct slot_use use[2] = {{0, 0, -1, 0}, {0, 0, -1, 0}};
    int next = 0, k = 0, id;
    hpct_status_t s = HPCT_SUCCESS;
    while (next < p->num && !s) {
        float *at = p->bufs[next].grad;
        size_t n;
        if (p->bufs[next].count >= cap) { /* big: in place, no copy */
            n = p->bufs[next++].count;
            s = start_bucket(ctx, at, n, in_window, &id);
        } else if ((n = adjacent(p, cap, &next))) { /* a bucket where it lies */
            s = start_bucket(ctx, at, n, in_window, &id);
        } else {
            float *slot = d->avg->fusion + (size_t)k * cap;
            if (use[k].red >= 0) s = hpcti_red_wait(ctx, use[k].red);
            if (!s && use[k].full) unpack(p, slot, &use[k]);
            use[k].first = next;
            n = pack(p, slot, cap, &next);
            use[k].last = next, use[k].full = 1;
            if (!s) /* the slots are gradient buffers on every rank or on none */
                s = start_bucket(ctx, slot, n, d->avg->fusion_shared, &use[k].red);
            k ^= 1;
        }
        if (!s) s = hpcti_red_progress(ctx);
    }
    if (!s) s = hpcti_op_end(ctx, NULL, 0);
    for (int j = 0; j < 2 && !s; j++)
        if (use[j].full) unpack(p, d->avg->fusion + (size_t)j * cap, &use[j]);
    return s;
}

/* Device fusion slot of cap floats (grows, never shrinks; lives as long as the set). */
static hpct_status_t device_slot(hpct_params_t p, size_t cap, float **slot)
{
    struct hpcti_dist *d = hpcti_dist(p->ctx);
    if (!d->avg->dev_fusion || d->avg->dev_fusion_cap < cap) {
        if (d->avg->dev_fusion) p->ctx->ops->free(p->ctx, d->avg->dev_fusion);
        d->avg->dev_fusion = p->ctx->ops->alloc(p->ctx, sizeof(float) * cap);
        d->avg->dev_fusion_cap = d->avg->dev_fusion ? cap : 0;
        if (!d->avg->dev_fusion) return HPCT_ERR_NO_MEMORY;
    }
    *slot = d->avg->dev_fusion;
    return HPCT_SUCCESS;
}

/* Device buffers, one bucket at a time inside one operation: buffers of cap floats or more
 * in place, smaller ones packed into a device fusion slot (device-to-device copies), averaged,
 * unpacked. Buckets do not overlap each other (each average waits for its NCCL stream). */
static hpct_status_t average_device_buckets(hpct_params_t p, size_t cap)
{
    hpct_ctx_t ctx = p->ctx;
    const struct hpcti_ops *ops = ctx->ops;
    float *slot;
    hpct_status_t s = device_slot(p, cap, &slot);
    for (int next = 0; next < p->num && !s;) {
        struct hpcti_param_buf *b = &p->bufs[next];
        if (b->count >= cap) {
            s = hpcti_device_average_in_op(ctx, b->grad, b->count);
            next++;
            continue;
        }
        int first = next;
        size_t used = 0; /* to_device copies device to device too (cudaMemcpyDefault) */
        for (;
             next < p->num && used + p->bufs[next].count <= cap && p->bufs[next].count < cap && !s;
             used += p->bufs[next++].count)
            s = ops->to_device(ctx, slot + used, p->bufs[next].grad,
                               sizeof(float) * p->bufs[next].count);
        if (!s) s = hpcti_device_average_in_op(ctx, slot, used);
        for (size_t off = 0; first < next && !s; off += p->bufs[first++].count)
            s = ops->to_device(ctx, p->bufs[first].grad, slot + off,
                               sizeof(float) * p->bufs[first].count);
    }
    return s ? s : hpcti_op_end(ctx, NULL, 0);
}

/* A built-in model's gradients moved, once, into a buffer of hpcti_grads_alloc: a shared
 * window where the node window averages in place, so every average of them (per layer
 * inside backward, or the whole set after it) reads the peers' gradients where they lie
 * instead of copying them in and out. Collective the first time: the first
 * hpct_params_broadcast, hpct_params_average_grads or hpct_model_set_grad_averaging (model,
 * 1) on the set (the node window's settings are agreed, so every rank of a node decides
 * alike). Nothing to do for bring-your-own sets, device gradients, models not built, or
 * contexts without in-place averages. */
static hpct_status_t model_grads_to_window(hpct_params_t p, const char *fn)
{
    hpct_ctx_t ctx = p->ctx;
    struct hpcti_dist *d = hpcti_dist(ctx);
    size_t n;
    float *flat = p->model ? hpcti_model_flat_grads(p->model, &n) : NULL;
    if (!flat || !d->avg->nwin || !d->avg->nwin->in_place || !on_host(p)) return HPCT_SUCCESS;
    if (hpcti_grads_lent(d, flat)) return HPCT_SUCCESS;
    hpct_status_t s = hpcti_grads_alloc(ctx, fn, n, &flat);
    if (!s) hpcti_model_move_grads(p->model, flat, hpcti_grads_release);
    return s;
}

/* *in_window = 1 when every rank's gradients of the set all lie in gradient buffers (an
 * integer MIN agreement), so that its buckets may go through the node window in place
 * where the table sends their class point-to-point (hpcti_red_start_grads); agreed only
 * where that can happen (several nodes, a class of the set's sizes), else 0. */
static hpct_status_t set_in_window(hpct_params_t p, const char *fn, int *in_window)
{
    struct hpcti_dist *d = hpcti_dist(p->ctx);
    *in_window = 0;
    if (!hpcti_algo_grads_upto(d, p->total)) return HPCT_SUCCESS;
    int held = 1;
    for (int i = 0; i < p->num && held; i++)
        held = hpcti_node_win_holds(d, p->bufs[i].grad, p->bufs[i].count);
    return hpcti_agree_in_window(p->ctx, fn, held, in_window);
}

/* Reductions an operation over the set's device buckets may need (every buffer its own). */
static int device_reductions(hpct_params_t p)
{
    int n = 0;
    for (int i = 0; i < p->num; i++) n += hpcti_device_reductions(p->bufs[i].count);
    return n;
}

hpct_status_t hpct_params_average_grads(hpct_params_t p)
{
    static const char fn[] = "hpct_params_average_grads";
    if (!p) return HPCT_ERR_INVALID_ARG;
    struct hpcti_dist *d;
    hpct_status_t s = params_dist(p, fn, &d);
    if (s) return s;
    if (!on_host(p)) {
        size_t cap = d->avg->fusion_floats ? d->avg->fusion_floats : 1;
        s = hpcti_op_begin(p->ctx, fn, device_reductions(p), p->total);
        return s ? s : average_device_buckets(p, cap);
    }
    int in_window = 0;
    if ((s = model_grads_to_window(p, fn)) || (s = set_in_window(p, fn, &in_window))) return s;
    size_t cap = d->avg->fusion_floats < p->total ? d->avg->fusion_floats : p->total;
    int algo = hpcti_algo_for(d, cap); /* the window completes each average before it returns */
    int windowed = hpcti_algo_windowed(algo) || (in_window && hpcti_algo_grads_window(d, cap));
    if (cap > PIPE_FLOATS && !windowed) cap = PIPE_FLOATS;
    s = reserve_fusion(p->ctx, cap ? cap : 1, fn);
    if (!s)
        s = hpcti_op_begin(p->ctx, fn, hpcti_algo_reductions_bound(d, p->total, p->num),
                           hpcti_algo_scratch_bound(d, p->total, p->num));
    if (!s) hpcti_op_averages(p->ctx, p->total);
    return s ? s : average_buckets(p, cap ? cap : 1, in_window);
}

/* Host copies of the set's parameters: the buffers themselves on the cpu backend, else
 * host [total] filled from the device (pull) and written back (push). */
static hpct_status_t stage_params(hpct_params_t p, float *host, int push)
{
    hpct_status_t s = HPCT_SUCCESS;
    size_t off = 0;
    for (int i = 0; i < p->num && !s; off += p->bufs[i++].count) {
        size_t bytes = sizeof(float) * p->bufs[i].count;
        s = push ? p->ctx->ops->to_device(p->ctx, p->bufs[i].param, host + off, bytes)
                 : p->ctx->ops->to_host(p->ctx, host + off, p->bufs[i].param, bytes);
    }
    return s;
}

/* MPI_Ibcast of every buffer from root, on host memory (staged for device buffers). */
static hpct_status_t broadcast_host(hpct_params_t p, int root, float *host, const char *fn)
{
    struct hpcti_dist *d = hpcti_dist(p->ctx);
    MPI_Request *reqs = calloc((size_t)p->num + 1, sizeof *reqs);
    if (!reqs)
        return hpcti_error(p->ctx, HPCT_ERR_NO_MEMORY, "%s: cannot allocate %d requests", fn,
                           p->num);
    hpct_status_t s = host ? stage_params(p, host, 0) : HPCT_SUCCESS;
    if (!s) s = hpcti_op_begin(p->ctx, fn, 0, 0);
    size_t off = 0;
    for (int i = 0; i < p->num && !s; off += p->bufs[i++].count)
        if (MPI_Ibcast(host ? host + off : p->bufs[i].param, (int)p->bufs[i].count, MPI_FLOAT, root,
                       d->comm, &reqs[i]) != MPI_SUCCESS)
            s = hpcti_error(p->ctx, HPCT_ERR_COMM, "%s: MPI_Ibcast of '%s' failed", fn,
                            p->bufs[i].name);
    if (!s) s = hpcti_op_end(p->ctx, reqs, p->num);
    if (!s && host) s = stage_params(p, host, 1);
    free(reqs);
    return s;
}

hpct_status_t hpct_params_broadcast(hpct_params_t p, int root)
{
    static const char fn[] = "hpct_params_broadcast";
    if (!p) return HPCT_ERR_INVALID_ARG;
    struct hpcti_dist *d;
    hpct_status_t s = params_dist(p, fn, &d);
    if (s) return s;
    if (root < 0 || root >= d->size)
        return hpcti_error(p->ctx, HPCT_ERR_INVALID_ARG, "%s: root %d is outside [0, %d)", fn, root,
                           d->size);
    if (on_host(p)) {
        s = model_grads_to_window(p, fn);
        return s ? s : broadcast_host(p, root, NULL, fn);
    }
    float *host = hpcti_calloc(p->ctx, p->total ? p->total : 1, sizeof *host, "broadcast staging");
    if (!host) return HPCT_ERR_NO_MEMORY;
    s = broadcast_host(p, root, host, fn);
    free(host);
    return s;
}

hpct_status_t hpct_params_hash(hpct_params_t p, uint64_t *hash)
{
    if (!p) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(p->ctx);
    if (!hash) return hpcti_error(p->ctx, HPCT_ERR_INVALID_ARG, "hpct_params_hash: hash is NULL");
    float *host = NULL; /* device buffers are hashed from a host copy: the same words */
    if (!on_host(p)) {
        host = hpcti_calloc(p->ctx, p->total ? p->total : 1, sizeof *host, "hash staging");
        hpct_status_t s = host ? stage_params(p, host, 0) : HPCT_ERR_NO_MEMORY;
        if (s) {
            free(host);
            return s;
        }
    }
    uint64_t h = 0xcbf29ce484222325ull;
    size_t off = 0;
    for (int i = 0; i < p->num; off += p->bufs[i++].count) {
        const uint32_t *w = (const uint32_t *)(host ? host + off : p->bufs[i].param);
        h = (h ^ (uint64_t)p->bufs[i].count) * 0x100000001b3ull;
        for (size_t j = 0; j < p->bufs[i].count; j++) h = (h ^ w[j]) * 0x100000001b3ull;
    }
    free(host);
    *hash = h;
    return HPCT_SUCCESS;
}

/* Every rank gets the same verdict: the first rank whose hash differs from rank 0's. */
static hpct_status_t compare_hashes(hpct_ctx_t ctx, const uint64_t *h, int size)
{
    int first = -1, count = 0;
    for (int r = 1; r < size; r++)
        if (h[r] != h[0]) {
            if (first < 0) first = r;
            count++;
        }
    if (first < 0) return HPCT_SUCCESS;
    return hpcti_error(ctx, HPCT_ERR_DIVERGED,
                       "hpct_params_check_replicas: the replica on rank %d diverged from rank 0 "
                       "(parameter hash %016llx vs %016llx); %d of %d ranks differ",
                       first, (unsigned long long)h[first], (unsigned long long)h[0], count, size);
}

hpct_status_t hpct_params_check_replicas(hpct_params_t p)
{
    static const char fn[] = "hpct_params_check_replicas";
    if (!p) return HPCT_ERR_INVALID_ARG;
    struct hpcti_dist *d;
    hpct_status_t s = params_dist(p, fn, &d);
    if (s) return s;
    uint64_t mine, *all = calloc((size_t)d->size, sizeof *all);
    if (!all)
        return hpcti_error(p->ctx, HPCT_ERR_NO_MEMORY, "%s: cannot allocate %d hashes", fn,
                           d->size);
    s = hpct_params_hash(p, &mine);
    if (!s) s = hpcti_op_begin(p->ctx, fn, 0, 0);
    if (!s) {
        MPI_Request req;
        MPI_Iallgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, d->comm, &req);
        s = hpcti_op_end(p->ctx, &req, 1);
    }
    if (!s) s = compare_hashes(p->ctx, all, d->size);
    free(all);
    return s;
}

hpct_status_t hpct_params_check_replicas_at(hpct_params_t p, long step)
{
    if (!p) return HPCT_ERR_INVALID_ARG;
    long every = p->ctx->cfg.consistency_interval;
    if (every <= 0 || step % every != 0) return HPCT_SUCCESS;
    return hpct_params_check_replicas(p);
}

/* Device gradients: with NCCL in the node, each layer's average is queued on NCCL's stream
 * (after a CUDA event on the default stream) while backward goes on; elsewhere the model's
 * flat gradient buffer, whose start is layer 0's region, is averaged once layer 0 is done. */
static hpct_status_t device_layer_ready(hpct_ctx_t ctx, int layer, int num_layers, float *grad,
                                        size_t count, size_t total)
{
    static const char name[] = "hpct_model_loss_grad (gradient averaging)";
    if (!hpcti_device_can_overlap(ctx))
        return layer == 0 ? hpcti_device_allreduce_mean(ctx, name, grad, total) : HPCT_SUCCESS;
    hpct_status_t s = layer == num_layers - 1
                          ? hpcti_device_overlap_begin(ctx, name, num_layers, total)
                          : HPCT_SUCCESS;
    return s ? s : hpcti_device_average_enqueue(ctx, grad, count);
}

/* Every rank's status before backward starts the averaging (model.h): one integer
 * agreement, so one rank's bad batch or non-finite loss ends the step on all of them. */
static hpct_status_t status_before_grads(hpct_ctx_t ctx, hpct_status_t mine, const char *fn)
{
    return hpcti_agree_status(ctx, fn, mine, mine ? ctx->last_error : NULL);
}

/* Overlap hooks: the last layer opens the operation; each layer's region starts at once, by
 * the algorithm of its size class (the node window averages it before backward goes on). */
static hpct_status_t layer_ready(hpct_ctx_t ctx, int layer, int num_layers, float *grad,
                                 size_t count, size_t total)
{
    if (ctx->ops != &hpcti_cpu_ops)
        return device_layer_ready(ctx, layer, num_layers, grad, count, total);
    struct hpcti_dist *d = hpcti_dist(ctx);
    hpct_status_t s = HPCT_SUCCESS;
    if (layer == num_layers - 1) {
        s = hpcti_op_begin(ctx, "hpct_model_loss_grad (overlapped gradient averaging)",
                           hpcti_algo_reductions_bound(d, total, num_layers),
                           hpcti_algo_scratch_bound(d, total, num_layers));
        if (!s) hpcti_op_averages(ctx, total);
    }
    int id;
    if (!s) s = hpcti_red_start_sized(ctx, grad, count, &id);
    return s ? s : hpcti_red_progress(ctx);
}

/* After backward: wait for the averages it started. Where backward failed midway, the device
 * averages queued are fewer than the node peers', and are abandoned instead (the peers' wait
 * ends at the deadline, naming this rank). */
static hpct_status_t layers_done(hpct_ctx_t ctx, hpct_status_t backward)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (!d->in_op) return HPCT_SUCCESS;
    int device = ctx->ops != &hpcti_cpu_ops;
    if (device && backward) return hpcti_device_average_abandon(ctx, backward);
    hpct_status_t s = device ? hpcti_device_average_wait(ctx) : HPCT_SUCCESS;
    return s ? s : hpcti_op_end(ctx, NULL, 0);
}

hpct_status_t hpct_model_set_grad_averaging(hpct_model_t model, int enable)
{
    static const char fn[] = "hpct_model_set_grad_averaging";
    hpct_params_t p;
    if (!model) return HPCT_ERR_INVALID_ARG;
    hpct_status_t s = hpct_model_params(model, &p);
    if (s) return s;
    struct hpcti_dist *d;
    if (enable && (s = params_dist(p, fn, &d))) return s;
    if (enable && (s = model_grads_to_window(p, fn))) return s;
    if (enable)
        hpcti_model_set_grad_hooks(model, layer_ready, layers_done, status_before_grads);
    else
        hpcti_model_set_grad_hooks(model, NULL, NULL, NULL);
    return HPCT_SUCCESS;
}
