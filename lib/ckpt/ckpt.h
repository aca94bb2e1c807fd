/* ckpt.h: library-internal view of checkpoints (not installed). */
#ifndef HPCTI_CKPT_INTERNAL_H
#define HPCTI_CKPT_INTERNAL_H

#include "../core/core.h"

#include <pthread.h>

/* Layouts read: 1 (models of dense layers, parameter sets of one's own) and 2 (models with
 * convolution, pooling, upsampling or reshape layers: /meta/model is the model's own
 * description, and a resume needs the same). Bump the newest when the layout changes. */
#define HPCTI_CKPT_SCHEMA_OLDEST 1
#define HPCTI_CKPT_SCHEMA        HPCT_CKPT_SCHEMA_VERSION /* the newest */
#define HPCTI_CKPT_PATH_MAX  4096
#define HPCTI_CKPT_MODEL_MAX 1024 /* bytes of model description kept */
/* Largest serial taken from a latest pointer (1e15 saves: never reached; far from overflow). */
#define HPCTI_CKPT_SERIAL_MAX 1000000000000000LL

/* Error detail produced away from the caller's thread, copied to the context later. */
typedef struct hpcti_ckerr {
    hpct_status_t status;
    char msg[1024];
} hpcti_ckerr_t;

/* Record status and a printf detail in err; returns status. */
hpct_status_t hpcti_ckerr_set(hpcti_ckerr_t *err, hpct_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One dataset of a checkpoint: HDF5 path under the root, element type and count. */
typedef struct hpcti_ckitem {
    char path[320]; /* e.g. "params/dense0.weight" */
    int dtype;      /* hpct_ckpt_dtype_t, HPCTI_CK_U64 or HPCTI_CK_STR */
    int scalar;     /* 1: HDF5 scalar dataspace (count is 1) */
    size_t count;   /* elements */
    void *data;     /* host bytes to write, or where load puts them */
    void *user;     /* the caller's memory when data is a staged copy, else NULL */
    int on_device;  /* 1: user lives where the backend keeps tensors */
} hpcti_ckitem_t;

#define HPCTI_CK_U64 100 /* internal element type for hashes and RNG words */
#define HPCTI_CK_STR 101 /* internal: fixed-length string of count bytes (scalar) */

/* Bytes per element of an item type. */
size_t hpcti_ck_elsize(int dtype);

/* Everything one checkpoint file holds, ready to be written by one thread. */
typedef struct hpcti_snapshot {
    hpcti_ckitem_t *items;
    int num, cap;
    char model[HPCTI_CKPT_MODEL_MAX];
    int schema; /* schema_version written: 1, or 2 for a layered model */
    long step;
    long serial;  /* 1-based count of checkpoints written in this directory */
    int keep;     /* 1: permanent (keep_every) */
    long protect; /* step whose checkpoint retention keeps (hpcti_ckpt_protect); -1: none */
} hpcti_snapshot_t;

/* Append an item (path formatted from prefix and name); returns 0 or HPCT_ERR_NO_MEMORY. */
int hpcti_snap_add(hpcti_snapshot_t *snap, const char *prefix, const char *name, int dtype,
                   int scalar, size_t count, void *data);

/* Where the writer stops itself with SIGSTOP when HPCT_CKPT_TEST_STOP_AT names the stage
 * (and HPCT_TEST_HOOKS=1: hpcti_test_hook). */
typedef enum {
    HPCTI_STAGE_NONE = 0,
    HPCTI_STAGE_CREATED, /* temporary file created, nothing written */
    HPCTI_STAGE_HALF,    /* about half of the datasets written */
    HPCTI_STAGE_SYNCED,  /* temporary file complete and fsync'd, not renamed */
    HPCTI_STAGE_RENAMED, /* renamed into place, directory not yet fsync'd */
    HPCTI_STAGE_POINTER  /* latest pointer's temporary written, not renamed */
} hpcti_stage_t;

/* Parse a stage name ("created", "half", "synced", "renamed", "pointer"). */
hpcti_stage_t hpcti_stage_parse(const char *name);

/* Directory-level settings the writer needs. */
typedef struct hpcti_ckdir {
    char dir[HPCTI_CKPT_PATH_MAX];
    int keep_last, keep_every;
    uint64_t config_hash;
    hpcti_stage_t stop_at;
    hpct_log_level_t log_level;
} hpcti_ckdir_t;

/* Test hook: stop the whole process (SIGSTOP) when d->stop_at is stage. */
void hpcti_ck_stop_if(const hpcti_ckdir_t *d, hpcti_stage_t stage);

/* One run per directory (dirlock.c): on the writer rank take an exclusive lock on
 * dir/.hpctrain.lock and write this process's host, pid, job and start time in it;
 * HPCT_ERR_BUSY naming the holder when another process has it. *fd = the lock's descriptor,
 * -1 when none is held (another rank writes, HPCT_CKPT_LOCK=off, or no locking here). */
HPCTI_CHECK hpct_status_t hpcti_ckpt_lock_dir(hpct_ctx_t ctx, const char *dir, int writer_rank,
                                              int *fd);
/* 1 when this process is rank writer_rank of ctx (rank 0 of a context without a distributed
 * runtime): the one that saves, locks the directory and sets rejected files aside. */
int hpcti_ckpt_is_writer(hpct_ctx_t ctx, int writer_rank);
/* Drop the lock taken by hpcti_ckpt_lock_dir (fd -1: nothing). */
void hpcti_ckpt_unlock_dir(int fd);

/* commit.c: write snap as one checkpoint file and commit it atomically, then apply
 * retention. final receives the committed path; times [3] (monotonic seconds) when the write
 * began, when the file was written and synced, and when the commit ended (the timeline).
 * Runs on the writer thread in async mode. */
HPCTI_CHECK hpct_status_t hpcti_ck_write(const hpcti_ckdir_t *d, const hpcti_snapshot_t *snap,
                                         char final[HPCTI_CKPT_PATH_MAX], hpcti_ckerr_t *err,
                                         double times[3]);
/* out = dir/name (truncated to the buffer). */
void hpcti_ck_join(char out[HPCTI_CKPT_PATH_MAX], const char *dir, const char *name);
/* Remove temporary files of dead writers on this host. */
void hpcti_ck_clean_stale(const char *dir);

/* h5io.c: the HDF5 part of hpcti_ck_write: snap's datasets into the existing file at path,
 * flushed, fsync'd and closed (under the HDF5 lock). */
HPCTI_CHECK hpct_status_t hpcti_ck_write_file(const hpcti_ckdir_t *d, const hpcti_snapshot_t *snap,
                                              const char *path, hpcti_ckerr_t *err);

/* retention.c: checkpoint file names in dir, newest (highest step) first; *n entries, free
 * with free(). */
HPCTI_CHECK hpct_status_t hpcti_ck_list(const char *dir, char ***names, int *n, hpcti_ckerr_t *err);
/* Serial number of the newest checkpoint from the latest pointer, else (pointer missing,
 * unreadable, not a regular file, or its serial above HPCTI_CKPT_SERIAL_MAX) the file
 * count; a non-regular pointer is named on stderr at log_level >= HPCT_LOG_WARN. */
long hpcti_ck_last_serial(const char *dir, hpct_log_level_t log_level);
/* Keep the d->keep_last newest, every permanent file and the one of step protect (-1: none);
 * delete the rest. */
void hpcti_ck_apply_retention(const hpcti_ckdir_t *d, long protect, hpcti_ckerr_t *err);

/* How judging one file ended: fine, corrupt/torn (fall back), or incompatible with the run
 * (a settings mismatch: stop, nothing moved). */
typedef enum { HPCTI_READ_OK = 0, HPCTI_READ_CORRUPT = 1, HPCTI_READ_MISMATCH = 2 } hpcti_read_t;

/* The scalar values of one checkpoint as validate.c checks them (the file's on load, those
 * about to be written on save). */
typedef struct hpcti_ck_values {
    int64_t step, epoch, cursor_epoch, cursor_step, world_size, global_batch, serial;
    int64_t steps_per_epoch, opt_step, opt_slots;
    uint64_t rng[HPCT_RNG_STATE_WORDS];
    int has_spe, has_opt_step, has_slots, has_rng; /* 0: that value is absent (not checked) */
    double saved_at;
} hpcti_ck_values_t;
/* NULL when every value is in its range and the values agree with each other and with the
 * file name at path (ckpt-<step>[-keep].h5; NULL or other names are not compared): the
 * optimizer's step is the step, the cursor's epoch the epoch, and with steps per epoch S the
 * cursor step is in [0, S) and step = cursor_epoch x S + cursor_step. Else the problem,
 * written in why [n] ("meta/step is -5, outside [0, ...]"), naming datasets and values. */
const char *hpcti_ck_values_problem(const hpcti_ck_values_t *v, const char *path, char *why,
                                    size_t n);
/* 1 when a dataset at path of dtype must hold finite values (params/, optimizer/ floats). */
int hpcti_ck_must_be_finite(const char *path, int dtype);
/* Index of the first NaN or Inf in data [count] (F32 or F64), or -1 when all are finite. */
long long hpcti_ck_first_nonfinite(const void *data, int dtype, size_t count);

/* What the run that saves and loads through ck reads per step (hpct_train sets it): its
 * global batch and its optimizer steps per epoch (0: unknown). Saves record steps_per_epoch
 * (/meta/steps_per_epoch); a load refuses, as a settings mismatch, a checkpoint saved with
 * another global batch or another number of steps per epoch, and one without that dataset
 * whose data cursor does not fit steps_per_epoch. */
void hpcti_ckpt_set_run(hpct_ckpt_t ck, long global_batch, long steps_per_epoch);

/* The rank that saves (cfg.writer_rank): the training loop honours it. */
int hpcti_ckpt_writer_rank(hpct_ckpt_t ck);
/* Point the registered extra name at data (block arrays swap in their global staging);
 * 0 when no extra has that name. */
int hpcti_ckpt_extra_point(hpct_ckpt_t ck, const char *name, void *data);
/* On the training thread: the timeline spans (track 1) of the last background copy, write and
 * commit once the writer has finished them; nothing without a timeline. */
void hpcti_ckpt_trace(hpct_ckpt_t ck);
/* The background writer's last completed write: 1 with its step and the monotonic time
 * (hpcti_now) it was committed; 0 when none completed or the saves are synchronous. */
int hpcti_ckpt_write_done(hpct_ckpt_t ck, long *step, double *committed);
/* cfg.config_hash of the handle (the run's training-configuration hash). */
uint64_t hpcti_ckpt_config_hash(hpct_ckpt_t ck);
/* A save of step happened on the writer rank: restart this rank's cadence clock too, so
 * every rank agrees when the next time-based save is due. */
void hpcti_ckpt_note_save(hpct_ckpt_t ck, long step);
/* Retention keeps the checkpoint of step (the newest one the training loop knows good) from
 * the next save on, besides the keep_last newest; -1: none (the default). */
void hpcti_ckpt_protect(hpct_ckpt_t ck, long step);

/* The training loop stops for a preemption signal that another rank caught: this rank's
 * hpct_signals_uninstall then ignores the signals (as with one caught here) until
 * hpct_signals_clear, so its own SIGTERM arriving late cannot kill its shutdown. */
void hpcti_signals_stopping(void);

/* Job end time as Unix seconds; HPCT_ERR_NOT_FOUND when unknown. */
HPCTI_CHECK hpct_status_t hpcti_walltime_end(hpct_ctx_t ctx, double *end);

#endif
