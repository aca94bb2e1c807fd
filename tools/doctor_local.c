/* doctor_local.c: the checks `hpctrain doctor` makes on the checkpoint writer (rank 0): the
 * checkpoint directory (exists or can be created, writable, room for the checkpoints kept,
 * write speed against the cadence and the walltime margin) and the Slurm job (requeue, the
 * signal before the time limit). */
#include "config.h"
#include "doctor.h"
#include "tools.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define MIB             1048576.0
#define CKPT_OVERHEAD   65536.0 /* bytes of a checkpoint beyond its arrays (HDF5, metadata) */
#define MAX_CREATED     32      /* directory levels the test may create (and removes again) */
#define TEST_FILE_CHUNK (1 << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* bytes as "12.3 MiB", "1.5 GiB", "800 KiB" into out [len]. */
static const char *human(double bytes, char *out, size_t len)
{
    if (bytes >= 1024.0 * MIB)
        snprintf(out, len, "%.1f GiB", bytes / (1024.0 * MIB));
    else if (bytes >= MIB)
        snprintf(out, len, "%.1f MiB", bytes / MIB);
    else
        snprintf(out, len, "%.0f KiB", bytes / 1024.0);
    return out;
}

/* ---- the model's size ------------------------------------------------------------------ */

/* The product of a manifest's per-sample shape ("28,28" or "scalar"); 0 when malformed. */
static long shape_width(const char *dims)
{
    if (!strcmp(dims, "scalar")) return 1;
    long w = 1;
    for (const char *p = dims; *p;) {
        char *end;
        long d = strtol(p, &end, 10);
        if (end == p || d <= 0 || w > (1L << 40) / d) return 0;
        w *= d;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return 0;
    }
    return w;
}

/* The input and target widths from the training manifest's "inputs" and "targets" lines. */
static int manifest_widths(const char *path, long *inputs, long *targets, char *why, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, len, "cannot read the training manifest %s: %s", path, strerror(errno));
        return -1;
    }
    char line[4096], key[16], dtype[32], dims[256];
    *inputs = *targets = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, " %15s %31s %255s", key, dtype, dims) == 3) {
            if (!strcmp(key, "inputs")) *inputs = shape_width(dims);
            if (!strcmp(key, "targets")) *targets = shape_width(dims);
        }
    fclose(f);
    if (*inputs > 0 && *targets > 0) return 0;
    snprintf(why, len, "the training manifest %s names no inputs or targets shape", path);
    return -1;
}

/* Parameters of the layers key's model on in inputs (built on a cpu context, batch 1). */
static int layered_params(const hpct_settings_t *c, long in, double *p, char *why, size_t len)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    hpct_ctx_t ctx;
    hpct_model_t m = NULL;
    hpct_params_t set;
    size_t total = 0;
    if (hpct_ctx_create(&cfg, &ctx)) return snprintf(why, len, "no context for the model"), -1;
    hpct_status_t s = hpct_model_create(ctx, (int)in, &m);
    if (!s) s = hpct_model_add_layers(m, c->layers, tool_activation(c->activation));
    if (!s) s = hpct_model_build(m, 1);
    if (!s) s = hpct_model_params(m, &set);
    if (!s) s = hpct_params_size(set, NULL, &total);
    if (s) snprintf(why, len, "the layers key's model: %s", hpct_last_error(ctx));
    *p = (double)total;
    hpct_model_destroy(m);
    hpct_ctx_destroy(ctx);
    return s ? -1 : 0;
}

/* Bytes of one checkpoint of the settings' model: parameters x 4 x (1 + optimizer slots),
 * plus the file's own overhead; -1 with why when the manifest cannot tell the widths. */
static double checkpoint_bytes(const hpct_settings_t *c, double *params, int *slots, char *why,
                               size_t len)
{
    long in, targets;
    if (manifest_widths(c->train_manifest, &in, &targets, why, len)) return -1;
    long out = !strcmp(c->loss, "softmax_ce") ? c->outputs : targets;
    if (out <= 0) out = targets;
    double p = 0, prev = (double)in;
    for (int i = 0; i < c->num_hidden && !c->layers[0]; i++)
        p += prev * c->hidden[i] + c->hidden[i], prev = c->hidden[i];
    p += prev * (double)out + (double)out;
    if (c->layers[0] && layered_params(c, in, &p, why, len)) return -1;
    *params = p;
    *slots = !strcmp(c->optimizer, "adamw") ? 2 : c->momentum > 0 ? 1 : 0;
    return p * 4.0 * (1 + *slots) + CKPT_OVERHEAD;
}

