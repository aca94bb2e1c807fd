/* train_config.c: one table describes every setting of `hpctrain train`; the file, the
 * environment and the command line all go through train_config_set(). */
#include "train_config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum kind { K_LONG, K_BOOL, K_DOUBLE, K_STR, K_WIDTHS };

struct key {
    const char *name;
    enum kind kind;
    size_t offset, size;
    const char *choices; /* "a|b|c" for strings with fixed values, else NULL */
    double min, max;     /* numeric range */
    int hashed;          /* 1 if it changes what training computes */
    const char *deflt;
};

#define F(field) offsetof(struct train_config, field), sizeof(((struct train_config *)0)->field)
static const struct key keys[] = {
    {"train_manifest", K_STR, F(train_manifest), NULL, 0, 0, 0, ""},
    {"eval_manifest", K_STR, F(eval_manifest), NULL, 0, 0, 0, ""},
    {"data_store", K_STR, F(data_store), "auto|off|job|node", 0, 0, 0, "auto"},
    {"data_memory_mib", K_LONG, F(data_memory_mib), NULL, 0, 1 << 30, 0, "1024"},
    {"hidden", K_WIDTHS, F(hidden), NULL, 1, 1 << 20, 1, "512,512"},
    {"activation", K_STR, F(activation), "identity|relu|tanh|gelu", 0, 0, 1, "relu"},
    {"loss", K_STR, F(loss), "softmax_ce|mse", 0, 0, 1, "softmax_ce"},
    {"outputs", K_LONG, F(outputs), NULL, 0, 1 << 24, 1, "0"},
    {"optimizer", K_STR, F(optimizer), "sgd|adamw", 0, 0, 1, "sgd"},
    {"lr", K_DOUBLE, F(lr), NULL, 1e-12, 1e6, 1, "0.05"},
    {"momentum", K_DOUBLE, F(momentum), NULL, 0, 0.999999, 1, "0.9"},
    {"nesterov", K_BOOL, F(nesterov), NULL, 0, 1, 1, "0"},
    {"weight_decay", K_DOUBLE, F(weight_decay), NULL, 0, 1e6, 1, "0"},
    {"beta1", K_DOUBLE, F(beta1), NULL, 0, 0.999999, 1, "0.9"},
    {"beta2", K_DOUBLE, F(beta2), NULL, 0, 0.999999, 1, "0.999"},
    {"eps", K_DOUBLE, F(eps), NULL, 1e-30, 1, 1, "1e-8"},
    {"clip_norm", K_DOUBLE, F(clip_norm), NULL, 0, 1e30, 1, "0"},
    {"schedule", K_STR, F(schedule), "constant|step|cosine", 0, 0, 1, "constant"},
    {"warmup_steps", K_LONG, F(warmup_steps), NULL, 0, 1e15, 1, "0"},
    {"step_size", K_LONG, F(step_size), NULL, 1, 1e15, 1, "1000"},
    {"gamma", K_DOUBLE, F(gamma), NULL, 1e-12, 1, 1, "0.1"},
    {"total_steps", K_LONG, F(total_steps), NULL, 0, 1e15, 1, "0"},
    {"min_lr", K_DOUBLE, F(min_lr), NULL, 0, 1e6, 1, "0"},
    {"global_batch", K_LONG, F(global_batch), NULL, 1, 1 << 24, 1, "256"},
    {"micro_batches", K_LONG, F(micro_batches), NULL, 1, 1 << 16, 1, "1"},
    {"epochs", K_LONG, F(epochs), NULL, 1, 1e9, 1, "1"},
    {"seed", K_LONG, F(seed), NULL, 0, 9.2e18, 1, "42"},
    {"threads", K_LONG, F(threads), NULL, 0, 4096, 0, "0"},
    {"backend", K_STR, F(backend), "cpu|cuda", 0, 0, 0, "cpu"},
    {"consistency_interval", K_LONG, F(consistency_interval), NULL, 0, 1e15, 0, "0"},
    {"log_interval", K_LONG, F(log_interval), NULL, 0, 1e15, 0, "50"},
    {"collective_timeout", K_DOUBLE, F(collective_timeout), NULL, 0.1, 1e7, 0, "300"},
    {"checkpoint_dir", K_STR, F(checkpoint_dir), NULL, 0, 0, 0, "checkpoints"},
    {"checkpoint_every_steps", K_LONG, F(checkpoint_every_steps), NULL, 0, 1e15, 0, "0"},
    {"checkpoint_every_seconds", K_DOUBLE, F(checkpoint_every_seconds), NULL, 0, 1e9, 0, "600"},
    {"checkpoint_keep", K_LONG, F(checkpoint_keep), NULL, 1, 1e6, 0, "3"},
    {"checkpoint_keep_every", K_LONG, F(checkpoint_keep_every), NULL, 0, 1e15, 0, "0"},
    {"checkpoint_async", K_BOOL, F(checkpoint_async), NULL, 0, 1, 0, "1"},
    {"walltime_margin", K_DOUBLE, F(walltime_margin), NULL, 0, 1e9, 0, "120"},
    {"resume", K_STR, F(resume), "auto|never", 0, 0, 0, "auto"},
    {"metrics_file", K_STR, F(metrics_file), NULL, 0, 0, 0, "auto"},
    {"eval_every_steps", K_LONG, F(eval_every_steps), NULL, 0, 1e15, 0, "0"},
    {"eval_every_epochs", K_LONG, F(eval_every_epochs), NULL, 0, 1e9, 0, "0"},
    {"straggler_threshold", K_DOUBLE, F(straggler_threshold), NULL, 0, 1e6, 0, "0.2"},
    {"divergence_factor", K_DOUBLE, F(divergence_factor), NULL, 0, 1e12, 0, "10"},
    {"divergence_reports", K_LONG, F(divergence_reports), NULL, 1, 1e9, 0, "3"},
    {"timeline_file", K_STR, F(timeline_file), NULL, 0, 0, 0, "none"},
    {"timeline_steps", K_LONG, F(timeline_steps), NULL, 1, 1e6, 0, "100"},
    {"timeline_first", K_LONG, F(timeline_first), NULL, 0, 1e15, 0, "0"},
};
#define NUM_KEYS (sizeof keys / sizeof keys[0])

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static const struct key *find_key(const char *name)
{
    for (size_t i = 0; i < NUM_KEYS; i++)
        if (strcmp(keys[i].name, name) == 0) return &keys[i];
    return NULL;
}

