/* blocks.c: simulation arrays decomposed in blocks over the ranks (hpct_insitu_add_block).
 * One global array of 1-3 dimensions is saved as /extra/<name> (row-major, the writer
 * gathers every rank's block into it before each save) with its shape in /extra/<name>.shape;
 * a resumed run, at any number of ranks, reads the global array on every rank and copies
 * out the block each rank registered in that run. */
#include "blocks.h"
#include "../comm/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS                                                                                       \
    13 /* per rank in the agreement: status, dtype, ndims, name hash, shape, off, count            \
        */

struct hpcti_block {
    char name[208];    /* /extra/<name>; its shape under <name>.shape */
    int dtype, ndims;  /* HPCT_CKPT_F32..U8; 1-3 */
    size_t elsize;     /* bytes per element */
    int64_t gshape[3]; /* the global shape (saved as <name>.shape) */
    int64_t loaded[3]; /* the shape a loaded checkpoint holds */
    long gshape_l[3];  /* the same as longs, for the exchange */
    long *table;       /* [ranks][2 ndims] every rank's offset, then count */
    void *data;        /* this rank's block, row-major */
    size_t global;     /* elements in the global array */
    void *stage;       /* [global]: the writer's gather target, every rank's load buffer */
};

static size_t elsize_of(int dtype)
{
    return dtype == HPCT_CKPT_F64 || dtype == HPCT_CKPT_I64 ? 8 : dtype == HPCT_CKPT_U8 ? 1 : 4;
}

/* FNV-1a of the name, 31 bits (the ranks compare it to agree on the name). */
static long name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return (long)(h & 0x7fffffff);
}

/* This rank's arguments, checked alone, into err [n]; 0 when they are good. */
static int check_local(const char *name, int dtype, const void *data, int ndims,
                       const size_t *gshape, const size_t *off, const size_t *cnt, char *err,
                       size_t n)
{
    if (!name || !*name || strlen(name) > 190 || name[0] == '/' || strstr(name, ".shape"))
        return snprintf(err, n,
                        "the name must be 1-190 characters, not start with '/' and not "
                        "contain '.shape'"),
               1;
    if (dtype < HPCT_CKPT_F32 || dtype > HPCT_CKPT_U8)
        return snprintf(err, n, "'%s': unknown dtype %d", name, dtype), 1;
    if (ndims < 1 || ndims > 3 || !gshape || !off || !cnt)
        return snprintf(err, n, "'%s': ndims %d (1-3) or a NULL shape, offset or count", name,
                        ndims),
               1;
    size_t total = 1, mine = 1;
    for (int k = 0; k < ndims; k++) {
        if (gshape[k] == 0 || gshape[k] > 0x7fffffff)
            return snprintf(err, n, "'%s': global size %zu in dimension %d (1 to 2^31-1)", name,
                            gshape[k], k),
                   1;
        if (off[k] > gshape[k] || cnt[k] > gshape[k] - off[k])
            return snprintf(err, n,
                            "'%s': the block [%zu, %zu) exceeds the global size %zu in "
                            "dimension %d",
                            name, off[k], off[k] + cnt[k], gshape[k], k),
                   1;
        if (total > ((size_t)1 << 40) / gshape[k])
            return snprintf(err, n, "'%s': more than 2^40 elements in all", name), 1;
        total *= gshape[k], mine *= cnt[k];
    }
    if (mine > 0x7fffffff)
        return snprintf(err, n, "'%s': a block of %zu elements (at most 2^31-1)", name, mine), 1;
    if (mine && !data)
        return snprintf(err, n, "'%s': a NULL buffer for %zu elements", name, mine), 1;
    return 0;
}

/* Whether the blocks of rows a and b (table rows) overlap. */
static int overlap(const long *a, const long *b, int nd)
{
    for (int k = 0; k < nd; k++) {
        long lo = a[k] > b[k] ? a[k] : b[k];
        long hi = a[k] + a[nd + k] < b[k] + b[nd + k] ? a[k] + a[nd + k] : b[k] + b[nd + k];
        if (lo >= hi) return 0;
    }
    return 1;
}

