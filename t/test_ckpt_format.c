/* test_ckpt_format.c: checkpoint files round-trip bit-identically (sync and async), h5dump
 * reads them, retention keeps the last K plus every M-th (and the step the training loop
 * protects, hpcti_ckpt_protect), a config-hash change is refused
 * unless allowed, a flipped byte or a truncation in the newest file falls back to the
 * previous one with a message naming file and dataset, and the cadence and walltime work. */
#include "config.h"
#include "lib/ckpt_util.h"
#include "../lib/ckpt/ckpt.h"

#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>

static const size_t counts[] = {1000, 37, 4096, 5};

/* Open a handle on dir with the given tweaks. */
static hpct_ckpt_t open_ck(state_t *st, const char *dir, int async, int keep_last, int keep_every,
                           uint64_t hash, int allow)
{
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    c.async = async > 0;
    c.defer_copy = async == 2;
    c.keep_last = keep_last;
    c.keep_every = keep_every;
    c.config_hash = hash;
    c.allow_config_change = allow;
    hpct_ckpt_t ck = NULL;
    if (hpct_ckpt_open(st->ctx, &c, &ck)) tap_diag("open %s: %s", dir, hpct_last_error(st->ctx));
    return ck;
}

static hpct_status_t save_step(hpct_ckpt_t ck, state_t *st, long step)
{
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    m.step = step;
    m.epoch = step / 10;
    m.cursor_epoch = step / 10;
    m.cursor_step = step % 10;
    m.world_size = 4;
    m.global_batch = 256;
    m.model = "byog test model: 4 buffers";
    hpct_optimizer_set_step(st->opt, step); /* a load refuses optimizer/step != meta/step */
    hpct_status_t s = hpct_ckpt_save(ck, st->params, st->opt, &m);
    if (!s) s = hpct_ckpt_wait(ck);
    if (s) tap_diag("save step %ld: %s", step, hpct_last_error(st->ctx));
    return s;
}

