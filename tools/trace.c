/* trace.c: `hpctrain trace merge`: the per-rank timelines of a run (Chrome trace event JSON
 * written by the library, one event per line) merged into one file that Perfetto or
 * chrome://tracing shows with one process per rank. */
#include "config.h"
#include "hpctrain.h"
#include "report.h"
#include "tools.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: hpctrain trace merge -o OUT RANKFILE...\n"
    "Merges the per-rank timelines (timeline_file setting: PREFIX-rank<R>.json) into OUT, one\n"
    "process per rank, for Perfetto (ui.perfetto.dev) or chrome://tracing. Lines that are not\n"
    "whole events (a file cut short) are skipped and counted.\n";

static int trace_error(int code, const char *what, const char *path)
{
    fprintf(stderr, "hpctrain trace: error: %s %s: %s\n", what, path, strerror(errno));
    return code;
}

/* Copy every whole event line of path to out; *events and *skipped count them. */
static int copy_events(FILE *out, const char *path, long *events, long *skipped)
{
    FILE *f = fopen(path, "r");
    if (!f) return trace_error(TOOL_DATA, "cannot read", path);
    static char line[65536];
    static struct report_record rec;
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == ',' || line[n - 1] == ' ')) n--;
        line[n] = '\0';
        if (strncmp(line, "{\"ph\":", 6)) continue; /* the array's brackets */
        if (report_parse(line, &rec)) {
            ++*skipped;
            continue;
        }
        fprintf(out, "%s%s", *events ? ",\n" : "", line);
        ++*events;
    }
    fclose(f);
    return TOOL_OK;
}

int tool_trace_main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage_text, stdout);
        return TOOL_OK;
    }
    if (argc < 5 || strcmp(argv[1], "merge") || strcmp(argv[2], "-o")) {
        fputs(usage_text, stderr);
        return TOOL_USAGE;
    }
    const char *out_path = argv[3];
    if (tool_is_option_word(out_path)) {
        fprintf(stderr,
                "hpctrain trace: error: -o needs a value (the next word, '%s', is an option; "
                "write -o ./%s for a file of that name)\n",
                out_path, out_path);
        return TOOL_USAGE;
    }
    FILE *out = fopen(out_path, "w");
    if (!out) return trace_error(TOOL_FAILED, "cannot write", out_path);
    fputs("{\"traceEvents\":[\n", out);
    long events = 0, skipped = 0;
    int code = TOOL_OK;
    for (int i = 4; i < argc && !code; i++) code = copy_events(out, argv[i], &events, &skipped);
    fputs("\n],\"displayTimeUnit\":\"ms\"}\n", out);
    if (ferror(out) | fclose(out)) code = trace_error(TOOL_FAILED, "cannot write", out_path);
    if (!code)
        printf("hpctrain trace: %ld events of %d file(s) in %s (%ld line(s) skipped)\n", events,
               argc - 4, out_path, skipped);
    return code;
}
