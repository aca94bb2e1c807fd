/* bench_conv.c: how much of each convolution layer's time is its matrix products, on the
 * Fashion-MNIST CNN of examples/fashion-mnist-cnn.conf at batch 128, one thread, in one run.
 *
 * Layer side: an in-situ session trains the model on random inputs with its timeline on; the
 * timeline's spans "forward <l>" and "backward <l>" give each layer's time per step (mean over
 * the timed steps). GEMM side: the same sgemm calls the layer makes (CBLAS, the library's
 * BLAS, row-major, one per sample: forward W [c_out, rows] x col [rows, P]; backward dW +=
 * dz [c_out, P] x col^T and, below the first layer, dcol = W^T [rows, c_out] x dz), on buffers
 * of the same sizes (one sample's column matrix, reused, as the cpu backend's), timed alone.
 * Target: GEMM time / layer time >= 0.8 for every conv layer. The rest of a layer is its column
 * matrix (im2col), the bias and activation, and the adjoint of the column matrix (col2im). A floor:
 * the least element-wise work on the layer's output any implementation does (bias + ReLU in one
 * pass forward; ReLU backward and the bias gradient in one pass backward), timed alone; GEMM /
 * (GEMM + that) is the best ratio even with every element-wise pass fused and a free column matrix.
 * With the column matrix: add one write of it (im2col) and one read (col2im, below the first
 * layer), timed alone as a memset and a summing pass of one sample's size a sample: the best ratio
 * of any im2col implementation.
 *
 *   OPENBLAS_NUM_THREADS=1 bench/bench_conv [STEPS (20)] */
#include <hpctrain.h>

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench_util.h"

#define BATCH 128
#define MAXL  16

static const char spec[] =
    "reshape 1x28x28, conv 32 k3, maxpool 2, conv 64 k3, maxpool 2, dense 128, dense 10";

/* The conv layers of spec: layer index, c_in, c_out, rows = c_in k^2, P = output positions. */
static const struct {
    int layer, c_in, c_out, rows, P;
} convs[] = {{1, 1, 32, 9, 28 * 28}, {3, 32, 64, 288, 14 * 14}};
#define NCONV 2

static int fail(hpct_ctx_t ctx, const char *what)
{
    fprintf(stderr, "bench_conv: %s: %s\n", what, hpct_last_error(ctx));
    return 1;
}

/* Sum of the durations (us) of spans "forward <l>" and "backward <l>" per layer, and counts. */
static int read_spans(const char *path, double *fwd, double *bwd, int *nf, int *nb)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        const char *n = strstr(line, "\"name\":\""), *d = strstr(line, "\"dur\":");
        int l;
        if (!n || !d) continue;
        n += 8;
        double us = atof(d + 6);
        if (sscanf(n, "forward %d\"", &l) == 1 && l >= 0 && l < MAXL)
            fwd[l] += us, nf[l]++;
        else if (sscanf(n, "backward %d\"", &l) == 1 && l >= 0 && l < MAXL)
            bwd[l] += us, nb[l]++;
    }
    fclose(f);
    return 0;
}

/* Seconds per step of conv layer c's sgemm calls alone (reps steps, best of 3 blocks). */
static double gemm_alone(int c, int reps)
{
    int co = convs[c].c_out, rows = convs[c].rows, P = convs[c].P, dx = c > 0;
    float *w = calloc((size_t)co * rows, sizeof(float)), *dw = calloc((size_t)co * rows, 4);
    float *col = calloc((size_t)rows * P, sizeof(float)); /* one sample's, as the layer's */
    float *dcol = calloc((size_t)rows * P, sizeof(float));
    float *z = calloc((size_t)BATCH * co * P, sizeof(float));
    for (size_t i = 0; i < (size_t)rows * P; i++) col[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < (size_t)co * rows; i++) w[i] = (float)(i % 5) * 0.01f;
    for (size_t i = 0; i < (size_t)BATCH * co * P; i++) z[i] = (float)(i % 3) * 0.1f;
    double best = 1e30;
    for (int block = 0; block < 3; block++) {
        double t0 = now();
        for (int r = 0; r < reps; r++)
            for (int n = 0; n < BATCH; n++) {
                float *zn = z + (size_t)n * co * P;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, co, P, rows, 1.0f, w, rows,
                            col, P, 0.0f, zn, P);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, co, rows, P, 1.0f, zn, P, col,
                            P, n ? 1.0f : 0.0f, dw, rows);
                if (dx)
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, rows, P, co, 1.0f, w, rows,
                                zn, P, 0.0f, dcol, P);
            }
        double t = (now() - t0) / reps;
        best = t < best ? t : best;
    }
    free(w), free(dw), free(col), free(dcol), free(z);
    return best;
}

/* Seconds per step of writing conv layer c's column matrix once and (below the first layer)
 * reading it once, one sample's at a time in the same buffer (best of 3 blocks). */
static double columns_alone(int c, int reps)
{
    size_t n = (size_t)convs[c].rows * convs[c].P;
    float *col = malloc(n * sizeof *col), sum = 0.0f;
    memset(col, 0, n * sizeof *col);
    double best = 1e30;
    for (int block = 0; block < 3; block++) {
        double t0 = now();
        for (int r = 0; r < reps * BATCH; r++) {
            memset(col, r & 1, n * sizeof *col);
            for (size_t i = 0; c > 0 && i < n; i += 16) { /* 16 lanes: a vectorisable read */
                float lane = 0.0f;
                for (size_t j = i; j < i + 16 && j < n; j++) lane += col[j];
                sum += lane;
            }
        }
        double t = (now() - t0) / reps;
        best = t < best ? t : best;
    }
    volatile float sink = sum;
    (void)sink;
    free(col);
    return best;
}

