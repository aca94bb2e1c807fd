/* tunables.c: the registry of the library's environment settings (HPCT_*): name, kind,
 * default, accepted values and help of each, strict parsing with range checks, and the
 * public listing (hpct_tunables_count, hpct_tunable_get). A new setting goes in the table
 * below, is read by its owner through hpcti_tunable_flag/_long/_real/_choice, and is
 * described in doc/hpctrain.3 ENVIRONMENT (t/test_doc_env.sh checks both agree). */
#include "core.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KIB 1024.0
#define GIB (KIB * KIB * KIB)
#define TIB (GIB * KIB)

/* clang-format off */
static const hpcti_tunable_t table[] = {
    {"HPCT_ALLOW_GPU_SHARING", HPCTI_TUN_FLAG, "0", 0, 1, NULL, 0, "0 or 1",
     "1: ranks of a node may share one GPU (cuda backend); 0: hpct_init refuses it"},
    {"HPCT_ALLOW_VERSION_MISMATCH", HPCTI_TUN_FLAG, "0", 0, 1, NULL, 1, "0 or 1",
     "1: ranks may run different library, MPI or HDF5 versions; 0: hpct_init refuses it"},
    {"HPCT_ALLREDUCE_ALGO", HPCTI_TUN_TEXT, "auto", 0, 0, NULL, 1,
     "auto, one of shm, shm/p2p, p2p, allgather, mpi, or BYTES:ALGO,... (the first 0, "
     "increasing; sizes with K, M or G)",
     "the averaging algorithm per size of host buffers; auto: a timed probe at hpct_init"},
    {"HPCT_CKPT_LOCK", HPCTI_TUN_CHOICE, "on", 0, 0, "on off 1 0", 0, "on, off, 1 or 0",
     "off or 0: checkpoint directories are not locked against a second run"},
    {"HPCT_CUDA_AWARE_MPI", HPCTI_TUN_FLAG, "(MPIX_Query_cuda_support)", 0, 1, NULL, 0,
     "0 or 1",
     "--with-nccl builds: 1 passes device pointers to MPI across nodes, 0 stages them"},
    {"HPCT_CUDA_GRAPH", HPCTI_TUN_FLAG, "1", 0, 1, NULL, 0, "0 or 1",
     "cuda backend: 0 runs the fused step of one rank without capturing it as a CUDA graph"},
    {"HPCT_DATA_STORE", HPCTI_TUN_CHOICE, "(hpct_data_config_t.store)", 0, 0,
     "auto off job node", 1, "auto, off, job or node",
     "where a distributed job keeps the samples; overrides hpct_data_config_t.store"},
    {"HPCT_JOB_END_TIME", HPCTI_TUN_REAL, "(Slurm's end time)", 1, 253402300799.0, NULL, 0,
     "a Unix time in seconds from 1 to 253402300799 (year 9999)",
     "the job's end, used for the walltime margin instead of asking Slurm"},
    {"HPCT_NCCL", HPCTI_TUN_CHOICE, "auto", 0, 0, "auto 0 1", 1, "auto, 0 or 1",
     "--with-nccl builds: NCCL for the node phase of device averages (1: required)"},
    {"HPCT_NCCL_SOLO", HPCTI_TUN_FLAG, "0", 0, 1, NULL, 1, "0 or 1",
     "--with-nccl builds: 1 makes NCCL communicators of one rank on nodes of one rank"},
    {"HPCT_NODE_CHUNK_BYTES", HPCTI_TUN_BYTES, "(half the fusion buffer)", 256 * KIB, GIB,
     NULL, 1, "a byte count from 256K to 1G (suffix K, M or G: powers of 1024)",
     "bytes per rank that one step of the shared-window average moves"},
    {"HPCT_NODE_IN_PLACE", HPCTI_TUN_FLAG, "1", 0, 1, NULL, 1, "0 or 1",
     "0: the shared-window average does not average gradient buffers in place"},
    {"HPCT_NODE_REDUCE", HPCTI_TUN_CHOICE, "auto", 0, 0, "auto p2p shm", 1,
     "auto, p2p or shm", "how ranks of a node average: shared-memory window or p2p"},
    {"HPCT_NODE_SHM_MAX_BYTES", HPCTI_TUN_BYTES, "0", 0, TIB, NULL, 1,
     "a byte count from 0 (no limit) to 1T (suffix K, M, G or T: powers of 1024)",
     "averages of larger buffers take the point-to-point path"},
    {"HPCT_NODE_SMALL_BYTES", HPCTI_TUN_BYTES, "(16K on one node, 32K on several)", 0, GIB,
     NULL, 1, "a byte count from 0 to 1G (suffix K, M or G: powers of 1024)",
     "window steps up to this size per rank are summed whole by every rank"},
    {"HPCT_PREFETCH_THREAD", HPCTI_TUN_FLAG, "(1 with 2 or more CPUs per rank)", 0, 1, NULL, 0,
     "0 or 1", "forces the dataset prefetch thread off (0) or on (1)"},
    {"HPCT_RANKS_PER_NODE", HPCTI_TUN_LONG, "(the launcher's nodes)", 1, 1048576, NULL, 1,
     "an integer from 1 to 1048576",
     "treat every k consecutive ranks as one node (tests, benchmarks)"},
    {"HPCT_STREAM_MMAP", HPCTI_TUN_FLAG, "1", 0, 1, NULL, 0, "0 or 1",
     "0: streamed datasets read rows with preadv instead of mapping the shards"},
    {"HPCT_VECTOR_ISA", HPCTI_TUN_CHOICE, "auto", 0, 0, "auto avx512f avx2 baseline", 0,
     "auto, avx512f, avx2 or baseline", "the instruction set of the averages' sums"},
};
/* clang-format on */
#define COUNT ((int)(sizeof table / sizeof table[0]))

