/* reduce.c: the averaging state machine, point-to-point and non-blocking throughout.
 * Hierarchical path (nodes with equal rank counts), on a vector v [n]:
 *   1. reduce-scatter inside the node: local rank l owns block l of v, summed in rank order;
 *   2. reduce-scatter of that block across nodes (ranks with the same local rank), scaled
 *      by 1/size; 3. allgather of the block across nodes; 4. allgather inside the node.
 * Flat path: reduce-scatter and allgather over all ranks. Each phase posts every send and
 * receive at once (direct exchange: one round, so progress needs no MPI call per round);
 * only the owner of a block sums it, in rank order, so all ranks get identical bits and
 * the result does not depend on message arrival order. A cross-node (flat: job) phase of
 * tree_min ranks or more (a whole phase: tree_whole_min) instead goes in rounds of one
 * exchange with one partner each (recursive halving, then doubling): 2 log2 p messages a
 * rank, not 2 (p - 1); every block is summed in one fixed tree order by one rank, so the
 * bits are again the same on all. */
#include "reduce.h"
#include "vsum.h"
#include "../../obs/obs.h"
#include "../../core/sim.h"

#include <stdlib.h>
#include <string.h>

#define TAG_BASE  1000
#define SUM_CHUNK 512
/* Ranks of a cross-node phase from which it goes by rounds: a reduce-scatter + allgather,
 * a whole phase (each block of at most the small sizes; bench/results.md, SimGrid). */
#define TREE_MIN_RANKS       128
#define TREE_WHOLE_MIN_RANKS 16

/* A 64-byte aligned slice of the operation's scratch (reserved by hpcti_op_begin). */
static void *take(struct hpcti_dist *d, size_t bytes)
{
    size_t at = (d->avg->scratch_used + 63) & ~(size_t)63;
    d->avg->scratch_used = at + bytes;
    return d->avg->scratch + at;
}

/* A slice for payload (receive blocks, wire copies): of the scratch; in the SMPI build of
 * shared memory (lib/core/sim.h). */
static void *take_payload(struct hpcti_dist *d, size_t bytes)
{
#ifdef HPCT_SIM
    return hpcti_sim_pay_take(&d->avg->sim_pay, bytes);
#else
    return take(d, bytes);
#endif
}

static size_t elem_size(const struct hpcti_dist *d)
{
    return d->avg->transport ? 2 : 4;
}

static hpct_status_t grow(hpct_ctx_t ctx, void **p, size_t *cap, size_t need, const char *what)
{
    if (need <= *cap) return HPCT_SUCCESS;
    void *q = realloc(*p, need);
    if (!q)
        return hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "cannot allocate %zu bytes for %s", need, what);
    *p = q;
    *cap = need;
    return HPCT_SUCCESS;
}

int hpcti_red_tree_min(int whole)
{
    const char *v = hpcti_test_hook("HPCT_TEST_TREE_MIN"); /* t/test_dist_tree.sh */
    return v && atoi(v) >= 2 ? atoi(v) : whole ? TREE_WHOLE_MIN_RANKS : TREE_MIN_RANKS;
}

int hpcti_cross_tree(const struct hpcti_dist *d, int whole)
{
    int min = whole ? d->avg->tree_whole_min : d->avg->tree_min;
    if (d->hier) return d->cross_size >= min;
    return d->num_nodes > 1 && d->size >= min; /* one node: direct, in memory */
}

/* The most ranks one direct phase of this rank's averages spans: the node's and, below
 * tree_min (>= tree_whole_min), the cross-node (flat: the job's) communicator; a tree
 * round spans 2. */
static size_t direct_span(const struct hpcti_dist *d)
{
    int span = hpcti_cross_tree(d, 0) ? 2 : d->hier ? d->cross_size : d->size;
    return (size_t)(d->hier && d->local_size > span ? d->local_size : span);
}