/* ---- the directory ----------------------------------------------------------------------- */

/* mkdir -p dir; the folders it made into made [MAX_CREATED] (deepest last), *n their count. */
static int make_dirs(const char *dir, char made[][HPCT_SETTINGS_PATH_MAX], int *n, char *why,
                     size_t len)
{
    char path[HPCT_SETTINGS_PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    *n = 0;
    for (char *p = path + 1;; p++) {
        if (*p && *p != '/') continue;
        char keep = *p;
        *p = '\0';
        struct stat st;
        if (stat(path, &st) != 0) {
            if (mkdir(path, 0777) != 0) {
                snprintf(why, len, "cannot create %s: %s", path, strerror(errno));
                return -1;
            }
            if (*n < MAX_CREATED) snprintf(made[(*n)++], HPCT_SETTINGS_PATH_MAX, "%s", path);
        } else if (!S_ISDIR(st.st_mode)) {
            snprintf(why, len, "%s is not a directory", path);
            return -1;
        }
        *p = keep;
        if (!keep) return 0;
    }
}

static void remove_made(char made[][HPCT_SETTINGS_PATH_MAX], int n)
{
    while (n-- > 0) rmdir(made[n]);
}

/* Write bytes to a new file in dir, fsync it and the directory, remove it: its seconds, or -1
 * with why (the system's reason: read-only, no space, no permission). */
static double write_test(const char *dir, size_t bytes, char *why, size_t len)
{
    char path[HPCT_SETTINGS_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/.hpctrain-doctor-%ld.tmp", dir, (long)getpid());
    char *chunk = malloc(TEST_FILE_CHUNK);
    if (!chunk) {
        snprintf(why, len, "out of memory for the write test");
        return -1;
    }
    for (size_t i = 0; i < TEST_FILE_CHUNK; i++) chunk[i] = (char)(i * 131 + 7);
    double t0 = now_s(), t = -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const char *step = "creating a file in";
    for (size_t done = 0; fd >= 0 && done < bytes;) {
        size_t n = bytes - done < TEST_FILE_CHUNK ? bytes - done : TEST_FILE_CHUNK;
        ssize_t w = write(fd, chunk, n);
        if (w <= 0) {
            if (w == 0) errno = ENOSPC;
            step = "writing a test file in";
            break;
        }
        done += (size_t)w;
        if (done == bytes) {
            step = "fsync of a test file in";
            if (fsync(fd) == 0) t = 0;
        }
    }
    int saved = errno;
    if (fd >= 0 && close(fd) != 0 && t == 0) t = -1, saved = errno, step = "closing a test file in";
    int dfd = t == 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) fsync(dfd), close(dfd);
    if (t == 0) t = now_s() - t0;
    if (fd >= 0) unlink(path);
    free(chunk);
    if (t < 0) snprintf(why, len, "%s %s failed: %s", step, dir, strerror(saved));
    return t;
}

/* Free bytes for an unprivileged writer under dir, -1 when unknown. */
static double free_bytes(const char *dir)
{
    struct statvfs v;
    return statvfs(dir, &v) == 0 ? (double)v.f_bavail * (double)v.f_frsize : -1.0;
}

/* "checkpoint room": keep + 1 checkpoints (the one being written beside the kept ones). */
static void room_row(struct doc_local *l, double avail, struct doc_table *t)
{
    const hpct_settings_t *c = l->c;
    double params = 0;
    int slots = 0;
    char why[HPCT_SETTINGS_PATH_MAX + 200], a[32], b[32], d[32];
    l->ckpt_bytes = checkpoint_bytes(c, &params, &slots, why, sizeof why);
    if (l->ckpt_bytes < 0) {
        doc_add(t, "checkpoint room", HPCT_CHECK_WARN, "not checked: %s", why);
        return;
    }
    double need = (double)(c->checkpoint_keep + 1) * l->ckpt_bytes;
    const char *model = "%.0f parameters, %s: %d state slot(s)";
    char desc[160];
    snprintf(desc, sizeof desc, model, params, c->optimizer, slots);
    if (avail < 0)
        doc_add(t, "checkpoint room", HPCT_CHECK_WARN,
                "free space of %s unknown (statvfs failed); %d checkpoints of %s need %s (%s)",
                c->checkpoint_dir, (int)c->checkpoint_keep + 1, human(l->ckpt_bytes, a, sizeof a),
                human(need, b, sizeof b), desc);
    else if (avail < need)
        doc_add(t, "checkpoint room", HPCT_CHECK_FAIL,
                "%s has %s free, but checkpoint_keep = %ld checkpoints plus the one being written "
                "take %s (%s each: %s): free space or lower checkpoint_keep",
                c->checkpoint_dir, human(avail, a, sizeof a), c->checkpoint_keep,
                human(need, b, sizeof b), human(l->ckpt_bytes, d, sizeof d), desc);
    else
        doc_add(t, "checkpoint room", HPCT_CHECK_OK,
                "%s free in %s for %ld + 1 checkpoints of %s (%s)", human(avail, a, sizeof a),
                c->checkpoint_dir, c->checkpoint_keep, human(l->ckpt_bytes, b, sizeof b), desc);
}

/* "checkpoint time": one checkpoint at the test's speed against the cadence and the margin. */
static void time_row(struct doc_local *l, double seconds, size_t bytes, struct doc_table *t)
{
    const hpct_settings_t *c = l->c;
    double rate = bytes / (seconds > 1e-6 ? seconds : 1e-6);
    char a[32], b[32];
    if (l->ckpt_bytes < 0) {
        doc_add(t, "checkpoint time", HPCT_CHECK_OK,
                "%s written and fsync'd in %.3f s (%.0f MB/s); the model's size is unknown",
                human((double)bytes, a, sizeof a), seconds, rate / 1e6);
        return;
    }
    l->ckpt_s = l->ckpt_bytes / rate;
    double cadence = c->checkpoint_every_seconds, margin = c->walltime_margin;
    int verdict = HPCT_CHECK_OK;
    const char *why = "";
    if (margin > 0 && l->ckpt_s > margin)
        verdict = HPCT_CHECK_FAIL,
        why = ": longer than walltime_margin, so the last checkpoint before the time limit "
              "would not finish (raise walltime_margin)";
    else if (margin > 0 && l->ckpt_s > 0.5 * margin)
        verdict = HPCT_CHECK_WARN,
        why = ": more than half of walltime_margin (raise walltime_margin)";
    else if (cadence > 0 && l->ckpt_s > cadence)
        verdict = HPCT_CHECK_WARN,
        why = ": longer than checkpoint_every_seconds, so checkpoints would queue up";
    char took[32];
    if (l->ckpt_s < 0.01)
        snprintf(took, sizeof took, "under 0.01 s");
    else
        snprintf(took, sizeof took, "about %.2f s", l->ckpt_s);
    doc_add(t, "checkpoint time", verdict,
            "%s written and fsync'd in %.3f s (%.0f MB/s): a checkpoint of %s takes %s; "
            "checkpoint_every_seconds %g, walltime_margin %g s%s",
            human((double)bytes, a, sizeof a), seconds, rate / 1e6,
            human(l->ckpt_bytes, b, sizeof b), took, cadence, margin, why);
}

void doc_storage(struct doc_local *l, struct doc_table *t)
{
    const hpct_settings_t *c = l->c;
    char made[MAX_CREATED][HPCT_SETTINGS_PATH_MAX], why[HPCT_SETTINGS_PATH_MAX + 200], a[32];
    int n = 0;
    l->ckpt_s = l->ckpt_bytes = -1;
    if (make_dirs(c->checkpoint_dir, made, &n, why, sizeof why)) {
        doc_add(t, "checkpoint dir", HPCT_CHECK_FAIL, "checkpoint_dir %s: %s", c->checkpoint_dir,
                why);
        remove_made(made, n);
        return;
    }
    double avail = free_bytes(c->checkpoint_dir);
    size_t bytes = l->write_bytes;
    if (avail >= 0 && bytes > avail / 4) bytes = (size_t)(avail / 4); /* never fill it */
    if (bytes < 4096) bytes = 4096;
    double seconds = write_test(c->checkpoint_dir, bytes, why, sizeof why);
    if (seconds < 0)
        doc_add(t, "checkpoint dir", HPCT_CHECK_FAIL,
                "checkpoint_dir %s: %s (rank 0 writes the "
                "checkpoints)",
                c->checkpoint_dir, why);
    else
        doc_add(t, "checkpoint dir", HPCT_CHECK_OK, "%s %s, writable by rank 0 (%s free)",
                c->checkpoint_dir, n ? "can be created" : "exists",
                avail >= 0 ? human(avail, a, sizeof a) : "? bytes");
    room_row(l, avail, t);
    if (seconds >= 0) time_row(l, seconds, bytes, t);
    remove_made(made, n);
}

/* ---- Slurm ------------------------------------------------------------------------------- */

/* What the doctor learns of the job: requeue, and the signal before the time limit. */
struct job_facts {
    int known;       /* 1: Requeue= was read */
    int requeue;     /* 1: the job may be requeued */
    int script;      /* 1: the batch script was read */
    int signal;      /* the signal before the time limit; 0: none found, -1: not one known */
    int seconds;     /* how long before it */
    int batch_only;  /* the signal goes to the batch shell only (B:) */
    char source[64]; /* where the signal was found */
    char spec[64];   /* as written there */
};

/* Requeue=0/1 from `scontrol show job -o ID`. */
static void requeue_from_scontrol(unsigned long id, struct job_facts *j)
{
    char cmd[96], line[8192];
    snprintf(cmd, sizeof cmd, "scontrol show job -o %lu 2>/dev/null", id);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    while (fgets(line, sizeof line, p)) {
        const char *r = strstr(line, " Requeue=");
        if (r) j->requeue = r[9] == '1', j->known = 1;
    }
    pclose(p);
}

/* A signal's name or number ("USR1", "SIGUSR1", "10") of n bytes; -1 when none of these. */
static int signal_number(const char *s, size_t n)
{
    static const struct {
        const char *name;
        int number;
    } table[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"INT", SIGINT},
                 {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"ALRM", SIGALRM}, {"KILL", SIGKILL}};
    if (n > 3 && !strncmp(s, "SIG", 3)) s += 3, n -= 3;
    if (n > 0 && s[0] >= '0' && s[0] <= '9') return atoi(s);
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (strlen(table[i].name) == n && !strncmp(s, table[i].name, n)) return table[i].number;
    return -1;
}

