/* doctor.c: hpct_doctor, the preflight checks of a distributed context (`hpctrain doctor`):
 * the versions every rank runs with (versions.c), where the ranks sit (ranks per node, CPU
 * binding, GPUs) and how fast the fabric moves a step's averages (fabric.c). Every rank
 * gathers the same facts and so writes the same report: one line per check. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_ISSET */
#include "config.h"
#include "agree.h"
#include "runtime.h"
#include "fabric.h"
#include "versions.h"
#include "../../device/ops.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOST_WIDTH 64 /* bytes per host name in the exchange */
#define MASK_WORDS 16 /* CPUs 0 to 1023 of an affinity mask */
#define MAX_BYTES  (1 << 30)

static const char *const verdicts[] = {"ok", "WARN", "FAIL"};

/* The report being written: rows into buf [len] (NULL: none kept), the worst verdict. */
struct report {
    char *buf;
    size_t len, used;
    int worst;
};

static void row(struct report *r, const char *check, int result, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void row(struct report *r, const char *check, int result, const char *fmt, ...)
{
    char detail[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    for (char *p = detail; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
    if (result > r->worst) r->worst = result;
    int n = snprintf(NULL, 0, "%s\t%s\t%s\n", check, verdicts[result], detail);
    if (!r->buf || n < 0 || r->used + (size_t)n + 1 > r->len) return; /* cut at a row */
    snprintf(r->buf + r->used, r->len - r->used, "%s\t%s\t%s\n", check, verdicts[result], detail);
    r->used += (size_t)n;
}

static const char *host_of(const char *hosts, int rank)
{
    return hosts + (size_t)rank * HOST_WIDTH;
}

/* ---- versions ------------------------------------------------------------------------- */

/* A differing component: FAIL for the library, MPI and HDF5 (WARN where every rank allows it)
 * and for the settings, WARN for the others (results may differ in the last bits, nothing
 * fails). */
static int mismatch_verdict(int c, int allowed)
{
    if (c < HPCTI_V_CHEAP) return allowed ? HPCT_CHECK_WARN : HPCT_CHECK_FAIL;
    return c == HPCTI_V_SETTINGS ? HPCT_CHECK_FAIL : HPCT_CHECK_WARN;
}

static hpct_status_t versions_rows(hpct_ctx_t ctx, const char *settings, const char *hosts,
                                   struct report *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_versions v;
    struct hpcti_version_diff diff[HPCTI_V_COUNT];
    hpcti_versions_mine(ctx, settings, 1, &v);
    hpct_status_t s = hpcti_versions_compare(ctx, &v, HPCTI_V_COUNT, diff);
    if (s) return s;
    int allowed = 0, set;
    if (hpcti_tunable_flag(ctx, "HPCT_ALLOW_VERSION_MISMATCH", &allowed, &set)) allowed = 0;
    for (int c = 0; c < HPCTI_V_COUNT; c++) {
        const char *name = hpcti_version_name(c);
        if (!diff[c].differ && !diff[c].ref_text[0]) continue; /* nowhere in use */
        if (!diff[c].differ) {
            row(r, name, HPCT_CHECK_OK, "%s on all %d ranks", diff[c].ref_text, d->size);
            continue;
        }
        char text[600];
        hpcti_version_diff_text(&diff[c], c, hosts, HOST_WIDTH, text, sizeof text);
        int verdict = mismatch_verdict(c, allowed);
        row(r, name, verdict, "%s%s", text,
            c < HPCTI_V_CHEAP && allowed ? " (allowed: HPCT_ALLOW_VERSION_MISMATCH=1)" : "");
    }
    return HPCT_SUCCESS;
}

/* ---- placement ------------------------------------------------------------------------ */

/* What each rank says of where it runs (gathered as bytes: every rank runs this build). */
struct place {
    int32_t node, local_rank;
    int32_t cpus;   /* in its affinity mask */
    int32_t online; /* CPUs online on its host */
    int32_t gpus;   /* visible to it (cuda backend), else 0 */
    int32_t pad;
    uint64_t gpu; /* its device's identity (cuda backend), else 0 */
    uint64_t mask[MASK_WORDS];
};

static void my_place(hpct_ctx_t ctx, struct place *p)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    memset(p, 0, sizeof *p);
    p->node = d->node_id, p->local_rank = d->local_rank;
    p->online = (int32_t)sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_ZERO(&set);
    for (int c = 0; c < MASK_WORDS * 64 && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) p->mask[c / 64] |= 1ull << (c % 64), p->cpus++;
    if (ctx->ops != &hpcti_cpu_ops) {
        struct hpcti_device_versions dv;
        hpcti_device_versions(ctx, &dv);
        p->gpus = dv.gpus_visible;
        uint64_t id = 0;
        if (hpcti_device_identity(ctx, &id) == HPCT_SUCCESS) p->gpu = id;
    }
}

static hpct_status_t gather_places(hpct_ctx_t ctx, struct place *all)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct place mine;
    my_place(ctx, &mine);
    MPI_Request req = MPI_REQUEST_NULL;
    hpct_status_t s = hpcti_op_begin(ctx, "hpct_doctor (placement)", 0, 0);
    if (s) return s;
    int rc = MPI_Iallgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                            d->comm, &req);
    s = hpcti_op_end(ctx, &req, rc == MPI_SUCCESS);
    return !s && rc != MPI_SUCCESS ? hpcti_mpi_failed(ctx, rc, "MPI_Iallgather of placements") : s;
}

