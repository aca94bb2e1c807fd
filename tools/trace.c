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
    "whole events (a file cut short) are skipped and counted; a RANKFILE that is empty, is not\n"
    "a timeline or holds no whole event is refused, naming it (exit 3, no OUT written).\n";

static int trace_error(int code, const char *what, const char *path)
{
    return tool_error(code, "%s %s: %s", what, path, strerror(errno));
}

/* Whether a trimmed line is part of the file's frame rather than an event: blank, the opening
 * ({"traceEvents":[, or {"traceEvents":[]} of a run that has not written its timeline yet)
 * or the closing line. */
static int frame_line(const char *line)
{
    return !*line || !strncmp(line, "{\"traceEvents\":[", 16) ||
           !strncmp(line, "],\"displayTimeUnit\"", 19);
}

/* Why path is refused (NULL: it is not): it must open like a timeline and hold an event. */
static const char *refusal(long lines, int framed, long events)
{
    if (!lines) return "is empty";
    if (!framed) return "is not a timeline (its first line is not {\"traceEvents\":[)";
    if (!events)
        return "holds no whole event (a run that ended before writing its timeline, or a file "
               "cut short)";
    return NULL;
}

/* Copy every whole event line of path to out; *events and *skipped count them. A file that is
 * empty, is not a timeline or holds no whole event is refused, naming it (exit 3). */
static int copy_events(FILE *out, const char *path, long *events, long *skipped)
{
    FILE *f = fopen(path, "r");
    if (!f) return trace_error(TOOL_DATA, "cannot read", path);
    static char line[65536];
    static struct report_record rec;
    long lines = 0, mine = 0;
    int framed = 0;
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == ',' || line[n - 1] == ' ')) n--;
        line[n] = '\0';
        if (!lines++) framed = !strncmp(line, "{\"traceEvents\":[", 16);
        if (frame_line(line)) continue;
        if (strncmp(line, "{\"ph\":", 6) || report_parse(line, &rec)) {
            ++*skipped;
            continue;
        }
        fprintf(out, "%s%s", *events ? ",\n" : "", line);
        ++*events, ++mine;
    }
    fclose(f);
    const char *why = refusal(lines, framed, mine);
    if (!why) return TOOL_OK;
    fprintf(stderr, "hpctrain trace: error: %s %s\n", path, why);
    return TOOL_DATA;
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
    for (int i = 4; i < argc; i++)
        if (tool_same_file(out_path, argv[i])) {
            fprintf(stderr,
                    "hpctrain trace: error: -o %s is also the input %s: it would be emptied "
                    "before it is read; write the merged file under another name\n",
                    out_path, argv[i]);
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
    if (code) remove(out_path); /* no merged file that lacks a rank */
    if (!code)
        printf("hpctrain trace: %ld events of %d file(s) in %s (%ld line(s) skipped)\n", events,
               argc - 4, out_path, skipped);
    return code;
}