static int in_choices(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return 1;
        p += len + (bar != NULL);
    }
    return 0;
}

/* Whole-string number parse with range check; integers (*exact) in decimal digits exactly
 * (strtoll), or written as a real number ("1e3") only up to 2^53, where every integer is a
 * double; hexadecimal is refused (strtod would read "0x10" as 16). */
static int parse_number(const struct key *k, const char *v, double *out, long *exact)
{
    char *end;
    errno = 0;
    if (strpbrk(v, "xX")) return -1;
    if (k->kind != K_DOUBLE && v[strspn(v, "+-0123456789")] == '\0') {
        long long n = strtoll(v, &end, 10);
        if (end == v || *end || errno || (double)n < k->min || (double)n > k->max) return -1;
        *exact = (long)n, *out = (double)n;
        return 0;
    }
    double d = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(d)) return -1;
    if (k->kind != K_DOUBLE && (d != floor(d) || fabs(d) > 0x1p53)) return -1;
    if (d < k->min || d > k->max) return -1;
    *out = d, *exact = (long)d;
    return 0;
}

/* "W1,W2,..." (blanks around the commas allowed): every item a width in [1, 2^20], none
 * empty ("32," and "" are refused; "none" is the way to ask for no hidden layer). */
static int parse_widths(struct train_config *c, const char *v)
{
    int widths[TC_MAX_HIDDEN], n = 0;
    if (!strcmp(v, "none")) {
        c->num_hidden = 0;
        return 0;
    }
    for (const char *p = v;;) {
        while (*p == ' ' || *p == '\t') p++;
        char *end;
        errno = 0;
        long w = strtol(p, &end, 10);
        if (end == p || errno || w < 1 || w > (1 << 20) || n == TC_MAX_HIDDEN) return -1;
        widths[n++] = (int)w;
        for (p = end; *p == ' ' || *p == '\t'; p++) {
        }
        if (!*p) break;
        if (*p++ != ',') return -1;
    }
    memcpy(c->hidden, widths, sizeof widths[0] * (size_t)n);
    c->num_hidden = n;
    return 0;
}

