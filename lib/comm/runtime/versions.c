/* versions.c: the versions of the libraries a rank runs with (the library itself, MPI, HDF5,
 * PMIx, the BLAS; CUDA, cuBLAS and NCCL on the cuda backend) and their comparison across the
 * ranks. Ranks started from different installations (a module loaded on some nodes only, a
 * stale binary on a node-local disk) fail in ways far from the cause: a wrong reduction, an
 * MPI error in the middle of a step, a checkpoint another rank cannot read. hpct_init agrees
 * on the three that matter most with one integer reduction of their hashes, and the doctor
 * (doctor.c) compares every component and names the ranks that differ. */
#include "config.h"
#include "versions.h"
#include "agree.h"
#include "runtime.h"
#include "../../device/ops.h"
#ifdef HPCT_HAVE_NCCL
/* The NCCL library's header; it declares f() prototypes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#endif

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HASH_MASK  0x3fffffffffffffffL /* hashes are 62-bit, so MASK - h is one too */
#define HOST_WIDTH 64                  /* bytes per host name in the exchange */

static const char *const names[HPCTI_V_COUNT] = {
    "libhpctrain", "MPI library",  "HDF5",   "PMIx", "BLAS",
    "CUDA driver", "CUDA runtime", "cuBLAS", "NCCL", "settings hash",
};

const char *hpcti_version_name(int component)
{
    return component >= 0 && component < HPCTI_V_COUNT ? names[component] : "?";
}

/* FNV-1a of s, cut to 62 bits. */
static long hash_text(const char *s)
{
    unsigned long long h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (long)(h & (unsigned long long)HASH_MASK);
}

/* text [HPCTI_V_TEXT] = the first line of s, blanks at its ends removed. */
static void first_line(char *text, const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strcspn(s, "\r\n");
    if (n >= HPCTI_V_TEXT) n = HPCTI_V_TEXT - 1;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    memcpy(text, s, n);
    text[n] = '\0';
}

/* The library's version, or the test hook's text for this rank (HPCT_TEST_FAKE_VERSION). */
static void library_version(int rank, char *text)
{
    snprintf(text, HPCTI_V_TEXT, "libhpctrain %s", HPCT_VERSION_STRING);
    const char *fake = hpcti_test_hook("HPCT_TEST_FAKE_VERSION"); /* RANK:TEXT */
    char *colon;
    if (fake && (colon = strchr(fake, ':')) && atoi(fake) == rank && colon > fake)
        snprintf(text, HPCTI_V_TEXT, "%s", colon + 1);
}

static void mpi_version(struct hpcti_versions *v)
{
    char full[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    if (MPI_Get_library_version(full, &len) != MPI_SUCCESS) snprintf(full, sizeof full, "unknown");
    full[len > 0 && len < (int)sizeof full ? len : (int)sizeof full - 1] = '\0';
    first_line(v->text[HPCTI_V_MPI], full);
    v->hash[HPCTI_V_MPI] = hash_text(full);
}

static void hdf5_version(char *text)
{
    unsigned major = 0, minor = 0, release = 0;
    hpcti_hdf5_lock();
    herr_t e = H5get_libversion(&major, &minor, &release);
    hpcti_hdf5_unlock();
    if (e < 0)
        snprintf(text, HPCTI_V_TEXT, "HDF5 unknown");
    else
        snprintf(text, HPCTI_V_TEXT, "HDF5 %u.%u.%u", major, minor, release);
}

#ifdef HPCT_HAVE_NCCL
/* The NCCL library's version as "NCCL M.m.p" (ncclGetVersion) into out [len]. */
static void nccl_version(char *out, size_t len)
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess || v <= 0) {
        snprintf(out, len, "NCCL unknown");
        return;
    }
    /* NCCL 2.9 and later: major 10000 + minor 100 + patch (20906); before: major 1000 +
     * minor 100 + patch (2804) */
    int major = v >= 10000 ? v / 10000 : v / 1000, rest = v >= 10000 ? v % 10000 : v % 1000;
    snprintf(out, len, "NCCL %d.%d.%d", major, rest / 100, rest % 100);
}
#endif