const hpcti_tunable_t *hpcti_tunables(int *count)
{
    *count = COUNT;
    return table;
}

const hpcti_tunable_t *hpcti_tunable_find(const char *name)
{
    for (int i = 0; name && i < COUNT; i++)
        if (!strcmp(table[i].name, name)) return &table[i];
    return NULL;
}

const char *hpcti_tunable_value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Index of word w in the space-separated list (any case), or -1. */
static int word_index(const char *words, const char *w)
{
    size_t n = strlen(w);
    for (int i = 0; *words; i++) {
        size_t m = strcspn(words, " ");
        if (m == n && !strncasecmp(words, w, n)) return i;
        words += m + (words[m] == ' ');
    }
    return -1;
}

/* A byte count: digits and an optional K, M, G or T (any case); -1 when malformed. */
static double parse_bytes(const char *v)
{
    static const char units[] = "KMGT";
    char *end;
    if (!isdigit((unsigned char)v[0])) return -1;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno) return -1;
    double b = (double)x;
    if (*end) {
        const char *u = strchr(units, toupper((unsigned char)*end));
        if (!u || end[1]) return -1;
        b *= pow(KIB, (double)(u - units + 1));
    }
    return b;
}

/* The number of value for a numeric kind, or NAN when it is not one. */
static double parse_number(hpcti_tun_kind_t kind, const char *v)
{
    if (kind == HPCTI_TUN_BYTES) {
        double b = parse_bytes(v);
        return b < 0 ? NAN : b;
    }
    if (!(isdigit((unsigned char)v[0]) || (v[0] == '-' && isdigit((unsigned char)v[1]))))
        return NAN;
    char *end;
    errno = 0;
    double x = kind == HPCTI_TUN_REAL ? strtod(v, &end) : (double)strtoll(v, &end, 10);
    return errno || *end || !isfinite(x) ? NAN : x;
}