/* sbatch's --signal=[{R|B}:]SIG[@TIME] (TIME: 60 s when not given) into j. */
static void parse_signal(const char *spec, const char *source, struct job_facts *j)
{
    snprintf(j->spec, sizeof j->spec, "%.*s", (int)strcspn(spec, " \t\r\n"), spec);
    snprintf(j->source, sizeof j->source, "%s", source);
    const char *colon = strchr(j->spec, ':'), *sig = colon ? colon + 1 : j->spec;
    j->batch_only = colon && memchr(j->spec, 'B', (size_t)(colon - j->spec)) != NULL;
    const char *at = strchr(sig, '@');
    j->signal = signal_number(sig, at ? (size_t)(at - sig) : strlen(sig));
    j->seconds = at ? atoi(at + 1) : 60;
}

/* The --signal of the job's #SBATCH lines (those before its first command: sbatch reads no
 * further), from `scontrol write batch_script ID -`; j->script = 1 when it could be read. */
static void signal_from_script(unsigned long id, struct job_facts *j)
{
    char cmd[96], line[4096];
    snprintf(cmd, sizeof cmd, "scontrol write batch_script %lu - 2>/dev/null", id);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    int lines = 0, header = 1;
    while (fgets(line, sizeof line, p)) {
        const char *s = line + strspn(line, " \t");
        lines++;
        if (!header || *s == '\n' || *s == '\0') continue;
        if (*s != '#') {
            header = 0;
            continue;
        }
        const char *opt = strncmp(s, "#SBATCH", 7) ? NULL : strstr(s, "--signal");
        if (!opt || j->spec[0]) continue;
        opt += 8;
        parse_signal(opt + strspn(opt, " =\t"), "the batch script's #SBATCH lines", j);
    }
    j->script = pclose(p) == 0 && lines > 0;
}