/* The components beyond the cheap three. */
static void other_versions(hpct_ctx_t ctx, const char *settings, struct hpcti_versions *v)
{
    struct hpcti_device_versions dv;
    hpcti_device_versions(ctx, &dv);
    first_line(v->text[HPCTI_V_PMIX], hpcti_pmix_version());
    first_line(v->text[HPCTI_V_BLAS], dv.blas);
    snprintf(v->text[HPCTI_V_CUDA_DRIVER], HPCTI_V_TEXT, "%s", dv.cuda_driver);
    snprintf(v->text[HPCTI_V_CUDA_RUNTIME], HPCTI_V_TEXT, "%s", dv.cuda_runtime);
    snprintf(v->text[HPCTI_V_CUBLAS], HPCTI_V_TEXT, "%s", dv.cublas);
#ifdef HPCT_HAVE_NCCL
    if (ctx->ops != &hpcti_cpu_ops)
        nccl_version(v->text[HPCTI_V_NCCL], sizeof v->text[HPCTI_V_NCCL]);
#endif
    first_line(v->text[HPCTI_V_SETTINGS], settings ? settings : "");
}

void hpcti_versions_mine(hpct_ctx_t ctx, const char *settings, int all, struct hpcti_versions *v)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    memset(v, 0, sizeof *v);
    library_version(d ? d->rank : 0, v->text[HPCTI_V_LIBRARY]);
    mpi_version(v);
    hdf5_version(v->text[HPCTI_V_HDF5]);
    if (all) other_versions(ctx, settings, v);
    for (int i = 0; i < HPCTI_V_COUNT; i++)
        if (i != HPCTI_V_MPI) v->hash[i] = hash_text(v->text[i]);
}

/* The ranks whose hash of component c differs from rank 0's, from all [size][n]. */
static void find_differing(const long *all, int size, int n, int c, struct hpcti_version_diff *df)
{
    size_t len = 0;
    df->differ = 0, df->first = -1, df->ranks[0] = '\0';
    for (int r = 1; r < size; r++) {
        if (all[(size_t)r * (size_t)n + (size_t)c] == all[c]) continue;
        if (df->first < 0) df->first = r;
        df->differ++;
        if (len + 16 < sizeof df->ranks)
            len += (size_t)snprintf(df->ranks + len, sizeof df->ranks - len, "%s%d",
                                    df->differ > 1 ? "," : "", r);
        else if (len + 4 < sizeof df->ranks && df->ranks[len - 1] != '.')
            len += (size_t)snprintf(df->ranks + len, sizeof df->ranks - len, ",...");
    }
}

/* Every rank's hashes of components [0, n) into all [size][n] (deadline-bounded). */
static hpct_status_t gather_hashes(hpct_ctx_t ctx, const struct hpcti_versions *v, int n, long *all)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    static const char what[] = "hpct_doctor (version hashes)";
    MPI_Request req = MPI_REQUEST_NULL;
    hpct_status_t s = hpcti_op_begin(ctx, what, 0, 0);
    if (s) return s;
    int rc = MPI_Iallgather(v->hash, n, MPI_LONG, all, n, MPI_LONG, d->comm, &req);
    s = hpcti_op_end(ctx, &req, rc == MPI_SUCCESS);
    if (!s && rc != MPI_SUCCESS) s = hpcti_mpi_failed(ctx, rc, "MPI_Iallgather of version hashes");
    return s;
}

/* Rank 0's version and each first differing rank's, broadcast to all (one operation). */
static hpct_status_t share_texts(hpct_ctx_t ctx, const struct hpcti_versions *v, int n,
                                 struct hpcti_version_diff *diff)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    MPI_Request reqs[2 * HPCTI_V_COUNT];
    int nreq = 0, rc = MPI_SUCCESS;
    hpct_status_t s = hpcti_op_begin(ctx, "hpct_doctor (versions)", 0, 0);
    if (s) return s;
    for (int c = 0; c < n && rc == MPI_SUCCESS; c++) {
        memcpy(diff[c].ref_text, v->text[c], HPCTI_V_TEXT); /* rank 0's after the broadcast */
        if (!diff[c].differ) continue;
        memcpy(diff[c].first_text, v->text[c], HPCTI_V_TEXT);
        rc = MPI_Ibcast(diff[c].ref_text, HPCTI_V_TEXT, MPI_CHAR, 0, d->comm, &reqs[nreq++]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Ibcast(diff[c].first_text, HPCTI_V_TEXT, MPI_CHAR, diff[c].first, d->comm,
                            &reqs[nreq++]);
    }
    if (rc != MPI_SUCCESS) nreq--; /* the failed call posted nothing */
    s = hpcti_op_end(ctx, reqs, nreq);
    if (!s && rc != MPI_SUCCESS) s = hpcti_mpi_failed(ctx, rc, "MPI_Ibcast of a version");
    for (int c = 0; c < n; c++)
        diff[c].ref_text[HPCTI_V_TEXT - 1] = diff[c].first_text[HPCTI_V_TEXT - 1] = '\0';
    return s;
}

