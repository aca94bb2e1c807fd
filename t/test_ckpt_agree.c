/* test_ckpt_agree.c: `hpctrain ckpt verify` and resume give every checkpoint the same verdict
 * (issue 37). A real small training run (the 4-8-3 MLP of t/lib/ckpt_make, SGD with
 * momentum, global batch 12, 6 steps per epoch) saves steps 10 and 20. Then 783 crafted
 * copies of step 20 (values rewritten with their checksums recomputed, datasets of other
 * types, shapes and storage, missing, added, linked or damaged, whole files broken) are each
 * judged twice: by verify (the calls `hpctrain ckpt verify` makes: hpct_ckpt_file_open and
 * hpct_ckpt_file_meta; the program itself too for the report's cases and every 32nd, 47 in
 * all, as it takes 0.1 s a run), and by resume (hpct_ckpt_load_latest with the run's global
 * batch and steps per epoch, as hpct_train sets them) from a directory holding the intact
 * step 10 beside it. Each case has the verdict the format gives it (doc/checkpoint-format.md):
 *   ok        verify passes; resume loads step 20, bit for bit what the file holds;
 *   corrupt   verify exits 3 naming the file; resume falls back to step 10 (bit for bit),
 *             moves the file aside to .rejected and names it;
 *   settings  the file is sound but not this run's (global batch, steps per epoch, model,
 *             optimizer, configuration hash): verify passes; resume stops with an error
 *             naming the file (and both values), loads nothing and moves nothing.
 * One test point per case, then the counts; the cases of the report are named. */
#include "config.h"
#include "lib/ckpt_craft.h"
#include "lib/ckpt_util.h"
#include "../lib/ckpt/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define BATCH      12 /* the global batch (one rank) */
#define EPOCH      6  /* steps per epoch */
#define OLD        10 /* the intact fall-back checkpoint */
#define NEW        20 /* the step of the crafted copies: cursor (3, 2) */
#define HASH       0x5eed5eed12345678ULL
#define MAX_CASES  1024
#define HUGE_COUNT ((hsize_t)1 << 40) /* elements a crafted dataset claims */

typedef enum { OK, CORRUPT, SETTINGS, WRONG } verdict_t;
static const char *verdict_names[] = {"ok", "corrupt", "settings", "WRONG"};

struct craft_case;
typedef int (*op_fn)(const char *file, const struct craft_case *c);

/* One crafted checkpoint: how to make it from the good step 20 and the verdict it deserves. */
typedef struct craft_case {
    char tag[112];
    op_fn op;
    const char *name, *name2; /* datasets the op works on */
    int kind;                 /* what replaces a dataset (kinds below) */
    int64_t v[4];             /* values (op_i64s: names[k] set to v[k]) */
    const char *names[4];     /* up to 4 int64 scalar datasets (op_i64s) */
    double x;                 /* a float value */
    long at;                  /* an element index (-1: the last) */
    verdict_t want;           /* what the format says */
    const char *needle;       /* a text resume's error must hold (settings), or NULL */
    const char *report;       /* the case as the report names it, or NULL */
} craft_case_t;

static craft_case_t cases[MAX_CASES];
static int ncases;
static char dir[1024], newest[1100], oldest[1100], good_new[1100], good_old[1100];

static craft_case_t *add_case(op_fn op, verdict_t want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static craft_case_t *add_case(op_fn op, verdict_t want, const char *fmt, ...)
{
    if (ncases == MAX_CASES) tap_bail("more than %d cases", MAX_CASES);
    craft_case_t *c = &cases[ncases++];
    memset(c, 0, sizeof *c);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->tag, sizeof c->tag, fmt, ap);
    va_end(ap);
    c->op = op, c->want = want, c->at = -1;
    return c;
}

/* ---- the good checkpoints: a real training run ------------------------------------------ */

typedef struct run {
    hpct_ctx_t ctx;
    hpct_model_t model;
    hpct_params_t params;
    hpct_optimizer_t opt;
} run_t;

static void run_create(run_t *r)
{
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    if (hpct_ctx_create(&cfg, &r->ctx) || hpct_model_create(r->ctx, 4, &r->model) ||
        hpct_model_add_dense(r->model, 8, HPCT_ACT_RELU, 0) ||
        hpct_model_add_dense(r->model, 3, HPCT_ACT_IDENTITY, 0) ||
        hpct_model_build(r->model, BATCH) || hpct_model_params(r->model, &r->params))
        tap_bail("model: %s", r->ctx ? hpct_last_error(r->ctx) : "no context");
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.lr = 0.1f, oc.momentum = 0.9f;
    if (hpct_optimizer_create(r->params, &oc, &r->opt))
        tap_bail("optimizer: %s", hpct_last_error(r->ctx));
}

static hpct_ckpt_t open_dir(run_t *r)
{
    hpct_ckpt_config_t cc = HPCT_CKPT_CONFIG_INITIALIZER;
    cc.directory = dir;
    cc.keep_last = 100;
    cc.config_hash = HASH;
    hpct_ckpt_t ck;
    if (hpct_ckpt_open(r->ctx, &cc, &ck)) tap_bail("open %s: %s", dir, hpct_last_error(r->ctx));
    hpcti_ckpt_set_run(ck, BATCH, EPOCH); /* as hpct_train sets it */
    return ck;
}

/* Train on a fixed batch x [12, 4], labels [12]; save after steps OLD and NEW. */
static void train_and_save(run_t *r)
{
    float x[BATCH * 4], loss;
    int32_t y[BATCH];
    for (int i = 0; i < BATCH; i++) {
        for (int j = 0; j < 4; j++) x[i * 4 + j] = (float)sin(0.7 * i + 1.3 * j);
        y[i] = i % 3;
    }
    hpct_ckpt_t ck = open_dir(r);
    for (long done = 0; done < NEW;) {
        if (hpct_model_loss_grad(r->model, x, y, BATCH, 0, &loss) || hpct_optimizer_step(r->opt))
            tap_bail("training step: %s", hpct_last_error(r->ctx));
        if (++done % OLD) continue;
        hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
        m.step = done, m.epoch = m.cursor_epoch = done / EPOCH, m.cursor_step = done % EPOCH;
        m.world_size = 1, m.global_batch = BATCH, m.model = "mlp 4-8(relu)-3 softmax-ce, sgd";
        if (hpct_ckpt_save(ck, r->params, r->opt, &m))
            tap_bail("save: %s", hpct_last_error(r->ctx));
    }
    hpct_ckpt_close(ck);
}

/* ---- files ---------------------------------------------------------------------------------- */

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t n;
    if (!in || !out) tap_bail("cannot copy %s to %s", from, to);
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) tap_bail("cannot write %s", to);
    fclose(in);
    if (fclose(out)) tap_bail("cannot write %s", to);
}

/* The directory as the run left it: steps 10 and 20 intact, nothing else but the lock. */
static void fresh_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[1400];
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, "ckpt-", 5) || !strcmp(e->d_name, "latest")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d) closedir(d);
    copy_file(good_old, oldest);
    copy_file(good_new, newest);
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* ---- the ops: each makes one crafted file from the good step 20 ---------------------------- */

/* Up to four int64 scalars set (names[k] to v[k]), checksums recomputed. */
static int op_i64s(const char *file, const craft_case_t *c)
{
    for (int k = 0; k < 4 && c->names[k]; k++)
        if (craft_i64(file, c->names[k], c->v[k])) return -1;
    return 0;
}

