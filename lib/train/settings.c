/* settings.c: hpctrain.conf(5). One table describes every key read by `hpctrain train` and
 * hpct_insitu_open; the file, the environment and the command line all go through
 * hpct_settings_set(). A failed call leaves its message in hpct_last_error(NULL). */
#include "settings.h"
#include "../model/spec.h"

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
    int hashed;          /* 1 if it changes what training computes; 2: the same, when not "" */
    const char *deflt;
};

#define F(field) offsetof(hpct_settings_t, field), sizeof(((hpct_settings_t *)0)->field)
static const struct key keys[] = {
    {"train_manifest", K_STR, F(train_manifest), NULL, 0, 0, 0, ""},
    {"eval_manifest", K_STR, F(eval_manifest), NULL, 0, 0, 0, ""},
    {"data_store", K_STR, F(data_store), "auto|off|job|node", 0, 0, 0, "auto"},
    {"data_memory_mib", K_LONG, F(data_memory_mib), NULL, 0, 1 << 30, 0, "1024"},
    {"hidden", K_WIDTHS, F(hidden), NULL, 1, 1 << 20, 1, "512,512"},
    /* hashed only when set, so that the config_hash of files without it is unchanged */
    {"layers", K_STR, F(layers), NULL, 0, 0, 2, ""},
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
    /* not hashed: a model of another input width does not load its checkpoint anyway */
    {"inputs", K_LONG, F(inputs), NULL, 0, 1 << 24, 0, "0"},
};
#define NUM_KEYS (sizeof keys / sizeof keys[0])