/* "[o, o+c) x [..]" of table row r into out [n]. */
static void ranges(const long *r, int nd, char *out, size_t n)
{
    size_t len = 0;
    out[0] = 0;
    for (int k = 0; k < nd && len < n; k++)
        len += (size_t)snprintf(out + len, n - len, "%s[%ld, %ld)", k ? " x " : "", r[k],
                                r[k] + r[nd + k]);
}

/* Every rank's row of the agreement: the same dtype, ndims, name and shape as rank 0's, and
 * blocks that tile the global shape. Every rank judges the same table the same way. */
static hpct_status_t check_tiling(hpct_ctx_t ctx, const char *fn, const char *name, const long *all,
                                  int ranks, long *table)
{
    const long *r0 = all;
    int nd = (int)r0[2];
    size_t covered = 0, total = 1;
    for (int k = 0; k < nd; k++) total *= (size_t)r0[4 + k];
    for (int r = 0; r < ranks; r++) {
        const long *row = all + (size_t)r * COLS;
        if (row[1] != r0[1] || row[2] != r0[2] || row[3] != r0[3] ||
            memcmp(row + 4, r0 + 4, 3 * sizeof *row))
            return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                               "%s '%s': rank %d registers another name, dtype or global shape "
                               "than rank 0",
                               fn, name, r);
        long *t = table + (size_t)r * 2 * (size_t)nd;
        size_t n = 1;
        for (int k = 0; k < nd; k++)
            t[k] = row[7 + k], t[nd + k] = row[10 + k], n *= (size_t)t[nd + k];
        covered += n;
    }
    for (int a = 0; a < ranks; a++)
        for (int b = a + 1; b < ranks; b++) {
            const long *ta = table + (size_t)a * 2 * (size_t)nd,
                       *tb = table + (size_t)b * 2 * (size_t)nd;
            if (!overlap(ta, tb, nd)) continue;
            char ra[120], rb[120];
            ranges(ta, nd, ra, sizeof ra), ranges(tb, nd, rb, sizeof rb);
            return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                               "%s '%s': the blocks of rank %d (%s) and rank %d (%s) overlap", fn,
                               name, a, ra, b, rb);
        }
    if (covered != total)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "%s '%s': the blocks of the %d ranks cover %zu of the %zu elements of "
                           "the global shape: a gap (blocks must tile it; a rank may hold an "
                           "empty block)",
                           fn, name, ranks, covered, total);
    return HPCT_SUCCESS;
}

/* The agreement table: each rank fills its own row, the SUM gives everyone every row. */
static hpct_status_t exchange(hpct_ctx_t ctx, const char *fn, int rank, int ranks, long *all,
                              const long *mine)
{
    memset(all, 0, (size_t)ranks * COLS * sizeof *all);
    memcpy(all + (size_t)rank * COLS, mine, COLS * sizeof *all);
    return hpcti_agree(ctx, fn, all, ranks * COLS, MPI_SUM);
}

static hpct_status_t add(struct hpcti_blocks *B, hpct_ctx_t ctx, const char *name, int dtype,
                         void *data, int nd, const size_t *gshape, long *table)
{
    if (B->n == B->cap) {
        int cap = B->cap ? 2 * B->cap : 4;
        struct hpcti_block **g = realloc(B->b, (size_t)cap * sizeof *g);
        if (!g) return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot grow the block arrays");
        B->b = g, B->cap = cap;
    }
    struct hpcti_block *b = calloc(1, sizeof *b); /* its shape's address is registered */
    if (!b) return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot allocate a block array");
    snprintf(b->name, sizeof b->name, "%s", name);
    b->dtype = dtype, b->ndims = nd, b->elsize = elsize_of(dtype), b->data = data;
    b->global = 1;
    for (int k = 0; k < nd; k++)
        b->gshape[k] = (int64_t)gshape[k], b->gshape_l[k] = (long)gshape[k], b->global *= gshape[k];
    b->table = table;
    B->b[B->n++] = b;
    return HPCT_SUCCESS;
}