static void test_crc(void)
{
    tap_is_int(hpct_crc32c(0, "123456789", 9), 0xE3069283L, "crc32c check value of '123456789'");
    unsigned char buf[1000];
    for (int i = 0; i < 1000; i++) buf[i] = (unsigned char)(i * 7 + 3);
    uint32_t whole = hpct_crc32c(0, buf, 1000);
    uint32_t parts = hpct_crc32c(hpct_crc32c(0, buf, 333), buf + 333, 667);
    tap_is_int(parts, whole, "crc32c continues across calls");
    /* Bitwise reference (the definition) against the fast path on unaligned data. */
    uint32_t c = 0xFFFFFFFFu;
    for (int i = 1; i < 1000; i++) {
        c ^= buf[i];
        for (int b = 0; b < 8; b++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    tap_is_int(hpct_crc32c(0, buf + 1, 999), ~c, "crc32c matches the bitwise definition");
}

/* Round trip in mode 0 (sync), 1 (async), 2 (async, defer_copy); extras come back too. */
static void test_round_trip(const char *base, int async)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/rt%d/nested", base, async);
    state_t a, b;
    st_create(&a, 4, counts, HPCT_OPT_ADAMW);
    st_create(&b, 4, counts, HPCT_OPT_ADAMW);
    st_fill(&a, 7, 3);
    double extra_d[3] = {1.5, -2.25, 1e300}, extra_d0[3];
    int64_t counter = 424242, counter0;
    unsigned char bytes[5] = {0, 255, 7, 8, 9}, bytes0[5];
    hpct_ckpt_t ck = open_ck(&a, dir, async, 3, 0, 99, 0);
    hpct_ckpt_add_array(ck, "adjoint/lambda", HPCT_CKPT_F64, extra_d, 3);
    hpct_ckpt_add_scalar(ck, "counter", HPCT_CKPT_I64, &counter);
    hpct_ckpt_add_array(ck, "mask", HPCT_CKPT_U8, bytes, 5);
    memcpy(extra_d0, extra_d, sizeof extra_d);
    counter0 = counter;
    memcpy(bytes0, bytes, sizeof bytes);
    /* Keep a copy of a's state in b, then save a and (async) change a at once. */
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    m.step = 42, m.epoch = 3, m.cursor_epoch = 3, m.cursor_step = 17, m.world_size = 8;
    m.global_batch = 512, m.model = "mlp 784-512-10 relu";
    st_fill(&b, 7, 3);
    hpct_optimizer_set_step(a.opt, 42); /* optimizer/step = meta/step */
    hpct_optimizer_set_step(b.opt, 42);
    tap_is_int(hpct_ckpt_save(ck, a.params, a.opt, &m), HPCT_SUCCESS, "mode %d: save", async);
    hpct_ckpt_before_update(ck); /* defer_copy: the writer has taken its copy */
    st_scramble(&a);             /* training goes on while an async write runs */
    extra_d[0] = 0, counter = 0, bytes[1] = 0;
    tap_is_int(hpct_ckpt_wait(ck), HPCT_SUCCESS, "mode %d: wait", async);
    const char *path = NULL;
    hpct_ckpt_last_path(ck, &path);
    tap_ok(path && strstr(path, "ckpt-000000000042.h5"), "mode %d: committed as %s", async,
           path ? path : "(null)");
    hpct_ckpt_meta_t got = HPCT_CKPT_META_INITIALIZER;
    tap_is_int(hpct_ckpt_load_latest(ck, a.params, a.opt, &got), HPCT_SUCCESS, "mode %d: load",
               async);
    tap_ok(st_equal(&a, &b), "mode %d: params, AdamW slots, optimizer step, RNG bit-identical",
           async);
    tap_ok(!memcmp(extra_d, extra_d0, sizeof extra_d) && counter == counter0 &&
               !memcmp(bytes, bytes0, sizeof bytes),
           "mode %d: extras (f64 array, i64 scalar, u8 array) restored", async);
    tap_ok(got.step == 42 && got.epoch == 3 && got.cursor_epoch == 3 && got.cursor_step == 17 &&
               got.world_size == 8 && got.global_batch == 512 && got.config_hash == 99 &&
               got.rejected == 0 && fabs(got.saved_at - (double)time(NULL)) < 3600,
           "mode %d: metadata restored", async);
    tap_is_str(got.model, "mlp 784-512-10 relu", "mode %d: model description", async);
    tap_ok(got.path && path && !strcmp(got.path, path), "mode %d: meta.path is the file", async);
    tap_is_int(hpct_ckpt_close(ck), HPCT_SUCCESS, "mode %d: close", async);
    st_destroy(&a);
    st_destroy(&b);
}

/* Files and created directories are never world-writable, even with umask 0. */
static void test_modes(const char *base)
{
    char dir[4200], file[4300];
    snprintf(dir, sizeof dir, "%s/modes/a/b", base);
    state_t a;
    st_create(&a, 2, counts, HPCT_OPT_SGD);
    st_fill(&a, 1, 1);
    mode_t old = umask(0);
    hpct_ckpt_t ck = open_ck(&a, dir, 0, 3, 0, 0, 0);
    save_step(ck, &a, 5);
    umask(old);
    snprintf(file, sizeof file, "%s/ckpt-000000000005.h5", dir);
    struct stat sf, sd;
    int ok = stat(file, &sf) == 0 && stat(dir, &sd) == 0;
    tap_ok(ok && !(sf.st_mode & S_IWOTH) && (sf.st_mode & 0600) == 0600,
           "umask 0: file mode %o is not world-writable", ok ? (unsigned)(sf.st_mode & 0777) : 0);
    tap_ok(ok && S_ISDIR(sd.st_mode) && !(sd.st_mode & S_IWOTH),
           "umask 0: created directory mode %o is not world-writable",
           ok ? (unsigned)(sd.st_mode & 0777) : 0);
    hpct_ckpt_close(ck);
    st_destroy(&a);
}

/* h5dump reads the file and shows the step and the checksum attribute. */
static void test_h5dump(const char *base)
{
    char dir[4200], cmd[8600], out[4300];
    snprintf(dir, sizeof dir, "%s/dump", base);
    state_t a;
    st_create(&a, 2, counts, HPCT_OPT_SGD);
    st_fill(&a, 2, 1);
    hpct_ckpt_t ck = open_ck(&a, dir, 0, 3, 0, 0, 0);
    save_step(ck, &a, 77);
    hpct_ckpt_close(ck);
    st_destroy(&a);
    if (system("command -v h5dump >/dev/null 2>&1") != 0) {
        tap_skip(2, "h5dump is not installed (Debian package hdf5-tools)");
        return;
    }
    snprintf(out, sizeof out, "%s/dump.txt", base);
    snprintf(
        cmd, sizeof cmd,
        "h5dump -d /meta/step -d /meta/model -a /schema_version %s/ckpt-000000000077.h5 > %s 2>&1",
        dir, out);
    int rc = system(cmd);
    char text[8192] = "";
    FILE *f = fopen(out, "r");
    if (f) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    tap_ok(rc == 0 && strstr(text, "(0): 77") && strstr(text, "byog test model"),
           "h5dump prints /meta/step = 77 and the model string");
    tap_ok(strstr(text, "crc32c") && strstr(text, "schema_version"),
           "h5dump shows the crc32c and schema_version attributes");
    if (!(rc == 0 && strstr(text, "(0): 77"))) tap_diag("h5dump said: %.600s", text);
}

/* keep_last 2, keep_every 3 over 7 saves: serials 3 and 6 are permanent, 6 and 7 newest. */
static void test_retention(const char *base)
{
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/keep", base);
    state_t a;
    st_create(&a, 2, counts, HPCT_OPT_SGD);
    st_fill(&a, 3, 1);
    hpct_ckpt_t ck = open_ck(&a, dir, 0, 2, 3, 0, 0);
    for (long s = 1; s <= 7; s++) save_step(ck, &a, s * 10);
    hpct_ckpt_close(ck);
    int n = count_entries(dir, "ckpt-");
    const char *want[] = {"ckpt-000000000030-keep.h5", "ckpt-000000000060-keep.h5",
                          "ckpt-000000000070.h5"};
    int found = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, want[i]);
        found += access(path, F_OK) == 0;
    }
    tap_ok(n == 3 && found == 3, "retention: 30-keep, 60-keep and 70 remain (%d files)", n);
    snprintf(path, sizeof path, "%s/latest", dir);
    char text[128] = "";
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(text, sizeof text, f)) text[0] = '\0';
        fclose(f);
    }
    tap_is_str(text, "ckpt-000000000070.h5\n", "latest names the newest checkpoint");
    tap_is_int(count_entries(dir, ".tmp-"), 0, "no temporary files are left");
    st_destroy(&a);
}