int train_config_set(struct train_config *c, const char *name, const char *v, const char *source,
                     char *err, size_t errlen)
{
    const struct key *k = find_key(name);
    if (!k)
        return fail(err, errlen,
                    "%s: unknown setting '%s' (hpctrain train --print-config lists them)", source,
                    name);
    char *field = (char *)c + k->offset;
    double d;
    long n;
    switch (k->kind) {
    case K_STR:
        if (strlen(v) >= k->size)
            return fail(err, errlen, "%s: %s is longer than %zu characters ('%.40s%s'%s%s)", source,
                        name, k->size - 1, v, strlen(v) > 40 ? "..." : "",
                        k->choices ? "; one of " : "", k->choices ? k->choices : "");
        if (k->choices && !in_choices(k->choices, v))
            return fail(err, errlen, "%s: %s = '%s' is not one of %s", source, name, v, k->choices);
        strcpy(field, v);
        return 0;
    case K_WIDTHS:
        if (parse_widths(c, v))
            return fail(err, errlen,
                        "%s: hidden = '%s' must be up to %d comma-separated widths in [1, "
                        "1048576], or 'none' for no hidden layer",
                        source, v, TC_MAX_HIDDEN);
        return 0;
    case K_BOOL:
        if (strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "true") == 0)
            *(int *)field = 1;
        else if (strcmp(v, "0") == 0 || strcmp(v, "no") == 0 || strcmp(v, "false") == 0)
            *(int *)field = 0;
        else
            return fail(err, errlen, "%s: %s = '%s' must be 0/1, yes/no or true/false", source,
                        name, v);
        return 0;
    default:
        if (parse_number(k, v, &d, &n) && k->kind != K_DOUBLE && strpbrk(v, "eE.") &&
            fabs(strtod(v, NULL)) > 0x1p53)
            return fail(err, errlen,
                        "%s: %s = '%s': write it in decimal digits (as a real number an integer "
                        "is exact only up to 2^53)",
                        source, name, v);
        if (parse_number(k, v, &d, &n))
            return fail(err, errlen, "%s: %s = '%s' must be %s in [%g, %g]", source, name, v,
                        k->kind == K_DOUBLE ? "a number" : "an integer", k->min, k->max);
        if (k->kind == K_DOUBLE)
            *(double *)field = d;
        else
            *(long *)field = n;
        return 0;
    }
}

void train_config_defaults(struct train_config *c)
{
    char err[256];
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NUM_KEYS; i++)
        train_config_set(c, keys[i].name, keys[i].deflt, "default", err, sizeof err);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

int train_config_load_file(struct train_config *c, const char *path, char *err, size_t errlen)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
    if (fd < 0)
        return fail(err, errlen, "%s: cannot open the config file: %s", path, strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, "%s: the config file is not a regular file", path);
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return fail(err, errlen, "%s: cannot open the config file: %s", path, strerror(errno));
    }
    char line[2048], where[TC_PATH_MAX + 32];
    int lineno = 0, rc = 0, first_line[NUM_KEYS] = {0}; /* where each key was set, 0: not */
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        if (!strchr(line, '\n') && !feof(f)) {
            rc = fail(err, errlen, "%s: line too long", where);
            break;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = fail(err, errlen, "%s: expected 'key = value', got '%s'", where, s);
            break;
        }
        *eq = '\0';
        char *name = trim(s);
        const struct key *k = find_key(name);
        if (k && first_line[k - keys]) {
            rc = fail(err, errlen, "%s: %s is set twice (first on line %d)", where, name,
                      first_line[k - keys]);
            break;
        }
        if (k) first_line[k - keys] = lineno;
        rc = train_config_set(c, name, trim(eq + 1), where, err, errlen);
    }
    fclose(f);
    return rc;
}

int train_config_load_env(struct train_config *c, char *err, size_t errlen)
{
    for (size_t i = 0; i < NUM_KEYS; i++) {
        char var[64], where[80];
        snprintf(var, sizeof var, "HPCT_");
        for (const char *p = keys[i].name; *p && strlen(var) < sizeof var - 1; p++) {
            size_t n = strlen(var);
            var[n] = (char)toupper((unsigned char)*p), var[n + 1] = '\0';
        }
        const char *v = getenv(var);
        if (!v) continue;
        snprintf(where, sizeof where, "environment %s", var);
        if (train_config_set(c, keys[i].name, v, where, err, errlen)) return -1;
    }
    return 0;
}

/* HPCT_* variables that are neither settings nor the library's (the caller's is_library
 * knows those, from the registry): read by the tool, the sbatch templates or the tests
 * (doc/hpctrain.1 ENVIRONMENT). A name ending in '*' is a prefix. */
static const char *const other_vars[] = {
    "HPCT_CONFIG",    "HPCT_TRAIN",   "HPCT_MAX_RESTARTS", "HPCT_SLURM_DIR", "HPCT_LOG_LEVEL",
    "HPCT_PREFLIGHT", "HPCT_TEST_*",  "HPCT_CKPT_TEST_*",  "HPCT_SLURM_*",   "HPCT_FORTRAN",
    "HPCT_FUZZ_*",    "HPCT_BENCH_*", "HPCT_METRICS*",     "HPCT_TRACE*",
};