static void requeue_row(unsigned long id, const struct job_facts *j, struct doc_table *t)
{
    if (!j->known)
        doc_add(t, "slurm requeue", HPCT_CHECK_WARN,
                "job %lu: scontrol show job gave no Requeue= (is scontrol on the PATH?); a job "
                "that is to resume after a preemption or its time limit needs: #SBATCH --requeue",
                id);
    else if (!j->requeue)
        doc_add(t, "slurm requeue", HPCT_CHECK_WARN,
                "job %lu cannot be requeued (Requeue=0): after a preemption or the time limit the "
                "trainer checkpoints and exits 75, but the job ends there; add: #SBATCH --requeue",
                id);
    else
        doc_add(t, "slurm requeue", HPCT_CHECK_OK,
                "job %lu can be requeued (Requeue=1): exit 75 resumes from the last checkpoint",
                id);
}

static void signal_row(const struct doc_local *l, unsigned long id, const struct job_facts *j,
                       struct doc_table *t)
{
    static const char line[] = "#SBATCH --signal=B:USR1@120";
    if (!j->spec[0]) {
        doc_add(t, "slurm signal", HPCT_CHECK_WARN,
                "job %lu: no --signal in %s nor in SBATCH_SIGNAL: the trainer learns of the time "
                "limit only from its walltime_margin or SIGTERM at the end (a --signal on the "
                "sbatch command line cannot be seen from inside the job); add: %s",
                id,
                j->script ? "its batch script's #SBATCH lines"
                          : "its batch script (none: not "
                            "a batch job)",
                line);
        return;
    }
    const char *name = j->signal == SIGUSR1 ? "SIGUSR1" : j->signal == SIGTERM ? "SIGTERM" : "";
    if (!*name) {
        doc_add(t, "slurm signal", HPCT_CHECK_WARN,
                "job %lu: --signal=%s (%s) sends a signal the trainer does not catch (it "
                "checkpoints and exits 75 on SIGUSR1 and SIGTERM); use: %s",
                id, j->spec, j->source, line);
        return;
    }
    if (l->ckpt_s > 0 && j->seconds < l->ckpt_s) {
        doc_add(t, "slurm signal", HPCT_CHECK_WARN,
                "job %lu: --signal=%s (%s) comes %d s before the time limit, but a checkpoint "
                "takes about %.0f s; signal earlier: #SBATCH --signal=B:USR1@%.0f",
                id, j->spec, j->source, j->seconds, l->ckpt_s, 2 * l->ckpt_s + 60);
        return;
    }
    doc_add(t, "slurm signal", HPCT_CHECK_OK,
            "job %lu: --signal=%s (%s): %s %d s before the time "
            "limit, %s",
            id, j->spec, j->source, name, j->seconds,
            j->batch_only ? "to the batch shell only (B:), which must forward it to the ranks "
                            "(slurm/hpctrain.sbatch does)"
                          : "to every task: the trainer catches it");
}

void doc_slurm(const struct doc_local *l, struct doc_table *t)
{
    const char *v = getenv("SLURM_JOB_ID");
    char *end = NULL;
    unsigned long id = v && *v ? strtoul(v, &end, 10) : 0;
    if (!id || *end) {
        doc_add(t, "slurm", HPCT_CHECK_OK,
                "not in a Slurm job (SLURM_JOB_ID unset): requeue and the time-limit signal not "
                "checked");
        return;
    }
    struct job_facts j = {0};
    requeue_from_scontrol(id, &j);
    const char *env = getenv("SBATCH_SIGNAL"); /* sbatch's input: above the #SBATCH lines */
    if (env && *env)
        parse_signal(env, "SBATCH_SIGNAL", &j);
    else
        signal_from_script(id, &j);
    requeue_row(id, &j, t);
    signal_row(l, id, &j, t);
}