/* keep_last 1 with the writer thread: the step protected before the saves of 30 and 40 stays
 * beside the newest; once unprotected, the next save removes it. */
static void test_protected(const char *base)
{
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/protect", base);
    state_t a;
    st_create(&a, 2, counts, HPCT_OPT_SGD);
    st_fill(&a, 3, 1);
    hpct_ckpt_t ck = open_ck(&a, dir, 1, 1, 0, 0, 0);
    save_step(ck, &a, 10);
    save_step(ck, &a, 20);
    hpcti_ckpt_protect(ck, 20);
    save_step(ck, &a, 30);
    save_step(ck, &a, 40);
    snprintf(path, sizeof path, "%s/ckpt-000000000020.h5", dir);
    int kept = access(path, F_OK) == 0, n = count_entries(dir, "ckpt-");
    tap_ok(kept && n == 2, "keep_last 1, step 20 protected: 20 and 40 remain (%d files)", n);
    hpcti_ckpt_protect(ck, -1);
    save_step(ck, &a, 50);
    n = count_entries(dir, "ckpt-");
    tap_ok(access(path, F_OK) != 0 && n == 1, "unprotected: the save of 50 removes it (%d files)",
           n);
    hpct_ckpt_close(ck);
    st_destroy(&a);
}

/* Two checkpoints; the newest is damaged in `how`; the previous must be loaded. */
static void flip_byte_in(const char *file, const char *dataset)
{
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
    haddr_t off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    int fd = open(file, O_RDWR);
    unsigned char byte;
    if (fd < 0 || pread(fd, &byte, 1, (off_t)off + 100) != 1) tap_bail("cannot read %s", file);
    byte ^= 0x10;
    if (pwrite(fd, &byte, 1, (off_t)off + 100) != 1) tap_bail("cannot write %s", file);
    close(fd);
}

