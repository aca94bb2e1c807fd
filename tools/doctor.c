/* doctor.c: `hpctrain doctor`: a preflight run of the job the way the job runs (srun
 * --mpi=pmix, mpirun, or one process), with the trainer's settings, that prints one table row
 * per check and exits non-zero when something would fail the job. The library checks what
 * needs every rank (hpct_doctor: versions, placement, fabric); rank 0, the checkpoint writer,
 * checks the settings, the checkpoint directory and the Slurm job (doctor_local.c). */
#include "config.h"
#include "doctor.h"
#include "hpctrain.h"
#include "tools.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOCTOR_REPORT_BYTES 65536
#define DOCTOR_TIMEOUT_S    60.0 /* the collectives' deadline, unless the settings' is shorter */

static const char usage_text[] =
    "usage: hpctrain doctor [--config FILE] [--KEY=VALUE]... [--strict] [--no-fabric]\n"
    "                       [--threshold F] [--bytes N] [--reps N] [--write-mib N] [--timeout S]\n"
    "Checks, before a long job, what would fail or slow it: run it the way the job runs\n"
    "(srun --mpi=pmix hpctrain doctor --config run.conf, mpirun -np N ..., or alone), with the\n"
    "settings of hpctrain train (FILE, HPCT_<KEY> variables, --KEY=VALUE). One row per check:\n"
    "  versions   libhpctrain, MPI, HDF5, PMIx, BLAS (cuda: CUDA, cuBLAS, NCCL) and the\n"
    "             settings' hash, the same on every rank (a rank that differs is named)\n"
    "  placement  ranks per node, CPU binding overlaps, one GPU per rank (cuda)\n"
    "  fabric     timed allreduces inside each node and exchanges between nodes; a node or\n"
    "             link below F (--threshold, default 0.5) of the median is named\n"
    "  storage    checkpoint_dir exists or can be created, rank 0 can write there, room for\n"
    "             checkpoint_keep + 1 checkpoints, a checkpoint's time against\n"
    "             checkpoint_every_seconds and walltime_margin\n"
    "  slurm      in a job: it can be requeued; a signal before the time limit reaches the\n"
    "             trainer (each with the #SBATCH line to add)\n"
    "  --strict       a WARN fails too (exit 1)\n"
    "  --no-fabric    skip the fabric measurement\n"
    "  --bytes N      bytes of each timed allreduce and exchange [1048576]\n"
    "  --reps N       timed repetitions of each [5]\n"
    "  --write-mib N  MiB of the checkpoint directory's write test [8]\n"
    "  --timeout S    seconds a rank may take to answer a collective [60]\n"
    "exit status: 0 every check ok (or WARN only, without --strict); 1 a check FAILed: the\n"
    "job would fail or lose its work (with --strict: a WARN too); 2 usage or settings error;\n"
    "124 a rank did not answer within --timeout (the job was aborted).\n";

/* The settings and the options of one run. */
struct doctor {
    hpct_settings_t c;
    const char *config_path;
    int strict, fabric, reps, given; /* given: a settings file or a manifest was named */
    double threshold, timeout;
    size_t bytes, write_bytes;
};

void doc_add(struct doc_table *t, const char *check, int result, const char *fmt, ...)
{
    if (result > t->worst) t->worst = result;
    if (t->n >= DOC_MAX_ROWS) return;
    struct doc_row *r = &t->rows[t->n++];
    snprintf(r->check, sizeof r->check, "%s", check);
    r->result = result;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
}

/* A usage or settings error, printed by rank 0 only (every rank has the same arguments). */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    if (tool_launcher_rank() > 0) {
        tool_let_rank0_print();
        return TOOL_USAGE;
    }
    va_list ap;
    va_start(ap, fmt);
    tool_verror(TOOL_USAGE, fmt, ap);
    va_end(ap);
    return TOOL_USAGE;
}

/* A number option's value in [lo, hi]; -1 after printing why. */
static int number(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !(x >= lo && x <= hi))
        return usage_error("%s '%s' must be a number from %g to %g", opt, v, lo, hi), -1;
    *out = x;
    return 0;
}

/* The doctor's own option at argv[*i] (its value the next word or after '='): 1 when it was
 * one, 0 when not, -1 on a bad value. */