/* d->work.reserve: called by hpcti_op_begin once the operation may start. */
hpct_status_t hpcti_red_reserve(hpct_ctx_t ctx, int max_red, size_t total)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    /* per reduction of n: receive blocks (< n + span elements), a 16-bit copy, requests */
    size_t elem = d->avg->transport ? 2 : 4, wire = d->avg->transport ? 2 * total : 0;
    size_t span = direct_span(d);
    size_t need = elem * (total + (size_t)max_red * span) + wire +
                  (size_t)max_red * (2 * span * sizeof(MPI_Request) + 3 * 64);
    size_t red_cap = (size_t)d->avg->cap_red * sizeof *d->avg->red;
    hpct_status_t s =
        grow(ctx, (void **)&d->avg->scratch, &d->avg->scratch_cap, need, "collective scratch");
    if (!s)
        s = grow(ctx, (void **)&d->avg->red, &red_cap, (size_t)max_red * sizeof *d->avg->red,
                 "reductions");
#ifdef HPCT_SIM
    if (!s && !hpcti_sim_pay_reserve(&d->avg->sim_pay, need))
        s = hpcti_error(ctx, HPCT_ERR_NO_MEMORY, "%s: cannot map %zu shared bytes on rank %d",
                        d->op_name, need, d->rank);
#endif
    if (s) return s;
    d->avg->cap_red = (int)(red_cap / sizeof *d->avg->red);
    d->avg->nred = 0;
    d->avg->scratch_used = 0;
    return HPCT_SUCCESS;
}

/* d->work.done: the waits of the runtime ask it. */
int hpcti_red_done(const struct hpcti_dist *d, int id)
{
    if (id >= 0) return d->avg->red[id].cur == d->avg->red[id].nphase;
    for (int i = 0; i < d->avg->nred; i++)
        if (d->avg->red[i].cur != d->avg->red[i].nphase) return 0;
    return 1;
}

#define block_start hpcti_block_start
#define block_len   hpcti_block_len

static char *at(const struct hpcti_dist *d, void *v, size_t i)
{
    return (char *)v + i * elem_size(d);
}

static int tag_of(const struct hpcti_dist *d, const struct hpcti_reduction *r)
{
    return TAG_BASE + (int)(((long)r->index * 4 + r->cur) % d->avg->tag_space);
}

/* The part of ph's vector this rank sums (reduce-scatter: its block; whole: all of it), and
 * the room one peer's contribution takes in the receive slots. */
static size_t own_start(const struct hpcti_phase *ph)
{
    return ph->gather == HPCTI_WHOLE ? 0 : block_start(ph->count, ph->size, ph->me);
}

static size_t own_len(const struct hpcti_phase *ph)
{
    return ph->gather == HPCTI_WHOLE ? ph->count : block_len(ph->count, ph->size, ph->me);
}

static size_t slot_len(const struct hpcti_phase *ph)
{
    return ph->gather == HPCTI_WHOLE ? ph->count : block_len(ph->count, ph->size, 0);
}

/* A tree phase over p ranks: p2, the largest power of two <= p, is 1 << lg; ranks p2 ..
 * p - 1 are extra. Rounds: [fold in: extra rank e sends its vector to e - p2, which adds
 * it], then on ranks below p2 either lg halving rounds (with the partner at distance p2 / 2,
 * p2 / 4, .. 1: send it the half of the current range it keeps, add its part of the half
 * this rank keeps; the last adds scale) and lg doubling rounds (distance 1, 2, .. p2 / 2:
 * send the range summed so far, receive the partner's into place), or, for a whole phase,
 * lg rounds adding the partner's whole vector (distance p2 / 2 .. 1: the same tree), then
 * [fold out: e - p2 sends e the result]. Blocks: the vector split into p2. */
struct tree_round {
    int peer;                 /* -1: nothing to exchange in this round */
    size_t send_at, send_len; /* elements of ph->vec */
    size_t recv_at, recv_len; /* sum: received into the slots, then added at recv_at */
    int sum, scale;
};

static int tree_lg(int p)
{
    int lg = 0;
    while ((2 << lg) <= p) lg++;
    return lg;
}

static int tree_rounds(const struct hpcti_phase *ph)
{
    int lg = tree_lg(ph->size), fold = ph->size > (1 << lg);
    return 2 * fold + (ph->gather == HPCTI_WHOLE ? lg : 2 * lg);
}

