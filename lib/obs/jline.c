/* jline.c: one JSON object per line, built in a fixed buffer (no allocation), so a metrics
 * record is complete before the single write that appends it. */
#include "obs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double hpcti_unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Room for len more bytes, the truncation mark and the closing "}\n" */
static int room(struct hpcti_jline *j, size_t len)
{
    if (!j->full && j->n + len + 20 < sizeof j->buf) return 1;
    j->full = 1;
    return 0;
}

static void put(struct hpcti_jline *j, const char *s, size_t len)
{
    memcpy(j->buf + j->n, s, len);
    j->n += len;
}

/* ,"key": */
static int key(struct hpcti_jline *j, const char *k)
{
    char tmp[96];
    int len = snprintf(tmp, sizeof tmp, "%s\"%s\":", j->n > 1 ? "," : "", k);
    if (len < 0 || (size_t)len >= sizeof tmp || !room(j, (size_t)len)) return 0;
    put(j, tmp, (size_t)len);
    return 1;
}

void hpcti_jl_begin(struct hpcti_jline *j, const char *type)
{
    j->n = 0, j->full = 0;
    put(j, "{", 1);
    hpcti_jl_long(j, "v", HPCTI_METRICS_SCHEMA);
    hpcti_jl_str(j, "type", type);
    char t[32];
    int len = snprintf(t, sizeof t, "%.3f", hpcti_unix_now());
    if (key(j, "time") && room(j, (size_t)len)) put(j, t, (size_t)len);
}

/* value as a JSON string into out [cap]; 0 when it does not fit */
static size_t escape(const char *v, char *out, size_t cap)
{
    size_t n = 0;
    out[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        char e[8];
        int len = 1;
        if (*p == '"' || *p == '\\')
            len = snprintf(e, sizeof e, "\\%c", *p);
        else if (*p < 0x20)
            len = snprintf(e, sizeof e, "\\u%04x", *p);
        else
            e[0] = (char)*p;
        if (n + (size_t)len + 1 >= cap) return 0;
        memcpy(out + n, e, (size_t)len);
        n += (size_t)len;
    }
    out[n++] = '"';
    return n;
}

void hpcti_jl_str(struct hpcti_jline *j, const char *k, const char *v)
{
    char tmp[HPCTI_JLINE_MAX];
    size_t len = v ? escape(v, tmp, sizeof tmp) : 4;
    if (v && !len) {
        j->full = 1;
        return;
    }
    if (!v) memcpy(tmp, "null", 4);
    size_t at = j->n;
    if (!key(j, k)) return;
    if (!room(j, len)) {
        j->n = at; /* drop the key too: the object stays valid */
        return;
    }
    put(j, tmp, len);
}

/* "k": and the literal text [len] (a number or null), or nothing when the line is full. */
static void put_literal(struct hpcti_jline *j, const char *k, const char *text, int len)
{
    size_t at = j->n;
    if (!key(j, k)) return;
    if (!room(j, (size_t)len))
        j->n = at;
    else
        put(j, text, (size_t)len);
}

void hpcti_jl_long(struct hpcti_jline *j, const char *k, long v)
{
    char tmp[32];
    put_literal(j, k, tmp, snprintf(tmp, sizeof tmp, "%ld", v));
}

void hpcti_jl_num(struct hpcti_jline *j, const char *k, double v)
{
    char tmp[40];
    put_literal(j, k, tmp,
                isfinite(v) ? snprintf(tmp, sizeof tmp, "%.9g", v)
                            : snprintf(tmp, sizeof tmp, "null"));
}

void hpcti_jl_end(struct hpcti_jline *j)
{
    if (j->full) put(j, ",\"truncated\":1", 14);
    put(j, "}\n", 2);
}