/* Kinds of dataset that replace (or are added as) c->name; payloads from the original. */
enum {
    K_I64,     /* int64 scalar */
    K_U64,     /* uint64 scalar */
    K_F64,     /* float64 scalar */
    K_F32,     /* float32 scalar */
    K_I32,     /* int32 scalar */
    K_U8,      /* uint8 scalar */
    K_I64_1,   /* int64 [1] */
    K_I64_2,   /* int64 [2] */
    K_I64_11,  /* int64 [1, 1] */
    K_U64_3,   /* uint64 [3] */
    K_U64_4,   /* uint64 [4] */
    K_U64_5,   /* uint64 [5] */
    K_F64_4,   /* float64 [4] */
    K_STR,     /* a fixed-length string "7" */
    K_VSTR,    /* a variable-length string */
    K_CMPD,    /* compound {int32, float64} scalar */
    K_VLEN,    /* variable-length sequence of float32, scalar */
    K_F32_N,   /* float32 [n]: the original's values (params) */
    K_F64_N,   /* float64 [n] */
    K_I32_N,   /* int32 [n] */
    K_F32_N1,  /* float32 [n, 1] */
    K_F32_M,   /* float32 [n + 1] */
    K_CHUNK,   /* the original, stored chunked */
    K_COMPACT, /* the original, stored compact */
    K_HUGE,    /* float32 [2^40], never written */
    K_UNSET,   /* float32 [3], never written (no storage) */
    K_STR_N,   /* a string of c->at bytes with its NUL */
    K_STR_2,   /* two fixed-length strings [2] */
    K_KINDS
};
static const char *kind_names[K_KINDS] = {"int64 scalar",      "uint64 scalar",
                                          "float64 scalar",    "float32 scalar",
                                          "int32 scalar",      "uint8 scalar",
                                          "int64 [1]",         "int64 [2]",
                                          "int64 [1,1]",       "uint64 [3]",
                                          "uint64 [4]",        "uint64 [5]",
                                          "float64 [4]",       "string \"7\"",
                                          "variable string",   "compound",
                                          "vlen float32",      "float32 [n]",
                                          "float64 [n]",       "int32 [n]",
                                          "float32 [n,1]",     "float32 [n+1]",
                                          "chunked",           "compact",
                                          "float32 [2^40]",    "unwritten float32 [3]",
                                          "string of n bytes", "string [2]"};

/* The original values of dataset name of the good file: as float64 and as uint64 [n]. */
typedef struct orig {
    double d[64];
    uint64_t u[64];
    float f[64];
    size_t n;
} orig_t;

static void read_orig(const char *name, orig_t *o)
{
    memset(o, 0, sizeof *o);
    hid_t fid = H5Fopen(good_new, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = fid < 0 ? -1 : H5Dopen2(fid, name, H5P_DEFAULT);
    hid_t sp = d < 0 ? -1 : H5Dget_space(d);
    hssize_t n = sp < 0 ? 0 : H5Sget_simple_extent_npoints(sp);
    o->n = n > 0 && n <= 64 ? (size_t)n : 0;
    if (o->n) {
        H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, o->d);
        H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, o->u);
        H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, o->f);
    }
    H5Eclear2(H5E_DEFAULT);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    if (fid >= 0) H5Fclose(fid);
}

/* Payload buffers of a kind (kept alive until the dataset is written). */
typedef struct payload {
    union {
        int64_t i64[64];
        uint64_t u64[64];
        double f64[64];
        float f32[130];
        int32_t i32[64];
        uint8_t u8[8];
        char s[8192];
    } b;
    struct {
        int32_t a;
        double x;
    } cmpd;
    hvl_t vl;
    const char *vs;
    hid_t own[2]; /* types and properties created for it */
} payload_t;

static void numeric(craft_ds_t *c, hid_t ft, hid_t mt, int rank, hsize_t n0, hsize_t n1,
                    const void *data, size_t bytes)
{
    *c = (craft_ds_t){ft, mt, rank, {n0, n1}, data, bytes, 1, H5P_DEFAULT};
}

/* The scalar kinds: the original's first value converted. */
static int small_kind(int kind, const orig_t *o, payload_t *p, craft_ds_t *c)
{
    switch (kind) {
    case K_I64:
        p->b.i64[0] = (int64_t)o->u[0];
        return numeric(c, H5T_STD_I64LE, H5T_NATIVE_INT64, 0, 0, 0, &p->b, 8), 0;
    case K_U64:
        p->b.u64[0] = o->u[0];
        return numeric(c, H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, 0, 0, &p->b, 8), 0;
    case K_F64:
        p->b.f64[0] = o->d[0];
        return numeric(c, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, 0, 0, &p->b, 8), 0;
    case K_F32:
        p->b.f32[0] = (float)o->d[0];
        return numeric(c, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 0, 0, 0, &p->b, 4), 0;
    case K_I32:
        p->b.i32[0] = (int32_t)o->u[0];
        return numeric(c, H5T_STD_I32LE, H5T_NATIVE_INT32, 0, 0, 0, &p->b, 4), 0;
    case K_U8:
        p->b.u8[0] = (uint8_t)o->u[0];
        return numeric(c, H5T_STD_U8LE, H5T_NATIVE_UINT8, 0, 0, 0, &p->b, 1), 0;
    default: return -1;
    }
}

/* int64 and uint64 arrays: the original's words, repeated to fill. */
static int array_kind(int kind, const orig_t *o, payload_t *p, craft_ds_t *c)
{
    static const hsize_t counts[] = {[K_I64_1] = 1, [K_I64_2] = 2, [K_I64_11] = 1, [K_U64_3] = 3,
                                     [K_U64_4] = 4, [K_U64_5] = 5, [K_F64_4] = 4};
    hsize_t n = counts[kind];
    for (hsize_t k = 0; k < n; k++) {
        p->b.u64[k] = o->u[o->n ? k % o->n : 0] | (kind >= K_U64_3 ? 1 : 0);
        if (kind == K_F64_4) p->b.f64[k] = (double)p->b.u64[k];
    }
    int f64 = kind == K_F64_4, i64 = kind <= K_I64_11;
    numeric(c,
            f64   ? H5T_IEEE_F64LE
            : i64 ? H5T_STD_I64LE
                  : H5T_STD_U64LE,
            f64   ? H5T_NATIVE_DOUBLE
            : i64 ? H5T_NATIVE_INT64
                  : H5T_NATIVE_UINT64,
            kind == K_I64_11 ? 2 : 1, n, 1, &p->b, 8 * n);
    return 0;
}

