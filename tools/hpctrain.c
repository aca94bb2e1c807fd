/* hpctrain.c: the installed `hpctrain` program: a dispatcher for its subcommands. */
#include "config.h"
#include "hpctrain.h"
#include "tools.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
    const char *summary;
} subcommand_t;

static const subcommand_t subcommands[] = {
    {"shard", tool_shard_main, "convert IDX/.npy/CSV data into HDF5 shards and a manifest"},
    {"train", tool_train_main, "train the built-in MLP data-parallel, with checkpoints"},
    {"ckpt", tool_ckpt_main, "inspect, verify or compare checkpoint files (info|verify|diff)"},
    {"report", tool_report_main, "summarise a run from its metrics file and plot it (SVG)"},
    {"trace", tool_trace_main, "merge the per-rank timelines into one (trace merge)"},
    {"info", tool_info_main, "list the library's HPCT_* settings: value, source, accepted"},
    {"doctor", tool_doctor_main, "preflight a job: versions, placement, fabric, storage, Slurm"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: hpctrain COMMAND [OPTIONS]...\n       hpctrain --help | --version\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\n'hpctrain COMMAND --help' describes a command.\n"
                 "exit status: 0 success, 1 failure (output not written, training failed,\n"
                 "ckpt diff: the checkpoints differ, doctor: a check failed), 2 usage or\n"
                 "settings error, 3 bad input data or checkpoint, 4 training diverged (train),\n"
                 "75 preempted (train: requeue), 124 a rank hung (train, doctor).\n");
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return TOOL_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return TOOL_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        int major, minor, patch;
        hpct_get_version(&major, &minor, &patch);
        printf("hpctrain %d.%d.%d\n", major, minor, patch);
        return TOOL_OK;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
        if (!strcmp(argv[1], subcommands[i].name)) {
            tool_set_command(subcommands[i].name); /* errors say "hpctrain NAME: error: " */
            return subcommands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "hpctrain: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return TOOL_USAGE;
}

int main(int argc, char **argv)
{
    /* Each line goes out whole when printed: nothing sits in a buffer that a kill would lose,
     * and lines of ranks sharing one output file do not interleave mid-line. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* A reader that stops early (`hpctrain ckpt info FILE | head -2`) must not kill the tool with
     * SIGPIPE (ckpt would then report its checking child as crashed on a corrupt file). With the
     * signal ignored, writes to the closed pipe fail with EPIPE, the rest of the output is dropped
     * and the exit status is the one the command's work determined: a closed pipe is a quiet,
     * normal end, never a failure or a message. */
    signal(SIGPIPE, SIG_IGN);
    return dispatch(argc, argv);
}