/* Elements of ph->vec in blocks [b, b + nb) of its p2 blocks: start and length. */
static void tree_range(const struct hpcti_phase *ph, int b, int nb, size_t *at, size_t *len)
{
    int p2 = 1 << tree_lg(ph->size);
    *at = block_start(ph->count, p2, b);
    *len = block_start(ph->count, p2, b + nb) - *at;
}

static struct tree_round tree_round(const struct hpcti_phase *ph, int k)
{
    int lg = tree_lg(ph->size), p2 = 1 << lg, me = ph->me, fold = ph->size > p2;
    size_t n = ph->count;
    struct tree_round o = {.peer = -1};
    if (fold && (k == 0 || k == tree_rounds(ph) - 1)) { /* in: the extra sends; out: gets */
        int in = k == 0, extra = me >= p2;
        if (!extra && me + p2 >= ph->size) return o;
        o.peer = extra ? me - p2 : me + p2;
        if (extra == in)
            o.send_len = n;
        else
            o.recv_len = n, o.sum = in;
        return o;
    }
    int j = k - fold;
    if (me >= p2) return o;
    if (ph->gather == HPCTI_WHOLE) {
        o.peer = me ^ (p2 >> (j + 1));
        o.send_len = o.recv_len = n, o.sum = 1, o.scale = ph->scale && j == lg - 1;
        return o;
    }
    if (j < lg) { /* halving: the range of 2 dist blocks at base, this rank keeps one half */
        int dist = p2 >> (j + 1), base = me & ~(2 * dist - 1);
        o.peer = me ^ dist;
        tree_range(ph, base + ((me & dist) ^ dist), dist, &o.send_at, &o.send_len);
        tree_range(ph, base + (me & dist), dist, &o.recv_at, &o.recv_len);
        o.sum = 1, o.scale = ph->scale && j == lg - 1;
        return o;
    }
    int dist = 1 << (j - lg), base = me & ~(dist - 1); /* doubling: own range of dist blocks */
    o.peer = me ^ dist;
    tree_range(ph, base, dist, &o.send_at, &o.send_len);
    tree_range(ph, base ^ dist, dist, &o.recv_at, &o.recv_len);
    return o;
}

/* Post r's current round of a tree phase. Rounds with the same partner share the tag: MPI
 * matches one sender's messages in order, and a round is posted when the last completed. */
static int start_round(const struct hpcti_dist *d, struct hpcti_reduction *r, int tag)
{
    struct hpcti_phase *ph = &r->phase[r->cur];
    struct tree_round o = tree_round(ph, r->round);
    MPI_Datatype t = d->avg->transport ? MPI_UINT16_T : MPI_FLOAT;
    int rc = MPI_SUCCESS;
    if (o.peer < 0) return rc;
    void *recv_to = o.sum ? r->slots : at(d, ph->vec, o.recv_at);
    if (o.recv_len)
        rc = MPI_Irecv(recv_to, (int)o.recv_len, t, o.peer, tag, ph->comm, &r->reqs[r->nreq++]);
    if (o.send_len && rc == MPI_SUCCESS)
        rc = MPI_Isend(at(d, ph->vec, o.send_at), (int)o.send_len, t, o.peer, tag, ph->comm,
                       &r->reqs[r->nreq++]);
    return rc;
}