/* Seconds per step of the fused element-wise floor of conv layer c (best of 3 blocks). */
static double passes_alone(int c, int reps)
{
    int co = convs[c].c_out, P = convs[c].P;
    size_t n = (size_t)BATCH * co * P;
    float *z = malloc(n * sizeof *z), *dz = malloc(n * sizeof *dz), b[64], db[64];
    for (size_t i = 0; i < n; i++) z[i] = (float)((int)(i % 7) - 3), dz[i] = (float)(i % 5);
    for (int k = 0; k < co; k++) b[k] = 0.01f * (float)k;
    double best = 1e30;
    for (int block = 0; block < 3; block++) {
        double t0 = now();
        for (int r = 0; r < reps; r++) {
            for (size_t row = 0; row < (size_t)BATCH * co; row++) { /* z = relu(z + b) */
                float *zr = z + row * P, bk = b[row % co];
                for (int p = 0; p < P; p++) zr[p] = zr[p] + bk > 0.0f ? zr[p] + bk : 0.0f;
            }
            for (int k = 0; k < co; k++) db[k] = 0.0f;
            for (size_t row = 0; row < (size_t)BATCH * co; row++) { /* relu' and db together */
                float *dr = dz + row * P, acc = 0.0f;
                const float *zr = z + row * P;
                for (int p = 0; p < P; p++) {
                    dr[p] = zr[p] > 0.0f ? dr[p] : 0.0f;
                    acc += dr[p];
                }
                db[row % co] += acc;
            }
        }
        double t = (now() - t0) / reps;
        best = t < best ? t : best;
    }
    volatile float sink = db[0] + z[1] + dz[2];
    (void)sink;
    free(z), free(dz);
    return best;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 20;
    if (steps < 2) steps = 2;
    char path[64];
    snprintf(path, sizeof path, "/tmp/bench-conv-%d", (int)getpid());
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.num_threads = 1;
    hpct_ctx_t ctx;
    hpct_model_t m;
    hpct_params_t params;
    hpct_optimizer_t opt;
    hpct_insitu_t session;
    if (hpct_ctx_create(&cfg, &ctx)) return 1;
    if (hpct_model_create(ctx, 784, &m) || hpct_model_add_layers(m, spec, HPCT_ACT_RELU) ||
        hpct_model_build(m, BATCH) || hpct_model_params(m, &params))
        return fail(ctx, "the model");
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.01f, oc.momentum = 0.9f;
    hpct_insitu_config_t ic = HPCT_INSITU_CONFIG_INITIALIZER;
    ic.catch_signals = 0;
    ic.timeline_path = path;
    ic.timeline_steps = steps;
    if (hpct_optimizer_create(params, &oc, &opt) ||
        hpct_insitu_create(m, params, opt, NULL, &ic, &session) || hpct_insitu_start(session, NULL))
        return fail(ctx, "the session");
    float *x = malloc(sizeof(float) * BATCH * 784), loss;
    int32_t y[BATCH];
    srand(1);
    for (int i = 0; i < BATCH * 784; i++) x[i] = (float)rand() / (float)RAND_MAX;
    for (int i = 0; i < BATCH; i++) y[i] = i % 10;
    for (int s = 0; s < steps + 3; s++) /* 3 warm-up steps fall out of the timeline's ring */
        if (hpct_insitu_step(session, x, y, BATCH, &loss)) return fail(ctx, "a step");
    if (hpct_insitu_finish(session)) return fail(ctx, "finishing");
    hpct_insitu_destroy(session);
    char file[96];
    snprintf(file, sizeof file, "%s-rank0.json", path);
    double fwd[MAXL] = {0}, bwd[MAXL] = {0};
    int nf[MAXL] = {0}, nb[MAXL] = {0};
    if (read_spans(file, fwd, bwd, nf, nb)) {
        fprintf(stderr, "bench_conv: no timeline %s\n", file);
        return 1;
    }
    unlink(file);
    printf("conv layers of the Fashion-MNIST CNN, batch %d, 1 thread, %d steps "
           "(forward + backward per step)\n",
           BATCH, steps);
    printf("%-34s %9s %8s %6s %8s %6s %8s %6s\n", "layer", "layer ms", "GEMM ms", "ratio",
           "fused ms", "best", "cols ms", "best");
    int ok = 1;
    for (int c = 0; c < NCONV; c++) {
        int l = convs[c].layer;
        if (!nf[l] || !nb[l]) return fprintf(stderr, "bench_conv: no spans of layer %d\n", l), 1;
        double layer = (fwd[l] / nf[l] + bwd[l] / nb[l]) * 1e-3, gemm = gemm_alone(c, 3) * 1e3;
        double floor = passes_alone(c, 3) * 1e3, cols = columns_alone(c, 3) * 1e3;
        char name[64];
        snprintf(name, sizeof name, "%d: conv %d->%d k3, %d positions", l, convs[c].c_in,
                 convs[c].c_out, convs[c].P);
        printf("%-34s %9.2f %8.2f %6.2f %8.2f %6.2f %8.2f %6.2f\n", name, layer, gemm, gemm / layer,
               floor, gemm / (gemm + floor), cols, gemm / (gemm + floor + cols));
        ok &= gemm / layer >= 0.8;
    }
    printf("target GEMM/layer >= 0.8 for every conv layer: %s (best: with every element-wise pass "
           "fused and a free column matrix; then with the column matrix written and read once)\n",
           ok ? "met" : "NOT met");
    free(x);
    hpct_optimizer_destroy(opt);
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
    return 0;
}
