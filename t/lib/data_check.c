/* data_check.c: helper of t/test_shard_tool.sh (not a test by itself). Opens a manifest as
 * two ranks (two handles), reads one epoch of global batches and checks that every sample
 * appears once, labels lie in [0, classes) and inputs in [lo, hi].
 * usage: data_check MANIFEST SAMPLES GLOBAL_BATCH CLASSES LO HI; exit 0 when all hold. */
#include "config.h"
#include "hpctrain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: data_check MANIFEST SAMPLES GLOBAL_BATCH CLASSES LO HI\n");
        return 2;
    }
    size_t want_n = strtoul(argv[2], NULL, 10);
    int gb = atoi(argv[3]), classes = atoi(argv[4]);
    float lo = strtof(argv[5], NULL), hi = strtof(argv[6], NULL);
    hpct_ctx_t ctx;
    hpct_dataset_t ds[2] = {0};
    if (hpct_ctx_create(NULL, &ctx)) return 1;
    size_t n = 0;
    int features = 0, width = 0;
    hpct_dtype_t dtype;
    for (int r = 0; r < 2; r++)
        if (hpct_dataset_open(ctx, argv[1], NULL, &ds[r]) ||
            hpct_dataset_info(ds[r], &n, &features, &width, &dtype) ||
            hpct_dataset_partition(ds[r], r, 2, gb)) {
            fprintf(stderr, "data_check: %s\n", hpct_last_error(ctx));
            return 1;
        }
    long steps = 0, *hist = calloc((size_t)classes, sizeof *hist), bad = 0;
    hpct_dataset_steps_per_epoch(ds[0], &steps);
    for (long s = 0; s < steps; s++)
        for (int r = 0; r < 2; r++) {
            const float *x;
            const void *y;
            if (hpct_dataset_next(ds[r], &x, &y)) {
                fprintf(stderr, "data_check: %s\n", hpct_last_error(ctx));
                return 1;
            }
            for (int j = 0; j < gb / 2; j++) {
                int32_t label = ((const int32_t *)y)[j];
                if (label >= 0 && label < classes)
                    hist[label]++;
                else
                    bad++;
                for (int k = 0; k < features; k++)
                    bad += x[j * features + k] < lo || x[j * features + k] > hi;
            }
        }
    printf("samples %zu features %d target_width %d int32 %d steps %ld out-of-range %ld hist", n,
           features, width, dtype == HPCT_DTYPE_INT32, steps, bad);
    for (int c = 0; c < classes; c++) printf(" %ld", hist[c]);
    printf("\n");
    for (int r = 0; r < 2; r++) hpct_dataset_close(ds[r]);
    hpct_ctx_destroy(ctx);
    return n == want_n && bad == 0 && dtype == HPCT_DTYPE_INT32 && width == 1 ? 0 : 1;
}