/* Post the sends and receives of r's current phase (of a tree phase: its current round). */
static hpct_status_t start_phase(hpct_ctx_t ctx, struct hpcti_reduction *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_phase *ph = &r->phase[r->cur];
    MPI_Datatype t = d->avg->transport ? MPI_UINT16_T : MPI_FLOAT;
    size_t mine = block_len(ph->count, ph->size, ph->me), slot = slot_len(ph);
    int tag = tag_of(d, r), rc = MPI_SUCCESS, gather = ph->gather == 1;
    r->nreq = 0;
    /* test hook: this rank's exchange fails as a failed MPI_Isend would (t/test_dist_opfail) */
    const char *inject = hpcti_test_hook("HPCT_TEST_COMM_FAIL_RANK");
    if (inject && atoi(inject) == d->rank) rc = MPI_ERR_OTHER;
    if (ph->tree && rc == MPI_SUCCESS) rc = start_round(d, r, tag);
    for (int p = 0, k = 0; !ph->tree && p < ph->size && rc == MPI_SUCCESS; p++) {
        if (p == ph->me) continue;
        size_t theirs = block_len(ph->count, ph->size, p);
        void *recv_to = gather ? at(d, ph->vec, block_start(ph->count, ph->size, p))
                               : at(d, r->slots, (size_t)k++ * slot);
        void *send_from = gather || ph->gather == HPCTI_WHOLE
                              ? at(d, ph->vec, own_start(ph))
                              : at(d, ph->vec, block_start(ph->count, ph->size, p));
        size_t rn = gather ? theirs : own_len(ph);
        size_t sn = gather ? mine : ph->gather == HPCTI_WHOLE ? ph->count : theirs;
        if (rn) rc = MPI_Irecv(recv_to, (int)rn, t, p, tag, ph->comm, &r->reqs[r->nreq++]);
        if (sn && rc == MPI_SUCCESS)
            rc = MPI_Isend(send_from, (int)sn, t, p, tag, ph->comm, &r->reqs[r->nreq++]);
    }
    return rc == MPI_SUCCESS ? HPCT_SUCCESS
                             : hpcti_mpi_failed(ctx, rc, "posting a point-to-point exchange");
}

/* acc [m] (+)= the fp32 value of m wire elements at src (first: overwrite). */
static void accumulate(const struct hpcti_dist *d, const void *src, float *acc, size_t m, int first)
{
    float tmp[SUM_CHUNK];
    const float *f = src;
    if (d->avg->transport) {
        hpcti_from_wire(d->avg->transport, src, tmp, m);
        f = tmp;
    }
    if (first)
        memcpy(acc, f, m * sizeof *acc);
    else
        hpcti_vadd(acc, f, m);
}

/* Two fp32 ranks: own [m] = x0 + x1 in rank order (one is own, the other the received x),
 * times inv when scale, in one pass: the stack-accumulator loop below (two memcpy per
 * SUM_CHUNK) took about 100 us more of a 4 MiB average at W = 2 (bench/results.md,
 * 2026-11-26, later). */
static void sum_two(float *own, const float *x, size_t m, int scale, float inv)
{
    if (scale)
        hpcti_vadd_scale(own, x, m, inv);
    else
        hpcti_vadd(own, x, m);
}

/* Own part = sum over ranks 0..size-1 (own data or received slots), optionally scaled. */
static void sum_phase(const struct hpcti_dist *d, struct hpcti_reduction *r,
                      const struct hpcti_phase *ph)
{
    size_t mine = own_len(ph), slot = slot_len(ph);
    char *own = at(d, ph->vec, own_start(ph));
    float acc[SUM_CHUNK], inv = 1.0f / (float)d->size;
#ifdef HPCT_SIM /* lib/core/sim.h: ph->size reads and a write of mine floats */
    (void)acc, (void)own, (void)r;
    HPCTI_SIM_WORK((size_t)(ph->size + 1) * mine * sizeof *acc);
    return;
#endif
    if (ph->size == 2 && !d->avg->transport) { /* x0 + x1 == x1 + x0: the same bits on both */
        sum_two((float *)own, (const float *)r->slots, mine, ph->scale, inv);
        return;
    }
    for (size_t i = 0; i < mine; i += SUM_CHUNK) {
        size_t m = mine - i < SUM_CHUNK ? mine - i : SUM_CHUNK;
        for (int p = 0, k = 0; p < ph->size; p++) {
            const void *src =
                p == ph->me ? at(d, own, i) : at(d, at(d, r->slots, (size_t)k++ * slot), i);
            accumulate(d, src, acc, m, p == 0);
        }
        if (ph->scale) hpcti_vscale(acc, m, inv);
        if (d->avg->transport)
            hpcti_to_wire(d->avg->transport, acc, (uint16_t *)at(d, own, i), m);
        else
            memcpy(at(d, own, i), acc, m * sizeof *acc);
    }
}

