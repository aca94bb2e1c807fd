/* validate.c: the one judgement of a checkpoint file, shared by resume (ckpt.c) and the
 * inspector (hpct_ckpt_file_meta, hence `hpctrain ckpt verify`), so both refuse the same
 * files. A checksum only says the bytes are the ones written; these checks say the file is
 * what the format says (doc/checkpoint-format.md, "Loading and verification"): every dataset
 * of the right type and shape, the optimizer state mirroring the parameters, every value in
 * its range, and the values agreeing with each other (a crafted or buggy writer's file). The
 * save path checks the same values before it writes (hpcti_ck_values_problem). */
#include "config.h"
#include "scan.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest step, epoch, cursor or batch accepted: 10^15 (beyond any run, far from overflow). */
#define VALUE_MAX 1000000000000000LL
/* Largest world size accepted (ranks). */
#define WORLD_MAX (1LL << 24)
/* Most optimizer state buffers per parameter (AdamW: 2, SGD with momentum: 1, plain SGD: 0). */
#define SLOTS_MAX 2

/* ---- values ------------------------------------------------------------------------------ */

/* The step in the file name (ckpt-<12 digits>[-keep].h5), or -1 for another name. */
static long long step_of_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    long long step;
    int used = 0;
    if (sscanf(base, "ckpt-%12lld%n", &step, &used) != 1 || used != 17) return -1;
    return !strcmp(base + used, ".h5") || !strcmp(base + used, "-keep.h5") ? step : -1;
}

/* 1 (why [n] says so) when v of the dataset called name is outside [lo, hi]. */
static int out_of_range(const char *name, int64_t v, long long lo, long long hi, char *why,
                        size_t n)
{
    if (v >= lo && v <= hi) return 0;
    snprintf(why, n, "%s is %lld, outside [%lld, %lld]", name, (long long)v, lo, hi);
    return 1;
}

/* Every value in its range (the scalars of /meta, optimizer/step and /slots). */
static const char *ranges_problem(const hpcti_ck_values_t *v, char *why, size_t n)
{
    if (out_of_range("meta/step", v->step, 0, VALUE_MAX, why, n) ||
        out_of_range("meta/epoch", v->epoch, 0, VALUE_MAX, why, n) ||
        out_of_range("meta/cursor_epoch", v->cursor_epoch, 0, VALUE_MAX, why, n) ||
        out_of_range("meta/cursor_step", v->cursor_step, 0, VALUE_MAX, why, n) ||
        out_of_range("meta/world_size", v->world_size, 1, WORLD_MAX, why, n) ||
        out_of_range("meta/global_batch", v->global_batch, 0, VALUE_MAX, why, n) ||
        out_of_range("meta/serial", v->serial, 0, HPCTI_CKPT_SERIAL_MAX, why, n) ||
        (v->has_spe &&
         out_of_range("meta/steps_per_epoch", v->steps_per_epoch, 1, VALUE_MAX, why, n)) ||
        (v->has_opt_step && out_of_range("optimizer/step", v->opt_step, 0, VALUE_MAX, why, n)) ||
        (v->has_slots && out_of_range("optimizer/slots", v->opt_slots, 0, SLOTS_MAX, why, n)))
        return why;
    if (!isfinite(v->saved_at) || v->saved_at < 0) {
        snprintf(why, n, "meta/saved_at is %g, not a time", v->saved_at);
        return why;
    }
    return NULL;
}

/* The data cursor against the step: with meta/steps_per_epoch S, the cursor (epoch E,
 * step C) has C in [0, S) and is where the next step reads, so step = E x S + C. */