static int own_option(struct doctor *D, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *eq = strchr(a, '=');
    static const char *const with_value[] = {"--threshold", "--bytes", "--reps", "--write-mib",
                                             "--timeout"};
    if (!strcmp(a, "--strict")) return D->strict = 1;
    if (!strcmp(a, "--no-fabric")) return D->fabric = 0, 1;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) {
        if (strlen(with_value[k]) != len || strncmp(a, with_value[k], len)) continue;
        const char *v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
        double x;
        if (!v) return usage_error("option '%s' needs a value", a), -1;
        if (k == 0) return number(a, v, 1e-6, 1.0, &D->threshold) ? -1 : 1;
        if (k == 1) return number(a, v, 4, 1 << 30, &x) ? -1 : (D->bytes = (size_t)x, 1);
        if (k == 2) return number(a, v, 1, 1000, &x) ? -1 : (D->reps = (int)x, 1);
        if (k == 3)
            return number(a, v, 1, 4096, &x) ? -1 : (D->write_bytes = (size_t)(x * 1048576), 1);
        return number(a, v, 1, 86400, &D->timeout) ? -1 : 1;
    }
    return 0;
}

/* Defaults, --config FILE, HPCT_<KEY> variables, then --KEY=VALUE flags, as hpctrain train. */
static int parse(struct doctor *D, int argc, char **argv)
{
    hpct_settings_defaults(&D->c);
    D->fabric = 1, D->reps = 5, D->threshold = 0.5, D->timeout = DOCTOR_TIMEOUT_S;
    D->bytes = 1048576, D->write_bytes = 8 << 20;
    for (int i = 1; i < argc; i++) {
        const char *file = !strncmp(argv[i], "--config=", 9)              ? argv[i] + 9
                           : !strcmp(argv[i], "--config") && i + 1 < argc ? argv[++i]
                                                                          : NULL;
        if (file && hpct_settings_read_file(&D->c, file))
            return usage_error("%s", hpct_last_error(NULL));
        if (file) D->config_path = file;
    }
    if (hpct_settings_read_env(&D->c)) return usage_error("%s", hpct_last_error(NULL));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (tool_launcher_rank() <= 0) fputs(usage_text, stdout);
            exit(TOOL_OK);
        }
        if (!strcmp(a, "--config")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--config=", 9) || !strcmp(a, "--allow-config-change")) continue;
        int own = own_option(D, argc, argv, &i);
        if (own < 0) return TOOL_USAGE;
        if (own) continue;
        if (strncmp(a, "--", 2) || !a[2]) return usage_error("unexpected argument '%s'", a);
        char key[128], where[160];
        const char *eq = strchr(a + 2, '='), *value;
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof key) return usage_error("bad option '%s'", a);
        memcpy(key, a + 2, len), key[len] = '\0';
        for (char *p = key; *p; p++) *p = *p == '-' ? '_' : *p;
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc && !tool_is_option_word(argv[i + 1]))
            value = argv[++i];
        else
            return usage_error("option '%s' needs a value", a);
        snprintf(where, sizeof where, "option --%s", key);
        if (hpct_settings_set(&D->c, key, value, where))
            return usage_error("%s", hpct_last_error(NULL));
    }
    D->given = D->config_path || D->c.train_manifest[0];
    return TOOL_OK;
}

/* The library's report, "CHECK\tRESULT\tDETAIL" lines, into the table. */
static void add_report(struct doc_table *t, char *report)
{
    for (char *line = strtok(report, "\n"); line; line = strtok(NULL, "\n")) {
        char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        if (!tab2) continue;
        *tab1 = *tab2 = '\0';
        int result = !strcmp(tab1 + 1, "FAIL")   ? HPCT_CHECK_FAIL
                     : !strcmp(tab1 + 1, "WARN") ? HPCT_CHECK_WARN
                                                 : HPCT_CHECK_OK;
        doc_add(t, line, result, "%s", tab2 + 1);
    }
}

static void print_table(const struct doc_table *t, int strict, int code)
{
    static const char *const verdict[] = {"ok", "WARN", "FAIL"};
    int count[3] = {0, 0, 0};
    printf("%-16s %-6s %s\n", "CHECK", "RESULT", "DETAIL");
    for (int i = 0; i < t->n; i++) {
        const struct doc_row *r = &t->rows[i];
        printf("%-16s %-6s %s\n", r->check, verdict[r->result], r->detail);
        count[r->result]++;
    }
    printf("hpctrain doctor: %d checks: %d ok, %d WARN, %d FAIL%s; exit %d\n", t->n, count[0],
           count[1], count[2], strict ? " (--strict)" : "", code);
    fflush(stdout);
}

static int exit_code(int worst, int strict)
{
    return worst == HPCT_CHECK_FAIL || (strict && worst == HPCT_CHECK_WARN) ? TOOL_FAILED : TOOL_OK;
}