static void test_corruption(const char *base, int truncate_it)
{
    char dir[4200], newest[4300];
    snprintf(dir, sizeof dir, "%s/bad%d", base, truncate_it);
    snprintf(newest, sizeof newest, "%s/ckpt-000000000020.h5", dir);
    state_t a, b;
    st_create(&a, 4, counts, HPCT_OPT_ADAMW);
    st_create(&b, 4, counts, HPCT_OPT_ADAMW);
    st_fill(&a, 10, 2);
    st_fill(&b, 10, 2);
    hpct_optimizer_set_step(b.opt, 10); /* as save_step saves a */
    hpct_ckpt_t ck = open_ck(&a, dir, 0, 3, 0, 0, 0);
    save_step(ck, &a, 10);
    st_fill(&a, 20, 4);
    save_step(ck, &a, 20);
    if (truncate_it) {
        struct stat st;
        stat(newest, &st);
        if (truncate(newest, st.st_size / 2)) tap_bail("truncate %s failed", newest);
    } else {
        flip_byte_in(newest, "params/dense2.weight");
    }
    hpct_ckpt_meta_t got = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t s = hpct_ckpt_load_latest(ck, a.params, a.opt, &got);
    char why[1100];
    snprintf(why, sizeof why, "%s", hpct_last_error(a.ctx)); /* before other calls clear it */
    const char *what = truncate_it ? "truncated" : "flipped byte";
    tap_ok(s == HPCT_SUCCESS && got.step == 10 && got.rejected == 1 && st_equal(&a, &b),
           "%s: the previous checkpoint (step 10) is loaded bit-identically", what);
    tap_ok(strstr(why, newest) && (truncate_it || strstr(why, "params/dense2.weight")),
           "%s: the detail names the file%s", what, truncate_it ? "" : " and the dataset");
    tap_diag("%s", why);
    /* With the previous one damaged too, nothing verifies. */
    char older[4300];
    snprintf(older, sizeof older, "%s/ckpt-000000000010.h5", dir);
    flip_byte_in(older, "optimizer/slot1/layer1/w");
    s = hpct_ckpt_load_latest(ck, a.params, a.opt, &got);
    tap_ok(s == HPCT_ERR_CHECKSUM && strstr(hpct_last_error(a.ctx), "optimizer/slot1/layer1/w") &&
               strstr(hpct_last_error(a.ctx), "every checkpoint"),
           "%s: both damaged -> HPCT_ERR_CHECKSUM (never a silent fresh start) naming the datasets",
           what);
    hpct_ckpt_close(ck);
    st_destroy(&a);
    st_destroy(&b);
}

/* A different configuration hash is refused unless allowed; a different model is refused. */
static void test_compat(const char *base)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/hash", base);
    state_t a;
    st_create(&a, 4, counts, HPCT_OPT_ADAMW);
    st_fill(&a, 5, 1);
    hpct_ckpt_t ck = open_ck(&a, dir, 0, 3, 0, 0x1111, 0);
    save_step(ck, &a, 3);
    hpct_ckpt_close(ck);
    hpct_ckpt_meta_t got = HPCT_CKPT_META_INITIALIZER;
    ck = open_ck(&a, dir, 0, 3, 0, 0x2222, 0);
    hpct_status_t s = hpct_ckpt_load_latest(ck, a.params, a.opt, &got);
    tap_ok(s == HPCT_ERR_INVALID_ARG && strstr(hpct_last_error(a.ctx), "allow_config_change"),
           "config hash mismatch refused: %s", hpct_last_error(a.ctx));
    hpct_ckpt_close(ck);
    ck = open_ck(&a, dir, 0, 3, 0, 0x2222, 1);
    s = hpct_ckpt_load_latest(ck, a.params, a.opt, &got);
    tap_ok(s == HPCT_SUCCESS && got.config_hash == 0x1111,
           "allowed: loads, reports the file's hash");
    hpct_ckpt_close(ck);
    state_t other;
    size_t bigger[] = {1000, 38, 4096, 5};
    st_create(&other, 4, bigger, HPCT_OPT_ADAMW);
    ck = open_ck(&other, dir, 0, 3, 0, 0x1111, 0);
    s = hpct_ckpt_load_latest(ck, other.params, other.opt, &got);
    tap_ok(s == HPCT_ERR_INVALID_ARG && strstr(hpct_last_error(other.ctx), "params/layer1/w") &&
               strstr(hpct_last_error(other.ctx), "this run has 38"),
           "a model of another size is a settings error naming the dataset and both sizes");
    hpct_ckpt_close(ck);
    st_destroy(&other);
    st_destroy(&a);
}