/* A tree round's received part added at its place (the same operations as sum_two). */
static void sum_round(const struct hpcti_dist *d, struct hpcti_reduction *r,
                      const struct tree_round *o)
{
    char *own = at(d, r->phase[r->cur].vec, o->recv_at);
    float acc[SUM_CHUNK], inv = 1.0f / (float)d->size;
#ifdef HPCT_SIM /* lib/core/sim.h: two reads and a write of recv_len floats */
    (void)acc, (void)own, (void)inv;
    HPCTI_SIM_WORK(3 * o->recv_len * sizeof *acc);
    return;
#endif
    if (!d->avg->transport) {
        sum_two((float *)own, (const float *)r->slots, o->recv_len, o->scale, inv);
        return;
    }
    for (size_t i = 0; i < o->recv_len; i += SUM_CHUNK) {
        size_t m = o->recv_len - i < SUM_CHUNK ? o->recv_len - i : SUM_CHUNK;
        accumulate(d, at(d, own, i), acc, m, 1);
        accumulate(d, at(d, r->slots, i), acc, m, 0);
        if (o->scale) hpcti_vscale(acc, m, inv);
        hpcti_to_wire(d->avg->transport, acc, (uint16_t *)at(d, own, i), m);
    }
}

static void add_phase(struct hpcti_reduction *r, MPI_Comm comm, int size, int me, void *vec,
                      size_t count, int gather, int scale)
{
    r->phase[r->nphase++] = (struct hpcti_phase){comm, size, me, vec, count, gather, scale, 0};
}

/* A tree phase (halving and doubling, or WHOLE) averaging vec [count] over comm. */
static void add_tree(struct hpcti_reduction *r, MPI_Comm comm, int size, int me, void *vec,
                     size_t count, int whole)
{
    r->phase[r->nphase++] =
        (struct hpcti_phase){comm, size, me, vec, count, whole ? HPCTI_WHOLE : 0, 1, 1};
}

/* The cross-node phases of an average of one block v [n] (the node phase done elsewhere). */
static void plan_cross(struct hpcti_dist *d, struct hpcti_reduction *r, void *v, size_t n,
                       int whole)
{
    int cross_me;
    MPI_Comm_rank(d->cross, &cross_me);
    if (d->cross_size == 1) return;
    if (hpcti_cross_tree(d, whole)) {
        add_tree(r, d->cross, d->cross_size, cross_me, v, n, whole);
        return;
    }
    if (whole) {
        add_phase(r, d->cross, d->cross_size, cross_me, v, n, HPCTI_WHOLE, 1);
        return;
    }
    add_phase(r, d->cross, d->cross_size, cross_me, v, n, 0, 1);
    add_phase(r, d->cross, d->cross_size, cross_me, v, n, 1, 0);
}

/* The phases of an average of vector v [n] on this rank's topology. */
static void plan(struct hpcti_dist *d, struct hpcti_reduction *r, void *v, size_t n)
{
    if (d->size == 1) return;
    if (!d->hier && hpcti_cross_tree(d, 0)) {
        add_tree(r, d->comm, d->size, d->rank, v, n, 0);
        return;
    }
    if (!d->hier) {
        add_phase(r, d->comm, d->size, d->rank, v, n, 0, 1);
        add_phase(r, d->comm, d->size, d->rank, v, n, 1, 0);
        return;
    }
    void *block = at(d, v, block_start(n, d->local_size, d->local_rank));
    size_t len = block_len(n, d->local_size, d->local_rank);
    add_phase(r, d->node_rs, d->local_size, d->local_rank, v, n, 0, d->cross_size == 1);
    plan_cross(d, r, block, len, 0);
    add_phase(r, d->node_ag, d->local_size, d->local_rank, v, n, 1, 0);
}

/* The phases of an average of v [n] in which every rank sums every peer's whole vector in
 * rank order: over all ranks (flat), or inside the node and then across nodes
 * (hierarchical): the owners' operations of plan(), so the same bits, in one round per
 * level. */