/* mask as "0-3,8" into out [len] ("none" when empty). */
static void format_cpus(const uint64_t *mask, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int c = 0; c < MASK_WORDS * 64; c++) {
        if (!(mask[c / 64] >> (c % 64) & 1)) continue;
        int e = c;
        while (e + 1 < MASK_WORDS * 64 && mask[(e + 1) / 64] >> ((e + 1) % 64) & 1) e++;
        int n = e > c ? snprintf(out + used, len - used, "%s%d-%d", used ? "," : "", c, e)
                      : snprintf(out + used, len - used, "%s%d", used ? "," : "", c);
        if (n < 0 || used + (size_t)n >= len) break;
        used += (size_t)n, c = e;
    }
    if (!used) snprintf(out, len, "none");
}

static int common_cpus(const struct place *a, const struct place *b, uint64_t *both)
{
    int n = 0;
    for (int w = 0; w < MASK_WORDS; w++)
        both[w] = a->mask[w] & b->mask[w], n += __builtin_popcountll(both[w]);
    return n;
}

/* "ranks per node": equal counts, none above the node's CPUs. */
static void ranks_row(hpct_ctx_t ctx, const struct place *pl, const char *hosts, struct report *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    int *count = calloc((size_t)d->num_nodes, sizeof *count), *first = NULL;
    first = calloc((size_t)d->num_nodes, sizeof *first);
    if (!count || !first) {
        free(count), free(first);
        row(r, "ranks per node", HPCT_CHECK_WARN, "not checked: out of memory");
        return;
    }
    for (int v = 0; v < d->num_nodes; v++) first[v] = -1;
    for (int q = 0; q < d->size; q++) {
        int v = pl[q].node;
        if (v < 0 || v >= d->num_nodes) continue;
        if (first[v] < 0) first[v] = q;
        count[v]++;
    }
    int uneven = 0, crowded = -1;
    for (int v = 0; v < d->num_nodes; v++) {
        uneven |= count[v] != count[0];
        if (crowded < 0 && first[v] >= 0 && count[v] > pl[first[v]].online) crowded = v;
    }
    char list[600] = "";
    size_t used = 0;
    for (int v = 0; v < d->num_nodes && used + 80 < sizeof list; v++)
        used +=
            (size_t)snprintf(list + used, sizeof list - used, "%snode %d on %s: %d", v ? ", " : "",
                             v, first[v] >= 0 ? host_of(hosts, first[v]) : "?", count[v]);
    if (uneven)
        row(r, "ranks per node", HPCT_CHECK_WARN,
            "nodes hold different numbers of ranks (%s): averages take one flat allreduce "
            "instead of the two-level one",
            list);
    else if (crowded >= 0)
        row(r, "ranks per node", HPCT_CHECK_WARN,
            "node %d (host %s) runs %d ranks on %d CPUs: ranks wait for a CPU", crowded,
            host_of(hosts, first[crowded]), count[crowded], pl[first[crowded]].online);
    else
        row(r, "ranks per node", HPCT_CHECK_OK, "%d rank(s) on %d node(s): %s", d->size,
            d->num_nodes, list);
    free(count), free(first);
}