/* The staging of block b (allocated on first use), or NULL after recording the error. */
static void *stage_of(hpct_ctx_t ctx, struct hpcti_block *b)
{
    if (!b->stage) b->stage = malloc(b->global * b->elsize);
    if (!b->stage)
        hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "block array '%s': cannot allocate %zu bytes", b->name,
                    b->global * b->elsize);
    return b->stage;
}

/* Register name and name.shape on ck. The global array points at the writer's staging (the
 * gather fills it before each save); on other ranks at nothing (a direct hpct_ckpt_save
 * there is refused) until a load swaps a buffer in. */
static hpct_status_t register_extras(hpct_ctx_t ctx, hpct_ckpt_t ck, struct hpcti_block *b,
                                     int rank)
{
    char shape[220];
    snprintf(shape, sizeof shape, "%s.shape", b->name);
    int writer = rank == hpcti_ckpt_writer_rank(ck);
    if (writer && !stage_of(ctx, b)) return HPCT_ERR_NO_MEMORY;
    hpct_status_t s =
        hpct_ckpt_add_array(ck, b->name, (hpct_ckpt_dtype_t)b->dtype, b->gshape, b->global);
    if (!s) s = hpct_ckpt_add_array(ck, shape, HPCT_CKPT_I64, b->gshape, (size_t)b->ndims);
    if (!s) hpcti_ckpt_extra_point(ck, b->name, writer ? b->stage : NULL);
    return s;
}

hpct_status_t hpcti_blocks_refuse(hpct_ctx_t ctx, hpct_status_t status)
{
    return hpcti_agree_status(ctx, "hpct_insitu_add_block", status, ctx->last_error);
}

hpct_status_t hpcti_blocks_add(struct hpcti_blocks *B, hpct_ctx_t ctx, hpct_ckpt_t ck, int rank,
                               int ranks, const char *name, hpct_ckpt_dtype_t dtype, void *data,
                               int ndims, const size_t *gshape, const size_t *off,
                               const size_t *cnt)
{
    static const char fn[] = "hpct_insitu_add_block";
    char err[400] = "";
    int bad = check_local(name, (int)dtype, data, ndims, gshape, off, cnt, err, sizeof err);
    if (!bad && !ck) bad = snprintf(err, sizeof err, "'%s': the session has no checkpoint", name);
    hpct_status_t s =
        hpcti_error(ctx, bad ? HPCT_ERR_INVALID_ARG : HPCT_SUCCESS, "%s: %s", fn, err);
    s = hpcti_agree_status(ctx, fn, bad ? s : HPCT_SUCCESS, ctx->last_error);
    if (s) return s;
    long mine[COLS] = {0, (long)dtype, ndims, name_hash(name)};
    for (int k = 0; k < ndims; k++)
        mine[4 + k] = (long)gshape[k], mine[7 + k] = (long)off[k], mine[10 + k] = (long)cnt[k];
    long *all = calloc((size_t)ranks, COLS * sizeof *all);
    long *table = calloc((size_t)ranks, 2 * (size_t)ndims * sizeof *table);
    s = all && table ? exchange(ctx, fn, rank, ranks, all, mine)
                     : hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "%s: tables for %d ranks", fn, ranks);
    if (!s) s = check_tiling(ctx, fn, name, all, ranks, table);
    free(all);
    if (!s) s = add(B, ctx, name, (int)dtype, data, ndims, gshape, table);
    if (s) {
        free(table);
        return s;
    }
    s = register_extras(ctx, ck, B->b[B->n - 1], rank);
    return hpcti_agree_status(ctx, fn, s, ctx->last_error);
}

