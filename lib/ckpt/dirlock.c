/* dirlock.c: one run per checkpoint directory. The writer rank holds an exclusive lock on
 * DIR/.hpctrain.lock for the handle's lifetime and writes who it is into the file, so a
 * second run on the directory fails at once naming the first. The lock is flock(2); where
 * flock is refused (some NFS and Lustre mounts) POSIX fcntl locks are tried; where neither
 * works the run goes on, warned. The kernel drops either lock when the process dies, so a
 * crashed or killed run never leaves a stale lock behind (the file stays, with old text).
 * A directory this process cannot write (read-only mount, another user's) is opened without
 * a lock: it can load from there, and every save fails with the path named. */
#include "config.h"
#include "ckpt.h"
#include "../comm/dist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOCK_NAME ".hpctrain.lock"

/* 1 when errno after a failed lock call means "this file system does not lock". */
static int no_locking(int err)
{
    return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL;
}

/* Lock fd exclusively without waiting: 0 locked, 1 held by another process, -1 no locking
 * here (errno says why). */
static int try_lock(int fd)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
    if (errno == EWOULDBLOCK) return 1;
    if (!no_locking(errno)) return -1;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &fl) == 0) return 0;
    return errno == EACCES || errno == EAGAIN ? 1 : -1;
}

/* The holder's line, "host H pid P job J since T", into out [n] (empty when unreadable). */
static void read_holder(int fd, char *out, size_t n)
{
    ssize_t got = pread(fd, out, n - 1, 0);
    out[got > 0 ? got : 0] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

/* Replace the file's text by this process's line. */
static void write_holder(int fd)
{
    char host[256] = "?", when[32] = "?", line[512];
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    const char *job = getenv("SLURM_JOB_ID");
    int len = snprintf(line, sizeof line, "host %s pid %ld job %s since %s\n", host, (long)getpid(),
                       job && *job ? job : "none", when);
    if (ftruncate(fd, 0) == 0 && len > 0) (void)!pwrite(fd, line, (size_t)len, 0);
}

int hpcti_ckpt_is_writer(hpct_ctx_t ctx, int writer_rank)
{
    const struct hpcti_dist *d = hpcti_dist(ctx);
    return (d ? d->rank : 0) == writer_rank;
}

hpct_status_t hpcti_ckpt_lock_dir(hpct_ctx_t ctx, const char *dir, int writer_rank, int *fd_out)
{
    *fd_out = -1;
    int word = 0, set = 0; /* HPCT_CKPT_LOCK: on off 1 0 */
    hpct_status_t bad = hpcti_tunable_choice(ctx, "HPCT_CKPT_LOCK", &word, &set);
    if (bad) return bad;
    if ((set && word % 2 == 1) || !hpcti_ckpt_is_writer(ctx, writer_rank)) return HPCT_SUCCESS;
    char path[HPCTI_CKPT_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, LOCK_NAME);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
        /* a directory this process cannot write: loads work, saves fail naming the path */
        hpcti_log(ctx, HPCT_LOG_WARN, "checkpoint directory %s: no lock (%s): %s", dir, path,
                  strerror(errno));
        return HPCT_SUCCESS;
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        hpct_status_t s = hpcti_error(ctx, HPCT_ERR_IO,
                                      "checkpoint directory %s: cannot use "
                                      "lock file %s: %s",
                                      dir, path, fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return s;
    }
    int r = try_lock(fd);
    if (r == 1) {
        char holder[400];
        read_holder(fd, holder, sizeof holder);
        close(fd);
        return hpcti_error(ctx, HPCT_ERR_BUSY,
                           "checkpoint directory %s is in use by another run "
                           "(%s): two runs must not write one checkpoint directory; wait for "
                           "that run to end or choose another directory",
                           dir, holder[0] ? holder : "its lock file names no holder");
    }
    if (r < 0) {
        hpcti_log(ctx, HPCT_LOG_WARN,
                  "checkpoint directory %s: the file system refuses locks "
                  "(%s): a second run on this directory would not be detected",
                  dir, strerror(errno));
        close(fd);
        return HPCT_SUCCESS;
    }
    write_holder(fd);
    *fd_out = fd;
    return HPCT_SUCCESS;
}

void hpcti_ckpt_unlock_dir(int fd)
{
    if (fd >= 0) close(fd); /* closing drops the lock */
}
