/* test_data_mpi.c: the reader under a real MPI job (run by t/test_data_mpi.sh with
 * mpirun -np 2). Each rank opens the same manifest with its MPI rank and size; rank 0
 * gathers the slices and checks that they form the contract's global batches. */
#include "config.h"
#include "lib/data_util.h"
#include "hpctrain.h"
#include "lib/tap.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define BATCH  24
#define STEPS  10 /* 250 samples: 10 full batches of 24 per epoch */
#define EPOCHS 2

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char manifest[512] = "";
    if (rank == 0) {
        tap_plan(2);
        const char *dir = tdu_tmpdir();
        if (!dir) tap_bail("no temporary directory");
        const char *files[2] = {"m0.h5", "m1.h5"};
        char path[600];
        tdu_shard_t s0 = tdu_shard(110, 0, 3, 16), s1 = tdu_shard(140, 110, 3, 0);
        snprintf(path, sizeof path, "%s/m0.h5", dir);
        int bad = tdu_write_shard(path, &s0);
        snprintf(path, sizeof path, "%s/m1.h5", dir);
        bad = bad || tdu_write_shard(path, &s1) ||
              tdu_write_manifest(dir, "m", 2, files, "float32", 3);
        if (!bad) snprintf(manifest, sizeof manifest, "%s/m", dir);
    }
    MPI_Bcast(manifest, sizeof manifest, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (!manifest[0]) MPI_Abort(MPI_COMM_WORLD, 1);
    hpct_ctx_t ctx;
    hpct_dataset_t ds = NULL;
    int ok = !hpct_ctx_create(NULL, &ctx) && !hpct_dataset_open(ctx, manifest, NULL, &ds) &&
             !hpct_dataset_partition(ds, rank, size, BATCH);
    int local = BATCH / size;
    int32_t mine[EPOCHS * STEPS * BATCH], all[EPOCHS * STEPS * BATCH];
    for (int b = 0; ok && b < EPOCHS * STEPS; b++) {
        const void *y;
        ok = !hpct_dataset_next(ds, NULL, &y);
        if (ok) memcpy(mine + b * local, y, (size_t)local * sizeof(int32_t));
    }
    int all_ok = 0;
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    MPI_Gather(mine, EPOCHS * STEPS * local, MPI_INT, all, EPOCHS * STEPS * local, MPI_INT, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        tap_ok(all_ok, "%d ranks opened the manifest and read %d batches each", size,
               EPOCHS * STEPS);
        uint64_t perm[250];
        int same = 1;
        for (int e = 0; e < EPOCHS; e++) {
            hpct_data_permutation(42, e, 250, perm);
            for (int s = 0; s < STEPS; s++)
                for (int i = 0; i < BATCH; i++) {
                    int r = i / local, j = i % local, b = e * STEPS + s;
                    same &= all[r * EPOCHS * STEPS * local + b * local + j] ==
                            (int32_t)perm[s * BATCH + i];
                }
        }
        tap_ok(same, "rank slices, put together, are the contract's global batches");
        tdu_cleanup();
    }
    hpct_dataset_close(ds);
    hpct_ctx_destroy(ctx);
    MPI_Finalize();
    return rank == 0 ? tap_done() : 0;
}
