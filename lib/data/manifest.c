/* manifest.c: parse and write shard manifests (doc/data-formats.md). libc only, so the
 * libFuzzer harness in t/fuzz/ can build it alone. */
#include "data.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE    4096
#define MAX_TOKENS  8
#define MAX_SAMPLES (1ULL << 40) /* per shard */
#define MAX_VALUES  (1ULL << 31) /* per sample */

static const char *const type_names[HPCTI_NUM_TYPES] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"};
static const size_t type_sizes[HPCTI_NUM_TYPES] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};

const char *hpcti_type_name(hpcti_type_t t)
{
    return (t >= 0 && t < HPCTI_NUM_TYPES) ? type_names[t] : "unknown";
}

size_t hpcti_type_size(hpcti_type_t t)
{
    return (t >= 0 && t < HPCTI_NUM_TYPES) ? type_sizes[t] : 0;
}

int hpcti_type_is_float(hpcti_type_t t)
{
    return t == HPCTI_F32 || t == HPCTI_F64;
}

uint64_t hpcti_layout_count(const hpcti_layout_t *l)
{
    uint64_t n = 1;
    for (int i = 0; i < l->rank; i++) n *= l->dims[i];
    return n;
}

int hpcti_manifest_path_is_safe(const char *path)
{
    if (!path || !*path || path[0] == '/') return 0;
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '\\') return 0;
    const char *c = path; /* reject any ".." component */
    while (*c) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.') return 0;
        c += n;
        while (*c == '/') c++;
    }
    return 1;
}

/* Parser state: the current line number and the error buffer. */
typedef struct parser {
    int line;
    char *err;
    size_t errlen;
} parser_t;

static int fail(parser_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser_t *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->err && p->errlen) snprintf(p->err, p->errlen, "line %d: %s", p->line, msg);
    return -1;
}

/* Unsigned decimal with no sign, no leading junk, below limit. */
static int parse_u64(const char *s, uint64_t limit, uint64_t *out)
{
    if (!*s || strlen(s) > 20) return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        if (v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v >= limit) return -1;
    *out = v;
    return 0;
}

static int parse_hex64(const char *s, uint64_t *out)
{
    if (strlen(s) != 16) return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        int d = (*s >= '0' && *s <= '9') ? *s - '0' : (*s >= 'a' && *s <= 'f') ? *s - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = (v << 4) | (uint64_t)d;
    }
    *out = v;
    return 0;
}

static int parse_type(const char *s, hpcti_type_t *t)
{
    for (int i = 0; i < HPCTI_NUM_TYPES; i++)
        if (!strcmp(s, type_names[i])) {
            *t = (hpcti_type_t)i;
            return 0;
        }
    return -1;
}

/* "scalar" or d1,d2,... with every d >= 1 and a product below MAX_VALUES. */
static int parse_dims(const char *s, hpcti_layout_t *l)
{
    l->rank = 0;
    if (!strcmp(s, "scalar")) return 0;
    char buf[256];
    if (strlen(s) >= sizeof buf) return -1;
    strcpy(buf, s);
    uint64_t product = 1;
    char *save = NULL;
    size_t commas = 0;
    for (const char *c = s; *c; c++) commas += *c == ',';
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint64_t d;
        if (l->rank == HPCTI_MAX_DIMS || parse_u64(tok, MAX_VALUES, &d) || d == 0) return -1;
        product *= d;
        if (product >= MAX_VALUES) return -1;
        l->dims[l->rank++] = d;
    }
    return (l->rank > 0 && commas + 1 == (size_t)l->rank) ? 0 : -1;
}

/* Split line in place on blanks; returns the token count (or MAX_TOKENS + 1 if too many). */
static int tokenize(char *line, char **tok)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (n == MAX_TOKENS) return MAX_TOKENS + 1;
        tok[n++] = t;
    }
    return n;
}