/* Strings, compound and variable-length kinds. */
static int odd_kind(int kind, long at, payload_t *p, craft_ds_t *c)
{
    hid_t t = -1;
    if (kind == K_STR || kind == K_STR_N || kind == K_STR_2) {
        size_t len = kind == K_STR_N ? (size_t)at : 2;
        memset(p->b.s, 'm', len);
        p->b.s[len - 1] = '\0', p->b.s[len] = '\0';
        if (kind == K_STR) memcpy(p->b.s, "7", 2);
        t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, len);
        numeric(c, t, t, kind == K_STR_2, 2, 1, p->b.s, kind == K_STR_2 ? 2 * len : len);
    } else if (kind == K_VSTR) {
        p->vs = "variable";
        t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        numeric(c, t, t, 0, 0, 0, &p->vs, sizeof p->vs);
    } else if (kind == K_CMPD) {
        p->cmpd.a = 7, p->cmpd.x = 2.5;
        t = H5Tcreate(H5T_COMPOUND, sizeof p->cmpd);
        H5Tinsert(t, "a", HOFFSET(__typeof__(p->cmpd), a), H5T_NATIVE_INT32);
        H5Tinsert(t, "x", HOFFSET(__typeof__(p->cmpd), x), H5T_NATIVE_DOUBLE);
        numeric(c, t, t, 0, 0, 0, &p->cmpd, sizeof p->cmpd);
    } else if (kind == K_VLEN) {
        p->b.f32[0] = NAN, p->b.f32[1] = 1;
        p->vl = (hvl_t){2, p->b.f32};
        t = H5Tvlen_create(H5T_NATIVE_FLOAT);
        numeric(c, t, t, 0, 0, 0, &p->vl, sizeof p->vl);
    } else {
        return -1;
    }
    p->own[0] = t;
    return 0;
}

/* Kinds made from a float32 [n] original (a parameter or an optimizer state). */
static int float_kind(int kind, const orig_t *o, payload_t *p, craft_ds_t *c)
{
    hsize_t n = o->n;
    for (hsize_t k = 0; k < n + 1; k++) p->b.f32[k] = k < n ? o->f[k] : 0.25f;
    numeric(c, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, n, 1, p->b.f32, 4 * n);
    if (kind == K_F64_N) {
        for (hsize_t k = 0; k < n; k++) p->b.f64[k] = o->f[k];
        numeric(c, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, n, 1, p->b.f64, 8 * n);
    } else if (kind == K_I32_N) {
        for (hsize_t k = 0; k < n; k++) p->b.i32[k] = (int32_t)(o->f[k] * 100);
        numeric(c, H5T_STD_I32LE, H5T_NATIVE_INT32, 1, n, 1, p->b.i32, 4 * n);
    } else if (kind == K_F32_N1) {
        c->rank = 2;
    } else if (kind == K_F32_M) {
        c->dims[0] = n + 1, c->bytes = 4 * (n + 1);
    } else if (kind == K_CHUNK || kind == K_COMPACT) {
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        if (kind == K_CHUNK) H5Pset_chunk(dcpl, 1, (hsize_t[]){n > 2 ? n / 2 : 1});
        if (kind == K_COMPACT) H5Pset_layout(dcpl, H5D_COMPACT);
        c->dcpl = p->own[1] = dcpl;
    } else if (kind == K_HUGE || kind == K_UNSET) {
        c->dims[0] = kind == K_HUGE ? HUGE_COUNT : 3, c->data = NULL, c->bytes = 0;
    } else if (kind != K_F32_N) {
        return -1;
    }
    return 0;
}

static int make_kind(int kind, const char *orig_name, long at, payload_t *p, craft_ds_t *c)
{
    orig_t o;
    read_orig(orig_name, &o);
    memset(p, 0, sizeof *p);
    p->own[0] = p->own[1] = -1;
    if (kind <= K_U8) return small_kind(kind, &o, p, c);
    if (kind <= K_F64_4) return array_kind(kind, &o, p, c);
    if (kind <= K_VLEN || kind >= K_STR_N) return odd_kind(kind, at, p, c);
    return float_kind(kind, &o, p, c);
}

static void free_kind(payload_t *p)
{
    if (p->own[0] >= 0) H5Tclose(p->own[0]);
    if (p->own[1] >= 0) H5Pclose(p->own[1]);
}

/* c->name replaced by a dataset of c->kind (payload from c->name2 or c->name). */
static int op_replace(const char *file, const craft_case_t *c)
{
    payload_t p;
    craft_ds_t ds;
    int rc = make_kind(c->kind, c->name2 ? c->name2 : c->name, c->at, &p, &ds);
    if (!rc) rc = craft_replace(file, c->name, &ds);
    free_kind(&p);
    return rc;
}

/* c->name and c->name2 replaced by the same kind (a parameter and its optimizer state). */
static int op_replace2(const char *file, const craft_case_t *c)
{
    craft_case_t one = *c;
    one.name2 = NULL;
    if (op_replace(file, &one)) return -1;
    one.name = c->name2;
    return op_replace(file, &one);
}

static int op_delete(const char *file, const craft_case_t *c)
{
    return craft_delete(file, c->name) || (c->name2 && craft_delete(file, c->name2)) ? -1 : 0;
}

/* Element c->at (-1: the last) of the float32 dataset c->name set to c->x. */
static int op_element(const char *file, const craft_case_t *c)
{
    float v[64];
    long n = craft_read_f32(file, c->name, v, 64);
    if (n <= 0) return -1;
    long k = c->at < 0 ? n - 1 : c->at;
    v[k] = (float)c->x;
    return craft_value(file, c->name, v, (size_t)n * 4);
}

/* The crc32c attribute of c->name: kind 0 a wrong value, 1 missing, 2 uint64, 3 float64,
 * 4 an array of two, 5 a string. */
static int op_crc(const char *file, const craft_case_t *c)
{
    uint64_t wrong = 12345;
    double f = 1.0;
    if (c->kind == 0) return craft_attr_value(file, c->name, "crc32c", H5T_STD_U32LE, &wrong);
    if (c->kind == 1) return craft_attr_value(file, c->name, "crc32c", 0, NULL);
    if (c->kind == 2) return craft_attr_value(file, c->name, "crc32c", H5T_STD_U64LE, &wrong);
    if (c->kind == 3) return craft_attr_value(file, c->name, "crc32c", H5T_NATIVE_DOUBLE, &f);
    hid_t fid = craft_open(file), o = fid < 0 ? -1 : H5Oopen(fid, c->name, H5P_DEFAULT);
    hsize_t two = 2;
    hid_t t = c->kind == 4 ? H5Tcopy(H5T_STD_U32LE) : H5Tcopy(H5T_C_S1);
    if (c->kind == 5) H5Tset_size(t, 8);
    hid_t sp = c->kind == 4 ? H5Screate_simple(1, &two, NULL) : H5Screate(H5S_SCALAR);
    char bytes[16] = "crc32c!";
    int rc = o < 0 || H5Adelete(o, "crc32c") < 0;
    hid_t a = rc ? -1 : H5Acreate2(o, "crc32c", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    rc = rc || a < 0 || H5Awrite(a, t, bytes) < 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp), H5Tclose(t);
    if (o >= 0) H5Oclose(o);
    return (fid >= 0 && H5Fclose(fid) < 0) || rc ? -1 : 0;
}

/* One byte in the middle of c->name's data XOR 0x10 (its checksum then fails). */
static int op_flip(const char *file, const craft_case_t *c)
{
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = f < 0 ? -1 : H5Dopen2(f, c->name, H5P_DEFAULT);
    haddr_t off = d < 0 ? HADDR_UNDEF : H5Dget_offset(d);
    hsize_t bytes = d < 0 ? 0 : H5Dget_storage_size(d);
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    int fd = off == HADDR_UNDEF ? -1 : open(file, O_RDWR);
    unsigned char b;
    off_t at = (off_t)(off + bytes / 2);
    int rc = fd < 0 || pread(fd, &b, 1, at) != 1 || (b ^= 0x10, pwrite(fd, &b, 1, at) != 1);
    if (fd >= 0) close(fd);
    return rc ? -1 : 0;
}

