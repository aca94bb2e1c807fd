/* report_json.c: the reader of metrics.jsonl records (doc/metrics.md): one flat JSON object
 * per line; nested values of fields this reader does not know are skipped, not refused. */
#include "report.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    return p;
}

/* A JSON string at p (after its opening quote) into out [cap] (\u escapes above 0x7f become
 * '?'); the position after the closing quote, or NULL. */
static const char *string(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    for (; *p && *p != '"'; p++) {
        char c = *p;
        if ((unsigned char)c < 0x20) return NULL;
        if (c == '\\') {
            c = *++p;
            if (c == 'u') {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    if (!isxdigit((unsigned char)p[1])) return NULL;
                    char h = *++p;
                    v = v * 16 +
                        (unsigned)(isdigit((unsigned char)h) ? h - '0' : (h | 32) - 'a' + 10);
                }
                c = v < 0x80 ? (char)v : '?';
            } else if (c == 'n')
                c = '\n';
            else if (c == 't')
                c = '\t';
            else if (c == 'r')
                c = '\r';
            else if (c == 'b' || c == 'f')
                c = ' ';
            else if (c != '"' && c != '\\' && c != '/')
                return NULL;
        }
        if (n + 1 < cap) out[n++] = c;
    }
    if (*p != '"') return NULL;
    out[n] = '\0';
    return p + 1;
}

/* Skip a nested array or object at p (its opening bracket); NULL when unbalanced. */
static const char *skip_nested(const char *p)
{
    int depth = 0;
    char tmp[8];
    for (; *p; p++) {
        if (*p == '"') {
            p = string(p + 1, tmp, sizeof tmp);
            if (!p) return NULL;
            p--;
        } else if (*p == '[' || *p == '{')
            depth++;
        else if ((*p == ']' || *p == '}') && --depth == 0)
            return p + 1;
    }
    return NULL;
}

/* One value at p into f; the position after it, or NULL. */
static const char *value(const char *p, struct report_field *f)
{
    f->is_str = 0, f->is_null = 0, f->num = 0.0, f->str[0] = '\0';
    if (*p == '"') {
        f->is_str = 1;
        return string(p + 1, f->str, sizeof f->str);
    }
    if (*p == '[' || *p == '{') {
        f->is_null = 1;
        return skip_nested(p);
    }
    if (!strncmp(p, "null", 4)) {
        f->is_null = 1;
        return p + 4;
    }
    if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
        f->num = *p == 't';
        return p + (*p == 't' ? 4 : 5);
    }
    char *end;
    f->num = strtod(p, &end);
    return end == p ? NULL : end;
}

int report_parse(const char *line, struct report_record *r)
{
    r->n = 0;
    const char *p = ws(line);
    if (*p++ != '{') return -1;
    p = ws(p);
    if (*p == '}') return ws(p + 1)[0] ? -1 : 0;
    for (;;) {
        if (*p != '"' || r->n == REPORT_MAX_FIELDS) return -1;
        struct report_field *f = &r->f[r->n];
        if (!(p = string(p + 1, f->key, sizeof f->key))) return -1;
        p = ws(p);
        if (*p++ != ':') return -1;
        if (!(p = value(ws(p), f))) return -1;
        r->n++;
        p = ws(p);
        if (*p == '}') break;
        if (*p++ != ',') return -1;
        p = ws(p);
    }
    return *ws(p + 1) ? -1 : 0; /* nothing after the object */
}

const struct report_field *report_get(const struct report_record *r, const char *key)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->f[i].key, key)) return &r->f[i];
    return NULL;
}

double report_num(const struct report_record *r, const char *key, double missing)
{
    const struct report_field *f = report_get(r, key);
    return f && !f->is_str && !f->is_null ? f->num : missing;
}

const char *report_str(const struct report_record *r, const char *key)
{
    const struct report_field *f = report_get(r, key);
    return f && f->is_str ? f->str : "";
}