/* HPCT_ERR_INVALID_ARG with the message in hpct_last_error(NULL). */
static hpct_status_t fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static hpct_status_t fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hpcti_set_init_error(msg);
    return HPCT_ERR_INVALID_ARG;
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
static int parse_widths(hpct_settings_t *c, const char *v)
{
    int widths[HPCT_SETTINGS_MAX_HIDDEN], n = 0;
    if (!strcmp(v, "none")) {
        c->num_hidden = 0;
        return 0;
    }
    for (const char *p = v;;) {
        while (*p == ' ' || *p == '\t') p++;
        char *end;
        errno = 0;
        long w = strtol(p, &end, 10);
        if (end == p || errno || w < 1 || w > (1 << 20) || n == HPCT_SETTINGS_MAX_HIDDEN) return -1;
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

hpct_status_t hpct_settings_set(hpct_settings_t *c, const char *name, const char *v,
                                const char *source)
{
    if (!c || !name || !v) return fail("hpct_settings_set: settings, key or value is NULL");
    if (!source) source = "argument";
    const struct key *k = find_key(name);
    if (!k)
        return fail("%s: unknown setting '%s' (hpctrain train --print-config lists them)", source,
                    name);
    char *field = (char *)c + k->offset;
    double d;
    long n;
    switch (k->kind) {
    case K_STR:
        if (strlen(v) >= k->size)
            return fail("%s: %s is longer than %zu characters ('%.40s%s'%s%s)", source, name,
                        k->size - 1, v, strlen(v) > 40 ? "..." : "", k->choices ? "; one of " : "",
                        k->choices ? k->choices : "");
        if (k->choices && !in_choices(k->choices, v))
            return fail("%s: %s = '%s' is not one of %s", source, name, v, k->choices);
        char why[400];
        if (!strcmp(name, "layers") && *v && hpcti_layers_check(v, why, sizeof why))
            return fail("%s: layers: %s (hpctrain.conf(5) gives the syntax)", source, why);
        strcpy(field, v);
        return HPCT_SUCCESS;
    case K_WIDTHS:
        if (parse_widths(c, v))
            return fail("%s: hidden = '%s' must be up to %d comma-separated widths in [1, "
                        "1048576], or 'none' for no hidden layer",
                        source, v, HPCT_SETTINGS_MAX_HIDDEN);
        return HPCT_SUCCESS;
    case K_BOOL:
        if (strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "true") == 0)
            *(int *)field = 1;
        else if (strcmp(v, "0") == 0 || strcmp(v, "no") == 0 || strcmp(v, "false") == 0)
            *(int *)field = 0;
        else
            return fail("%s: %s = '%s' must be 0/1, yes/no or true/false", source, name, v);
        return HPCT_SUCCESS;
    default:
        if (parse_number(k, v, &d, &n) && k->kind != K_DOUBLE && strpbrk(v, "eE.") &&
            fabs(strtod(v, NULL)) > 0x1p53)
            return fail("%s: %s = '%s': write it in decimal digits (as a real number an integer "
                        "is exact only up to 2^53)",
                        source, name, v);
        if (parse_number(k, v, &d, &n))
            return fail("%s: %s = '%s' must be %s in [%g, %g]", source, name, v,
                        k->kind == K_DOUBLE ? "a number" : "an integer", k->min, k->max);
        if (k->kind == K_DOUBLE)
            *(double *)field = d;
        else
            *(long *)field = n;
        return HPCT_SUCCESS;
    }
}

hpct_status_t hpct_settings_defaults(hpct_settings_t *c)
{
    if (!c) return fail("hpct_settings_defaults: settings is NULL");
    memset(c, 0, sizeof *c);
    c->version = HPCT_SETTINGS_VERSION;
    for (size_t i = 0; i < NUM_KEYS; i++) {
        hpct_status_t s = hpct_settings_set(c, keys[i].name, keys[i].deflt, "default");
        if (s) return s;
    }
    return HPCT_SUCCESS;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

hpct_status_t hpcti_settings_split(char *text, const char *where, char **key, char **value)
{
    char *s = trim(text);
    *key = *value = NULL;
    if (!*s) return HPCT_SUCCESS;
    char *eq = strchr(s, '=');
    if (!eq) return fail("%s: expected 'key = value', got '%s'", where, s);
    *eq = '\0';
    *key = trim(s), *value = trim(eq + 1);
    return HPCT_SUCCESS;
}

/* One "key = value" line of a file (comment and blanks still in it) at where; first_line
 * [NUM_KEYS]: the line each key was set on (0: not yet). */
static hpct_status_t apply_line(hpct_settings_t *c, char *line, const char *where, int lineno,
                                int *first_line)
{
    char *hash = strchr(line, '#'), *name, *value;
    if (hash) *hash = '\0';
    hpct_status_t s = hpcti_settings_split(line, where, &name, &value);
    if (s || !name) return s;
    const struct key *k = find_key(name);
    if (k && first_line[k - keys])
        return fail("%s: %s is set twice (first on line %d)", where, name, first_line[k - keys]);
    if (k) first_line[k - keys] = lineno;
    return hpct_settings_set(c, name, value, where);
}

hpct_status_t hpct_settings_read_file(hpct_settings_t *c, const char *path)
{
    if (!c || !path) return fail("hpct_settings_read_file: settings or path is NULL");
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
    if (fd < 0) return fail("%s: cannot open the config file: %s", path, strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail("%s: the config file is not a regular file", path);
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return fail("%s: cannot open the config file: %s", path, strerror(errno));
    }
    char line[2048], where[HPCT_SETTINGS_PATH_MAX + 32];
    int lineno = 0, first_line[NUM_KEYS] = {0};
    hpct_status_t rc = HPCT_SUCCESS;
    while (rc == HPCT_SUCCESS && fgets(line, sizeof line, f)) {
        lineno++;
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        if (!strchr(line, '\n') && !feof(f))
            rc = fail("%s: line too long", where);
        else
            rc = apply_line(c, line, where, lineno, first_line);
    }
    fclose(f);
    return rc;
}

hpct_status_t hpct_settings_read_env(hpct_settings_t *c)
{
    if (!c) return fail("hpct_settings_read_env: settings is NULL");
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
        hpct_status_t s = hpct_settings_set(c, keys[i].name, v, where);
        if (s) return s;
    }
    return HPCT_SUCCESS;
}

/* The rules between keys that hold for every use. */
static hpct_status_t check_common(const hpct_settings_t *c)
{
    if (c->global_batch % c->micro_batches)
        return fail("global_batch %ld is not a multiple of micro_batches %ld", c->global_batch,
                    c->micro_batches);
    if (c->min_lr > c->lr) return fail("min_lr %g is above lr %g", c->min_lr, c->lr);
    if (c->nesterov && (strcmp(c->optimizer, "sgd") || c->momentum <= 0))
        return fail("nesterov = 1 needs optimizer = sgd with momentum > 0");
    if (!c->checkpoint_dir[0]) return fail("checkpoint_dir is empty");
    if (c->eval_every_steps && c->eval_every_epochs)
        return fail("set eval_every_steps or eval_every_epochs, not both");
    return HPCT_SUCCESS;
}

/* hpct_insitu_open: the model's widths come from the settings, not from data; no epochs. */
static hpct_status_t check_insitu(const hpct_settings_t *c)
{
    if (c->inputs <= 0) return fail("inputs is not set (the model's input width, > 0)");
    if (c->outputs <= 0)
        return fail("outputs is not set (the number of classes for loss = softmax_ce, the "
                    "target width for loss = mse)");
    if (c->eval_every_epochs)
        return fail("eval_every_epochs has no meaning in an in-situ session (no epochs): use "
                    "eval_every_steps");
    if (!strcmp(c->schedule, "cosine") && c->total_steps <= 0)
        return fail("schedule = cosine needs total_steps in an in-situ session (no epochs "
                    "to count them from)");
    if (c->eval_every_steps && !c->eval_manifest[0])
        return fail("eval_every_steps needs eval_manifest");
    return HPCT_SUCCESS;
}

hpct_status_t hpct_settings_check(const hpct_settings_t *c, hpct_settings_use_t use)
{
    if (!c || c->version < 1 || c->version > HPCT_SETTINGS_VERSION)
        return fail("hpct_settings_check: settings is NULL or not filled by "
                    "hpct_settings_defaults");
    hpct_status_t s = check_common(c);
    if (s || use == HPCT_SETTINGS_INSITU) return s ? s : check_insitu(c);
    if (!c->train_manifest[0])
        return fail(
            "train_manifest is not set (config file, HPCT_TRAIN_MANIFEST or --train-manifest)");
    if ((c->eval_every_steps || c->eval_every_epochs) && !c->eval_manifest[0])
        return fail("eval_every_%s needs eval_manifest", c->eval_every_steps ? "steps" : "epochs");
    return HPCT_SUCCESS;
}

const char *hpct_settings_key(int i)
{
    return i >= 0 && (size_t)i < NUM_KEYS ? keys[i].name : NULL;
}

/* Current value of key k in file syntax. */
static void format_value(const hpct_settings_t *c, const struct key *k, char *out, size_t n)
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

hpct_status_t hpct_settings_format(const hpct_settings_t *c, const char *key, char *value, size_t n)
{
    const struct key *k = key ? find_key(key) : NULL;
    if (!c || !value || !n) return fail("hpct_settings_format: settings or value is NULL");
    if (!k) return fail("hpct_settings_format: unknown setting '%s'", key ? key : "(null)");
    format_value(c, k, value, n);
    return HPCT_SUCCESS;
}

uint64_t hpct_settings_hash(const hpct_settings_t *c)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over "key=value;" of hashed keys */
    char v[HPCT_SETTINGS_PATH_MAX + 8];
    for (size_t i = 0; c && i < NUM_KEYS; i++) {
        if (!keys[i].hashed) continue;
        format_value(c, &keys[i], v, sizeof v);
        if (keys[i].hashed == 2 && !v[0]) continue;
        for (const char *p = keys[i].name; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
        h = (h ^ '=') * 0x100000001b3ULL;
        for (const char *p = v; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
        h = (h ^ ';') * 0x100000001b3ULL;
    }
    return h;
}