static const char *cursor_problem(const hpcti_ck_values_t *v, char *why, size_t n)
{
    if (v->cursor_epoch != v->epoch) {
        snprintf(why, n,
                 "meta/cursor_epoch is %lld but meta/epoch is %lld (the data cursor's epoch is "
                 "the epoch)",
                 (long long)v->cursor_epoch, (long long)v->epoch);
        return why;
    }
    if (!v->has_spe) return NULL;
    long long spe = v->steps_per_epoch, at;
    if (v->cursor_step >= spe) {
        snprintf(why, n, "meta/cursor_step is %lld, outside [0, %lld) (meta/steps_per_epoch %lld)",
                 (long long)v->cursor_step, spe, spe);
        return why;
    }
    int over = __builtin_mul_overflow((long long)v->cursor_epoch, spe, &at) ||
               __builtin_add_overflow(at, (long long)v->cursor_step, &at);
    if (!over && at == v->step) return NULL;
    snprintf(why, n,
             "meta/step is %lld but the data cursor (meta/cursor_epoch %lld x "
             "meta/steps_per_epoch %lld + meta/cursor_step %lld) is at step %s%lld",
             (long long)v->step, (long long)v->cursor_epoch, spe, (long long)v->cursor_step,
             over ? "> " : "", over ? LLONG_MAX : at);
    return why;
}

const char *hpcti_ck_values_problem(const hpcti_ck_values_t *v, const char *path, char *why,
                                    size_t n)
{
    const char *p = ranges_problem(v, why, n);
    if (p) return p;
    long long named = path ? step_of_name(path) : -1;
    if (named >= 0 && named != v->step) {
        snprintf(why, n, "meta/step is %lld but the file name says step %lld", (long long)v->step,
                 named);
        return why;
    }
    if (v->has_opt_step && v->opt_step != v->step) {
        snprintf(why, n,
                 "optimizer/step is %lld but meta/step is %lld (both count the optimizer "
                 "updates applied)",
                 (long long)v->opt_step, (long long)v->step);
        return why;
    }
    if ((p = cursor_problem(v, why, n))) return p;
    uint64_t any = 0;
    for (int i = 0; i < HPCT_RNG_STATE_WORDS; i++) any |= v->rng[i];
    if (v->has_rng && !any) {
        snprintf(why, n, "rng/state is all zero (a generator that only ever returns 0)");
        return why;
    }
    return NULL;
}

/* Index of the first non-finite element of data [count] of dtype (F32 or F64), or -1. */
long long hpcti_ck_first_nonfinite(const void *data, int dtype, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        double x = dtype == HPCT_CKPT_F32 ? ((const float *)data)[k] : ((const double *)data)[k];
        if (!isfinite(x)) return (long long)k;
    }
    return -1;
}

int hpcti_ck_must_be_finite(const char *path, int dtype)
{
    return (dtype == HPCT_CKPT_F32 || dtype == HPCT_CKPT_F64) &&
           (!strncmp(path, "params/", 7) || !strncmp(path, "optimizer/", 10));
}

/* ---- the structure of a scanned file ------------------------------------------------------ */

/* A dataset the format names, with its type and shape. */
typedef struct rule {
    const char *name;
    hpct_ckpt_dtype_t dtype;
    int rank;        /* 0: scalar; 1: [count] */
    long long count; /* elements (strings: at most this many bytes) */
    int required;    /* 0: optional (older files lack it, or no optimizer) */
} rule_t;

static const rule_t fixed[] = {
    {"meta/step", HPCT_CKPT_I64, 0, 1, 1},
    {"meta/epoch", HPCT_CKPT_I64, 0, 1, 1},
    {"meta/cursor_epoch", HPCT_CKPT_I64, 0, 1, 1},
    {"meta/cursor_step", HPCT_CKPT_I64, 0, 1, 1},
    {"meta/world_size", HPCT_CKPT_I64, 0, 1, 1},
    {"meta/global_batch", HPCT_CKPT_I64, 0, 1, 1},
    {"meta/serial", HPCT_CKPT_I64, 0, 1, 1},
    {"meta/config_hash", HPCT_CKPT_U64, 0, 1, 1},
    {"meta/saved_at", HPCT_CKPT_F64, 0, 1, 1},
    {"meta/model", HPCT_CKPT_STRING, 0, HPCTI_CK_KEEP_BYTES, 1},
    {"meta/steps_per_epoch", HPCT_CKPT_I64, 0, 1, 0},
    {"rng/state", HPCT_CKPT_U64, 1, HPCT_RNG_STATE_WORDS, 1},
    {"optimizer/step", HPCT_CKPT_I64, 0, 1, 0},
    {"optimizer/slots", HPCT_CKPT_I64, 0, 1, 0},
};

