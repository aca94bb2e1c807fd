/* test_h5_quiet.c: no HDF5 diagnostics reach stderr from the library, whatever names and
 * files it is handed (issue 14): bad and very long dataset names in the shard writer, the
 * manifest writer and the reader, a 5,000-character file name, files that are not HDF5, a
 * damaged superblock, and the same calls from a second thread (HDF5's error stack and its
 * printing switch are per thread in a thread-safe build). Each error must instead name the
 * file and the dataset in hpct_last_error. stderr is sent to a file around each call. */
#include "config.h"
#include "hpctrain.h"
#include "lib/tap.h"

#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static hpct_ctx_t ctx;
static char dir[256], errfile[300];
static int saved_stderr = -1;

static const char *at(const char *name)
{
    static char paths[4][6000];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

/* Send stderr to errfile (emptied) until stderr_end. */
static void stderr_begin(void)
{
    fflush(stderr);
    int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) tap_bail("cannot open %s", errfile);
    saved_stderr = dup(2);
    dup2(fd, 2);
    close(fd);
}

/* Bytes written on stderr since stderr_begin (its first line in first [n]). */
static long stderr_end(char *first, size_t n)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    first[0] = '\0';
    FILE *f = fopen(errfile, "r");
    if (!f) return -1;
    if (!fgets(first, (int)n, f)) first[0] = '\0';
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fclose(f);
    first[strcspn(first, "\n")] = '\0';
    return len;
}

/* A shard at path with datasets inputs (float32 [2, 3]) and targets (int32 [2]). */
static hpct_status_t good_shard(const char *path)
{
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const int32_t y[2] = {0, 1};
    const uint64_t xd[2] = {2, 3}, yd[1] = {2};
    hpct_shard_writer_t w;
    hpct_status_t s = hpct_shard_create(ctx, path, NULL, &w);
    if (!s) s = hpct_shard_write(w, "inputs", HPCT_DTYPE_FLOAT32, 2, xd, x);
    if (!s) s = hpct_shard_write(w, "targets", HPCT_DTYPE_INT32, 1, yd, y);
    hpct_status_t c = hpct_shard_close(w);
    return s ? s : c;
}

/* hpct_shard_write of dataset name into a fresh shard: status, detail copied to why. */
static hpct_status_t write_named(const char *name, char *why, size_t n)
{
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const uint64_t xd[2] = {2, 3};
    hpct_shard_writer_t w;
    hpct_status_t s = hpct_shard_create(ctx, at("named.h5"), NULL, &w);
    if (!s) s = hpct_shard_write(w, name, HPCT_DTYPE_FLOAT32, 2, xd, x);
    snprintf(why, n, "%s", hpct_last_error(ctx));
    if (hpct_shard_close(w) && !s) s = HPCT_ERR_IO;
    return s;
}

static char long_name[5001];

static void test_writer_names(void)
{
    const char *names[] = {"a/../b", "/", ".", "a//b", "inputs/", long_name};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char why[1024], first[512];
        stderr_begin();
        hpct_status_t s = write_named(names[i], why, sizeof why);
        long bytes = stderr_end(first, sizeof first);
        tap_ok(s != HPCT_SUCCESS && bytes == 0,
               "shard writer, dataset name '%.20s%s': refused (%d), nothing on stderr (%ld bytes: "
               "%.80s)",
               names[i], strlen(names[i]) > 20 ? "..." : "", s, bytes, first);
        tap_ok(strstr(why, "named.h5") && strstr(why, "dataset"),
               "  the message names the shard and the dataset: %.160s", why);
    }
}

