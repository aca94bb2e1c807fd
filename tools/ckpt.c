/* ckpt.c: `hpctrain ckpt info|verify|diff`: read checkpoint files (doc/checkpoint-format.md)
 * through the inspection API (hpct_ckpt_file_open) without a model or optimizer. */
#include "config.h"
#include "hpctrain.h"
#include "tools.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CKPT_DIFFERS  1    /* diff: the checkpoints differ */
#define CKPT_PATH_MAX 4096 /* bytes of a checkpoint path kept */

static void ckpt_usage(FILE *out)
{
    fputs("usage: hpctrain ckpt info FILE|DIR\n"
          "       hpctrain ckpt verify [--all] FILE|DIR\n"
          "       hpctrain ckpt diff [--strict] A B\n\n"
          "Read libhpctrain checkpoint files (no model needed). A DIR means its newest\n"
          "checkpoint (the highest step among ckpt-<step>.h5 and ckpt-<step>-keep.h5).\n\n"
          "  info     print the metadata and every dataset with its type, size and checksum\n"
          "  verify   judge the file as resume does: every dataset's crc32c, type and shape,\n"
          "           the values and how they agree (doc/checkpoint-format.md); print why\n"
          "           --all: every checkpoint in DIR, not only the newest\n"
          "  diff     compare the parameters (params/) of A and B bit for bit and say whether\n"
          "           the optimizer state matches; per differing dataset print the largest\n"
          "           absolute difference and its index; missing datasets and different\n"
          "           shapes are differences\n"
          "           --strict: optimizer state, RNG state and extras must match too\n\n"
          "exit status: 0 ok (verified, identical), 1 the checkpoints differ (diff),\n"
          "2 usage error, 3 a file is missing, unreadable, corrupt or fails a checksum\n",
          out);
}

/* ---- opening files and directories ---------------------------------------------------- */

/* path, or for a directory its newest checkpoint, into out; 0 or TOOL_DATA after a message. */
static int resolve(hpct_ctx_t ctx, const char *arg, char out[CKPT_PATH_MAX])
{
    struct stat st;
    if (stat(arg, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(out, CKPT_PATH_MAX, "%s", arg);
        return TOOL_OK;
    }
    hpct_ckpt_list_t list;
    int n = 0;
    const char *newest;
    if (hpct_ckpt_list_open(ctx, arg, &list))
        return tool_error(TOOL_DATA, "%s", hpct_last_error(ctx));
    hpct_ckpt_list_size(list, &n);
    if (n > 0 && !hpct_ckpt_list_path(list, 0, &newest)) snprintf(out, CKPT_PATH_MAX, "%s", newest);
    hpct_ckpt_list_close(list);
    if (n == 0) return tool_error(TOOL_DATA, "no checkpoint (ckpt-<step>.h5) in directory %s", arg);
    return TOOL_OK;
}

/* Inspect arg (file or directory); 0 or TOOL_DATA after printing why. */
static int open_file(hpct_ctx_t ctx, const char *arg, hpct_ckpt_file_t *f)
{
    char path[CKPT_PATH_MAX];
    int rc = resolve(ctx, arg, path);
    if (rc) return rc;
    if (hpct_ckpt_file_open(ctx, path, f)) return tool_error(TOOL_DATA, "%s", hpct_last_error(ctx));
    return TOOL_OK;
}

static const char *dtype_name(hpct_ckpt_dtype_t d)
{
    static const char *names[] = {"float32", "float64", "int32",  "int64",
                                  "uint8",   "uint64",  "string", "other"};
    return d >= 0 && d <= HPCT_CKPT_OTHER ? names[d] : "?";
}

/* Datasets that fail verification in f (each printed to out when out is not NULL). */
static int count_bad(hpct_ctx_t ctx, hpct_ckpt_file_t f, FILE *out)
{
    int n, bad = 0;
    hpct_ckpt_file_num_datasets(f, &n);
    for (int i = 0; i < n; i++)
        if (hpct_ckpt_file_verify(f, i)) {
            bad++;
            if (out) fprintf(out, "  BAD %s\n", hpct_last_error(ctx));
        }
    return bad;
}

/* ---- isolation ------------------------------------------------------------------------- */

/* One unit of work on checkpoint files, run in a child process. */
typedef struct ckpt_job {
    int (*run)(hpct_ctx_t ctx, const struct ckpt_job *job);
    const char *a, *b; /* the files or directories named on the command line */
    int flag;          /* verify --all / diff --strict */
} ckpt_job_t;

/* HDF5 1.10 can crash (SIGSEGV) decoding a damaged object header of a file without metadata
 * checksums. The job runs in a child process, so that such a crash becomes a message naming
 * the file(s) and exit status 3 instead of killing the tool. Returns the job's exit status. */
static int run_isolated(const ckpt_job_t *job)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        setvbuf(stdout, NULL, _IOLBF, 0); /* lines printed before a crash survive it */
        hpct_ctx_t ctx = NULL;
        int rc = hpct_ctx_create(NULL, &ctx) ? tool_error(TOOL_DATA, "cannot create a context")
                                             : job->run(ctx, job);
        hpct_ctx_destroy(ctx);
        fflush(stdout);
        _exit(rc);
    }
    int st = 0;
    if (pid < 0) return tool_error(TOOL_DATA, "cannot fork: %s", strerror(errno));
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) continue;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return tool_error(TOOL_DATA,
                      "the HDF5 library crashed (%s) reading %s%s%s: its HDF5 metadata is "
                      "corrupt",
                      strsignal(WTERMSIG(st)), job->a, job->b ? " or " : "", job->b ? job->b : "");
}

