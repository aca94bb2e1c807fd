/* cublas.c (device double): cublasSgemm as a task on the legacy stream, executed by CBLAS in
 * column-major order with cuBLAS's argument rules, so a transposed or mis-strided mapping
 * gives a wrong product (or a reported out-of-bounds access), as it would on a GPU. */
#include "double.h"
#include "include/cublas_v2.h"

#include <cblas.h>
#include <stdlib.h>

struct cublasContext {
    cublasMath_t math;
    cudaStream_t stream; /* NULL: the legacy default stream */
    void *workspace;     /* cublasSetWorkspace's, checked to be device memory; else NULL */
};

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    dd_stream(NULL);
    if (!h) return CUBLAS_STATUS_INVALID_VALUE;
    *h = calloc(1, sizeof **h);
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    dd_drain(NULL);
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

/* As cuBLAS: the stream of later calls, and back to the default workspace. */
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = s;
    h->workspace = NULL;
    return CUBLAS_STATUS_SUCCESS;
}

/* The double's products need no workspace; it is checked to be device memory of that size. */
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *workspace, size_t bytes)
{
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes && !dd_dev(workspace, bytes, "cublasSetWorkspace"))
        return CUBLAS_STATUS_INVALID_VALUE;
    h->workspace = workspace;
    return CUBLAS_STATUS_SUCCESS;
}

/* cuBLAS numbers versions major 10000 + minor 100 + patch: a made-up 12.4.5. */
cublasStatus_t cublasGetVersion(cublasHandle_t h, int *version)
{
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!version) return CUBLAS_STATUS_INVALID_VALUE;
    *version = 120405;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    default: return "CUBLAS_STATUS_EXECUTION_FAILED";
    }
}

struct gemm_arg {
    int ta, tb, m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *a, *b;
    float *c;
};

/* Elements a column-major matrix of rows x cols with leading dimension ld spans. */
static size_t span(int rows, int cols, int ld)
{
    return rows && cols ? (size_t)ld * (size_t)(cols - 1) + (size_t)rows : 0;
}

static void gemm_task(void *p)
{
    struct gemm_arg *g = p;
    int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k; /* op(A) is m x k */
    int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n; /* op(B) is k x n */
    size_t na = g->k ? span(ar, ac, g->lda) : 0, nb = g->k ? span(br, bc, g->ldb) : 0;
    const float *a = na ? dd_dev(g->a, sizeof(float) * na, "cublasSgemm A") : NULL;
    const float *b = nb ? dd_dev(g->b, sizeof(float) * nb, "cublasSgemm B") : NULL;
    float *c = dd_dev(g->c, sizeof(float) * span(g->m, g->n, g->ldc), "cublasSgemm C");
    if ((na && !a) || (nb && !b) || !c) return;
    if (g->k == 0) { /* CBLAS may refuse k = 0; C = beta C */
        for (int j = 0; j < g->n; j++)
            for (int i = 0; i < g->m; i++) {
                float *x = &c[(size_t)j * g->ldc + i];
                *x = g->beta == 0.0f ? 0.0f : g->beta * *x;
            }
        return;
    }
    cblas_sgemm(CblasColMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans,
                g->m, g->n, g->k, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
}

static int at_least(int ld, int rows)
{
    return ld >= (rows > 1 ? rows : 1);
}

/* C [m x n] = alpha op(A) op(B) + beta C, all column-major; alpha and beta are read now (host
 * pointer mode), the product runs on the handle's stream (cublasSetStream). */
cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *a, int lda,
                           const float *b, int ldb, const float *beta, float *c, int ldc)
{
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || !alpha || !beta || (ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) ||
        (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T) || !at_least(lda, ta ? k : m) ||
        !at_least(ldb, tb ? n : k) || !at_least(ldc, m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    struct gemm_arg g = {
        ta == CUBLAS_OP_T, tb == CUBLAS_OP_T, m, n, k, lda, ldb, ldc, *alpha, *beta, a, b, c};
    dd_enqueue(h->stream, "cublasSgemm", gemm_task, &g, sizeof g);
    return CUBLAS_STATUS_SUCCESS;
}