int hpcti_tunable_parse(const hpcti_tunable_t *t, const char *value, double *number, int *index,
                        char *why, size_t len)
{
    int i = -1;
    double x = 0;
    int ok = 1;
    if (t->kind == HPCTI_TUN_FLAG)
        ok = !strcmp(value, "0") || !strcmp(value, "1"), x = value[0] == '1';
    else if (t->kind == HPCTI_TUN_CHOICE)
        ok = (i = word_index(t->words, value)) >= 0;
    else if (t->kind != HPCTI_TUN_TEXT)
        x = parse_number(t->kind, value), ok = x >= t->min && x <= t->max; /* NAN fails */
    if (number) *number = x;
    if (index) *index = i;
    if (!ok && why) snprintf(why, len, "%s is '%s': use %s", t->name, value, t->accepted);
    return ok ? 0 : -1;
}

hpct_status_t hpcti_tunables_check(hpct_ctx_t ctx, const char *prefix, char *detail, size_t len)
{
    char why[600];
    for (int i = 0; i < COUNT; i++) {
        const char *v = hpcti_tunable_value(table[i].name);
        if (!v) continue;
        if (hpcti_tunable_parse(&table[i], v, NULL, NULL, why, sizeof why)) {
            if (detail && len) snprintf(detail, len, "%s", why);
            return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "%s%s", prefix ? prefix : "", why);
        }
        hpcti_log(ctx, HPCT_LOG_INFO, "setting %s=%s (environment)", table[i].name, v);
    }
    return HPCT_SUCCESS;
}

/* Shared body of the typed readers: *x and *i from name's value, which must be of kind. */
static hpct_status_t read_one(hpct_ctx_t ctx, const char *name, hpcti_tun_kind_t kind, double *x,
                              int *i, int *set)
{
    const hpcti_tunable_t *t = hpcti_tunable_find(name);
    *set = 0;
    if (!t || (t->kind != kind && !(kind == HPCTI_TUN_LONG && t->kind == HPCTI_TUN_BYTES)))
        return hpcti_error(ctx, HPCT_ERR_INTERNAL, "%s is not a registered setting of its kind",
                           name);
    const char *v = hpcti_tunable_value(name);
    if (!v) return HPCT_SUCCESS;
    char why[600];
    if (hpcti_tunable_parse(t, v, x, i, why, sizeof why))
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "%s", why);
    *set = 1;
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_tunable_flag(hpct_ctx_t ctx, const char *name, int *on, int *set)
{
    double x;
    hpct_status_t s = read_one(ctx, name, HPCTI_TUN_FLAG, &x, NULL, set);
    if (!s && *set) *on = x != 0;
    return s;
}

hpct_status_t hpcti_tunable_long(hpct_ctx_t ctx, const char *name, long *v, int *set)
{
    double x;
    hpct_status_t s = read_one(ctx, name, HPCTI_TUN_LONG, &x, NULL, set);
    if (!s && *set) *v = (long)x;
    return s;
}

hpct_status_t hpcti_tunable_real(hpct_ctx_t ctx, const char *name, double *v, int *set)
{
    double x;
    hpct_status_t s = read_one(ctx, name, HPCTI_TUN_REAL, &x, NULL, set);
    if (!s && *set) *v = x;
    return s;
}

hpct_status_t hpcti_tunable_choice(hpct_ctx_t ctx, const char *name, int *index, int *set)
{
    int i;
    hpct_status_t s = read_one(ctx, name, HPCTI_TUN_CHOICE, NULL, &i, set);
    if (!s && *set) *index = i;
    return s;
}

int hpct_tunables_count(void)
{
    return COUNT;
}

hpct_status_t hpct_tunable_get(int i, hpct_tunable_info_t *info)
{
    if (i < 0 || i >= COUNT || !info || info->version < 1 ||
        info->version > HPCT_TUNABLE_INFO_VERSION)
        return HPCT_ERR_INVALID_ARG;
    const hpcti_tunable_t *t = &table[i];
    info->name = t->name;
    info->value = hpcti_tunable_value(t->name);
    info->default_value = t->def;
    info->accepted = t->accepted;
    info->help = t->help;
    info->ranks_agree = t->agree;
    return HPCT_SUCCESS;
}