/* ---- info ------------------------------------------------------------------------------ */

/* " = VALUE" for a scalar numeric dataset that verified (nothing otherwise). */
static void print_value(hpct_ckpt_file_t f, const char *name, hpct_ckpt_dtype_t dtype)
{
    union {
        float f32;
        double f64;
        int32_t i32;
        int64_t i64;
        uint64_t u64;
        uint8_t u8;
    } v;
    if (dtype >= HPCT_CKPT_STRING || hpct_ckpt_file_read(f, name, dtype, &v, 1)) return;
    switch (dtype) {
    case HPCT_CKPT_F32: printf(" = %.9g", v.f32); break;
    case HPCT_CKPT_F64: printf(" = %.17g", v.f64); break;
    case HPCT_CKPT_I32: printf(" = %d", (int)v.i32); break;
    case HPCT_CKPT_I64: printf(" = %lld", (long long)v.i64); break;
    case HPCT_CKPT_U64: printf(" = 0x%016llx", (unsigned long long)v.u64); break;
    default: printf(" = %u", (unsigned)v.u8);
    }
}

/* The metadata; 1 when the file is refused (as resume would refuse it), after a warning. */
static int print_meta(hpct_ctx_t ctx, hpct_ckpt_file_t f)
{
    int schema;
    const char *lib;
    hpct_ckpt_file_versions(f, &schema, &lib);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    int refused = hpct_ckpt_file_meta(f, &m) != HPCT_SUCCESS;
    if (refused) printf("warning      %s\n", hpct_last_error(ctx));
    printf("checkpoint   %s\n", m.path);
    printf("format       schema %d (this tool reads 1 to %d), written by libhpctrain %s\n", schema,
           HPCT_CKPT_SCHEMA_VERSION, *lib ? lib : "(unknown)");
    printf("step         %ld\nepoch        %ld\n", m.step, m.epoch);
    printf("data cursor  epoch %ld, step %ld\n", m.cursor_epoch, m.cursor_step);
    printf("world size   %d\nglobal batch %ld\n", m.world_size, m.global_batch);
    printf("config hash  %016llx\n", (unsigned long long)m.config_hash);
    printf("model        %s\n", m.model && *m.model ? m.model : "(none)");
    char when[64] = "(unknown)";
    time_t t = (time_t)m.saved_at;
    struct tm tm;
    if (m.saved_at > 0 && gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    printf("saved at     %s\n", when);
    return refused;
}

static int ckpt_info(hpct_ctx_t ctx, const ckpt_job_t *job)
{
    const char *arg = job->a;
    hpct_ckpt_file_t f;
    int rc = open_file(ctx, arg, &f);
    if (rc) return rc;
    int refused = print_meta(ctx, f);
    int n, bad = count_bad(ctx, f, NULL);
    hpct_ckpt_file_num_datasets(f, &n);
    printf("datasets     %d (%s)\n", n, bad ? "SOME FAIL VERIFICATION" : "every checksum matches");
    printf("  %-8s %10s  %-6s  %s\n", "TYPE", "ELEMENTS", "CRC32C", "NAME");
    for (int i = 0; i < n; i++) {
        const char *name;
        hpct_ckpt_dtype_t dtype;
        size_t count;
        int scalar, ok = hpct_ckpt_file_verify(f, i) == HPCT_SUCCESS;
        hpct_ckpt_file_dataset(f, i, &name, &dtype, &count, &scalar);
        char size[32];
        snprintf(size, sizeof size, scalar && dtype != HPCT_CKPT_STRING ? "scalar" : "%zu", count);
        printf("  %-8s %10s  %-6s  %s", dtype_name(dtype), size, ok ? "ok" : "BAD", name);
        if (ok && scalar) print_value(f, name, dtype);
        putchar('\n');
    }
    if (bad) {
        printf("%d dataset%s fail%s verification:\n", bad, bad > 1 ? "s" : "", bad > 1 ? "" : "s");
        count_bad(ctx, f, stdout);
    }
    hpct_ckpt_file_close(f);
    return bad || refused ? TOOL_DATA : TOOL_OK;
}

/* ---- verify ---------------------------------------------------------------------------- */

/* Verify one file and print the verdict: hpct_ckpt_file_meta's, which judges the whole file
 * as resume does (structure, every checksum, the values and how they agree), then each
 * dataset that fails on its own. */
static int verify_one(hpct_ctx_t ctx, const char *path)
{
    hpct_ckpt_file_t f;
    if (hpct_ckpt_file_open(ctx, path, &f)) {
        printf("%s: BAD\n  %s\n", path, hpct_last_error(ctx));
        return TOOL_DATA;
    }
    int n;
    hpct_ckpt_file_num_datasets(f, &n);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    int refused = hpct_ckpt_file_meta(f, &m) != HPCT_SUCCESS;
    char why[1100];
    snprintf(why, sizeof why, "%s", hpct_last_error(ctx));
    if (refused) {
        printf("%s: BAD\n", path);
        if (!count_bad(ctx, f, stdout)) printf("  %s\n", why);
    } else {
        printf("%s: ok (step %ld, %d datasets: every checksum matches, structure and values "
               "agree)\n",
               path, m.step, n);
    }
    hpct_ckpt_file_close(f);
    return refused ? TOOL_DATA : TOOL_OK;
}

static int verify_job(hpct_ctx_t ctx, const ckpt_job_t *job)
{
    return verify_one(ctx, job->a);
}

/* One file, a directory's newest, or with --all every checkpoint of a directory (each in its
 * own child process); ctx lists the directory. */
static int verify_paths(hpct_ctx_t ctx, const char *arg, int all)
{
    struct stat st;
    if (!all || stat(arg, &st) < 0 || !S_ISDIR(st.st_mode)) {
        char path[CKPT_PATH_MAX];
        int rc = resolve(ctx, arg, path);
        return rc ? rc : run_isolated(&(ckpt_job_t){verify_job, path, NULL, 0});
    }
    hpct_ckpt_list_t list;
    int n = 0, worst = TOOL_OK;
    if (hpct_ckpt_list_open(ctx, arg, &list))
        return tool_error(TOOL_DATA, "%s", hpct_last_error(ctx));
    hpct_ckpt_list_size(list, &n);
    for (int i = 0; i < n; i++) {
        const char *path;
        if (hpct_ckpt_list_path(list, i, &path) ||
            run_isolated(&(ckpt_job_t){verify_job, path, NULL, 0}))
            worst = TOOL_DATA;
    }
    hpct_ckpt_list_close(list);
    if (n == 0) return tool_error(TOOL_DATA, "no checkpoint (ckpt-<step>.h5) in directory %s", arg);
    return worst;
}

static int ckpt_verify(const char *arg, int all)
{
    hpct_ctx_t ctx;
    if (hpct_ctx_create(NULL, &ctx)) return tool_error(TOOL_DATA, "cannot create a context");
    int rc = verify_paths(ctx, arg, all);
    hpct_ctx_destroy(ctx);
    return rc;
}

/* ---- diff ------------------------------------------------------------------------------ */

typedef struct diff_totals {
    int datasets, differ;
} diff_totals_t;

/* Distance in units in the last place between two finite floats (0 when equal). */
static unsigned long long ulps(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    long long oa = ia < 0 ? (long long)INT32_MIN - ia : ia; /* monotonic order of the bits */
    long long ob = ib < 0 ? (long long)INT32_MIN - ib : ib;
    return (unsigned long long)(oa > ob ? oa - ob : ob - oa);
}

/* Both datasets have the same type and count and differ somewhere: say where and how much. */
static void report_values(hpct_ckpt_file_t a, hpct_ckpt_file_t b, const char *name,
                          hpct_ckpt_dtype_t dtype, size_t count, size_t elsize, const void *ra,
                          const void *rb)
{
    size_t ndiff = 0, at = 0;
    double worst = -1;
    double *da = malloc(count * sizeof *da), *db = malloc(count * sizeof *db);
    int numeric = dtype < HPCT_CKPT_STRING && da && db &&
                  !hpct_ckpt_file_read(a, name, HPCT_CKPT_F64, da, count) &&
                  !hpct_ckpt_file_read(b, name, HPCT_CKPT_F64, db, count);
    for (size_t k = 0; k < count; k++) {
        if (!memcmp((const char *)ra + k * elsize, (const char *)rb + k * elsize, elsize)) continue;
        if (!ndiff++) at = k;
        if (!numeric) continue;
        double d = fabs(da[k] - db[k]);
        if (isnan(d)) d = INFINITY; /* a NaN on one side (or two different NaNs) */
        if (d > worst) worst = d, at = k;
    }
    printf("  %s: %zu of %zu elements differ", name, ndiff, count);
    if (numeric) {
        printf("; max |A-B| = %.9g at index %zu (A %.9g, B %.9g", worst, at, da[at], db[at]);
        if (dtype == HPCT_CKPT_F32 && isfinite(worst) && !signbit(da[at]) == !signbit(db[at]))
            printf(", %llu ulp", ulps(((const float *)ra)[at], ((const float *)rb)[at]));
        printf(")");
    } else {
        printf(", the first at index %zu", at);
    }
    putchar('\n');
    free(da);
    free(db);
}

/* Compare dataset name present in both; 1 if it differs (printed), 0 if identical, -1 if it
 * could not be read (printed). */
static int diff_dataset(hpct_ctx_t ctx, hpct_ckpt_file_t a, int ia, hpct_ckpt_file_t b, int ib)
{
    const char *name;
    hpct_ckpt_dtype_t ta, tb;
    size_t ca, cb;
    hpct_ckpt_file_dataset(a, ia, &name, &ta, &ca, NULL);
    hpct_ckpt_file_dataset(b, ib, NULL, &tb, &cb, NULL);
    if (ta != tb || ca != cb) {
        printf("  %s: shape differs: %s [%zu] in A, %s [%zu] in B\n", name, dtype_name(ta), ca,
               dtype_name(tb), cb);
        return 1;
    }
    size_t elsize = ta == HPCT_CKPT_F64 || ta == HPCT_CKPT_I64 || ta == HPCT_CKPT_U64 ? 8
                    : ta == HPCT_CKPT_F32 || ta == HPCT_CKPT_I32                      ? 4
                                                                                      : 1;
    void *ra = malloc(ca * elsize + 1), *rb = malloc(ca * elsize + 1);
    int rc = -1;
    if (!ra || !rb) {
        printf("  %s: out of memory\n", name);
    } else if (hpct_ckpt_file_read(a, name, ta, ra, ca) ||
               hpct_ckpt_file_read(b, name, tb, rb, cb)) {
        printf("  %s\n", hpct_last_error(ctx));
    } else {
        rc = memcmp(ra, rb, ca * elsize) != 0;
        if (rc) report_values(a, b, name, ta, ca, elsize, ra, rb);
    }
    free(ra);
    free(rb);
    return rc;
}

/* Merge the sorted dataset lists of a and b under prefix; -1 when a dataset is unreadable. */
static int diff_group(hpct_ctx_t ctx, hpct_ckpt_file_t a, hpct_ckpt_file_t b, const char *prefix,
                      diff_totals_t *t)
{
    int na, nb, ia = 0, ib = 0;
    size_t plen = strlen(prefix);
    hpct_ckpt_file_num_datasets(a, &na);
    hpct_ckpt_file_num_datasets(b, &nb);
    while (ia < na || ib < nb) {
        const char *xa = NULL, *xb = NULL;
        if (ia < na) hpct_ckpt_file_dataset(a, ia, &xa, NULL, NULL, NULL);
        if (ib < nb) hpct_ckpt_file_dataset(b, ib, &xb, NULL, NULL, NULL);
        int order = !xa ? 1 : !xb ? -1 : strcmp(xa, xb);
        const char *x = order <= 0 ? xa : xb;
        int in_group = strncmp(x, prefix, plen) == 0;
        int r = 0;
        if (in_group && order != 0) {
            printf("  %s: only in %s\n", x, order < 0 ? "A" : "B");
            r = 1;
        } else if (in_group) {
            r = diff_dataset(ctx, a, ia, b, ib);
        }
        if (r < 0) return -1;
        t->datasets += in_group;
        t->differ += r;
        ia += order <= 0;
        ib += order >= 0;
    }
    return 0;
}

/* One line per group: identical, differing, or absent. */
static void summarize(const char *label, const diff_totals_t *t)
{
    if (!t->datasets)
        printf("%s: none in either checkpoint\n", label);
    else if (!t->differ)
        printf("%s: identical (%d dataset%s)\n", label, t->datasets, t->datasets > 1 ? "s" : "");
    else
        printf("%s: DIFFER (%d of %d datasets)\n", label, t->differ, t->datasets);
}

static void print_side(hpct_ckpt_file_t f, const char *side)
{
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_ckpt_file_meta(f, &m);
    printf("%s: %s (step %ld)\n", side, m.path, m.step);
}

/* The whole-file verdict verify and resume share (hpct_ckpt_file_meta): 1 after printing why
 * when f (opened from path) is refused, so diff never compares a file resume would reject. */
static int judged(hpct_ctx_t ctx, hpct_ckpt_file_t f, const char *path)
{
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    if (hpct_ckpt_file_meta(f, &m) == HPCT_SUCCESS) return 0;
    tool_error(TOOL_DATA, "cannot compare %s: it fails verification: %s", path,
               hpct_last_error(ctx));
    return 1;
}

static int ckpt_diff(hpct_ctx_t ctx, const ckpt_job_t *job)
{
    const char *arg_a = job->a, *arg_b = job->b;
    int strict = job->flag;
    hpct_ckpt_file_t a = NULL, b = NULL;
    int rc = open_file(ctx, arg_a, &a);
    if (!rc) rc = open_file(ctx, arg_b, &b);
    if (!rc && (count_bad(ctx, a, NULL) || count_bad(ctx, b, NULL))) {
        tool_error(TOOL_DATA, "cannot compare damaged checkpoints:");
        count_bad(ctx, a, stderr);
        count_bad(ctx, b, stderr);
        rc = TOOL_DATA;
    }
    if (!rc) rc = judged(ctx, a, arg_a) || judged(ctx, b, arg_b) ? TOOL_DATA : TOOL_OK;
    if (rc) {
        hpct_ckpt_file_close(a);
        hpct_ckpt_file_close(b);
        return rc;
    }
    print_side(a, "A");
    print_side(b, "B");
    static const char *const groups[] = {"params/", "optimizer/", "rng/", "extra/"};
    static const char *const labels[] = {"parameters", "optimizer state", "RNG state", "extras"};
    int differs = 0;
    for (int g = 0; g < (strict ? 4 : 2) && !rc; g++) {
        diff_totals_t t = {0, 0};
        if (diff_group(ctx, a, b, groups[g], &t) < 0)
            rc = TOOL_DATA;
        else
            summarize(labels[g], &t);
        if (t.differ && (g == 0 || strict)) differs = 1;
    }
    hpct_ckpt_file_close(a);
    hpct_ckpt_file_close(b);
    return rc ? rc : differs ? CKPT_DIFFERS : TOOL_OK;
}

/* ---- command line ---------------------------------------------------------------------- */

int tool_ckpt_main(int argc, char **argv)
{
    if (argc < 2) {
        ckpt_usage(stderr);
        return TOOL_USAGE;
    }
    const char *action = argv[1], *args[2];
    int nargs = 0, all = 0, strict = 0, options_done = 0;
    if (!strcmp(action, "--help") || !strcmp(action, "-h")) {
        ckpt_usage(stdout);
        return TOOL_OK;
    }
    int is_info = !strcmp(action, "info"), is_verify = !strcmp(action, "verify");
    int is_diff = !strcmp(action, "diff");
    if (!is_info && !is_verify && !is_diff) {
        ckpt_usage(stderr);
        return tool_error(TOOL_USAGE, "unknown action '%s' (info, verify or diff)", action);
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            ckpt_usage(stdout);
            return TOOL_OK;
        } else if (!options_done && !strcmp(a, "--")) {
            options_done = 1;
        } else if (!options_done && is_verify && !strcmp(a, "--all")) {
            all = 1;
        } else if (!options_done && is_diff && !strcmp(a, "--strict")) {
            strict = 1;
        } else if (!options_done && a[0] == '-' && a[1]) {
            return tool_error(TOOL_USAGE, "%s: unknown option '%s' (see hpctrain ckpt --help)",
                              action, a);
        } else if (nargs < 2) {
            args[nargs++] = a;
        } else {
            return tool_error(TOOL_USAGE, "%s: too many arguments", action);
        }
    }
    if (nargs != (is_diff ? 2 : 1))
        return tool_error(TOOL_USAGE, "%s takes %s (see hpctrain ckpt --help)", action,
                          is_diff ? "two checkpoints, A and B" : "one FILE or DIR");
    if (is_verify) return ckpt_verify(args[0], all);
    ckpt_job_t job = {is_info ? ckpt_info : ckpt_diff, args[0], is_diff ? args[1] : NULL, strict};
    return run_isolated(&job);
}
