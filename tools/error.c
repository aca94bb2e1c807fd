/* error.c: the one error printer of the hpctrain subcommands: "hpctrain CMD: error: ..." on
 * standard error, one write a message. */
#include "tools.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *command; /* the running subcommand; NULL: "hpctrain: error: ..." */

void tool_set_command(const char *name)
{
    command = name;
}

int tool_verror(int code, const char *fmt, va_list ap)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "hpctrain%s%s: error: ", command ? " " : "",
             command ? command : "");
    va_list measure;
    va_copy(measure, ap);
    int len = vsnprintf(NULL, 0, fmt, measure);
    va_end(measure);
    size_t n = strlen(prefix), size = n + (len > 0 ? (size_t)len : 0) + 2;
    char *line = malloc(size);
    if (!line) { /* out of memory: the same words, in pieces */
        fputs(prefix, stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        return code;
    }
    memcpy(line, prefix, n);
    vsnprintf(line + n, size - n - 1, fmt, ap);
    strcat(line, "\n");
    fputs(line, stderr);
    free(line);
    return code;
}

int tool_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tool_verror(code, fmt, ap);
    va_end(ap);
    return code;
}

int tool_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int tool_launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}

void tool_let_rank0_print(void)
{
    struct timespec wait = {2, 0};
    if (tool_launcher_rank() > 0)
        while (nanosleep(&wait, &wait) != 0 && errno == EINTR) continue; /* a caught signal */
}