/* The whole file: kind 0 truncated to c->x of its size, 1 a flipped signature byte, 2 a
 * damaged superblock version, 3 garbage, 4 empty. */
static int op_file(const char *file, const craft_case_t *c)
{
    long size = file_size(file);
    if (c->kind == 0) return truncate(file, (off_t)(size * c->x));
    if (c->kind == 4) return truncate(file, 0);
    int fd = open(file, O_RDWR);
    if (fd < 0) return -1;
    unsigned char b = 0;
    int rc = 0;
    if (c->kind == 3)
        for (long k = 0; k < size && !rc; k++)
            b = (unsigned char)(k * 7919 % 251), rc = pwrite(fd, &b, 1, k) != 1;
    else
        rc = pread(fd, &b, 1, c->kind == 1 ? 1 : 8) != 1 ||
             (b ^= c->kind == 1 ? 0x20 : 0x07, pwrite(fd, &b, 1, c->kind == 1 ? 1 : 8) != 1);
    close(fd);
    return rc ? -1 : 0;
}

/* Another HDF5 file in its place: kind 0 the 1.8 format without schema_version, 1 the
 * pre-1.8 format with one. */
static int op_foreign(const char *file, const craft_case_t *c)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, c->kind ? H5F_LIBVER_EARLIEST : H5F_LIBVER_V18, H5F_LIBVER_LATEST);
    hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f < 0) return -1;
    int32_t one = 1;
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a =
        c->kind ? H5Acreate2(f, "schema_version", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (a >= 0) H5Awrite(a, H5T_NATIVE_INT32, &one), H5Aclose(a);
    H5Sclose(sp);
    return H5Fclose(f) < 0 ? -1 : 0;
}

/* Root attribute c->name: kind 0 an int32 c->v[0], 1 missing, 2 an int64, 3 a string. */
static int op_root_attr(const char *file, const craft_case_t *c)
{
    int32_t v32 = (int32_t)c->v[0];
    int64_t v64 = c->v[0];
    if (c->kind == 1) return craft_attr_value(file, "/", c->name, 0, NULL);
    if (c->kind == 2) return craft_attr_value(file, "/", c->name, H5T_NATIVE_INT64, &v64);
    if (c->kind == 0) return craft_attr_value(file, "/", c->name, H5T_NATIVE_INT32, &v32);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 6);
    int rc = craft_attr_value(file, "/", c->name, t, "9.9.9");
    H5Tclose(t);
    return rc;
}

/* c->name becomes a soft link (kind 0) to a copy inside the file, an external link (1) to
 * the same dataset in step 10, or (2) a dataset whose bytes live in a raw file beside it. */
static int op_link(const char *file, const craft_case_t *c)
{
    hid_t fid = craft_open(file), old = H5Fopen(oldest, H5F_ACC_RDONLY, H5P_DEFAULT);
    int rc = fid < 0 || old < 0;
    if (!rc && c->kind == 0)
        rc = H5Ocopy(fid, c->name, fid, "shadow", H5P_DEFAULT, H5P_DEFAULT) < 0 ||
             H5Ldelete(fid, c->name, H5P_DEFAULT) < 0 ||
             H5Lcreate_soft("/shadow", fid, c->name, H5P_DEFAULT, H5P_DEFAULT) < 0;
    else if (!rc && c->kind == 1)
        rc = H5Ldelete(fid, c->name, H5P_DEFAULT) < 0 ||
             H5Lcreate_external(oldest, c->name, fid, c->name, H5P_DEFAULT, H5P_DEFAULT) < 0;
    else if (!rc && c->kind == 2)
        rc = H5Lcreate_hard(fid, c->name, fid, c->name2, H5P_DEFAULT, H5P_DEFAULT) < 0;
    if (old >= 0) H5Fclose(old);
    return (fid >= 0 && H5Fclose(fid) < 0) || rc ? -1 : 0;
}

/* c->name's data stored in an external raw file beside it (its valid checksum kept). */
static int op_extstore(const char *file, const craft_case_t *c)
{
    char raw[1200];
    snprintf(raw, sizeof raw, "%s.raw", file);
    float v[64];
    long n = craft_read_f32(file, c->name, v, 64);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(dcpl, raw, 0, (hsize_t)n * 4);
    craft_ds_t ds = {
        H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, {(hsize_t)n, 1}, v, (size_t)n * 4, 1, dcpl};
    int rc = n <= 0 || craft_replace(file, c->name, &ds);
    H5Pclose(dcpl);
    return rc ? -1 : 0;
}

/* The optimizer made AdamW-like: optimizer/slot1 a copy of slot0, optimizer/slots 2. */
static int op_two_slots(const char *file, const craft_case_t *c)
{
    (void)c;
    hid_t fid = craft_open(file);
    int rc = fid < 0 ||
             H5Ocopy(fid, "optimizer/slot0", fid, "optimizer/slot1", H5P_DEFAULT, H5P_DEFAULT) < 0;
    if (fid >= 0 && H5Fclose(fid) < 0) rc = 1;
    return rc || craft_i64(file, "optimizer/slots", 2) ? -1 : 0;
}

static int op_add_f32(const char *file, const struct craft_case *c);

/* ---- the cases ------------------------------------------------------------------------------ */

/* The base values of step 20 and what the format makes of a file holding v (the oracle). */
typedef struct vals {
    int64_t step, epoch, ce, cs, world, batch, serial, spe, opt_step, slots;
} vals_t;
static const vals_t base = {NEW, NEW / EPOCH, NEW / EPOCH, NEW % EPOCH, 1, BATCH, 2, EPOCH, NEW, 1};
static const char *scalar_names[] = {
    "meta/step",       "meta/epoch",        "meta/cursor_epoch", "meta/cursor_step",
    "meta/world_size", "meta/global_batch", "meta/serial",       "meta/steps_per_epoch",
    "optimizer/step",  "optimizer/slots"};
#define MAXV 1000000000000000LL

static int64_t *field(vals_t *v, int i)
{
    return &v->step + i;
}

static int in(int64_t x, int64_t lo, int64_t hi)
{
    return x >= lo && x <= hi;
}

static verdict_t oracle(const vals_t *v)
{
    if (!in(v->step, 0, MAXV) || !in(v->epoch, 0, MAXV) || !in(v->ce, 0, MAXV) ||
        !in(v->cs, 0, MAXV) || !in(v->world, 1, 1 << 24) || !in(v->batch, 0, MAXV) ||
        !in(v->serial, 0, MAXV) || !in(v->spe, 1, MAXV) || !in(v->opt_step, 0, MAXV) ||
        !in(v->slots, 0, 2))
        return CORRUPT;
    long long at;
    if (v->step != NEW || v->opt_step != v->step || v->ce != v->epoch || v->cs >= v->spe ||
        __builtin_mul_overflow((long long)v->ce, (long long)v->spe, &at) || at + v->cs != v->step ||
        v->slots != 1) /* the file holds optimizer/slot0 only */
        return CORRUPT;
    return v->batch != BATCH || v->spe != EPOCH ? SETTINGS : OK;
}

