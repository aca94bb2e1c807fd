/* reader.h: the dataset handle shared by dataset.c (open, cursor) and reader.c (batches). */
#ifndef HPCTI_READER_H
#define HPCTI_READER_H

#include "h5shard.h"

#include <pthread.h>

/* Rows per preadv (and per sort) of the streaming reader; at most IOV_MAX. */
#define HPCTI_MAX_IOV 256

/* FREE -> FILLING (claimed by the thread or the consumer, position assigned) -> READY -> HELD.
 * FILLING -> STOLEN: the consumer built the same batch in the spare slot rather than wait for
 * a thread that was not running; the thread's copy is then dropped (STOLEN -> FREE). */
enum hpcti_slot_state {
    HPCTI_SLOT_FREE,
    HPCTI_SLOT_FILLING,
    HPCTI_SLOT_READY,
    HPCTI_SLOT_HELD,
    HPCTI_SLOT_STOLEN
};

/* One prefetched batch: this rank's rows and where in the stream they come from. */
typedef struct hpcti_slot {
    /* Rows per preadv (and per sort) of the streaming reader; at most IOV_MAX. */
#define HPCTI_MAX_IOV 256

    enum hpcti_slot_state state;
    long epoch, step;     /* position of this batch */
    long skipped;         /* global batches skipped just before it */
    hpct_status_t status; /* non-zero: reading failed, err says why */
    int assign_failed;    /* set under mu by assign(): no batch to fill (status says why) */
    char err[768];
    float *inputs;          /* [local_batch, features] */
    void *targets;          /* [local_batch, target width], int32 or fp32 */
    unsigned char *scratch; /* raw rows before type conversion */
    uint64_t *idx;          /* [local_batch] global indices of this rank's rows */
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
    int mapped;            /* streaming: every shard is mapped (copy_mapped in reader.c) */
    int guarded;           /* holds the SIGBUS guard (mapguard.h), released at close */
    int hot;               /* mapped and about all in the page cache: copy from the mapping
                              (atomic: set by the producer at each epoch, read by fills) */
    long hot_epoch;        /* the producer epoch hot was last checked for */
    long files_epoch;      /* the producer epoch the shard files were last checked for */
    int files_bad;         /* a shard file changed during the run: every batch fails */
    float *res_inputs;     /* resident: [n, features] */
    void *res_targets;     /* resident, or held while streaming the inputs: [n, twidth] */
    uint64_t bytes_read;   /* from the shard files after open (atomic: the prefetch thread adds) */
    uint64_t hashed_bytes; /* read to verify checksums at open */
    uint64_t resident_bytes;      /* sample bytes this rank holds in memory */
    uint64_t node_resident_bytes; /* ... and the ranks of its node together */
    uint64_t epoch_bytes0;        /* bytes_read when the consumer's epoch began */
    uint64_t exchange_bytes;      /* store mode: sample bytes sent to other ranks */
    int store_mode;               /* HPCT_STORE_JOB or HPCT_STORE_OFF (resolved at open) */
    struct hpcti_store *store;    /* store mode: this rank's block and the exchange */
    unsigned char *bad;           /* SKIP policy: bit i set when sample i is non-finite */
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
    /* ring of prefetch slots, then the spare one: slots[num_slots] */
    int num_slots, head, tail, held; /* held: the caller's slot, num_slots for the spare */
    hpcti_slot_t *slots;
    double fill_s; /* CPU seconds one batch takes to fill (moving average, under mu) */
    long steals;   /* batches the caller built itself while the thread held them (under mu) */
    double test_thread_stall_s; /* white-box tests only: the thread sleeps this long before
                                   each fill, as if the scheduler had taken its CPU */
    pthread_t thread;
    int threaded; /* the prefetch thread is used (hpcti_prefetch_rule) */
    int running, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Mapped streaming: 1 when at least 90% of a sample of the shards' pages is in the page
 * cache (mincore), so copying rows out of the mapping beats reading them (a page fault on a
 * cold mapping reads one page at a time). */
int hpcti_mapped_hot(const hpct_dataset_t ds);
/* 1 when a streamed shard of ds changed (size or mtime) since open, with the detail in
 * err [errlen]; 0 otherwise (and for a resident set). Callable from any thread. */
int hpcti_dataset_files_changed(hpct_dataset_t ds, char *err, size_t errlen);
/* fd's size and modification time (ns) into *size, *mtime_ns (-1 when fstat fails). */
void hpcti_shard_stamp(int fd, long long *size, long long *mtime_ns);
/* Whether to run the prefetch thread: prefetch_depth > 0 and the rank has a CPU to spare for
 * it (HPCT_PREFETCH_THREAD=0/1 overrides); logs the choice. */
int hpcti_prefetch_rule(hpct_dataset_t ds);
/* Stop the prefetch thread (if any) and wait for it. */
void hpcti_reader_stop(hpct_dataset_t ds);
/* Reset the ring and the producer to the consumer cursor; start the thread if depth > 0. */
HPCTI_CHECK hpct_status_t hpcti_reader_restart(hpct_dataset_t ds);
/* Rows of global samples idx[0..count) into inputs/targets (fp32 / int32-or-fp32). */
HPCTI_CHECK hpct_status_t hpcti_load_samples(hpct_dataset_t ds, const uint64_t *idx, size_t count,
                                             float *inputs, void *targets, unsigned char *scratch,
                                             char *err, size_t errlen);
/* Index of the shard holding global sample g. */
int hpcti_shard_of(const hpct_dataset_t ds, uint64_t g);
/* Global indices of batch (epoch, step) into ds->batch_idx. */
void hpcti_batch_indices(hpct_dataset_t ds, long epoch, long step);
/* 1 when ds->batch_idx holds a sample marked non-finite (skip policy). */
int hpcti_batch_is_bad(const hpct_dataset_t ds);
/* One step forward in the stream of steps batches per epoch. */
void hpcti_advance(long *epoch, long *step, long steps);

/* ---- the distributed sample store (store.c) ---- */
/* Samples [lo, hi) of block b when n samples are split over p ranks. */
void hpcti_store_block(uint64_t n, int p, int b, uint64_t *lo, uint64_t *hi);
/* After the shards are open (status so_far): load this rank's block (store mode), then agree
 * with every rank; a failure anywhere fails here everywhere, naming the first failing rank. */
hpct_status_t hpcti_store_open(hpct_dataset_t ds, hpct_status_t so_far);
/* Agree across the job on each rank's status so far (collective): the first failing rank's
 * error on every rank, or success everywhere. */
hpct_status_t hpcti_store_agree(hpct_dataset_t ds, hpct_status_t mine);
/* Buffers for the partition in ds (rank/world must be the context's). */
hpct_status_t hpcti_store_partition(hpct_dataset_t ds);
/* The batch at the producer position into slot; posts the exchange of the one after. */
hpct_status_t hpcti_store_next(hpct_dataset_t ds, hpcti_slot_t *slot);
/* Wait for an exchange in flight and drop it (cursor changes, close). */
hpct_status_t hpcti_store_drain(hpct_dataset_t ds);
/* Producer back to the consumer cursor; forget a failure. */
void hpcti_store_reset(hpct_dataset_t ds);
/* Record that slot could not be served (status in ctx): later calls repeat it. */
void hpcti_store_fail(hpct_dataset_t ds, hpct_status_t s);
void hpcti_store_free(hpct_dataset_t ds);

#endif