static int same_cpus(const struct place *a, const struct place *b)
{
    return !memcmp(a->mask, b->mask, sizeof a->mask);
}

/* The ranks of a's node whose CPUs are a's, as "0,1,2" (cut) into out [len]; their count. */
static int sharing(const struct place *pl, int size, int a, char *out, size_t len)
{
    int n = 0;
    size_t used = 0;
    out[0] = '\0';
    for (int b = 0; b < size; b++) {
        if (pl[b].node != pl[a].node || !same_cpus(&pl[a], &pl[b])) continue;
        if (used + 16 < len)
            used += (size_t)snprintf(out + used, len - used, "%s%d", n ? "," : "", b);
        n++;
    }
    return n;
}

/* "CPU binding": ranks of a node either on CPUs of their own, or on the same set (not bound:
 * the system places them) with no more ranks than CPUs in it; two ranks whose sets differ but
 * overlap, or more ranks than CPUs on one set, are named. */
static void binding_row(hpct_ctx_t ctx, const struct place *pl, const char *hosts, struct report *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    static const char fix[] = "bind each rank to CPUs of its own (srun --cpu-bind=cores, "
                              "mpirun --bind-to core)";
    uint64_t both[MASK_WORDS];
    char shared[200], ca[200], cb[200], who[120];
    int own = 1; /* every rank's set is its own */
    for (int a = 0; a < d->size; a++) {
        int n = sharing(pl, d->size, a, who, sizeof who);
        own &= n == 1;
        if (n > pl[a].cpus) {
            format_cpus(pl[a].mask, ca, sizeof ca);
            row(r, "CPU binding", HPCT_CHECK_WARN,
                "ranks %s on host %s share the %d CPU(s) %s: more ranks than CPUs; %s", who,
                host_of(hosts, a), pl[a].cpus, ca, fix);
            return;
        }
        for (int b = a + 1; b < d->size; b++) {
            if (pl[a].node != pl[b].node || same_cpus(&pl[a], &pl[b]) ||
                !common_cpus(&pl[a], &pl[b], both))
                continue;
            format_cpus(both, shared, sizeof shared);
            format_cpus(pl[a].mask, ca, sizeof ca), format_cpus(pl[b].mask, cb, sizeof cb);
            row(r, "CPU binding", HPCT_CHECK_WARN,
                "ranks %d and %d on host %s are bound to overlapping CPUs: %s (rank %d: %s; rank "
                "%d: %s); %s",
                a, b, host_of(hosts, a), shared, a, ca, b, cb, fix);
            return;
        }
    }
    format_cpus(pl[0].mask, ca, sizeof ca);
    if (!own) {
        row(r, "CPU binding", HPCT_CHECK_OK,
            "not bound: the ranks of a node share its CPUs (rank 0 on host %s: %s, %d of %d "
            "online)",
            host_of(hosts, 0), ca, pl[0].cpus, pl[0].online);
        return;
    }
    char list[700] = "";
    size_t used = 0;
    for (int q = 0; q < d->size && q < 8 && used + 220 < sizeof list; q++) {
        format_cpus(pl[q].mask, ca, sizeof ca);
        used += (size_t)snprintf(list + used, sizeof list - used, "%srank %d: %s", q ? ", " : "", q,
                                 ca);
    }
    row(r, "CPU binding", HPCT_CHECK_OK, "each rank on CPUs of its own (%s%s)", list,
        d->size > 8 ? ", ..." : "");
}

/* "GPUs" (cuda backend): one device per rank of a node. */
static void gpu_row(hpct_ctx_t ctx, const struct place *pl, const char *hosts, struct report *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (ctx->ops == &hpcti_cpu_ops) return;
    int fewest = pl[0].gpus, who = 0;
    for (int a = 0; a < d->size; a++) {
        if (pl[a].gpus < fewest) fewest = pl[a].gpus, who = a;
        for (int b = a + 1; b < d->size; b++)
            if (pl[a].node == pl[b].node && pl[a].gpu == pl[b].gpu) {
                row(r, "GPUs", HPCT_CHECK_WARN,
                    "ranks %d and %d (local ranks %d and %d on host %s) share one GPU "
                    "(allowed by HPCT_ALLOW_GPU_SHARING=1; averaging then skips NCCL): start "
                    "one rank per GPU",
                    a, b, pl[a].local_rank, pl[b].local_rank, host_of(hosts, a));
                return;
            }
    }
    row(r, "GPUs", HPCT_CHECK_OK,
        "each rank on a GPU of its own; every rank sees %d or more (rank %d on host %s: %d)",
        fewest, who, host_of(hosts, who), fewest);
}