static void test_due_and_walltime(const char *base)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/due", base);
    state_t a;
    st_create(&a, 2, counts, HPCT_OPT_SGD);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    c.every_steps = 5;
    c.every_seconds = 0.05;
    char end[64];
    snprintf(end, sizeof end, "%ld", (long)time(NULL) + 100);
    setenv("HPCT_JOB_END_TIME", end, 1);
    double left = 0;
    tap_ok(hpct_walltime_remaining(a.ctx, &left) == HPCT_SUCCESS && left > 90 && left <= 101,
           "walltime_remaining from HPCT_JOB_END_TIME: %.1f s", left);
    hpct_ckpt_t ck = NULL;
    hpct_ckpt_open(a.ctx, &c, &ck);
    int due = -1;
    hpct_ckpt_due(ck, 5, &due);
    tap_is_int(due & (HPCT_CKPT_DUE_STEPS | HPCT_CKPT_DUE_WALLTIME),
               HPCT_CKPT_DUE_STEPS | HPCT_CKPT_DUE_WALLTIME,
               "step 5 of every 5 is due; 100 s left < 120 s margin is due");
    hpct_ckpt_due(ck, 6, &due);
    tap_is_int(due & HPCT_CKPT_DUE_STEPS, 0, "step 6 is not due by steps");
    struct timespec ts = {0, 80 * 1000 * 1000};
    nanosleep(&ts, NULL);
    hpct_ckpt_due(ck, 6, &due);
    tap_ok(due & HPCT_CKPT_DUE_SECONDS, "every_seconds 0.05: due after 80 ms");
    save_step(ck, &a, 5);
    hpct_ckpt_due(ck, 5, &due);
    tap_is_int(due & ~HPCT_CKPT_DUE_SECONDS, 0,
               "after saving step 5 neither steps nor walltime are due");
    hpct_ckpt_close(ck);
    unsetenv("HPCT_JOB_END_TIME");
    unsetenv("SLURM_JOB_ID"); /* make check may itself run inside a Slurm job */
    tap_is_int(hpct_walltime_remaining(a.ctx, &left), HPCT_ERR_NOT_FOUND,
               "no end time known outside a batch job");
    st_destroy(&a);
}

static void test_errors(const char *base)
{
    state_t a;
    st_create(&a, 2, counts, HPCT_OPT_SGD);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    hpct_ckpt_t ck = NULL;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/empty", base);
    c.directory = dir;
    c.keep_last = 0;
    tap_ok(hpct_ckpt_open(a.ctx, &c, &ck) == HPCT_ERR_INVALID_ARG && !ck &&
               strstr(hpct_last_error(a.ctx), "keep_last"),
           "keep_last 0 is refused naming the field");
    c.keep_last = 3;
    hpct_ckpt_open(a.ctx, &c, &ck);
    hpct_ckpt_meta_t got = HPCT_CKPT_META_INITIALIZER;
    tap_is_int(hpct_ckpt_load_latest(ck, a.params, a.opt, &got), HPCT_ERR_NOT_FOUND,
               "an empty directory -> HPCT_ERR_NOT_FOUND");
    tap_ok(hpct_ckpt_add_array(ck, "x", HPCT_CKPT_F32, NULL, 3) == HPCT_ERR_INVALID_ARG &&
               strstr(hpct_last_error(a.ctx), "'x'"),
           "an extra with a NULL buffer is refused naming it");
    hpct_ckpt_close(ck);
    st_destroy(&a);
}

int main(void)
{
    tap_plan(60);
    char base[256];
    make_tmpdir(base, sizeof base, "ckfmt");
    test_crc();
    test_round_trip(base, 0);
    test_round_trip(base, 1);
    test_round_trip(base, 2);
    test_modes(base);
    test_h5dump(base);
    test_retention(base);
    test_protected(base);
    test_corruption(base, 0);
    test_corruption(base, 1);
    test_compat(base);
    test_due_and_walltime(base);
    test_errors(base);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) tap_diag("could not remove %s", base);
    return tap_done();
}
