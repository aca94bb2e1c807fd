/* model.h: library-internal hooks of built-in models (not installed); parameter sets are in
 * params.h. */
#ifndef HPCTI_MODEL_INTERNAL_H
#define HPCTI_MODEL_INTERNAL_H

#include "../core/core.h"

/* Gradient-averaging hooks of built-in models (installed by lib/comm): backward() calls
 * ready once a layer's gradients grad [count] are final (last layer first; total is the
 * model's parameter count), and hpct_model_loss_grad calls done after backward, with its
 * status. */
typedef hpct_status_t (*hpcti_grad_ready_fn)(hpct_ctx_t ctx, int layer, int num_layers, float *grad,
                                             size_t count, size_t total);
/* backward: its status; on an error, ready was not called for the layers below the failed one. */
typedef hpct_status_t (*hpcti_grads_done_fn)(hpct_ctx_t ctx, hpct_status_t backward);
/* Before backward starts the averaging, every rank's status so far (argument checks,
 * forward, loss) is agreed: a failure on one rank becomes every rank's, naming it, instead
 * of leaving the others waiting in the averaging until the deadline. Collective. */
typedef hpct_status_t (*hpcti_grads_agree_fn)(hpct_ctx_t ctx, hpct_status_t mine, const char *fn);
/* Gives back gradient memory that lib/comm lent a model (hpcti_model_move_grads). */
typedef void (*hpcti_grads_release_fn)(hpct_ctx_t ctx, float *flat);
/* A built model's gradients, all layers back to back [*count] (NULL, 0 before build). */
float *hpcti_model_flat_grads(hpct_model_t m, size_t *count);
/* Move a built model's gradients (host memory) to flat [count of hpcti_model_flat_grads],
 * values copied, every layer's and the parameter set's pointers updated; the old memory is
 * freed (or released); release gives flat back when the model is destroyed. */
void hpcti_model_move_grads(hpct_model_t m, float *flat, hpcti_grads_release_fn release);
/* Install the hooks (NULL, NULL, NULL removes them). */
void hpcti_model_set_grad_hooks(hpct_model_t m, hpcti_grad_ready_fn ready, hpcti_grads_done_fn done,
                                hpcti_grads_agree_fn agree);
/* A loop whose rank failed with s in a step that averages, before it reached the agreement
 * of hpct_model_loss_grad (its batch could not be read, an earlier micro-batch failed):
 * takes part in that agreement with s, so the other ranks stop at once. Returns the agreed
 * status (naming the failing rank); s unchanged when averaging is off or the agreement of
 * this step already ran. */
HPCTI_CHECK hpct_status_t hpcti_model_join_failure(hpct_model_t m, hpct_status_t s);
/* A call of fn (hpct_model_loss_grad) refused with s before it reached the library (an
 * argument check of the Fortran wrappers): with averaging on, takes part in the agreement
 * the other ranks' call makes before backward, so they fail at once naming this rank.
 * Returns the agreed status; s unchanged when averaging is off or s is 0. Collective then. */
HPCTI_CHECK hpct_status_t hpcti_model_refuse(hpct_model_t m, hpct_status_t s, const char *fn);
/* Start of a training step: no agreement has run in it yet. */
void hpcti_model_step_begins(hpct_model_t m);
/* The status hpct_model_loss_grad returns for a loss that is not finite: HPCT_ERR_NONFINITE
 * (0 sets it back), or HPCT_ERR_LOSS_DIVERGED while hpct_train's divergence guard is on. The
 * agreement before the averaging carries it to every rank. */
void hpcti_model_set_nonfinite_loss(hpct_model_t m, hpct_status_t status);

/* The fused step (fused.c): one training step of a built model m and an optimizer o over
 * m's own parameter set as one recorded sequence of device work, captured as a CUDA graph
 * and replayed when the same shapes come again (HPCT_CUDA_GRAPH=0: never captured). For one
 * rank on a backend that records steps (cuda) and a model without averaging hooks:
 * hpcti_fused_applies says whether it does. */
int hpcti_fused_applies(hpct_model_t m, hpct_optimizer_t o);
/* What the fused steps of m did so far: steps run as recorded (not captured), steps replayed
 * from a graph, graphs captured (each capture is then replayed at once). */
struct hpcti_fused_stats {
    long queued, replayed, captured;
};
void hpcti_fused_stats(hpct_model_t m, struct hpcti_fused_stats *stats);
/* One step's batch: x [batch, inputs] and t (host memory, staged through pinned memory, or
 * device memory, read in place), or x and t NULL for the batch hpcti_fused_stage_next staged;
 * check_grads 1: the update waits for the gradients to be finite (the in-situ step's check);
 * ahead (may be NULL) is called with arg while the device runs the step. */
struct hpcti_fused_io {
    const float *x;
    const void *t;
    int batch, check_grads;
    void (*ahead)(void *arg);
    void *arg;
};
/* Status: this rank's, of the argument checks, the device work and a non-finite loss (the
 * parameters then untouched); *loss the batch's mean loss; *updated 1 when the update ran, 0
 * when the gradients' check (non-finite values, or a non-finite norm when o clips) refused
 * it: the caller's own check then names the reason. */
HPCTI_CHECK hpct_status_t hpcti_fused_step(hpct_model_t m, hpct_optimizer_t o, const char *fn,
                                           const struct hpcti_fused_io *io, float *loss,
                                           int *updated);
/* From an ahead callback: copy the host batch x, t [batch] into the pinned slot the next step
 * reads, which then passes x and t NULL (a step given arrays drops it). */
void hpcti_fused_stage_next(hpct_model_t m, const float *x, const void *t, int batch);

/* 1 when m has a layer other than dense (its checkpoints are schema 2). */
int hpcti_model_layered(hpct_model_t m);

/* The loss a built model applies (for callers that feed it targets). */
hpct_loss_t hpcti_model_loss(hpct_model_t m);

#endif