static hpct_status_t placement_rows(hpct_ctx_t ctx, const char *hosts, struct report *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct place *pl = hpcti_calloc(ctx, (size_t)d->size, sizeof *pl, "placement table");
    if (!pl) return HPCT_ERR_NO_MEMORY;
    hpct_status_t s = gather_places(ctx, pl);
    if (!s) {
        ranks_row(ctx, pl, hosts, r);
        binding_row(ctx, pl, hosts, r);
        gpu_row(ctx, pl, hosts, r);
    }
    free(pl);
    return s;
}

/* ---- fabric --------------------------------------------------------------------------- */

/* The ranks of node v: "ranks 2-3", "rank 4", "ranks 0,2,4" (cut). */
static void node_ranks(const struct hpcti_fabric *f, int size, int v, char *out, size_t len)
{
    int n = 0, lo = -1, hi = -1, contiguous = 1;
    for (int q = 0; q < size; q++) {
        if (f->node_of[q] != v) continue;
        if (lo < 0) lo = q;
        contiguous &= hi < 0 || q == hi + 1;
        hi = q, n++;
    }
    if (n == 1) {
        snprintf(out, len, "rank %d", lo);
        return;
    }
    if (contiguous) {
        snprintf(out, len, "ranks %d-%d", lo, hi);
        return;
    }
    size_t used = (size_t)snprintf(out, len, "ranks ");
    for (int q = lo; q <= hi && used + 12 < len; q++)
        if (f->node_of[q] == v)
            used += (size_t)snprintf(out + used, len - used, "%s%d", q > lo ? "," : "", q);
}