hpct_status_t hpcti_blocks_gather(struct hpcti_blocks *B, hpct_ctx_t ctx, hpct_ckpt_t ck, int rank)
{
    int writer = hpcti_ckpt_writer_rank(ck);
    hpct_status_t s = HPCT_SUCCESS;
    for (int i = 0; i < B->n && !s; i++) {
        struct hpcti_block *b = B->b[i];
        s = hpcti_gather_blocks(ctx, "block array gather", b->data, b->elsize, b->ndims,
                                b->gshape_l, b->table, rank == writer ? b->stage : NULL, writer);
    }
    return s;
}

hpct_status_t hpcti_blocks_before_load(struct hpcti_blocks *B, hpct_ctx_t ctx, hpct_ckpt_t ck)
{
    char shape[220];
    for (int i = 0; i < B->n; i++) {
        struct hpcti_block *b = B->b[i];
        if (!stage_of(ctx, b)) return HPCT_ERR_NO_MEMORY;
        snprintf(shape, sizeof shape, "%s.shape", b->name);
        hpcti_ckpt_extra_point(ck, b->name, b->stage);
        hpcti_ckpt_extra_point(ck, shape, b->loaded);
    }
    return HPCT_SUCCESS;
}

/* Copy this rank's block out of the global array in b->stage (row-major). */
static void copy_out(struct hpcti_block *b, const long *row)
{
    int nd = b->ndims;
    long c0 = row[nd], c1 = nd > 1 ? row[nd + 1] : 1, c2 = nd > 2 ? row[nd + 2] : 1;
    long g1 = nd > 1 ? b->gshape_l[1] : 1, g2 = nd > 2 ? b->gshape_l[2] : 1;
    long o1 = nd > 1 ? row[1] : 0, o2 = nd > 2 ? row[2] : 0;
    char *dst = b->data;
    for (long i = 0; i < c0; i++)
        for (long j = 0; j < c1; j++) {
            size_t at =
                (((size_t)(row[0] + i) * (size_t)g1 + (size_t)(o1 + j)) * (size_t)g2 + (size_t)o2) *
                b->elsize;
            memcpy(dst, (char *)b->stage + at, (size_t)c2 * b->elsize);
            dst += (size_t)c2 * b->elsize;
        }
}

hpct_status_t hpcti_blocks_after_load(struct hpcti_blocks *B, hpct_ctx_t ctx, hpct_ckpt_t ck,
                                      int rank, int found, const char *path)
{
    hpct_status_t s = HPCT_SUCCESS;
    char shape[220];
    for (int i = 0; i < B->n; i++) {
        struct hpcti_block *b = B->b[i];
        snprintf(shape, sizeof shape, "%s.shape", b->name);
        hpcti_ckpt_extra_point(ck, shape, b->gshape);
        if (found && !s && memcmp(b->loaded, b->gshape, (size_t)b->ndims * sizeof *b->gshape))
            s = hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                            "block array '%s': checkpoint %s holds the global shape %lld x %lld x "
                            "%lld, this run registers %lld x %lld x %lld",
                            b->name, path ? path : "?", (long long)b->loaded[0],
                            (long long)(b->ndims > 1 ? b->loaded[1] : 1),
                            (long long)(b->ndims > 2 ? b->loaded[2] : 1), (long long)b->gshape[0],
                            (long long)(b->ndims > 1 ? b->gshape[1] : 1),
                            (long long)(b->ndims > 2 ? b->gshape[2] : 1));
        if (found && !s) copy_out(b, b->table + (size_t)rank * 2 * (size_t)b->ndims);
        if (rank != hpcti_ckpt_writer_rank(ck)) { /* only the writer keeps a global copy */
            free(b->stage);
            b->stage = NULL;
            hpcti_ckpt_extra_point(ck, b->name, NULL);
        }
    }
    return s;
}

void hpcti_blocks_free(struct hpcti_blocks *B)
{
    for (int i = 0; i < B->n; i++) free(B->b[i]->table), free(B->b[i]->stage), free(B->b[i]);
    free(B->b);
    memset(B, 0, sizeof *B);
}