static void plan_allgather(struct hpcti_dist *d, struct hpcti_reduction *r, void *v, size_t n)
{
    if (d->size == 1) return;
    if (!d->hier && hpcti_cross_tree(d, 1)) {
        add_tree(r, d->comm, d->size, d->rank, v, n, 1);
        return;
    }
    if (!d->hier) {
        add_phase(r, d->comm, d->size, d->rank, v, n, HPCTI_WHOLE, 1);
        return;
    }
    add_phase(r, d->node_rs, d->local_size, d->local_rank, v, n, HPCTI_WHOLE, 0);
    plan_cross(d, r, v, n, 1);
}

/* Peers whose whole vectors plan_allgather receives at once. */
static size_t allgather_peers(const struct hpcti_dist *d)
{
    return direct_span(d) - 1; /* a tree round receives one whole vector */
}

/* The next reserved reduction slot, cleared, for n floats at buf (sent as they are unless a
 * 16-bit transport sets wire); NULL with the error set when every slot is taken. */
static struct hpcti_reduction *new_reduction(hpct_ctx_t ctx, float *buf, size_t n)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    if (d->avg->nred >= d->avg->cap_red) {
        hpcti_error(ctx, HPCT_ERR_INTERNAL, "%s: more reductions than reserved (%d)", d->op_name,
                    d->avg->cap_red);
        return NULL;
    }
    struct hpcti_reduction *r = &d->avg->red[d->avg->nred];
    memset(r, 0, sizeof *r);
    r->buf = buf, r->n = n, r->index = d->avg->nred, r->wire = buf;
    return r;
}

/* cross_only: 0 the whole average, 1 the cross-node phases of a block, HPCTI_WHOLE the
 * cross-node sum of a whole vector by every rank, ALLGATHER plan_allgather. */
#define ALLGATHER 3
static hpct_status_t red_start(hpct_ctx_t ctx, float *buf, size_t n, int *id, int cross_only)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_reduction *r = new_reduction(ctx, buf, n);
    if (!r) return HPCT_ERR_INTERNAL;
    if (d->avg->transport) {
        r->wire = take_payload(d, 2 * n);
        hpcti_to_wire(d->avg->transport, buf, r->wire, n);
    }
    size_t whole_peers = hpcti_cross_tree(d, 1) ? 1 : (size_t)(d->cross_size - 1);
    size_t room = cross_only == HPCTI_WHOLE ? n * whole_peers
                  : cross_only == ALLGATHER ? n * allgather_peers(d)
                                            : n;
    r->slots = take_payload(d, elem_size(d) * (room + direct_span(d)));
    r->reqs = take(d, 2 * direct_span(d) * sizeof *r->reqs);
    if (cross_only == ALLGATHER)
        plan_allgather(d, r, r->wire, n);
    else if (cross_only)
        plan_cross(d, r, r->wire, n, cross_only == HPCTI_WHOLE);
    else
        plan(d, r, r->wire, n);
    *id = d->avg->nred++;
    r->t0 = hpcti_tl_now(ctx);
    hpct_status_t s = r->nphase ? start_phase(ctx, r) : HPCT_SUCCESS;
    if (!r->nphase && d->avg->transport) hpcti_from_wire(d->avg->transport, r->wire, buf, n);
    return s;
}

hpct_status_t hpcti_red_start(hpct_ctx_t ctx, float *buf, size_t n, int *id)
{
    return red_start(ctx, buf, n, id, 0);
}

hpct_status_t hpcti_red_start_allgather(hpct_ctx_t ctx, float *buf, size_t n, int *id)
{
    return red_start(ctx, buf, n, id, ALLGATHER);
}

size_t hpcti_allgather_scratch(const struct hpcti_dist *d, size_t n)
{
    return n * allgather_peers(d);
}

hpct_status_t hpcti_red_start_cross(hpct_ctx_t ctx, float *buf, size_t n, int whole, int *id)
{
    return red_start(ctx, buf, n, id, whole ? HPCTI_WHOLE : 1);
}