static const char *type_name(hpct_ckpt_dtype_t d)
{
    static const char *names[] = {"float32", "float64", "int32",  "int64",
                                  "uint8",   "uint64",  "string", "other"};
    return d >= 0 && d <= HPCT_CKPT_OTHER ? names[d] : "other";
}

static hpcti_read_t corrupt(hpcti_ckerr_t *err, hpct_status_t s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static hpcti_read_t corrupt(hpcti_ckerr_t *err, hpct_status_t s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = s;
    return HPCTI_READ_CORRUPT;
}

/* "int64 scalar", "uint64 [4]", "a string of 19 bytes" into out [n] (rank 0 or 1). */
static void shape_name(char *out, size_t n, hpct_ckpt_dtype_t t, int rank, long long count)
{
    if (t == HPCT_CKPT_STRING && rank == 0)
        snprintf(out, n, "a string of %lld bytes", count);
    else if (rank == 0)
        snprintf(out, n, "%s scalar", type_name(t));
    else
        snprintf(out, n, "%s [%lld]", type_name(t), count);
}

/* d has the type and shape of rule r (strings: at most r->count bytes, and kept). */
static hpcti_read_t check_rule(const hpcti_ck_scan_t *s, const rule_t *r, const hpcti_ck_ds_t *d,
                               hpcti_ckerr_t *err)
{
    int str = r->dtype == HPCT_CKPT_STRING;
    int fits = str ? d->count <= (size_t)r->count : d->count == (size_t)r->count;
    if (d->dtype == r->dtype && d->rank == r->rank && fits && d->kept) return HPCTI_READ_OK;
    char want[64], got[64];
    shape_name(got, sizeof got, d->dtype, d->rank, (long long)d->count);
    if (str)
        snprintf(want, sizeof want, "a string of at most %lld bytes", r->count);
    else
        shape_name(want, sizeof want, r->dtype, r->rank, r->count);
    return corrupt(err, HPCT_ERR_FORMAT, "checkpoint %s: dataset %s is %s; the format has %s",
                   s->path, d->name, got, want);
}

/* Every dataset the format names by name: present when required, of its type and shape. */
static hpcti_read_t check_fixed(const hpcti_ck_scan_t *s, hpcti_ckerr_t *err)
{
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        const hpcti_ck_ds_t *d = hpcti_ck_scan_find(s, fixed[i].name);
        if (!d && fixed[i].required)
            return corrupt(err, HPCT_ERR_FORMAT,
                           "checkpoint %s has no dataset %s (every checkpoint has one)", s->path,
                           fixed[i].name);
        if (d && check_rule(s, &fixed[i], d, err)) return HPCTI_READ_CORRUPT;
    }
    return HPCTI_READ_OK;
}

/* The int64 value of a kept scalar dataset (checked by check_fixed). */
static int64_t kept_i64(const hpcti_ck_scan_t *s, const char *name, int *has)
{
    const hpcti_ck_ds_t *d = hpcti_ck_scan_find(s, name);
    int64_t v = 0;
    if (d && d->kept) memcpy(&v, d->kept, sizeof v);
    if (has) *has = d && d->kept;
    return v;
}

/* k of a dataset optimizer/slot<k>/<name> (its name after the slot into *rest), or -1. */
static long slot_of(const char *name, const char **rest)
{
    if (strncmp(name, "optimizer/slot", 14) != 0) return -1;
    char *end;
    long k = strtol(name + 14, &end, 10);
    char canon[24];
    snprintf(canon, sizeof canon, "%ld", k);
    if (*end != '/' || k < 0 || strncmp(name + 14, canon, (size_t)(end - (name + 14))) != 0 ||
        strlen(canon) != (size_t)(end - (name + 14)))
        return -1;
    *rest = end + 1;
    return k;
}