static int parse_layout(parser_t *p, char **tok, int n, hpcti_layout_t *l, int *seen)
{
    if (*seen) return fail(p, "duplicate '%s' line", tok[0]);
    if (n != 3) return fail(p, "'%s' needs: %s DTYPE DIMS|scalar", tok[0], tok[0]);
    if (parse_type(tok[1], &l->type)) return fail(p, "unknown dtype '%s'", tok[1]);
    if (parse_dims(tok[2], l)) return fail(p, "bad per-sample dims '%s'", tok[2]);
    *seen = 1;
    return 0;
}

static int add_shard(parser_t *p, char **tok, int n, hpcti_manifest_t *m, int *cap)
{
    hpcti_shard_entry_t e = {0};
    if (n != 5) return fail(p, "'shard' needs: shard SAMPLES BYTES CHECKSUM PATH");
    if (parse_u64(tok[1], MAX_SAMPLES, &e.samples)) return fail(p, "bad sample count '%s'", tok[1]);
    if (e.samples == 0) return fail(p, "empty shard '%s' (0 samples)", tok[4]);
    if (parse_u64(tok[2], UINT64_MAX, &e.bytes)) return fail(p, "bad byte size '%s'", tok[2]);
    if (parse_hex64(tok[3], &e.checksum))
        return fail(p, "bad checksum '%s' (16 lower-case hex digits)", tok[3]);
    if (!hpcti_manifest_path_is_safe(tok[4]))
        return fail(p, "shard path '%s' escapes the manifest's directory or is not printable",
                    tok[4]);
    for (int i = 0; i < m->num_shards; i++)
        if (!strcmp(m->shards[i].path, tok[4]))
            return fail(p, "duplicate shard '%s' (also on line %d)", tok[4], m->shards[i].line);
    if (m->num_shards == *cap) {
        int ncap = *cap ? 2 * *cap : 16;
        void *grown = realloc(m->shards, (size_t)ncap * sizeof *m->shards);
        if (!grown) return fail(p, "out of memory");
        m->shards = grown;
        *cap = ncap;
    }
    e.path = strdup(tok[4]);
    if (!e.path) return fail(p, "out of memory");
    e.line = p->line;
    m->shards[m->num_shards++] = e;
    return 0;
}

/* One non-blank, non-comment line after the header. */
static int parse_line(parser_t *p, char *line, hpcti_manifest_t *m, int seen[2], int *cap)
{
    char *tok[MAX_TOKENS];
    int n = tokenize(line, tok);
    if (n > MAX_TOKENS) return fail(p, "too many fields");
    if (!strcmp(tok[0], "inputs")) return parse_layout(p, tok, n, &m->inputs, &seen[0]);
    if (!strcmp(tok[0], "targets")) return parse_layout(p, tok, n, &m->targets, &seen[1]);
    if (!strcmp(tok[0], "shard")) return add_shard(p, tok, n, m, cap);
    return fail(p, "unknown keyword '%.40s'", tok[0]);
}

static int parse_header(parser_t *p, char *line)
{
    char *tok[MAX_TOKENS];
    int n = tokenize(line, tok);
    if (n != 2 || strcmp(tok[0], HPCTI_MANIFEST_MAGIC))
        return fail(p, "first line must be '%s %d'", HPCTI_MANIFEST_MAGIC, HPCTI_MANIFEST_VERSION);
    if (strcmp(tok[1], "1")) return fail(p, "unsupported manifest version '%.20s'", tok[1]);
    return 0;
}

/* Copy the next line (without its newline) into buf; returns the bytes consumed or -1. */
static long next_line(const char *text, size_t len, size_t pos, char *buf, parser_t *p)
{
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    size_t n = end - pos;
    if (n >= MAX_LINE) return fail(p, "line longer than %d bytes", MAX_LINE - 1);
    if (memchr(text + pos, '\0', n)) return fail(p, "NUL byte in manifest");
    memcpy(buf, text + pos, n);
    if (n && buf[n - 1] == '\r') n--;
    buf[n] = '\0';
    return (long)(end - pos + (end < len));
}

