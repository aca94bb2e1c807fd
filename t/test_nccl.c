/* test_nccl.c: the GPU hierarchical mean allreduce (lib/comm/nccl_node.c) under mpirun (run by
 * t/test_nccl.sh). Rank r contributes buf[i] = r + i / 1024 on the device, so the mean is
 * (size - 1) / 2 + i / 1024, exact in fp32 for the sizes used (tolerance 1e-6).
 * Layout 1: every rank is its own node (node MPI_COMM_SELF, cross MPI_COMM_WORLD), which works
 * with all ranks on one GPU. Layout 2: all ranks on one node (node MPI_COMM_WORLD, cross
 * MPI_COMM_NULL), which NCCL allows only with one GPU per rank; it covers the zero padding. */
#include "config.h"
#include "hpctrain.h"
#include "lib/tap.h"

#include <mpi.h>
#include <stdio.h>

#ifndef HPCT_HAVE_NCCL
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("1..0 # SKIP built without --with-nccl\n");
    MPI_Finalize();
    return 0;
}
#else
#include "../lib/core/core.h"
#include "../lib/comm/nccl_node.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>

static const size_t counts[] = {0, 1, 7, 1000, 12345};
enum { NCOUNTS = sizeof counts / sizeof counts[0] };
static int rank, size;

/* 1 on every rank when cond holds on every rank. */
static int all(int cond)
{
    int out = 0;
    MPI_Allreduce(&cond, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return out;
}

/* Largest error of the mean over all ranks after one allreduce of count elements (1e30 when
 * some rank got an error status). */
static double allreduce_error(hpcti_nccl_t *nc, size_t count, MPI_Comm cross)
{
    float *host = malloc(sizeof *host * (count ? count : 1)), *dev = NULL;
    for (size_t i = 0; i < count; i++) host[i] = (float)rank + (float)i / 1024.0f;
    cudaMalloc((void **)&dev, sizeof *dev * (count ? count : 1));
    cudaMemcpy(dev, host, sizeof *dev * count, cudaMemcpyHostToDevice);
    double worst = 1e30;
    if (hpcti_nccl_hier_allreduce_mean(nc, dev, count, cross, size) == HPCT_SUCCESS) {
        cudaMemcpy(host, dev, sizeof *dev * count, cudaMemcpyDeviceToHost);
        worst = 0;
        for (size_t i = 0; i < count; i++)
            worst = fmax(worst, fabs(host[i] - ((size - 1) / 2.0 + i / 1024.0)));
    }
    cudaFree(dev);
    free(host);
    double out;
    MPI_Allreduce(&worst, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

static void run_layout(hpct_ctx_t ctx, MPI_Comm node, MPI_Comm cross, const char *what)
{
    hpcti_nccl_t *nc = NULL;
    hpct_status_t s = hpcti_nccl_create(ctx, node, &nc);
    if (!tap_ok(all(s == HPCT_SUCCESS), "%s: NCCL communicator created (%s)", what,
                s ? hpct_last_error(ctx) : "ok")) {
        tap_skip(NCOUNTS, "no communicator");
        return;
    }
    for (int i = 0; i < NCOUNTS; i++) {
        double err = allreduce_error(nc, counts[i], cross);
        tap_ok(err <= 1e-6, "%s: mean of %zu floats over %d ranks (max error %g)", what, counts[i],
               size, err);
    }
    hpcti_nccl_destroy(nc);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.backend = HPCT_BACKEND_CUDA;
    hpct_ctx_t ctx = NULL;
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    const char *why = e != cudaSuccess ? cudaGetErrorString(e) : "no device";
    hpct_status_t s =
        e == cudaSuccess && devices ? hpct_ctx_create(&cfg, &ctx) : HPCT_ERR_UNSUPPORTED;
    if (!all(s == HPCT_SUCCESS)) {
        if (rank == 0)
            printf("1..0 # SKIP no usable CUDA device on every rank (rank 0: %s)\n",
                   s == HPCT_SUCCESS ? "ok"
                   : devices         ? "cuda context failed"
                                     : why);
        hpct_ctx_destroy(ctx);
        MPI_Finalize();
        return 0;
    }
    /* Every check is agreed over all ranks, so rank 0 speaks for all. */
    if (rank != 0 && !freopen("/dev/null", "w", stdout)) return 1;
    tap_plan(2 * (1 + NCOUNTS));
    run_layout(ctx, MPI_COMM_SELF, MPI_COMM_WORLD, "one rank per node");
    if (all(devices >= size))
        run_layout(ctx, MPI_COMM_WORLD, MPI_COMM_NULL, "one node");
    else
        tap_skip(1 + NCOUNTS, "one node of several ranks needs one GPU per rank");
    hpct_ctx_destroy(ctx);
    int rc = tap_done();
    MPI_Finalize();
    return rank == 0 ? rc : 0;
}
#endif