/* A dataset under params/, optimizer/slot<k>/ or extra/ has the type and shape the format
 * gives that group; an optimizer slot dataset mirrors its parameter. */
static hpcti_read_t check_member(const hpcti_ck_scan_t *s, const hpcti_ck_ds_t *d, long slots,
                                 hpcti_ckerr_t *err)
{
    const char *rest = NULL;
    long k = slot_of(d->name, &rest);
    int is_param = !strncmp(d->name, "params/", 7);
    if (!strncmp(d->name, "extra/", 6))
        return d->dtype <= HPCT_CKPT_U8 ? HPCTI_READ_OK
                                        : corrupt(err, HPCT_ERR_FORMAT,
                                                  "checkpoint %s: dataset %s is %s; extras are "
                                                  "float32, float64, int32, int64 or uint8",
                                                  s->path, d->name, type_name(d->dtype));
    if (!is_param && k < 0) {
        if (strncmp(d->name, "optimizer/", 10) || !strcmp(d->name, "optimizer/step") ||
            !strcmp(d->name, "optimizer/slots"))
            return HPCTI_READ_OK; /* meta/, rng/ and datasets of newer minor versions */
        return corrupt(err, HPCT_ERR_FORMAT,
                       "checkpoint %s: dataset %s is not one the format has under optimizer/ "
                       "(step, slots, slot<k>/<parameter>)",
                       s->path, d->name);
    }
    if (d->dtype != HPCT_CKPT_F32 || d->rank != 1)
        return corrupt(err, HPCT_ERR_FORMAT,
                       "checkpoint %s: dataset %s is %s %s; the format has "
                       "float32 [count]",
                       s->path, d->name, type_name(d->dtype), d->rank ? "[count]" : "scalar");
    if (is_param) return HPCTI_READ_OK;
    if (k >= slots)
        return corrupt(err, HPCT_ERR_FORMAT,
                       "checkpoint %s: dataset %s is in slot %ld but optimizer/slots is %ld",
                       s->path, d->name, k, slots);
    char param[600];
    snprintf(param, sizeof param, "params/%s", rest);
    const hpcti_ck_ds_t *p = hpcti_ck_scan_find(s, param);
    if (!p)
        return corrupt(err, HPCT_ERR_FORMAT,
                       "checkpoint %s: dataset %s has no parameter %s to belong to", s->path,
                       d->name, param);
    if (p->count != d->count)
        return corrupt(err, HPCT_ERR_FORMAT,
                       "checkpoint %s: dataset %s holds %zu elements but %s holds %zu", s->path,
                       d->name, d->count, param, p->count);
    return HPCTI_READ_OK;
}

/* Optimizer state comes with optimizer/step and optimizer/slots, or not at all. */
static hpcti_read_t check_optimizer(const hpcti_ck_scan_t *s, int has_step, int has_slots,
                                    hpcti_ckerr_t *err)
{
    if (has_step && has_slots) return HPCTI_READ_OK;
    for (int i = 0; i < s->num; i++)
        if (!strncmp(s->ds[i].name, "optimizer/", 10))
            return corrupt(err, HPCT_ERR_FORMAT,
                           "checkpoint %s has optimizer state (%s) but no dataset %s", s->path,
                           s->ds[i].name, has_step ? "optimizer/slots" : "optimizer/step");
    return HPCTI_READ_OK;
}