/* bytes as "1 MiB", "64 KiB" or "1000 bytes" into out [len]. */
static const char *size_text(size_t bytes, char *out, size_t len)
{
    if (bytes >= 1048576 && bytes % 1048576 == 0)
        snprintf(out, len, "%zu MiB", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(out, len, "%zu KiB", bytes >> 10);
    else
        snprintf(out, len, "%zu bytes", bytes);
    return out;
}

static double gbps(const struct hpcti_fabric *f, double seconds)
{
    return seconds > 0 ? (double)f->bytes / seconds / 1e9 : 0.0;
}

/* "fabric: nodes": each node's allreduce against the median of the nodes of two ranks or more. */
static void nodes_row(hpct_ctx_t ctx, const struct hpcti_fabric *f, double threshold,
                      const char *hosts, struct report *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    double *bw = calloc((size_t)f->nodes, sizeof *bw),
           *sorted = calloc((size_t)f->nodes, sizeof *sorted);
    int n = 0;
    for (int v = 0; bw && sorted && v < f->nodes; v++)
        if (f->ranks[v] > 1) sorted[n++] = bw[v] = gbps(f, f->node_s[v]);
    if (n > 0) {
        double median = hpcti_median(sorted, n);
        char slow[900] = "", who[64], sz[32];
        size_t used = 0;
        int flagged = 0, slowest = -1;
        for (int v = 0; v < f->nodes; v++) {
            if (f->ranks[v] < 2) continue;
            if (slowest < 0 || bw[v] < bw[slowest]) slowest = v;
            if (!(bw[v] < threshold * median)) continue;
            node_ranks(f, d->size, v, who, sizeof who);
            if (used + 150 < sizeof slow)
                used += (size_t)snprintf(slow + used, sizeof slow - used,
                                         "%snode %d (host %s, %s) %.3g GB/s", flagged ? "; " : "",
                                         v, host_of(hosts, f->leader[v]), who, bw[v]);
            flagged++;
        }
        if (flagged)
            row(r, "fabric: nodes", HPCT_CHECK_WARN,
                "%s: below %.0f %% of the median %.3g GB/s of a %s allreduce inside a node", slow,
                100.0 * threshold, median, size_text(f->bytes, sz, sizeof sz));
        else
            row(r, "fabric: nodes", HPCT_CHECK_OK,
                "%s allreduce inside %d node(s): median %.3g GB/s, slowest node %d (host "
                "%s) %.3g GB/s",
                size_text(f->bytes, sz, sizeof sz), n, median, slowest,
                host_of(hosts, f->leader[slowest]), bw[slowest]);
    }
    free(bw), free(sorted);
}

/* Each node's fastest link (GB/s) into best [nodes]: a node whose every link is slow is the
 * cause of them (its network card, its switch port), not its partners. */
static void best_links(const struct hpcti_fabric *f, const double *bw, double *best)
{
    for (int v = 0; v < f->nodes; v++) best[v] = 0.0;
    for (int l = 0; l < f->links; l++) {
        if (bw[l] > best[f->link_a[l]]) best[f->link_a[l]] = bw[l];
        if (bw[l] > best[f->link_b[l]]) best[f->link_b[l]] = bw[l];
    }
}

/* "fabric: links": nodes whose every link is slow, then single slow links, against medians. */
static void links_row(hpct_ctx_t ctx, const struct hpcti_fabric *f, double threshold,
                      const char *hosts, struct report *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    size_t nl = (size_t)f->links, nn = (size_t)f->nodes;
    double *bw = calloc(nl, sizeof *bw), *sorted = calloc(nl + nn, sizeof *sorted);
    double *best = calloc(nn, sizeof *best);
    int *bad = calloc(nn, sizeof *bad);
    char sz[32];
    if (f->nodes == 1)
        row(r, "fabric: links", HPCT_CHECK_OK, "one node: no link between nodes to measure");
    if (!bw || !sorted || !best || !bad || !f->links) goto done;
    for (int l = 0; l < f->links; l++) sorted[l] = bw[l] = gbps(f, f->link_s[l]);
    double median = hpcti_median(sorted, f->links);
    int slowest = 0;
    for (int l = 1; l < f->links; l++) slowest = bw[l] < bw[slowest] ? l : slowest;
    const char *ha = host_of(hosts, f->leader[f->link_a[slowest]]);
    const char *hb = host_of(hosts, f->leader[f->link_b[slowest]]);
    if (f->nodes == 2) {
        row(r, "fabric: links", HPCT_CHECK_OK,
            "%s exchange between node 0 (host %s) and node 1 (host %s): %.3g GB/s (one "
            "link: nothing to compare it with)",
            size_text(f->bytes, sz, sizeof sz), ha, hb, bw[0]);
        goto done;
    }
    best_links(f, bw, best);
    memcpy(sorted, best, nn * sizeof *best);
    double node_median = hpcti_median(sorted, f->nodes);
    char slow[1000] = "", who[64];
    size_t used = 0;
    int flagged = 0;
    for (int v = 0; v < f->nodes; v++) {
        if (!(best[v] < threshold * node_median)) continue;
        bad[v] = 1;
        node_ranks(f, d->size, v, who, sizeof who);
        if (used + 200 < sizeof slow)
            used += (size_t)snprintf(slow + used, sizeof slow - used,
                                     "%snode %d (host %s, %s): its fastest link %.3g GB/s, below "
                                     "%.0f %% of the median node's %.3g GB/s",
                                     flagged ? "; " : "", v, host_of(hosts, f->leader[v]), who,
                                     best[v], 100.0 * threshold, node_median);
        flagged++;
    }
    for (int l = 0; l < f->links; l++) {
        int a = f->link_a[l], b = f->link_b[l];
        if (bad[a] || bad[b] || !(bw[l] < threshold * median)) continue;
        if (used + 200 < sizeof slow)
            used +=
                (size_t)snprintf(slow + used, sizeof slow - used,
                                 "%slink node %d (host %s) - node %d (host %s): %.3g GB/s, "
                                 "below %.0f %% of the median link's %.3g GB/s",
                                 flagged ? "; " : "", a, host_of(hosts, f->leader[a]), b,
                                 host_of(hosts, f->leader[b]), bw[l], 100.0 * threshold, median);
        flagged++;
    }
    if (flagged)
        row(r, "fabric: links", HPCT_CHECK_WARN, "%s (%s exchanges, %d links)", slow,
            size_text(f->bytes, sz, sizeof sz), f->links);
    else
        row(r, "fabric: links", HPCT_CHECK_OK,
            "%s exchanges on %d links between %d nodes: median %.3g GB/s, slowest node %d "
            "(host %s) - node %d (host %s) %.3g GB/s",
            size_text(f->bytes, sz, sizeof sz), f->links, f->nodes, median, f->link_a[slowest], ha,
            f->link_b[slowest], hb, bw[slowest]);
done:
    free(bw), free(sorted), free(best), free(bad);
}

static hpct_status_t fabric_rows(hpct_ctx_t ctx, const hpct_doctor_config_t *cfg, const char *hosts,
                                 struct report *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (d->size == 1) {
        row(r, "fabric", HPCT_CHECK_OK, "one rank: nothing to measure");
        return HPCT_SUCCESS;
    }
    struct hpcti_fabric f;
    hpct_status_t s = hpcti_fabric_measure(ctx, cfg->fabric_bytes, cfg->fabric_reps, &f);
    if (s) return s;
    nodes_row(ctx, &f, cfg->fabric_threshold, hosts, r);
    links_row(ctx, &f, cfg->fabric_threshold, hosts, r);
    hpcti_fabric_free(&f);
    return HPCT_SUCCESS;
}

/* ---- the call ------------------------------------------------------------------------- */

/* cfg (NULL: the defaults) into *c, checked: a bad one on this rank, named. */
static hpct_status_t doctor_config(hpct_ctx_t ctx, const hpct_doctor_config_t *cfg,
                                   hpct_doctor_config_t *c)
{
    *c = (hpct_doctor_config_t)HPCT_DOCTOR_CONFIG_INITIALIZER;
    if (!cfg) return HPCT_SUCCESS;
    if (cfg->version < 1 || cfg->version > HPCT_DOCTOR_CONFIG_VERSION)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_doctor: cfg->version is %u, must be 1 to %d (start from "
                           "HPCT_DOCTOR_CONFIG_INITIALIZER)",
                           cfg->version, HPCT_DOCTOR_CONFIG_VERSION);
    *c = *cfg;
    if (c->fabric_bytes < sizeof(float) || c->fabric_bytes > MAX_BYTES)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_doctor: fabric_bytes is %zu, must be 4 to %d", c->fabric_bytes,
                           MAX_BYTES);
    if (c->fabric_reps < 1 || c->fabric_reps > 1000)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_doctor: fabric_reps is %d, must be 1 to 1000", c->fabric_reps);
    if (!(c->fabric_threshold > 0.0 && c->fabric_threshold <= 1.0))
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_doctor: fabric_threshold is %g, must be above 0 and at most 1",
                           c->fabric_threshold);
    if (c->caller_verdict < HPCT_CHECK_OK || c->caller_verdict > HPCT_CHECK_FAIL)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_doctor: caller_verdict is %d, must be HPCT_CHECK_OK, _WARN or "
                           "_FAIL",
                           c->caller_verdict);
    return HPCT_SUCCESS;
}

