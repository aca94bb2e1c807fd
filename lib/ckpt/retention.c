/* retention.c: which checkpoint files a directory holds (newest first), the serial number
 * of the newest, and retention: keep the keep_last newest, every permanent one and the one
 * the training loop protects (the newest known good). */
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Parse "ckpt-<12 digits>.h5" or "ckpt-<12 digits>-keep.h5"; -1 when name is neither. */
static long parse_name(const char *name, int *keep)
{
    if (strncmp(name, "ckpt-", 5) != 0 || strlen(name) < 20) return -1;
    long step = 0;
    for (int i = 5; i < 17; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        step = 10 * step + (name[i] - '0');
    }
    *keep = strcmp(name + 17, "-keep.h5") == 0;
    return (*keep || strcmp(name + 17, ".h5") == 0) ? step : -1;
}

/* Newest first; at equal steps the permanent copy first. */
static int newer_first(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    int kx, ky;
    long sx = parse_name(x, &kx), sy = parse_name(y, &ky);
    if (sx != sy) return sx < sy ? 1 : -1;
    return ky - kx;
}

hpct_status_t hpcti_ck_list(const char *dir, char ***names, int *n, hpcti_ckerr_t *err)
{
    *names = NULL;
    *n = 0;
    DIR *dh = opendir(dir);
    if (!dh)
        return hpcti_ckerr_set(err, errno == ENOENT ? HPCT_ERR_NOT_FOUND : HPCT_ERR_IO,
                               "cannot list checkpoint directory %s: %s", dir, strerror(errno));
    int cap = 0, keep, oom = 0;
    struct dirent *e;
    while (!oom && (e = readdir(dh))) {
        if (parse_name(e->d_name, &keep) < 0) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **grown = realloc(*names, sizeof *grown * (size_t)cap);
            if (!(oom = !grown)) *names = grown;
        }
        if (!oom && !(oom = !((*names)[*n] = strdup(e->d_name)))) (*n)++;
    }
    closedir(dh);
    if (oom) { /* a partial list would skip checkpoints silently: fail instead */
        for (int i = 0; i < *n; i++) free((*names)[i]);
        free(*names);
        *names = NULL;
        *n = 0;
        return hpcti_ckerr_set(err, HPCT_ERR_NO_MEMORY,
                               "out of memory listing checkpoint directory %s", dir);
    }
    if (*n) qsort(*names, (size_t)*n, sizeof **names, newer_first);
    return HPCT_SUCCESS;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* The "serial N" line of the latest pointer at path: N in [0, HPCTI_CKPT_SERIAL_MAX], else
 * -1 (missing, unreadable, or a number no directory reaches, which would overflow). */
static long pointer_serial(const char *path, hpct_log_level_t log_level)
{
    char line[600];
    long long serial = -1;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        if (log_level >= HPCT_LOG_WARN)
            fprintf(stderr, "hpctrain: warning: ignoring %s: not a regular file\n", path);
        close(fd);
        return -1;
    }
    FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
    if (!f) {
        if (fd >= 0) close(fd);
        return -1;
    }
    if (fgets(line, sizeof line, f) && fgets(line, sizeof line, f) &&
        strncmp(line, "serial ", 7) == 0) {
        char *end;
        errno = 0;
        serial = strtoll(line + 7, &end, 10);
        if (errno || end == line + 7 || (*end != '\n' && *end != '\0') || serial < 0 ||
            serial > HPCTI_CKPT_SERIAL_MAX)
            serial = -1;
    }
    fclose(f);
    return (long)serial;
}

long hpcti_ck_last_serial(const char *dir, hpct_log_level_t log_level)
{
    char path[HPCTI_CKPT_PATH_MAX];
    hpcti_ck_join(path, dir, "latest");
    long serial = pointer_serial(path, log_level);
    if (serial >= 0) return serial;
    char **names;
    int n;
    hpcti_ckerr_t err;
    if (hpcti_ck_list(dir, &names, &n, &err)) return 0;
    free_names(names, n);
    return n;
}

/* Keep the keep_last newest, every permanent file and the one of step protect; delete the
 * rest. The deletions are not fsync'd: an old checkpoint that reappears after a crash is
 * still a valid one. */
void hpcti_ck_apply_retention(const hpcti_ckdir_t *d, long protect, hpcti_ckerr_t *err)
{
    char **names;
    int n, keep;
    if (hpcti_ck_list(d->dir, &names, &n, err)) return;
    for (int i = d->keep_last; i < n; i++) {
        char path[HPCTI_CKPT_PATH_MAX];
        long step = parse_name(names[i], &keep);
        if (step < 0 || keep || step == protect) continue;
        hpcti_ck_join(path, d->dir, names[i]);
        if (unlink(path) < 0 && d->log_level >= HPCT_LOG_WARN)
            fprintf(stderr, "hpctrain: warning: cannot remove old checkpoint %s: %s\n", path,
                    strerror(errno));
    }
    free_names(names, n);
}
