/* metrics.c: the append-only metrics file. Each record is one line written by one write(2)
 * on an O_APPEND descriptor, so a crash leaves whole lines and at most one torn last line;
 * opening a file whose last line is torn ends that line first, so it stays one bad line that
 * readers skip, and the next segment starts on a line of its own. */
#include "obs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct hpcti_metrics {
    int fd;
    long lost; /* records not written */
    char path[1024];
};

/* The number after "key": in line, or 0 when absent. */
static double field_num(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? strtod(p + strlen(key), NULL) : 0.0;
}

/* What one complete line tells about earlier segments. */
static void scan_line(const char *line, struct hpcti_metrics_past *past)
{
    if (strstr(line, "\"type\":\"run_start\"")) past->segments++;
    if (strstr(line, "\"type\":\"step\"")) {
        long step = (long)field_num(line, "\"step\":");
        if (step > past->last_step) past->last_step = step;
    }
    if (strstr(line, "\"type\":\"stop\"")) {
        past->last_stop_t = field_num(line, "\"time\":");
        const char *r = strstr(line, "\"reason\":\"");
        past->last_stop_reason[0] = '\0';
        if (r) sscanf(r + 10, "%31[^\"]", past->last_stop_reason);
    }
}

/* Read the existing file line by line; 1 when its last byte is not a newline (torn). */
static int scan(FILE *f, struct hpcti_metrics_past *past)
{
    char line[HPCTI_JLINE_MAX + 2];
    int torn = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        torn = len == 0 || line[len - 1] != '\n';
        if (!torn) scan_line(line, past);
    }
    return torn;
}

hpct_status_t hpcti_metrics_open(hpct_ctx_t ctx, const char *path, struct hpcti_metrics **out,
                                 struct hpcti_metrics_past *past)
{
    *out = NULL;
    memset(past, 0, sizeof *past);
    past->last_step = -1;
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return hpcti_error(ctx, HPCT_ERR_IO, "metrics file %s: cannot open it for appending: %s",
                           path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return hpcti_error(ctx, HPCT_ERR_IO, "metrics file %s: not a regular file", path);
    }
    int torn = 0, dfd = dup(fd);
    FILE *f = dfd >= 0 ? fdopen(dfd, "r") : NULL;
    if (f) {
        rewind(f);
        torn = scan(f, past);
        fclose(f);
    } else if (dfd >= 0)
        close(dfd);
    if (torn && write(fd, "\n", 1) != 1) {
        close(fd);
        return hpcti_error(ctx, HPCT_ERR_IO, "metrics file %s: cannot end its torn last line: %s",
                           path, strerror(errno));
    }
    struct hpcti_metrics *m = hpcti_calloc(ctx, 1, sizeof *m, "the metrics file");
    if (!m) {
        close(fd);
        return HPCT_ERR_NO_MEMORY;
    }
    m->fd = fd;
    snprintf(m->path, sizeof m->path, "%s", path);
    *out = m;
    return HPCT_SUCCESS;
}

/* After a short write of w bytes (a full disk takes what fits): the file cut back to the
 * record's start, so that it never ends inside a record. 0, or -1 when it could not be. */
static int take_back(struct hpcti_metrics *m, ssize_t w)
{
    off_t end = lseek(m->fd, 0, SEEK_END);
    return end >= w && ftruncate(m->fd, end - w) == 0 ? 0 : -1;
}

int hpcti_metrics_write(struct hpcti_metrics *m, const struct hpcti_jline *j, char *why, size_t len)
{
    if (!m) return 0;
    ssize_t w;
    do w = write(m->fd, j->buf, j->n);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)j->n) return 0;
    int err = w < 0 ? errno : ENOSPC; /* a short write: the device took what fitted */
    off_t at = lseek(m->fd, 0, SEEK_END) - (w > 0 ? w : 0);
    int kept = w > 0 && take_back(m, w);
    if (m->lost++) return -2;
    snprintf(why, len,
             "metrics file %s: cannot append a record at byte %lld: %s%s; later records are "
             "dropped until one fits",
             m->path, (long long)at, strerror(err),
             kept ? " (and a partial record is left: cannot truncate it)" : "");
    return -1;
}

void hpcti_metrics_close(struct hpcti_metrics *m)
{
    if (!m) return;
    close(m->fd);
    free(m);
}

void hpcti_note_loss(hpct_ctx_t ctx, const char *why)
{
    if (!ctx->first_loss[0]) snprintf(ctx->first_loss, sizeof ctx->first_loss, "%s", why);
    hpcti_log(ctx, HPCT_LOG_ERROR, "%s", why);
}

hpct_status_t hpct_output_losses(hpct_ctx_t ctx, long *metrics_records, long *timeline_rewrites,
                                 const char **detail)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    if (metrics_records) *metrics_records = ctx->lost_metrics;
    if (timeline_rewrites) *timeline_rewrites = ctx->lost_timeline;
    if (detail) *detail = ctx->first_loss;
    return HPCT_SUCCESS;
}