hpct_status_t hpcti_red_start_mpi(hpct_ctx_t ctx, float *buf, size_t n, int *id)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_reduction *r = new_reduction(ctx, buf, n);
    if (!r) return HPCT_ERR_INTERNAL;
    r->mpi = 1;
    r->reqs = take(d, sizeof *r->reqs);
    *id = d->avg->nred++;
    r->t0 = hpcti_tl_now(ctx);
    if (d->size == 1 || !n) return HPCT_SUCCESS;
    r->nphase = 1, r->nreq = 1;
    /* SMPI 3.32's MPI_Iallreduce copies an in-place vector into a temporary it frees on
     * return, while its sends above the detached threshold (64 KiB) still read it: a
     * segfault in smpi_comm_copy_buffer_callback. There the send is the operation's scratch
     * [n] (reserved by the callers, kept until the operation ends), left as it is: the
     * contents of payloads do not matter to timing (lib/core/sim.h). */
    const void *send =
        HPCTI_SIM_IALLREDUCE_SCRATCH ? take_payload(d, n * sizeof *buf) : MPI_IN_PLACE;
    int rc = MPI_Iallreduce(send, buf, (int)n, MPI_FLOAT, MPI_SUM, d->comm, &r->reqs[0]);
    return rc == MPI_SUCCESS ? HPCT_SUCCESS : hpcti_mpi_failed(ctx, rc, "MPI_Iallreduce");
}

/* The timeline span of r, from its start to now (its completion seen). */
static void red_span(hpct_ctx_t ctx, const struct hpcti_reduction *r)
{
    static const char *wire[] = {"fp32", "bf16", "fp16"};
    const struct hpcti_dist *d = hpcti_dist(ctx);
    if (r->t0 <= 0) return;
    hpcti_tl_span(ctx, 0, "allreduce", "comm", r->t0, hpcti_now(),
                  "\"bytes\":%zu,\"algorithm\":\"%s\",\"transport\":\"%s\",\"phases\":%d",
                  r->n * elem_size(d),
                  r->mpi          ? "MPI_Iallreduce"
                  : r->nphase > 2 ? "hierarchical"
                                  : "flat",
                  wire[d->avg->transport >= 0 && d->avg->transport <= 2 ? d->avg->transport : 0],
                  r->nphase);
}

/* r's current phase has completed: finish it and start the next (or the result). */
static hpct_status_t next_phase(hpct_ctx_t ctx, struct hpcti_reduction *r)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    struct hpcti_phase *ph = &r->phase[r->cur];
    float inv = 1.0f / (float)d->size; /* the scale of sum_phase */
    if (ph->tree) {
        struct tree_round o = tree_round(ph, r->round);
        if (o.peer >= 0 && o.sum) sum_round(d, r, &o);
        if (++r->round < tree_rounds(ph)) return start_phase(ctx, r);
        r->round = 0;
    } else if (r->mpi)
        hpcti_vscale(r->buf, r->n, inv);
    else if (ph->gather != 1)
        sum_phase(d, r, ph);
    if (++r->cur < r->nphase) return start_phase(ctx, r);
    if (d->avg->transport) hpcti_from_wire(d->avg->transport, r->wire, r->buf, r->n);
    red_span(ctx, r);
    return HPCT_SUCCESS;
}

hpct_status_t hpcti_red_progress(hpct_ctx_t ctx)
{
    struct hpcti_dist *d = hpcti_dist(ctx);
    for (int i = 0; i < d->avg->nred; i++) {
        struct hpcti_reduction *r = &d->avg->red[i];
        while (r->cur < r->nphase) {
            int flag = 0, rc = MPI_Testall(r->nreq, r->reqs, &flag, MPI_STATUSES_IGNORE);
            if (rc != MPI_SUCCESS)
                return hpcti_mpi_failed(ctx, rc, "testing a reduction's exchanges");
            if (!flag) break;
            d->moves++;
            hpct_status_t s = next_phase(ctx, r);
            if (s) return s;
        }
    }
    return HPCT_SUCCESS;
}
