/* commit.c: the atomic commit of one checkpoint file: written under a temporary name,
 * fsync'd, renamed into place, directory fsync'd, then the "latest" pointer replaced the
 * same way and retention applied; temporary files of dead writers are removed. */
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

hpcti_stage_t hpcti_stage_parse(const char *name)
{
    static const char *names[] = {"", "created", "half", "synced", "renamed", "pointer"};
    for (int i = 1; name && i < (int)(sizeof names / sizeof *names); i++)
        if (strcmp(name, names[i]) == 0) return (hpcti_stage_t)i;
    return HPCTI_STAGE_NONE;
}

/* Test hook: stop the whole process here so a test can SIGKILL it mid-write. */
void hpcti_ck_stop_if(const hpcti_ckdir_t *d, hpcti_stage_t stage)
{
    if (d->stop_at == stage) raise(SIGSTOP);
}

/* ---- small POSIX helpers ---------------------------------------------------- */

static int fsync_path(const char *path, int directory)
{
    int fd = open(path, O_RDONLY | (directory ? O_DIRECTORY : 0));
    if (fd < 0) return -1;
    int rc;
    do rc = fsync(fd);
    while (rc < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* Drop the world-write bit a 0 umask would leave (files are never world-writable). */
static void strip_world_write(int fd)
{
    struct stat st;
    if (fstat(fd, &st) == 0 && (st.st_mode & S_IWOTH)) fchmod(fd, st.st_mode & 07775);
}

/* out = dir/name, cut to HPCTI_CKPT_PATH_MAX - 1 bytes (directories are checked shorter). */
void hpcti_ck_join(char out[HPCTI_CKPT_PATH_MAX], const char *dir, const char *name)
{
    size_t nd = strnlen(dir, HPCTI_CKPT_PATH_MAX - 2);
    size_t nn = strnlen(name, HPCTI_CKPT_PATH_MAX - 2 - nd);
    memcpy(out, dir, nd);
    out[nd] = '/';
    memcpy(out + nd + 1, name, nn);
    out[nd + 1 + nn] = '\0';
}

/* ".<name>.tmp-<host>-<pid>": unique per writer, ignored by readers. */
static void temp_name(char out[HPCTI_CKPT_PATH_MAX], const char *dir, const char *name)
{
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    char tmp[600];
    snprintf(tmp, sizeof tmp, ".%s.tmp-%s-%ld", name, host, (long)getpid());
    hpcti_ck_join(out, dir, tmp);
}

/* Create the file ourselves first: a clear errno (EACCES, EROFS, ENOSPC) naming the path. */
static hpct_status_t precreate(const char *path, hpcti_ckerr_t *err)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0)
        return hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot create checkpoint file %s: %s", path,
                               strerror(errno));
    strip_world_write(fd);
    close(fd);
    return HPCT_SUCCESS;
}

/* ---- commit and pointer ------------------------------------------------------ */

static hpct_status_t sync_dir(const char *dir, hpcti_ckerr_t *err)
{
    if (fsync_path(dir, 1) == 0) return HPCT_SUCCESS;
    return hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot fsync checkpoint directory %s: %s", dir,
                           strerror(errno));
}

static hpct_status_t write_small_file(const char *path, const char *text, hpcti_ckerr_t *err)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0)
        return hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    strip_world_write(fd);
    size_t n = strlen(text);
    ssize_t w;
    do w = write(fd, text, n);
    while (w < 0 && errno == EINTR);
    int rc = (w == (ssize_t)n) ? fsync(fd) : -1;
    int saved = w < 0 || rc < 0 ? errno : ENOSPC;
    close(fd);
    if (w == (ssize_t)n && rc == 0) return HPCT_SUCCESS;
    unlink(path);
    return hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot write %s: %s", path, strerror(saved));
}

/* "latest" names the newest committed file and its serial number, replaced atomically. */
static hpct_status_t update_pointer(const hpcti_ckdir_t *d, const char *name, long serial,
                                    hpcti_ckerr_t *err)
{
    char tmp[HPCTI_CKPT_PATH_MAX], final[HPCTI_CKPT_PATH_MAX], text[600];
    temp_name(tmp, d->dir, "latest");
    hpcti_ck_join(final, d->dir, "latest");
    snprintf(text, sizeof text, "%s\nserial %ld\n", name, serial);
    hpct_status_t s = write_small_file(tmp, text, err);
    if (s) return s;
    hpcti_ck_stop_if(d, HPCTI_STAGE_POINTER);
    if (rename(tmp, final) < 0) {
        s = hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot rename %s to %s: %s", tmp, final,
                            strerror(errno));
        unlink(tmp);
        return s;
    }
    return sync_dir(d->dir, err);
}

void hpcti_ck_clean_stale(const char *dir)
{
    char host[256] = "host", mark[300];
    gethostname(host, sizeof host - 1);
    snprintf(mark, sizeof mark, ".tmp-%s-", host);
    DIR *dh = opendir(dir);
    if (!dh) return;
    struct dirent *e;
    while ((e = readdir(dh))) {
        const char *at = e->d_name[0] == '.' ? strstr(e->d_name, mark) : NULL;
        if (!at) continue;
        long pid = strtol(at + strlen(mark), NULL, 10);
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[HPCTI_CKPT_PATH_MAX];
        hpcti_ck_join(path, dir, e->d_name);
        unlink(path);
    }
    closedir(dh);
}

hpct_status_t hpcti_ck_write(const hpcti_ckdir_t *d, const hpcti_snapshot_t *snap,
                             char final[HPCTI_CKPT_PATH_MAX], hpcti_ckerr_t *err, double times[3])
{
    char name[64], tmp[HPCTI_CKPT_PATH_MAX];
    times[0] = times[1] = times[2] = hpcti_now();
    snprintf(name, sizeof name, "ckpt-%012ld%s.h5", snap->step, snap->keep ? "-keep" : "");
    hpcti_ck_join(final, d->dir, name);
    temp_name(tmp, d->dir, name);
    hpct_status_t s = precreate(tmp, err);
    if (!s) s = hpcti_ck_write_file(d, snap, tmp, err);
    if (s) {
        unlink(tmp);
        return s;
    }
    hpcti_ck_stop_if(d, HPCTI_STAGE_SYNCED);
    times[1] = hpcti_now();
    if (rename(tmp, final) < 0) {
        s = hpcti_ckerr_set(err, HPCT_ERR_IO, "cannot rename %s to %s: %s", tmp, final,
                            strerror(errno));
        unlink(tmp);
        return s;
    }
    hpcti_ck_stop_if(d, HPCTI_STAGE_RENAMED);
    if ((s = sync_dir(d->dir, err))) return s;
    if ((s = update_pointer(d, name, snap->serial, err))) return s;
    hpcti_ckerr_t ignored;
    hpcti_ck_apply_retention(d, snap->protect, &ignored);
    times[2] = hpcti_now();
    return HPCT_SUCCESS;
}