/* Rank 0's own rows: the settings, the checkpoint directory, the Slurm job. */
static void local_checks(struct doctor *D, struct doc_table *t)
{
    struct doc_local l = {&D->c, D->config_path, D->write_bytes, -1, -1};
    if (!D->given) {
        doc_add(t, "settings", HPCT_CHECK_OK,
                "none given: the checkpoint directory is not checked (--config FILE, as for "
                "hpctrain train)");
        doc_slurm(&l, t);
        return;
    }
    if (hpct_settings_check(&D->c, HPCT_SETTINGS_TRAIN))
        doc_add(t, "settings", HPCT_CHECK_FAIL, "%s%s%s", D->config_path ? D->config_path : "",
                D->config_path ? ": " : "", hpct_last_error(NULL));
    else
        doc_add(t, "settings", HPCT_CHECK_OK, "%s: valid (hpctrain train would accept them)",
                D->config_path ? D->config_path : "the environment and options");
    doc_storage(&l, t);
    doc_slurm(&l, t);
}

/* hpct_init failed: one row with its error (every rank's, the same: rank 0 prints it). */
static int init_failed(const struct doctor *D, hpct_status_t s)
{
    static struct doc_table t;
    doc_add(&t, "runtime", HPCT_CHECK_FAIL, "hpct_init failed: %s: %s", hpct_strerror(s),
            hpct_last_error(NULL));
    if (tool_launcher_rank() <= 0) print_table(&t, D->strict, TOOL_FAILED);
    tool_let_rank0_print(); /* the error is every rank's: hpct_init agreed on it */
    return TOOL_FAILED;
}

int tool_doctor_main(int argc, char **argv)
{
    static struct doctor D;
    static struct doc_table t;
    static char report[DOCTOR_REPORT_BYTES];
    int code = parse(&D, argc, argv);
    if (code) return code;
    const char *level = getenv("HPCT_LOG_LEVEL");
    if (level && (strlen(level) != 1 || level[0] < '0' || level[0] > '4'))
        return usage_error("HPCT_LOG_LEVEL='%s' must be 0 (none) to 4 (debug)", level);
    char detail[1024];
    if (hpct_tunables_check(detail, sizeof detail) != HPCT_SUCCESS)
        return usage_error("%s", detail);
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.backend = strcmp(D.c.backend, "cuda") ? HPCT_BACKEND_CPU : HPCT_BACKEND_CUDA;
    cfg.num_threads = (int)D.c.threads;
    cfg.collective_timeout_s =
        D.c.collective_timeout < D.timeout ? D.c.collective_timeout : D.timeout;
    cfg.log_level = level ? level[0] - '0' : HPCT_LOG_NONE;
    hpct_ctx_t ctx;
    hpct_status_t s = hpct_init(&cfg, &ctx);
    if (s) return init_failed(&D, s);
    hpct_topology_t topo = HPCT_TOPOLOGY_INITIALIZER;
    hpct_topology(ctx, &topo);
    if (topo.rank == 0) local_checks(&D, &t); /* rank 0 writes the checkpoints */
    char hash[32];
    snprintf(hash, sizeof hash, "0x%016llx", (unsigned long long)hpct_settings_hash(&D.c));
    hpct_doctor_config_t dc = HPCT_DOCTOR_CONFIG_INITIALIZER;
    dc.settings = D.given ? hash : NULL;
    dc.fabric_bytes = D.bytes, dc.fabric_reps = D.reps, dc.fabric_threshold = D.threshold;
    dc.fabric = D.fabric, dc.caller_verdict = t.worst;
    int worst = HPCT_CHECK_OK;
    s = hpct_doctor(ctx, &dc, report, sizeof report, &worst);
    if (s) {
        fprintf(stderr, "hpctrain doctor: rank %d: the checks failed: %s: %s\n", topo.rank,
                hpct_strerror(s), hpct_last_error(ctx));
        if (s == HPCT_ERR_TIMEOUT) {
            hpct_abort_job(ctx, HPCT_EXIT_HANG);
            return HPCT_EXIT_HANG;
        }
        hpct_finalize(ctx);
        return TOOL_FAILED;
    }
    code = exit_code(worst, D.strict);
    if (topo.rank == 0) {
        static struct doc_table all;
        add_report(&all, report);
        for (int i = 0; i < t.n; i++)
            doc_add(&all, t.rows[i].check, t.rows[i].result, "%s", t.rows[i].detail);
        print_table(&all, D.strict, code);
    }
    hpct_finalize(ctx);
    return code;
}