hpct_status_t hpcti_versions_compare(hpct_ctx_t ctx, const struct hpcti_versions *v, int n,
                                     struct hpcti_version_diff *diff)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    long *all = hpcti_calloc(ctx, (size_t)d->size * (size_t)n, sizeof *all, "version hashes");
    if (!all) return HPCT_ERR_NO_MEMORY;
    hpct_status_t s = gather_hashes(ctx, v, n, all);
    for (int c = 0; !s && c < n; c++) find_differing(all, d->size, n, c, &diff[c]);
    free(all);
    return s ? s : share_texts(ctx, v, n, diff);
}

void hpcti_version_diff_text(const struct hpcti_version_diff *df, int component, const char *hosts,
                             int host_width, char *out, size_t len)
{
    const char *h0 = hosts, *h1 = hosts + (size_t)df->first * (size_t)host_width;
    int n =
        snprintf(out, len, "%s: rank %d (host %s) has '%s' where rank 0 (host %s) has '%s'",
                 hpcti_version_name(component), df->first, h1, df->first_text, h0, df->ref_text);
    if (df->differ > 1 && n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, " (%d ranks differ from rank 0: %s)", df->differ,
                 df->ranks);
}

/* The error or warning of a mismatch of the cheap three, naming ranks and hosts. */
static hpct_status_t report_mismatch(hpct_ctx_t ctx, const struct hpcti_versions *v, int allowed)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_version_diff diff[HPCTI_V_CHEAP];
    char *hosts = hpcti_calloc(ctx, (size_t)d->size, HOST_WIDTH, "host names");
    if (!hosts) return HPCT_ERR_NO_MEMORY;
    hpct_status_t s = hpcti_versions_compare(ctx, v, HPCTI_V_CHEAP, diff);
    if (!s) s = hpcti_agree_hosts(ctx, hosts, HOST_WIDTH);
    char msg[800] = "", one[400];
    size_t len = 0;
    for (int c = 0; !s && c < HPCTI_V_CHEAP; c++) {
        if (!diff[c].differ) continue;
        hpcti_version_diff_text(&diff[c], c, hosts, HOST_WIDTH, one, sizeof one);
        if (len < sizeof msg)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", len ? "; " : "", one);
    }
    free(hosts);
    if (s) return s;
    if (allowed) {
        if (d->rank == 0)
            hpcti_log(ctx, HPCT_LOG_WARN,
                      "hpct_init: the ranks run different versions: %s (going on: "
                      "HPCT_ALLOW_VERSION_MISMATCH=1)",
                      msg);
        return HPCT_SUCCESS;
    }
    s = hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                    "hpct_init: the ranks run different versions: %s; start every rank from "
                    "the same installation, or set HPCT_ALLOW_VERSION_MISMATCH=1 to run anyway",
                    msg);
    hpcti_mark_error_shared(ctx);
    return s;
}

hpct_status_t hpcti_versions_agree(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_versions v;
    hpcti_versions_mine(ctx, NULL, 0, &v);
    int allowed = 0, set; /* hpct_init's environment check refused a bad value already */
    if (hpcti_tunable_flag(ctx, "HPCT_ALLOW_VERSION_MISMATCH", &allowed, &set)) allowed = 0;
    /* [hashes, MASK - hashes, not allowed]: a MAX gives the largest and the smallest hash of
     * each component, and whether some rank refuses a mismatch */
    long x[2 * HPCTI_V_CHEAP + 1];
    for (int c = 0; c < HPCTI_V_CHEAP; c++)
        x[c] = v.hash[c], x[HPCTI_V_CHEAP + c] = HASH_MASK - v.hash[c];
    x[2 * HPCTI_V_CHEAP] = !allowed;
    hpct_status_t s = hpcti_agree(ctx, "hpct_init (versions)", x, 2 * HPCTI_V_CHEAP + 1, MPI_MAX);
    if (s) return s;
    int mismatch = 0;
    for (int c = 0; c < HPCTI_V_CHEAP; c++) mismatch |= x[c] != HASH_MASK - x[HPCTI_V_CHEAP + c];
    if (mismatch) return report_mismatch(ctx, &v, x[2 * HPCTI_V_CHEAP] == 0);
    hpcti_log(ctx, HPCT_LOG_INFO, "versions: %s; %s; %s: the same on all %d ranks",
              v.text[HPCTI_V_LIBRARY], v.text[HPCTI_V_MPI], v.text[HPCTI_V_HDF5], d->size);
    return HPCT_SUCCESS;
}
