/* tools.h: shared pieces of the hpctrain program (tools/). */
#ifndef HPCT_TOOLS_H
#define HPCT_TOOLS_H

#include "../lib/data/data.h"

/* Exit codes of every subcommand (documented in doc/hpctrain.1 and --help). */
#define TOOL_OK     0
#define TOOL_FAILED 1 /* could not write the output (I/O) */
#define TOOL_USAGE  2 /* bad command line */
#define TOOL_DATA   3 /* an input file is missing, malformed or inconsistent */

/* An array read from an input file: dims[0] samples of dims[1..rank) values. */
typedef struct tool_array {
    hpcti_type_t type;
    int rank;
    uint64_t dims[HPCTI_MAX_DIMS + 1];
    void *data;
} tool_array_t;

/* Print "hpctrain shard: error: ..." on stderr; returns code. */
int tool_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
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

#endif