hpct_status_t hpct_doctor(hpct_ctx_t ctx, const hpct_doctor_config_t *cfg, char *report, size_t len,
                          int *worst)
{
    static const char fn[] = "hpct_doctor";
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    struct hpcti_dist *d = hpcti_dist_of(ctx, fn);
    if (!d) return HPCT_ERR_STATE;
    hpct_doctor_config_t c;
    hpct_status_t mine = doctor_config(ctx, cfg, &c);
    if (!mine && !report && len)
        mine =
            hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_doctor: report is NULL with len %zu", len);
    hpct_status_t s = hpcti_agree_status(ctx, "hpct_doctor (arguments)", mine, ctx->last_error);
    if (s) return s;
    struct report r = {report, len, 0, HPCT_CHECK_OK};
    if (report && len) report[0] = '\0';
    char *hosts = hpcti_calloc(ctx, (size_t)d->size, HOST_WIDTH, "host names");
    if (!hosts) return HPCT_ERR_NO_MEMORY;
    long callers = c.caller_verdict; /* the worst over the ranks: an integer MAX */
    s = hpcti_agree(ctx, "hpct_doctor (callers' verdicts)", &callers, 1, MPI_MAX);
    if (!s) r.worst = (int)callers;
    if (!s) s = hpcti_agree_hosts(ctx, hosts, HOST_WIDTH);
    if (!s) s = versions_rows(ctx, c.settings, hosts, &r);
    if (!s) s = placement_rows(ctx, hosts, &r);
    if (!s && c.fabric) s = fabric_rows(ctx, &c, hosts, &r);
    free(hosts);
    if (worst) *worst = s ? HPCT_CHECK_FAIL : r.worst;
    return s;
}
