/* tools.h: shared pieces of the hpctrain program (tools/). */
#ifndef HPCT_TOOLS_H
#define HPCT_TOOLS_H

#include "hpctrain.h"

#include <stdarg.h>
#include <string.h>

/* Exit codes of every subcommand (documented in doc/hpctrain.1 and --help). */
#define TOOL_OK     0
#define TOOL_FAILED 1 /* could not write the output (I/O) */
#define TOOL_USAGE  2 /* bad command line */
#define TOOL_DATA   3 /* an input file is missing, malformed or inconsistent */

/* Element types of the converter's input arrays (the IDX and .npy codes it reads). */
typedef enum {
    TOOL_U8,
    TOOL_I8,
    TOOL_U16,
    TOOL_I16,
    TOOL_U32,
    TOOL_I32,
    TOOL_U64,
    TOOL_I64,
    TOOL_F32,
    TOOL_F64,
    TOOL_NUM_TYPES
} tool_type_t;

/* An array read from an input file: dims[0] samples of dims[1..rank) values. */
typedef struct tool_array {
    tool_type_t type;
    int rank;
    uint64_t dims[HPCT_SHARD_MAX_RANK];
    void *data;
} tool_array_t;

/* Bytes per element of t (0 for an unknown type), and whether it is floating point. */
size_t tool_type_size(tool_type_t t);
int tool_type_is_float(tool_type_t t);
/* Convert count values of type t at src to float32 / int32 (lossy conversions truncate). */
void tool_to_f32(tool_type_t t, const void *src, float *dst, size_t count);
/* dst [count] = the integer labels at src as int32; -1 (and *bad = the first index) when a
 * value does not fit int32, else 0. */
int tool_to_i32(tool_type_t t, const void *src, int32_t *dst, size_t count, size_t *bad);

/* This process's rank from the launcher's environment (Open MPI, PMIx, PMI, Slurm), before
 * the runtime starts; -1 when no launcher says (one process). tools/error.c. */
int tool_launcher_rank(void);

/* On a rank above 0, wait 2 s (through caught signals) before returning: an error that every
 * rank has is printed by rank 0, and this rank's exit must not make the launcher end the job
 * (mpirun kills the rest) before rank 0 has printed it. At once on rank 0 and alone. */
void tool_let_rank0_print(void);

/* 1 when paths a and b both exist and are the same file (device and inode): an output that
 * is also an input would be emptied before it is read. */
int tool_same_file(const char *a, const char *b);

/* Whether a word taken as an option's value is itself an option ("--x"). The rule of every
 * subcommand: a value given as the next word may not start with "--" (the value was missing
 * and the next option would be swallowed); write --opt=VALUE for such a value. */
static inline int tool_is_option_word(const char *word)
{
    return word[0] == '-' && word[1] == '-';
}

/* The activation a settings value names (hpctrain.conf(5): identity, relu, tanh, gelu). */
static inline hpct_activation_t tool_activation(const char *name)
{
    return !strcmp(name, "relu")   ? HPCT_ACT_RELU
           : !strcmp(name, "tanh") ? HPCT_ACT_TANH
           : !strcmp(name, "gelu") ? HPCT_ACT_GELU
                                   : HPCT_ACT_IDENTITY;
}

/* Print "hpctrain CMD: error: MESSAGE" on stderr as one write (CMD: the subcommand the
 * dispatcher named with tool_set_command; "hpctrain: error: ..." before it does); returns
 * code. tools/error.c; every subcommand reports its errors through it. */
int tool_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tool_verror(int code, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void tool_set_command(const char *name);
/* Readers (gzip or plain): 0 or an exit code after printing why. */
int tool_read_idx(const char *path, tool_array_t *a);
int tool_read_npy(const char *path, tool_array_t *a);
/* CSV: every row is numbers; the label column goes to labels, the rest to inputs (fp32). */
int tool_read_csv(const char *path, int label_column, int skip_header, tool_array_t *inputs,
                  tool_array_t *labels);
/* Subcommands. */
int tool_shard_main(int argc, char **argv);
int tool_train_main(int argc, char **argv);
int tool_ckpt_main(int argc, char **argv);
int tool_report_main(int argc, char **argv);
int tool_trace_main(int argc, char **argv);
int tool_info_main(int argc, char **argv);
int tool_doctor_main(int argc, char **argv);

#endif