/* Every int64 scalar of the format set to each of these values (200 cases). */
static void scalar_cases(void)
{
    static const int64_t values[] = {INT64_MIN,
                                     -MAXV - 1,
                                     -1,
                                     0,
                                     1,
                                     2,
                                     3,
                                     5,
                                     6,
                                     7,
                                     12,
                                     19,
                                     21,
                                     1000,
                                     1 << 24,
                                     (1 << 24) + 1,
                                     MAXV,
                                     MAXV + 1,
                                     (int64_t)1 << 62,
                                     INT64_MAX};
    for (int f = 0; f < 10; f++)
        for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
            vals_t v = base;
            *field(&v, f) = values[k];
            verdict_t want = oracle(&v);
            craft_case_t *c =
                add_case(op_i64s, want, "%s = %lld", scalar_names[f], (long long)values[k]);
            c->names[0] = scalar_names[f], c->v[0] = values[k];
            if (want == SETTINGS && f == 5) c->needle = "global batch";
        }
}

/* Several scalars at once: the epoch and its cursor moved together; a step other than the
 * file name's with the optimizer agreeing; other steps per epoch with a consistent cursor. */
static void combined_cases(void)
{
    static const int64_t epochs[] = {0, 1, 2, 3, 4, 7, 1000, MAXV};
    for (size_t k = 0; k < sizeof epochs / sizeof epochs[0]; k++) {
        vals_t v = base;
        v.epoch = v.ce = epochs[k];
        craft_case_t *c = add_case(op_i64s, oracle(&v), "meta/epoch = meta/cursor_epoch = %lld",
                                   (long long)epochs[k]);
        c->names[0] = "meta/epoch", c->names[1] = "meta/cursor_epoch";
        c->v[0] = c->v[1] = epochs[k];
    }
    static const int64_t steps[] = {0, 10, 19, 21};
    for (size_t k = 0; k < 4; k++) {
        craft_case_t *c =
            add_case(op_i64s, CORRUPT, "meta/step = optimizer/step = %lld", (long long)steps[k]);
        c->names[0] = "meta/step", c->names[1] = "optimizer/step", c->v[0] = c->v[1] = steps[k];
    }
    static const int64_t spe[][3] = {{1, 20, 0}, {2, 10, 0},  {4, 5, 0},     {5, 4, 0},
                                     {7, 2, 6},  {9, 2, 2},   {10, 2, 0},    {19, 1, 1},
                                     {20, 1, 0}, {21, 0, 20}, {1000, 0, 20}, {MAXV, 0, 20}};
    for (size_t k = 0; k < sizeof spe / sizeof spe[0]; k++) {
        craft_case_t *c =
            add_case(op_i64s, SETTINGS, "steps per epoch %lld with a cursor (%lld, %lld) that fits",
                     (long long)spe[k][0], (long long)spe[k][1], (long long)spe[k][2]);
        c->names[0] = "meta/steps_per_epoch", c->names[1] = "meta/epoch";
        c->names[2] = "meta/cursor_epoch", c->names[3] = "meta/cursor_step";
        c->v[0] = spe[k][0], c->v[1] = c->v[2] = spe[k][1], c->v[3] = spe[k][2];
        c->needle = "steps per epoch";
    }
    craft_case_t *c = add_case(op_i64s, SETTINGS, "meta/config_hash of another configuration");
    c->names[0] = "meta/config_hash", c->v[0] = 0x1234;
    c->needle = "configuration hash";
}

/* The cases (finding 2 and 3) by their names. */
static void reporter_cases(void)
{
    static const struct {
        const char *name;
        int64_t v;
        verdict_t want;
    } one[] = {{"meta/cursor_epoch", 7, CORRUPT},    {"meta/cursor_epoch", 0, CORRUPT},
               {"meta/cursor_epoch", 1000, CORRUPT}, {"meta/cursor_epoch", MAXV, CORRUPT},
               {"meta/cursor_step", 0, CORRUPT},     {"meta/cursor_step", 7, CORRUPT},
               {"optimizer/step", 19, CORRUPT},      {"meta/epoch", 7, CORRUPT},
               {"meta/cursor_step", 1000, CORRUPT},  {"optimizer/slots", -1, CORRUPT},
               {"meta/global_batch", 7, SETTINGS}};
    for (size_t k = 0; k < sizeof one / sizeof one[0]; k++) {
        craft_case_t *c =
            add_case(op_i64s, one[k].want, "report: %s = %lld", one[k].name, (long long)one[k].v);
        c->names[0] = one[k].name, c->v[0] = one[k].v, c->report = c->tag + 8;
        if (one[k].want == SETTINGS)
            c->needle = "global batch 7 (meta/global_batch), this run uses 12";
    }
    static const struct {
        op_fn op;
        const char *name;
        int kind;
        const char *what;
    } shaped[] = {{op_delete, "meta/serial", 0, "/meta/serial missing"},
                  {op_replace, "meta/serial", K_F64, "/meta/serial float64"},
                  {op_replace, "rng/state", K_U64_3, "/rng/state of 3 elements"},
                  {op_replace, "rng/state", K_U64_5, "/rng/state of 5 elements"},
                  {op_replace, "rng/state", K_F64_4, "/rng/state float64"},
                  {op_replace, "meta/step", K_I64_11, "/meta/step shaped [1,1]"},
                  {op_replace, "extra/junk", K_HUGE, "/extra/junk of 2^40 elements"},
                  {op_replace, "params/cmpd", K_CMPD, "a compound dataset under /params"},
                  {op_replace, "params/vlen", K_VLEN, "a variable-length dataset under /params"},
                  {op_replace, "params/vstr", K_VSTR, "a variable-length string under /params"}};
    for (size_t k = 0; k < sizeof shaped / sizeof shaped[0]; k++) {
        craft_case_t *c = add_case(shaped[k].op, CORRUPT, "report: %s", shaped[k].what);
        c->name = shaped[k].name, c->kind = shaped[k].kind, c->report = shaped[k].what;
    }
    craft_case_t *c = add_case(op_add_f32, CORRUPT, "report: /params/x = [NaN]");
    c->name = "params/x", c->at = 1, c->x = NAN, c->report = "/params/x=[NaN]";
}

/* The rule of each dataset the format names, and what replacing it by a kind gives. */
static const struct {
    const char *name;
    int kind; /* the kind that is exactly the format's */
} fixed_rules[] = {
    {"meta/step", K_I64},        {"meta/epoch", K_I64},           {"meta/cursor_epoch", K_I64},
    {"meta/cursor_step", K_I64}, {"meta/world_size", K_I64},      {"meta/global_batch", K_I64},
    {"meta/serial", K_I64},      {"meta/steps_per_epoch", K_I64}, {"optimizer/step", K_I64},
    {"optimizer/slots", K_I64},  {"meta/config_hash", K_U64},     {"meta/saved_at", K_F64},
    {"rng/state", K_U64_4}};