/* Deflate, the only filter a shard may use, packs at best about 1032:1: a shard's claimed
 * samples (rows of inputs and targets) must fit its file's BYTES at that ratio. Checked before
 * anything is sized from the claim (an allocation of 2^40 rows, say). */
#define MAX_PACKING 1100.0L

static int check_claims(parser_t *p, const hpcti_manifest_t *m)
{
    long double row =
        (long double)hpcti_layout_count(&m->inputs) * hpcti_type_size(m->inputs.type) +
        (long double)hpcti_layout_count(&m->targets) * hpcti_type_size(m->targets.type);
    for (int i = 0; i < m->num_shards; i++) {
        const hpcti_shard_entry_t *e = &m->shards[i];
        long double data = (long double)e->samples * row;
        if (data <= (long double)e->bytes * MAX_PACKING) continue;
        p->line = e->line;
        return fail(p,
                    "shard '%s' claims %llu samples (%.0Lf bytes of data) but its file is %llu "
                    "bytes: more than any packing of the data allows",
                    e->path, (unsigned long long)e->samples, data, (unsigned long long)e->bytes);
    }
    return 0;
}

int hpcti_manifest_parse(const char *text, size_t len, hpcti_manifest_t *m, char *err,
                         size_t errlen)
{
    parser_t p = {0, err, errlen};
    int seen[2] = {0, 0}, header = 0, cap = 0, rc = 0;
    char line[MAX_LINE];
    memset(m, 0, sizeof *m);
    for (size_t pos = 0; pos < len && !rc;) {
        p.line++;
        long used = next_line(text, len, pos, line, &p);
        if (used < 0) {
            rc = -1;
            break;
        }
        pos += (size_t)used;
        const char *first = line + strspn(line, " \t");
        if (!*first || *first == '#') continue;
        rc = header ? parse_line(&p, line, m, seen, &cap) : parse_header(&p, line);
        header = 1;
    }
    p.line++;
    if (!rc && !header) rc = fail(&p, "empty manifest (no '%s' line)", HPCTI_MANIFEST_MAGIC);
    if (!rc && !seen[0]) rc = fail(&p, "no 'inputs' line");
    if (!rc && !seen[1]) rc = fail(&p, "no 'targets' line");
    if (!rc && m->num_shards == 0) rc = fail(&p, "no 'shard' lines");
    if (!rc) rc = check_claims(&p, m);
    if (rc) hpcti_manifest_free(m);
    return rc;
}

void hpcti_manifest_free(hpcti_manifest_t *m)
{
    for (int i = 0; i < m->num_shards; i++) free(m->shards[i].path);
    free(m->shards);
    memset(m, 0, sizeof *m);
}

static void write_layout(FILE *f, const char *key, const hpcti_layout_t *l)
{
    fprintf(f, "%s %s ", key, hpcti_type_name(l->type));
    if (l->rank == 0) fputs("scalar", f);
    for (int i = 0; i < l->rank; i++)
        fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)l->dims[i]);
    fputc('\n', f);
}

int hpcti_manifest_write(const hpcti_manifest_t *m, const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "%s %d\n# shard SAMPLES BYTES CHECKSUM(hpct64) PATH\n", HPCTI_MANIFEST_MAGIC,
            HPCTI_MANIFEST_VERSION);
    write_layout(f, "inputs", &m->inputs);
    write_layout(f, "targets", &m->targets);
    for (int i = 0; i < m->num_shards; i++) {
        const hpcti_shard_entry_t *e = &m->shards[i];
        fprintf(f, "shard %llu %llu %016llx %s\n", (unsigned long long)e->samples,
                (unsigned long long)e->bytes, (unsigned long long)e->checksum, e->path);
    }
    int bad = ferror(f);
    if (fclose(f) || bad || rename(tmp, path)) {
        int saved = errno;
        remove(tmp);
        errno = saved ? saved : EIO;
        return -1;
    }
    return 0;
}
