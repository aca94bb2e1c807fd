/* doctor.h: `hpctrain doctor`: the table of checks (doctor.c) and the checks the program makes
 * itself on the checkpoint writer (rank 0): the settings, the checkpoint directory and Slurm
 * (doctor_local.c). The library checks versions, placement and fabric (hpct_doctor). */
#ifndef HPCT_DOCTOR_H
#define HPCT_DOCTOR_H

#include "hpctrain.h"

#define DOC_MAX_ROWS 64

/* One row of the table: check, HPCT_CHECK_OK/_WARN/_FAIL, and what was found. */
struct doc_row {
    char check[32];
    int result;
    char detail[1600];
};

struct doc_table {
    struct doc_row rows[DOC_MAX_ROWS];
    int n;
    int worst;
};

/* Append a row (dropped when the table is full; its verdict still counts). */
void doc_add(struct doc_table *t, const char *check, int result, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* What the local checks need beyond the settings. */
struct doc_local {
    const hpct_settings_t *c;
    const char *config_path; /* the --config file, or NULL */
    size_t write_bytes;      /* of the write test (a smaller file where less is free) */
    double ckpt_s;           /* out: the estimated seconds of one checkpoint, -1: unknown */
    double ckpt_bytes;       /* out: the estimated bytes of one checkpoint, -1: unknown */
};

/* Rows "checkpoint dir", "checkpoint room" and "checkpoint time" on the writer rank: the
 * directory exists or can be created (what was created for the test is removed again), a
 * file can be written, fsync'd and removed there (its bandwidth), it has room for
 * checkpoint_keep + 1 checkpoints of the model (parameters x 4 bytes x (1 + optimizer state
 * slots), the widths from the training manifest), and one takes less time to write than the
 * cadence and the walltime margin allow. */
void doc_storage(struct doc_local *l, struct doc_table *t);

/* Rows "slurm requeue" and "slurm signal" inside a Slurm job (SLURM_JOB_ID), one "slurm" row
 * outside: whether the job can be requeued and whether a signal before the time limit reaches
 * the trainer, early enough for a checkpoint of ckpt_s seconds, with the #SBATCH line to add. */
void doc_slurm(const struct doc_local *l, struct doc_table *t);

#endif