/* Every dataset the format names replaced by every other kind of dataset, or deleted. */
static void shape_cases(void)
{
    static const int kinds[] = {K_I64,   K_U64,   K_F64,    K_F32,   K_I32,   K_U8,
                                K_I64_1, K_I64_2, K_I64_11, K_U64_3, K_U64_4, K_U64_5,
                                K_F64_4, K_STR,   K_VSTR,   K_CMPD,  K_VLEN,  K_CHUNK};
    for (size_t r = 0; r < sizeof fixed_rules / sizeof fixed_rules[0]; r++) {
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            int kind = kinds[k];
            if (kind == K_CHUNK && fixed_rules[r].kind != K_U64_4) continue; /* scalars */
            verdict_t want = kind == fixed_rules[r].kind ? OK : CORRUPT;
            craft_case_t *c =
                add_case(op_replace, want, "%s as %s", fixed_rules[r].name, kind_names[kind]);
            c->name = fixed_rules[r].name, c->kind = kind;
        }
        int optional = !strcmp(fixed_rules[r].name, "meta/steps_per_epoch");
        craft_case_t *c =
            add_case(op_delete, optional ? OK : CORRUPT, "%s deleted%s", fixed_rules[r].name,
                     optional ? " (an older file: its cursor fits the run)" : "");
        c->name = fixed_rules[r].name;
    }
    craft_case_t *c = add_case(op_delete, CORRUPT, "meta/model deleted");
    c->name = "meta/model";
}

/* The parameters and their optimizer state: NaN and Inf anywhere, finite changes, other
 * types, shapes and storage, missing. */
static const char *float_sets[] = {"params/dense0.weight",          "params/dense0.bias",
                                   "params/dense1.weight",          "params/dense1.bias",
                                   "optimizer/slot0/dense0.weight", "optimizer/slot0/dense0.bias",
                                   "optimizer/slot0/dense1.weight", "optimizer/slot0/dense1.bias"};

static void float_cases(void)
{
    static const double bad[] = {NAN, INFINITY, -INFINITY}, fine[] = {123.0, -0.0, 1e-45};
    static const long at[] = {0, 1, -1}; /* first, second, last */
    static const int kinds[] = {K_F64_N, K_I32_N, K_F32_N1, K_F32_M,   K_F32,
                                K_CMPD,  K_VLEN,  K_CHUNK,  K_COMPACT, K_HUGE};
    for (int d = 0; d < 8; d++) {
        for (int b = 0; b < 3; b++)
            for (int p = 0; p < 3; p++) {
                craft_case_t *c =
                    add_case(op_element, CORRUPT, "%s[%ld] = %g", float_sets[d], at[p], bad[b]);
                c->name = float_sets[d], c->x = bad[b], c->at = at[p];
            }
        for (int b = 0; b < 3; b++) {
            craft_case_t *c =
                add_case(op_element, OK, "%s[1] = %g (finite)", float_sets[d], fine[b]);
            c->name = float_sets[d], c->x = fine[b], c->at = 1;
        }
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            craft_case_t *c = add_case(op_replace, kinds[k] == K_COMPACT ? OK : CORRUPT, "%s as %s",
                                       float_sets[d], kind_names[kinds[k]]);
            c->name = float_sets[d], c->kind = kinds[k];
        }
        craft_case_t *c = add_case(op_delete, CORRUPT, "%s deleted", float_sets[d]);
        c->name = float_sets[d];
    }
}

/* A float32 [n] dataset (and its optimizer state c->name2, when set) of n = c->at values
 * c->x added. */
static int op_add_f32(const char *file, const craft_case_t *c)
{
    float v[64];
    for (long k = 0; k < c->at; k++) v[k] = (float)c->x;
    craft_ds_t ds = {
        H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, {(hsize_t)c->at, 1}, v, (size_t)c->at * 4, 1,
        H5P_DEFAULT};
    return craft_replace(file, c->name, &ds) || (c->name2 && craft_replace(file, c->name2, &ds))
               ? -1
               : 0;
}

/* The float64 scalar c->name set to c->x. */
static int op_f64(const char *file, const craft_case_t *c)
{
    return craft_value(file, c->name, &c->x, sizeof c->x);
}

/* rng/state set to c->v [4]. */
static int op_rng(const char *file, const craft_case_t *c)
{
    return craft_value(file, "rng/state", c->v, sizeof c->v);
}

/* Hard links params/alias to params/dense0.weight and, kind 1, its optimizer state too. */
static int op_alias(const char *file, const craft_case_t *c)
{
    craft_case_t l = *c;
    l.kind = 2, l.name = "params/dense0.weight", l.name2 = "params/alias";
    if (op_link(file, &l)) return -1;
    l.name = "optimizer/slot0/dense0.weight", l.name2 = "optimizer/slot0/alias";
    return c->kind ? op_link(file, &l) : 0;
}

static craft_case_t *named(op_fn op, verdict_t want, const char *name, const char *name2, int kind,
                           const char *what)
{
    craft_case_t *c = add_case(op, want, "%s", what);
    c->name = name, c->name2 = name2, c->kind = kind;
    return c;
}

/* Datasets added beside the format's: extras and datasets of newer minor versions are fine
 * when the library could read them; under params/ and optimizer/ only what mirrors. */
static void added_cases(void)
{
    craft_case_t *c;
    c = named(op_add_f32, CORRUPT, "params/x", NULL, 0, "params/x [3] without optimizer state");
    c->at = 3, c->x = 0.5;
    c = named(op_add_f32, OK, "params/x", "optimizer/slot0/x", 0,
              "params/x [3] with its optimizer state (a parameter the run has not)");
    c->at = 3, c->x = 0.5;
    c = named(op_add_f32, CORRUPT, "params/x", "optimizer/slot0/x", 0,
              "params/x [2] = NaN with its optimizer state");
    c->at = 2, c->x = NAN;
    c = named(op_add_f32, OK, "extra/ok", NULL, 0, "extra/ok float32 [3]");
    c->at = 3, c->x = 1.5;
    c = named(op_add_f32, OK, "extra/nan", NULL, 0, "extra/nan float32 [2] = NaN (extras may)");
    c->at = 2, c->x = NAN;
    c = named(op_add_f32, CORRUPT, "optimizer/slot1/dense0.bias", NULL, 0,
              "optimizer/slot1/dense0.bias beyond optimizer/slots 1");
    c->at = 8, c->x = 0.5;
    c = named(op_add_f32, CORRUPT, "optimizer/slot01/dense0.bias", NULL, 0,
              "optimizer/slot01/dense0.bias (not a slot name)");
    c->at = 8, c->x = 0.5;
    c = named(op_add_f32, CORRUPT, "optimizer/slot0/x", NULL, 0,
              "optimizer/slot0/x without a parameter x");
    c->at = 3, c->x = 0.5;
    c = named(op_add_f32, CORRUPT, "optimizer/junk", NULL, 0, "optimizer/junk");
    c->at = 1, c->x = 0.5;
    static const struct {
        const char *name;
        int kind;
        verdict_t want;
    } add[] = {{"meta/newer", K_I64, OK},
               {"meta/newer", K_F64_4, OK},
               {"top", K_I64, OK},
               {"rng/other", K_U64_3, OK},
               {"extra/i64", K_I64, OK},
               {"extra/f64", K_F64, OK},
               {"extra/u8", K_U8, OK},
               {"extra/i32", K_I32, OK},
               {"top", K_CMPD, CORRUPT},
               {"top", K_I64_11, CORRUPT},
               {"top", K_VLEN, CORRUPT},
               {"extra/cmpd", K_CMPD, CORRUPT},
               {"extra/u64", K_U64_3, CORRUPT},
               {"extra/str", K_STR, CORRUPT},
               {"extra/huge", K_HUGE, CORRUPT},
               {"extra/unwritten", K_UNSET, CORRUPT},
               {"extra/two_d", K_F32_N1, CORRUPT},
               {"meta/newer", K_VSTR, CORRUPT}};
    for (size_t k = 0; k < sizeof add / sizeof add[0]; k++) {
        c = add_case(op_replace, add[k].want, "%s added as %s", add[k].name,
                     kind_names[add[k].kind]);
        c->name = add[k].name, c->kind = add[k].kind, c->name2 = "meta/step";
        if (add[k].kind == K_F32_N1) c->name2 = "params/dense0.bias";
    }
}