static int is_known_var(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof other_vars / sizeof other_vars[0]; i++) {
        size_t m = strlen(other_vars[i]);
        if (other_vars[i][m - 1] == '*' ? len >= m - 1 && !strncmp(name, other_vars[i], m - 1)
                                        : len == m && !strncmp(name, other_vars[i], m))
            return 1;
    }
    for (size_t i = 0; i < NUM_KEYS; i++) {
        size_t m = strlen(keys[i].name);
        if (len != m + 5) continue;
        size_t j = 0;
        while (j < m && name[5 + j] == toupper((unsigned char)keys[i].name[j])) j++;
        if (j == m) return 1;
    }
    return 0;
}

int train_config_unknown_env(char *out, size_t n, int (*is_library)(const char *, size_t))
{
    extern char **environ;
    int count = 0;
    out[0] = '\0';
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : 0;
        if (strncmp(*e, "HPCT_", 5) || !eq || is_known_var(*e, len) ||
            (is_library && is_library(*e, len)))
            continue;
        size_t used = strlen(out);
        if (used + (size_t)(eq - *e) + 2 < n)
            snprintf(out + used, n - used, "%s%.*s", count ? " " : "", (int)(eq - *e), *e);
        count++;
    }
    return count;
}

int train_config_validate(const struct train_config *c, char *err, size_t errlen)
{
    if (!c->train_manifest[0])
        return fail(
            err, errlen,
            "train_manifest is not set (config file, HPCT_TRAIN_MANIFEST or --train-manifest)");
    if (c->global_batch % c->micro_batches)
        return fail(err, errlen, "global_batch %ld is not a multiple of micro_batches %ld",
                    c->global_batch, c->micro_batches);
    if (c->min_lr > c->lr) return fail(err, errlen, "min_lr %g is above lr %g", c->min_lr, c->lr);
    if (c->nesterov && (strcmp(c->optimizer, "sgd") || c->momentum <= 0))
        return fail(err, errlen, "nesterov = 1 needs optimizer = sgd with momentum > 0");
    if (!c->checkpoint_dir[0]) return fail(err, errlen, "checkpoint_dir is empty");
    if (c->eval_every_steps && c->eval_every_epochs)
        return fail(err, errlen, "set eval_every_steps or eval_every_epochs, not both");
    if ((c->eval_every_steps || c->eval_every_epochs) && !c->eval_manifest[0])
        return fail(err, errlen, "eval_every_%s needs eval_manifest",
                    c->eval_every_steps ? "steps" : "epochs");
    return 0;
}

/* Current value of key k in file syntax. */
static void format_value(const struct train_config *c, const struct key *k, char *out, size_t n)
{
    const char *field = (const char *)c + k->offset;
    switch (k->kind) {
    case K_STR: snprintf(out, n, "%s", field); break;
    case K_BOOL: snprintf(out, n, "%d", *(const int *)field); break;
    case K_DOUBLE: snprintf(out, n, "%.17g", *(const double *)field); break;
    case K_LONG: snprintf(out, n, "%ld", *(const long *)field); break;
    case K_WIDTHS:
        out[0] = '\0';
        for (int i = 0; i < c->num_hidden; i++)
            snprintf(out + strlen(out), n - strlen(out), "%s%d", i ? "," : "", c->hidden[i]);
        if (!c->num_hidden) snprintf(out, n, "none");
        break;
    }
}

void train_config_print(const struct train_config *c, void *file)
{
    char v[TC_PATH_MAX + 8];
    for (size_t i = 0; i < NUM_KEYS; i++) {
        format_value(c, &keys[i], v, sizeof v);
        fprintf((FILE *)file, "%s = %s\n", keys[i].name, v);
    }
}

unsigned long long train_config_hash(const struct train_config *c)
{
    unsigned long long h = 0xcbf29ce484222325ULL; /* FNV-1a over "key=value;" of hashed keys */
    char v[TC_PATH_MAX + 8];
    for (size_t i = 0; i < NUM_KEYS; i++) {
        if (!keys[i].hashed) continue;
        format_value(c, &keys[i], v, sizeof v);
        for (const char *p = keys[i].name; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
        h = (h ^ '=') * 0x100000001b3ULL;
        for (const char *p = v; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
        h = (h ^ ';') * 0x100000001b3ULL;
    }
    return h;
}
