/* test_ckpt_disk.c: a full and a read-only checkpoint directory (a real 1 MiB tmpfs, then
 * remounted read-only) and an unwritable one (a child running as user nobody): the save
 * fails with HPCT_ERR_IO and a detail naming the path and the system error, the previous
 * checkpoint stays intact and loads, no temporary file is left. Needs root for mount(2) and
 * setuid; as another user it skips (and chmod alone would not stop root). */
#include "config.h"
#include "lib/ckpt_util.h"

#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const size_t counts[] = {2000, 100};

static hpct_status_t save(hpct_ckpt_t ck, state_t *st, long step)
{
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    m.step = step;
    hpct_optimizer_set_step(st->opt, step); /* a load refuses optimizer/step != meta/step */
    hpct_status_t s = hpct_ckpt_save(ck, st->params, st->opt, &m);
    return s ? s : hpct_ckpt_wait(ck);
}

/* The previous checkpoint (step 1, state a) still loads bit-identically. */
static int previous_loads(const char *dir, state_t *a)
{
    state_t got;
    st_create(&got, 2, counts, HPCT_OPT_SGD);
    hpct_ckpt_t ck = st_open_ck(&got, dir, 0);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    int ok = hpct_ckpt_load_latest(ck, got.params, got.opt, &m) == HPCT_SUCCESS && m.step == 1 &&
             m.rejected == 0 && st_equal(&got, a);
    hpct_ckpt_close(ck);
    st_destroy(&got);
    return ok;
}

/* Save a big extra into a full directory: clear error, nothing lost. */
static void full_case(const char *dir, state_t *a, int async)
{
    const char *mode = async ? "async" : "sync";
    state_t big;
    st_create(&big, 2, counts, HPCT_OPT_SGD);
    st_fill(&big, 9, 1);
    size_t n = 4u << 20; /* 4 MiB does not fit in the 1 MiB tmpfs */
    unsigned char *blob = calloc(n, 1);
    hpct_ckpt_t ck = st_open_ck(&big, dir, async);
    hpct_ckpt_add_array(ck, "blob", HPCT_CKPT_U8, blob, n);
    hpct_status_t s = save(ck, &big, 2);
    const char *why = hpct_last_error(big.ctx);
    tap_ok(s == HPCT_ERR_IO && strstr(why, dir) && strstr(why, strerror(ENOSPC)),
           "%s: full disk -> HPCT_ERR_IO naming the path and '%s'", mode, strerror(ENOSPC));
    tap_diag("%s", why);
    hpct_ckpt_close(ck);
    free(blob);
    st_destroy(&big);
    tap_ok(previous_loads(dir, a), "%s: after ENOSPC the previous checkpoint loads intact", mode);
    tap_is_int(count_entries(dir, ".tmp-"), 0, "%s: no temporary file left behind", mode);
}

static void readonly_case(const char *dir, state_t *a)
{
    if (mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0) {
        tap_skip(2, "cannot remount the tmpfs read-only");
        return;
    }
    hpct_ckpt_t ck = st_open_ck(a, dir, 0);
    hpct_status_t s = save(ck, a, 2);
    const char *why = hpct_last_error(a->ctx);
    tap_ok(s == HPCT_ERR_IO && strstr(why, dir) && strstr(why, strerror(EROFS)),
           "read-only directory -> HPCT_ERR_IO naming the path and '%s'", strerror(EROFS));
    tap_diag("%s", why);
    hpct_ckpt_close(ck);
    hpct_optimizer_set_step(a->opt, 1); /* a as it was saved */
    tap_ok(previous_loads(dir, a), "read-only: the previous checkpoint loads intact");
}

/* As user nobody (root bypasses permissions) in a root-owned 0755 directory: EACCES. */
static int nobody_child(const char *dir, state_t *a)
{
    if (setgid(65534) < 0 || setuid(65534) < 0) return 8;
    state_t b;
    st_create(&b, 2, counts, HPCT_OPT_SGD);
    st_fill(&b, 5, 1);
    hpct_ckpt_t ck = st_open_ck(&b, dir, 0);
    int bits = 0;
    hpct_status_t s = save(ck, &b, 2);
    const char *why = hpct_last_error(b.ctx);
    if (s == HPCT_ERR_IO && strstr(why, dir) && strstr(why, strerror(EACCES))) bits |= 1;
    hpct_ckpt_close(ck);
    if (previous_loads(dir, a)) bits |= 2;
    st_destroy(&b);
    return bits;
}

static void eacces_case(state_t *a)
{
    char dir[256];
    make_tmpdir(dir, sizeof dir, "ckperm");
    chmod(dir, 0755);
    hpct_ckpt_t ck = st_open_ck(a, dir, 0);
    if (save(ck, a, 1)) tap_bail("save as root: %s", hpct_last_error(a->ctx));
    hpct_ckpt_close(ck);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(nobody_child(dir, a));
    int status = 0;
    waitpid(pid, &status, 0);
    int bits = WIFEXITED(status) ? WEXITSTATUS(status) : 16;
    if (bits & 8) {
        tap_skip(2, "cannot switch to user nobody (uid 65534)");
    } else {
        tap_ok(bits & 1,
               "unwritable directory (user nobody) -> HPCT_ERR_IO naming the path and '%s'",
               strerror(EACCES));
        tap_ok(bits & 2, "unwritable directory: the previous checkpoint loads intact");
    }
    remove_tree(dir);
}

int main(void)
{
    if (geteuid() != 0)
        tap_skip_all("needs root to mount a small tmpfs (and chmod does not stop root)");
    char dir[256];
    make_tmpdir(dir, sizeof dir, "ckdisk");
    if (mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0755") < 0) {
        int e = errno;
        rmdir(dir);
        tap_skip_all("mount -t tmpfs is not permitted here: %s", strerror(e));
    }
    tap_plan(10);
    state_t a;
    st_create(&a, 2, counts, HPCT_OPT_SGD);
    st_fill(&a, 1, 1);
    hpct_ckpt_t ck = st_open_ck(&a, dir, 0);
    if (save(ck, &a, 1)) tap_bail("first save into the tmpfs: %s", hpct_last_error(a.ctx));
    hpct_ckpt_close(ck);
    full_case(dir, &a, 0);
    full_case(dir, &a, 1);
    readonly_case(dir, &a);
    eacces_case(&a);
    st_destroy(&a);
    umount2(dir, MNT_DETACH);
    rmdir(dir);
    return tap_done();
}
