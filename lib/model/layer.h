/* layer.h: the layers of built-in sequential models and the model itself (lib/model only). */
#ifndef HPCTI_LAYER_H
#define HPCTI_LAYER_H

#include "model.h"
#include "../../kernels/conv_math.h"

enum hpcti_layer_kind {
    HPCTI_LAYER_DENSE,
    HPCTI_LAYER_CONV,
    HPCTI_LAYER_POOL, /* max or average: g.kind */
    HPCTI_LAYER_UPSAMPLE,
    HPCTI_LAYER_RESHAPE /* a new shape for the same values: no compute, no buffers */
};

/* A tensor's shape per sample: channels, then dims spatial sizes (dims 0: flat features). */
struct hpcti_shape {
    int dims;
    int c, size[3]; /* size: D H W of the last dims entries; 1 before them */
};

struct hpcti_layer {
    enum hpcti_layer_kind kind;
    int in, out;              /* features per sample */
    struct hpcti_shape shape; /* of the output */
    struct hpcti_geom g;      /* conv, pool, upsample */
    int padding;              /* conv: hpct_padding_t */
    hpct_activation_t act;
    hpct_init_t init;
    size_t nw, nb; /* parameter counts: weights, biases (0 without parameters) */
    float *w, *b, *dw,
        *db;        /* views into the flat buffers: dense [out, in], conv [c_out, c_in k..] */
    float *z, *y;   /* [max_batch, out]; y == z for identity (reshape: neither) */
    float *col;     /* conv: [samples, c_in k.., P] column matrix of its input, samples:
                     * hpcti_conv_col_samples of max_batch */
    const float *x; /* the input of the last forward (device memory) */
};

struct hpct_model {
    hpct_ctx_t ctx;
    int inputs;
    struct hpcti_layer *layers;
    int num, cap;
    hpct_loss_t loss;
    int max_batch;                   /* 0 until built */
    float *flat_params, *flat_grads; /* all W and b, back to back */
    size_t num_params;
    int param_layers;     /* layers with parameters (the averaging hooks count these) */
    float *x_dev;         /* [max_batch, inputs] staging (device backends only) */
    void *targets_dev;    /* [max_batch] int32 or [max_batch, outputs] float staging */
    int32_t *labels_host; /* [max_batch]: device labels copied for the range check */
    float *grad_a[2];     /* [max_batch, widest] ping-pong buffers for d(activation) */
    float *dcol;          /* [col samples, largest column matrix]: conv backward (or NULL) */
    hpct_params_t params;
    hpcti_grad_ready_fn grad_ready; /* averaging hooks (lib/comm); NULL when off */
    hpcti_grads_done_fn grads_done;
    hpcti_grads_agree_fn grads_agree;
    hpcti_grads_release_fn grads_release; /* set: flat_grads came from lib/comm (move_grads) */
    int agreed; /* the agreement before backward ran in this step (hpcti_model_step_begins) */
    hpct_status_t hook_status;    /* first error a ready hook returned during backward */
    hpct_status_t nonfinite_loss; /* status of a non-finite loss; 0: HPCT_ERR_NONFINITE */
    unsigned long layout;         /* counts moves of flat_grads (recorded steps use its address) */
    struct hpcti_fused *fused;    /* the fused step's buffers and graphs (fused.c), or NULL */
};

/* The shape the next layer receives: the last layer's output, or the flat inputs. */
struct hpcti_shape hpcti_model_tail(hpct_model_t m);
/* Append layer d (checks done by the caller); fn names the call in errors. */
HPCTI_CHECK hpct_status_t hpcti_model_append(hpct_model_t m, const char *fn,
                                             const struct hpcti_layer *d);
/* Check act and init of a layer being added (layer index m->num). */
HPCTI_CHECK hpct_status_t hpcti_check_act_init(hpct_model_t m, const char *fn,
                                               hpct_activation_t act, hpct_init_t init);
/* Samples per column matrix of a conv layer for a batch (ops->col_samples, at most batch). */
int hpcti_conv_col_samples(const struct hpct_model *m, int batch);
/* Conv, pool and upsample layers: forward of x [batch, in] into d->z and d->y = act(z + b);
 * a convolution's dz = d loss / d z [batch, out] in place from d loss / d y with its bias
 * gradient db, then its weight gradient dW (both = or += when accumulate) from dz; d loss / d
 * input dx [batch, in] from dz. Status of the first failing op. */
HPCTI_CHECK hpct_status_t hpcti_spatial_forward(hpct_model_t m, struct hpcti_layer *d,
                                                const float *x, int batch);
HPCTI_CHECK hpct_status_t hpcti_conv_dz_bias_grad(hpct_model_t m, struct hpcti_layer *d, float *dz,
                                                  int batch, int accumulate);
HPCTI_CHECK hpct_status_t hpcti_conv_weight_grad(hpct_model_t m, struct hpcti_layer *d,
                                                 const float *dz, int batch, int accumulate);
HPCTI_CHECK hpct_status_t hpcti_spatial_input_grad(hpct_model_t m, struct hpcti_layer *d,
                                                   const float *dz, float *dx, int batch);
/* The passes of hpct_model_loss_grad, shared with the fused step (fused.c):
 * layer by layer, dense z = x W^T + b, y = act(z), the others in layers.c, reshape passing its
 * input on: *y = the last layer's output; */
HPCTI_CHECK hpct_status_t hpcti_forward(hpct_model_t m, const float *x, int batch, const float **y);
/* *loss = hpcti_mean_loss of the loss of out [batch, outputs] against t; d(loss)/d(out) into
 * dout; */
HPCTI_CHECK hpct_status_t hpcti_batch_loss(hpct_model_t m, const float *out, const void *t,
                                           int batch, float *dout, double *loss);
/* backpropagate d loss / d last output (in grad_a[0]) through every layer into the gradients
 * (=, or += when accumulate): dz = dy act'(z) in place, then the layer's own backward into the
 * other buffer. */
HPCTI_CHECK hpct_status_t hpcti_backward(hpct_model_t m, int batch, int accumulate);
/* The mean loss of a batch whose summed loss is sum: over its outputs (MSE) or its samples. */
double hpcti_mean_loss(hpct_model_t m, double sum, int batch);
/* The argument checks of a batch and its targets (fn names the call): the batch size, NULL
 * pointers, the labels' range (device labels copied to the host for it). */
HPCTI_CHECK hpct_status_t hpcti_check_inputs(hpct_model_t m, const char *fn, const float *x,
                                             const void *targets, int batch);
/* 1 when p is device memory the kernels read in place (cuda: device or managed memory). */
int hpcti_on_device(hpct_model_t m, const void *p);
/* Bytes of the targets of batch samples: int32 labels, or rows of floats (MSE). */
size_t hpcti_target_bytes(hpct_model_t m, int batch);
/* Free the fused step's buffers and graphs (hpct_model_destroy). */
void hpcti_fused_free(hpct_model_t m);
/* Append layer l's part of the description ("-conv32k3s1same(relu)") at buf + *used. */
void hpcti_layer_describe(const struct hpcti_layer *d, char *buf, size_t len, size_t *used);

#endif
