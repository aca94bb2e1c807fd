/* reader.h: the dataset handle shared by dataset.c (open, cursor) and reader.c (batches). */
#ifndef HPCTI_READER_H
#define HPCTI_READER_H

#include "h5shard.h"

#include <pthread.h>

enum hpcti_slot_state { HPCTI_SLOT_FREE, HPCTI_SLOT_READY, HPCTI_SLOT_HELD };

/* One prefetched batch: this rank's rows and where in the stream they come from. */
typedef struct hpcti_slot {
    enum hpcti_slot_state state;
    long epoch, step;     /* position of this batch */
    long skipped;         /* global batches skipped just before it */
    hpct_status_t status; /* non-zero: reading failed, err says why */
    char err[768];
    float *inputs;          /* [local_batch, features] */
    void *targets;          /* [local_batch, target width], int32 or fp32 */
    unsigned char *scratch; /* raw rows before type conversion */
} hpcti_slot_t;

struct hpct_dataset {
    hpct_ctx_t ctx;
    hpct_data_config_t cfg;
    char *manifest_path;
    char *names[2]; /* copies of cfg inputs/targets names */
    hpcti_manifest_t man;
    int num_shards;
    hpcti_shard_t *shards;
    uint64_t n;              /* samples */
    size_t features, twidth; /* values per sample */
    int targets_int;
    int resident;
    float *res_inputs;  /* resident: [n, features] */
    void *res_targets;  /* resident: [n, twidth] */
    unsigned char *bad; /* SKIP policy: bit i set when sample i is non-finite */
    /* partition */
    int rank, world, global_batch, local_batch;
    long steps;
    /* consumer cursor and counters */
    long epoch, step, skipped;
    /* producer (prefetch thread or next() when depth is 0) */
    long pe, ps;
    long perm_epoch;
    uint64_t *perm;      /* [n] permutation of epoch perm_epoch (shuffle on) */
    uint64_t *batch_idx; /* [global_batch] global indices of the batch being built */
    /* ring of prefetch slots */
    int num_slots, head, tail, held;
    hpcti_slot_t *slots;
    pthread_t thread;
    int running, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Stop the prefetch thread (if any) and wait for it. */
void hpcti_reader_stop(hpct_dataset_t ds);
/* Reset the ring and the producer to the consumer cursor; start the thread if depth > 0. */
HPCTI_CHECK hpct_status_t hpcti_reader_restart(hpct_dataset_t ds);
/* Rows of global samples idx[0..count) into inputs/targets (fp32 / int32-or-fp32). */
HPCTI_CHECK hpct_status_t hpcti_load_samples(hpct_dataset_t ds, const uint64_t *idx, size_t count,
                                 float *inputs, void *targets, unsigned char *scratch, char *err,
                                 size_t errlen);
/* Index of the shard holding global sample g. */
int hpcti_shard_of(const hpct_dataset_t ds, uint64_t g);

#endif