/* Links and storage outside the file, and a second name for a parameter. */
static void link_cases(void)
{
    named(op_link, CORRUPT, "params/dense0.weight", NULL, 0, "params/dense0.weight a soft link");
    named(op_link, CORRUPT, "params/dense0.weight", NULL, 1,
          "params/dense0.weight an external link to step 10");
    named(op_extstore, CORRUPT, "params/dense0.weight", NULL, 0,
          "params/dense0.weight stored in an external raw file");
    named(op_link, CORRUPT, "meta/step", NULL, 0, "meta/step a soft link");
    named(op_link, CORRUPT, "rng/state", NULL, 1, "rng/state an external link to step 10");
    named(op_alias, CORRUPT, NULL, NULL, 0, "params/alias a second hard link, no state for it");
    named(op_alias, OK, NULL, NULL, 1, "params/alias a second hard link, with its state");
}

/* Checksums: wrong, missing, of another type or shape; a flipped data byte. */
static void crc_cases(void)
{
    static const char *sets[] = {
        "meta/step",  "rng/state",           "params/dense0.weight", "optimizer/slot0/dense1.bias",
        "meta/model", "meta/steps_per_epoch"};
    static const char *how[] = {"wrong",   "missing",       "uint64",
                                "float64", "an array of 2", "a string"};
    for (int d = 0; d < 6; d++)
        for (int k = 0; k < 6; k++) {
            craft_case_t *c = add_case(op_crc, CORRUPT, "%s crc32c %s", sets[d], how[k]);
            c->name = sets[d], c->kind = k;
        }
    static const char *flip[] = {"meta/step",          "meta/cursor_step",
                                 "rng/state",          "params/dense0.weight",
                                 "params/dense1.bias", "optimizer/slot0/dense0.weight",
                                 "meta/model",         "meta/saved_at"};
    for (int d = 0; d < 8; d++)
        add_case(op_flip, CORRUPT, "a byte of %s flipped", flip[d])->name = flip[d];
}

/* The model description, the time of the save, the RNG state and the root attributes. */
static void value_cases(void)
{
    static const struct {
        long bytes;
        verdict_t want;
    } model[] = {{1, OK}, {200, OK}, {4096, OK}, {4097, CORRUPT}, {8000, CORRUPT}};
    for (int k = 0; k < 5; k++) {
        craft_case_t *c =
            add_case(op_replace, model[k].want, "meta/model a string of %ld bytes", model[k].bytes);
        c->name = "meta/model", c->kind = K_STR_N, c->at = model[k].bytes;
    }
    named(op_replace, CORRUPT, "meta/model", NULL, K_STR_2, "meta/model two strings");
    named(op_replace, CORRUPT, "meta/model", NULL, K_VSTR, "meta/model a variable string");
    named(op_replace, CORRUPT, "meta/model", "meta/step", K_I64, "meta/model an int64");
    static const double when[] = {NAN, INFINITY, -1.0, 0.0, 1e12};
    for (int k = 0; k < 5; k++) {
        craft_case_t *c = add_case(op_f64, k < 3 ? CORRUPT : OK, "meta/saved_at = %g", when[k]);
        c->name = "meta/saved_at", c->x = when[k];
    }
    craft_case_t *c = add_case(op_rng, CORRUPT, "rng/state all zero");
    c = add_case(op_rng, OK, "rng/state another generator state");
    c->v[0] = 1, c->v[1] = 2, c->v[2] = 3, c->v[3] = 4;
    static const struct {
        const char *name;
        int kind;
        int64_t v;
        verdict_t want;
    } root[] = {{"schema_version", 0, 0, CORRUPT}, {"schema_version", 0, 3, CORRUPT},
                {"schema_version", 0, 1, OK},      {"schema_version", 1, 0, CORRUPT},
                {"schema_version", 2, 1, CORRUPT}, {"schema_version", 3, 0, CORRUPT},
                {"library_version", 1, 0, OK},     {"library_version", 3, 0, OK},
                {"library_version", 0, 7, OK}};
    static const char *how[] = {"int32", "missing", "int64", "a string"};
    for (int k = 0; k < 9; k++) {
        c = add_case(op_root_attr, root[k].want, "root attribute %s %s %lld", root[k].name,
                     how[root[k].kind], (long long)root[k].v);
        c->name = root[k].name, c->kind = root[k].kind, c->v[0] = root[k].v;
    }
}

/* The whole file broken, or another HDF5 file in its place. */
static void file_cases(void)
{
    static const double cut[] = {0.1, 0.5, 0.9, 0.99};
    for (int k = 0; k < 4; k++) {
        craft_case_t *c = add_case(op_file, CORRUPT, "truncated to %g of its size", cut[k]);
        c->kind = 0, c->x = cut[k];
    }
    static const char *what[] = {"", "a flipped signature byte", "a damaged superblock version",
                                 "garbage of its size", "empty"};
    for (int k = 1; k < 5; k++) add_case(op_file, CORRUPT, "%s", what[k])->kind = k;
    add_case(op_foreign, CORRUPT, "an HDF5 file without schema_version")->kind = 0;
    add_case(op_foreign, CORRUPT, "an HDF5 file in the pre-1.8 format")->kind = 1;
}

/* Sound files that are not this run's: another optimizer, model or configuration. */
static void settings_cases(void)
{
    craft_case_t *c = add_case(op_two_slots, SETTINGS, "two optimizer slots (another optimizer)");
    c->needle = "state slots";
    c = named(op_replace2, SETTINGS, "params/dense0.bias", "optimizer/slot0/dense0.bias", K_F32_M,
              "params/dense0.bias and its state one element longer (another model)");
    c->needle = "this run has 8";
    c = named(op_replace2, SETTINGS, "params/dense1.weight", "optimizer/slot0/dense1.weight",
              K_F32_M, "params/dense1.weight and its state one element longer");
    c->needle = "this run has 24";
    c = named(op_delete, SETTINGS, "params/dense1.bias", "optimizer/slot0/dense1.bias", 0,
              "params/dense1.bias and its state missing (another model)");
    c->needle = "has no dataset params/dense1.bias";
}

/* ---- judging a case ------------------------------------------------------------------------ */

static char work[512], tool[1024];

/* What `hpctrain ckpt verify` decides (the program itself; out [n] gets its output). */
static verdict_t tool_verdict(const char *file, char *out, size_t n)
{
    char log[700];
    snprintf(log, sizeof log, "%s/verify.out", work);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
        execl(tool, tool, "ckpt", "verify", file, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) tap_bail("cannot run %s", tool);
    FILE *f = fopen(log, "r");
    size_t got = f ? fread(out, 1, n - 1, f) : 0;
    out[got] = '\0';
    if (f) fclose(f);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code == 0 && strstr(out, ": ok (step 20")) return OK;
    if (code == 3 && strstr(out, "BAD") && strstr(out, file)) return CORRUPT;
    return WRONG;
}