static void test_long_path(void)
{
    char name[5001];
    memset(name, 'p', 5000);
    name[5000] = '\0';
    char first[512];
    hpct_shard_writer_t w = NULL;
    stderr_begin();
    hpct_status_t s = hpct_shard_create(ctx, at(name), NULL, &w);
    long bytes = stderr_end(first, sizeof first);
    hpct_shard_close(w);
    tap_ok(s != HPCT_SUCCESS && bytes == 0,
           "a 5,000-character shard file name: refused (%d), nothing on stderr (%ld: %.80s)", s,
           bytes, first);
    tap_ok(strstr(hpct_last_error(ctx), "pppp") != NULL &&
               strstr(hpct_last_error(ctx), "too long") != NULL,
           "  the message names the file and says why: %.100s...", hpct_last_error(ctx));
}

/* Reader and manifest writer with bad dataset names, and files HDF5 cannot open. */
static void test_reader(void)
{
    tap_is_int(good_shard(at("good.h5")), HPCT_SUCCESS, "a good shard: %s", hpct_last_error(ctx));
    const char *names[] = {"a/b", "nothere", long_name};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        hpct_manifest_t m = NULL;
        char first[512];
        stderr_begin();
        hpct_status_t s = hpct_manifest_create(ctx, at("m.txt"), names[i], "targets", &m);
        if (!s) s = hpct_manifest_add_shard(m, at("good.h5"));
        long bytes = stderr_end(first, sizeof first);
        hpct_manifest_destroy(m);
        tap_ok(
            s != HPCT_SUCCESS && bytes == 0 &&
                (strstr(hpct_last_error(ctx), "good.h5") || strstr(hpct_last_error(ctx), "m.txt")),
            "manifest of inputs '%.20s': refused (%d), nothing on stderr (%ld: %.60s), "
            "names the shard or manifest: %.120s",
            names[i], s, bytes, first, hpct_last_error(ctx));
    }
    FILE *f = fopen(at("junk.h5"), "w");
    fputs("this is not an HDF5 file\n", f);
    fclose(f);
    hpct_manifest_t m = NULL;
    char first[512];
    stderr_begin();
    hpct_status_t s = hpct_manifest_create(ctx, at("m.txt"), NULL, NULL, &m);
    if (!s) s = hpct_manifest_add_shard(m, at("junk.h5"));
    long bytes = stderr_end(first, sizeof first);
    hpct_manifest_destroy(m);
    tap_ok(s != HPCT_SUCCESS && bytes == 0 && strstr(hpct_last_error(ctx), "junk.h5"),
           "a shard that is not HDF5: refused, nothing on stderr (%ld: %.60s): %.120s", bytes,
           first, hpct_last_error(ctx));
    hpct_ckpt_file_t file = NULL;
    stderr_begin();
    s = hpct_ckpt_file_open(ctx, at("junk.h5"), &file);
    bytes = stderr_end(first, sizeof first);
    hpct_ckpt_file_close(file);
    tap_ok(s != HPCT_SUCCESS && bytes == 0 && strstr(hpct_last_error(ctx), "junk.h5"),
           "a checkpoint that is not HDF5: refused, nothing on stderr (%ld: %.60s): %.120s", bytes,
           first, hpct_last_error(ctx));
}

static void *in_thread(void *arg)
{
    (void)arg;
    test_writer_names();
    return NULL;
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/hpct-h5quiet.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) tap_bail("mkdtemp");
    snprintf(errfile, sizeof errfile, "%s/stderr.txt", dir);
    memset(long_name, 'd', 5000);
    tap_plan(33);
    if (hpct_ctx_create(NULL, &ctx)) tap_bail("cannot create a context");
    H5E_auto2_t before, after;
    void *before_data, *after_data;
    H5Eget_auto2(H5E_DEFAULT, &before, &before_data);
    test_writer_names();
    H5Eget_auto2(H5E_DEFAULT, &after, &after_data);
    tap_ok(before && before == after && before_data == after_data,
           "the caller's HDF5 error printing is put back after the library's calls");
    test_long_path();
    test_reader();
    pthread_t t;
    if (pthread_create(&t, NULL, in_thread, NULL)) tap_bail("pthread_create");
    pthread_join(t, NULL);
    hpct_ctx_destroy(ctx);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) tap_diag("could not remove %s", dir);
    return tap_done();
}