/* Every group member (check_member), and every slot holds a buffer for every parameter. */
static hpcti_read_t check_members(const hpcti_ck_scan_t *s, hpcti_ckerr_t *err)
{
    int has_step, has_slots;
    kept_i64(s, "optimizer/step", &has_step);
    long slots = (long)kept_i64(s, "optimizer/slots", &has_slots);
    if (check_optimizer(s, has_step, has_slots, err)) return HPCTI_READ_CORRUPT;
    if (has_slots && (slots < 0 || slots > SLOTS_MAX)) return HPCTI_READ_OK; /* the values say */
    long params = 0, in_slot[SLOTS_MAX] = {0};
    for (int i = 0; i < s->num; i++) {
        const hpcti_ck_ds_t *d = &s->ds[i];
        const char *rest;
        long k = slot_of(d->name, &rest);
        if (check_member(s, d, has_slots ? slots : 0, err)) return HPCTI_READ_CORRUPT;
        params += !strncmp(d->name, "params/", 7);
        if (k >= 0 && k < SLOTS_MAX) in_slot[k]++;
    }
    for (long k = 0; k < (has_slots ? slots : 0); k++)
        if (in_slot[k] != params)
            return corrupt(err, HPCT_ERR_FORMAT,
                           "checkpoint %s: optimizer/slot%ld holds %ld datasets for the %ld "
                           "parameters under params/",
                           s->path, k, in_slot[k], params);
    return HPCTI_READ_OK;
}

/* The values of the scanned file into v (check_fixed passed). */
static void scanned_values(const hpcti_ck_scan_t *s, hpcti_ck_values_t *v)
{
    memset(v, 0, sizeof *v);
    v->step = kept_i64(s, "meta/step", NULL);
    v->epoch = kept_i64(s, "meta/epoch", NULL);
    v->cursor_epoch = kept_i64(s, "meta/cursor_epoch", NULL);
    v->cursor_step = kept_i64(s, "meta/cursor_step", NULL);
    v->world_size = kept_i64(s, "meta/world_size", NULL);
    v->global_batch = kept_i64(s, "meta/global_batch", NULL);
    v->serial = kept_i64(s, "meta/serial", NULL);
    v->steps_per_epoch = kept_i64(s, "meta/steps_per_epoch", &v->has_spe);
    v->opt_step = kept_i64(s, "optimizer/step", &v->has_opt_step);
    v->opt_slots = kept_i64(s, "optimizer/slots", &v->has_slots);
    memcpy(&v->saved_at, hpcti_ck_scan_find(s, "meta/saved_at")->kept, sizeof v->saved_at);
    memcpy(v->rng, hpcti_ck_scan_find(s, "rng/state")->kept, sizeof v->rng);
    v->has_rng = 1;
}

/* The first dataset that failed its own checks (type, storage, checksum, finite values). */
static hpcti_read_t check_datasets(const hpcti_ck_scan_t *s, hpcti_ckerr_t *err)
{
    if (s->num >= HPCTI_CK_MAX_DATASETS)
        return corrupt(err, HPCT_ERR_FORMAT, "checkpoint %s holds more than %d datasets", s->path,
                       HPCTI_CK_MAX_DATASETS);
    for (int i = 0; i < s->num; i++)
        if (s->ds[i].verdict)
            return corrupt(err, s->ds[i].verdict, "%s",
                           s->ds[i].detail ? s->ds[i].detail : "a damaged dataset");
    return HPCTI_READ_OK;
}

hpcti_read_t hpcti_ck_validate(const hpcti_ck_scan_t *s, hpcti_ckerr_t *err)
{
    if (s->schema < HPCTI_CKPT_SCHEMA_OLDEST || s->schema > HPCTI_CKPT_SCHEMA)
        return corrupt(err, HPCT_ERR_FORMAT,
                       "checkpoint %s: schema_version is %d, this library "
                       "reads %d to %d",
                       s->path, s->schema, HPCTI_CKPT_SCHEMA_OLDEST, HPCTI_CKPT_SCHEMA);
    if (check_datasets(s, err) || check_fixed(s, err) || check_members(s, err))
        return HPCTI_READ_CORRUPT;
    hpcti_ck_values_t v;
    scanned_values(s, &v);
    char why[700];
    const char *bad = hpcti_ck_values_problem(&v, s->path, why, sizeof why);
    if (!bad) return HPCTI_READ_OK;
    return corrupt(err, HPCT_ERR_FORMAT, "checkpoint %s: %s", s->path, bad);
}