/* What verify decides, through the calls the program makes (tools/ckpt.c, verify_one): the
 * file opens and hpct_ckpt_file_meta passes. */
static verdict_t verify_verdict(hpct_ctx_t ctx, const char *file, char *why, size_t n)
{
    hpct_ckpt_file_t f;
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t s = hpct_ckpt_file_open(ctx, file, &f);
    if (!s) s = hpct_ckpt_file_meta(f, &m);
    snprintf(why, n, "%s", s ? hpct_last_error(ctx) : "");
    hpct_ckpt_file_close(f);
    if (!s) return m.step == NEW ? OK : WRONG;
    return strstr(why, file) ? CORRUPT : WRONG;
}

/* The run's parameters and optimizer state are bit for bit those of file, at step `step`. */
static int state_is(run_t *r, const char *file, long step)
{
    int n;
    size_t total;
    long at;
    hpct_params_size(r->params, &n, &total);
    hpct_optimizer_get_step(r->opt, &at);
    for (int i = 0; i < n && at == step; i++) {
        const char *name;
        float *p, *g, *s, want[64];
        size_t count;
        char path[300];
        hpct_params_get(r->params, i, &name, &p, &g, &count);
        snprintf(path, sizeof path, "params/%s", name);
        if (craft_read_f32(file, path, want, 64) != (long)count || memcmp(p, want, 4 * count))
            return 0;
        snprintf(path, sizeof path, "optimizer/slot0/%s", name);
        hpct_optimizer_state(r->opt, i, 0, &s, &count);
        if (craft_read_f32(file, path, want, 64) != (long)count || memcmp(s, want, 4 * count))
            return 0;
    }
    return at == step;
}

/* Parameters and optimizer state overwritten (what a load must replace). */
static void scramble(run_t *r)
{
    int n;
    size_t total;
    hpct_params_size(r->params, &n, &total);
    for (int i = 0; i < n; i++) {
        const char *name;
        float *p, *g, *s;
        size_t count;
        hpct_params_get(r->params, i, &name, &p, &g, &count);
        memset(p, 0x55, 4 * count);
        hpct_optimizer_state(r->opt, i, 0, &s, &count);
        memset(s, 0x66, 4 * count);
    }
    hpct_optimizer_set_step(r->opt, 12345);
}

/* What resume decides, from the directory with step 10 intact beside the crafted step 20. */
static verdict_t resume_verdict(run_t *r, const craft_case_t *c, char *why, size_t n)
{
    scramble(r);
    hpct_ckpt_t ck = open_dir(r);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t s = hpct_ckpt_load_latest(ck, r->params, r->opt, &m);
    snprintf(why, n, "%s", hpct_last_error(r->ctx));
    hpct_ckpt_close(ck);
    char aside[1200];
    snprintf(aside, sizeof aside, "%s.rejected", newest);
    int here = access(newest, F_OK) == 0, moved = access(aside, F_OK) == 0;
    if (!s && m.step == NEW && !m.rejected && here && !moved && state_is(r, newest, NEW)) return OK;
    if (!s && m.step == OLD && m.rejected == 1 && !here && moved && strstr(why, newest) &&
        state_is(r, oldest, OLD))
        return CORRUPT;
    if (s && s != HPCT_ERR_CHECKSUM && here && !moved && strstr(why, newest) &&
        (!c->needle || strstr(why, c->needle)))
        return SETTINGS;
    return WRONG;
}

/* Counts over the cases. */
typedef struct tally {
    int agree, as_wanted, crafted, by_tool, tool_agrees;
    int got[4][4]; /* [wanted][resume's verdict] */
} tally_t;

/* One case: craft, judge twice (three times for every 32nd case and the report's: the
 * program too), one test point. */
static void judge(run_t *r, int k, tally_t *t)
{
    craft_case_t *c = &cases[k];
    fresh_dir();
    if (c->op(newest, c)) {
        tap_ok(0, "case %d, %s: could not be crafted", k, c->tag);
        t->got[c->want][WRONG]++;
        return;
    }
    t->crafted++;
    char vwhy[1100], rwhy[1100], out[2000];
    verdict_t v = verify_verdict(r->ctx, newest, vwhy, sizeof vwhy);
    if (c->report || k % 32 == 0) {
        verdict_t p = tool_verdict(newest, out, sizeof out);
        t->by_tool++, t->tool_agrees += p == v;
        if (p != v) tap_diag("hpctrain ckpt verify says %s: %.300s", verdict_names[p], out);
    }
    verdict_t res = resume_verdict(r, c, rwhy, sizeof rwhy);
    verdict_t vwant = c->want == CORRUPT ? CORRUPT : OK;
    int agree = v != WRONG && res != WRONG && (v == CORRUPT) == (res == CORRUPT);
    int right = v == vwant && res == c->want;
    t->agree += agree, t->as_wanted += right, t->got[c->want][res]++;
    tap_ok(agree && right, "case %d, %s: verify %s, resume %s (wanted %s)", k, c->tag,
           verdict_names[v], verdict_names[res], verdict_names[c->want]);
    if (!right || c->report) tap_diag("  verify: %.400s | resume: %.400s", vwhy, rwhy);
}

int main(void)
{
    const char *top = getenv("top_builddir");
    snprintf(tool, sizeof tool, "%s/tools/hpctrain", top && *top ? top : ".");
    if (access(tool, X_OK)) tap_skip_all("%s is not built", tool);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    scalar_cases(), combined_cases(), reporter_cases(), shape_cases(), float_cases();
    added_cases(), link_cases(), crc_cases(), value_cases(), file_cases(), settings_cases();
    tap_plan(ncases + 4);
    make_tmpdir(work, sizeof work, "agree");
    snprintf(dir, sizeof dir, "%s/ckpt", work);
    snprintf(newest, sizeof newest, "%s/ckpt-%012d.h5", dir, NEW);
    snprintf(oldest, sizeof oldest, "%s/ckpt-%012d.h5", dir, OLD);
    snprintf(good_new, sizeof good_new, "%s/good-new.h5", work);
    snprintf(good_old, sizeof good_old, "%s/good-old.h5", work);
    run_t r;
    run_create(&r);
    train_and_save(&r);
    copy_file(newest, good_new), copy_file(oldest, good_old);
    tally_t t = {0};
    for (int k = 0; k < ncases; k++) judge(&r, k, &t);
    for (int w = 0; w < 3; w++)
        tap_diag("%d cases want %s: resume says ok %d, corrupt %d, settings %d, wrong %d",
                 t.got[w][0] + t.got[w][1] + t.got[w][2] + t.got[w][3], verdict_names[w],
                 t.got[w][0], t.got[w][1], t.got[w][2], t.got[w][3]);
    tap_ok(ncases >= 500, "%d crafted checkpoints (at least 500), %d crafted here", ncases,
           t.crafted);
    tap_is_int(t.agree, ncases, "verify and resume agree on %d of %d", t.agree, ncases);
    tap_is_int(t.as_wanted, ncases, "both give the format's verdict on %d of %d", t.as_wanted,
               ncases);
    tap_is_int(t.tool_agrees, t.by_tool,
               "the hpctrain program's verdict is the library's on %d of %d", t.tool_agrees,
               t.by_tool);
    remove_tree(dir);
    remove_tree(work);
    return tap_done();
}
