/* train_config.h: settings of `hpctrain train`, from a key = value file, HPCT_* environment
 * variables and command-line flags (later sources override earlier ones). */
#ifndef HPCT_TRAIN_CONFIG_H
#define HPCT_TRAIN_CONFIG_H

#include <stddef.h>

#define TC_PATH_MAX   1024
#define TC_MAX_HIDDEN 16

struct train_config {
    /* data */
    char train_manifest[TC_PATH_MAX];
    char eval_manifest[TC_PATH_MAX];
    /* model: hidden widths; the input and output widths come from the data */
    int hidden[TC_MAX_HIDDEN];
    int num_hidden;
    char activation[16]; /* identity | relu | tanh | gelu */
    char loss[16];       /* softmax_ce | mse */
    long outputs;        /* classes for softmax_ce (required); 0 for mse: the target width */
    /* optimizer and schedule */
    char optimizer[16]; /* sgd | adamw */
    double lr, momentum, weight_decay, beta1, beta2, eps, clip_norm, gamma, min_lr;
    int nesterov;
    char schedule[16]; /* constant | step | cosine */
    long warmup_steps, step_size, total_steps;
    /* run */
    long global_batch, micro_batches, epochs, seed, threads, log_interval;
    double collective_timeout; /* seconds */
    /* checkpoints */
    char checkpoint_dir[TC_PATH_MAX];
    long checkpoint_every_steps, checkpoint_keep, checkpoint_keep_every;
    double checkpoint_every_seconds, walltime_margin;
    int checkpoint_async;
    char resume[16];           /* auto | never */
    char backend[16];          /* cpu | cuda (not hashed: a run may resume on the other backend) */
    long consistency_interval; /* steps between replica hash checks across ranks; 0 = never */
    /* what the run leaves behind (doc/metrics.md) */
    char metrics_file[TC_PATH_MAX];           /* auto: checkpoint_dir/metrics.jsonl; none: off */
    long eval_every_steps, eval_every_epochs; /* evaluation cadence; 0 = at the end only */
    double straggler_threshold;               /* fraction above the median step time; 0 = off */
    char timeline_file[TC_PATH_MAX]; /* none (default) | auto: checkpoint_dir/timeline | prefix */
    long timeline_steps, timeline_first; /* ring of the last steps, or a window from first */
    double divergence_factor; /* the divergence guard: limit over the best running loss; 0 off */
    long divergence_reports;  /* reports in a row above the limit before it stops the run */
    char data_store[8];        /* auto | off | job | node: hpct_data_config_t.store */
    long data_memory_mib;      /* MiB a rank may load the set into (0: always stream) */
};

/* Fill every field with its documented default. */
void train_config_defaults(struct train_config *c);
/* Apply a "key = value" file ('#' comments); errors name the file and line. */
int train_config_load_file(struct train_config *c, const char *path, char *err, size_t errlen);
/* Apply HPCT_<KEY> environment variables (e.g. HPCT_LR=0.1). */
int train_config_load_env(struct train_config *c, char *err, size_t errlen);
/* Apply one setting by key; source names where it came from for messages. */
int train_config_set(struct train_config *c, const char *key, const char *value, const char *source,
                     char *err, size_t errlen);
/* Check cross-field rules (e.g. a training manifest is given). */
int train_config_validate(const struct train_config *c, char *err, size_t errlen);
/* The HPCT_* environment variables that are neither a setting, nor one the tool or its scripts
 * read, nor one for which is_library (may be NULL; train.c: the library's registry) returns 1
 * (a typo such as HPCT_HIDEN), blank-separated into out [n]; their count. */
int train_config_unknown_env(char *out, size_t n, int (*is_library)(const char *, size_t));
/* Print every key with its current value in file syntax. */
void train_config_print(const struct train_config *c, void *file);
/* Stable 64-bit hash of the settings that change the training result (not paths or cadence). */
unsigned long long train_config_hash(const struct train_config *c);

#endif
