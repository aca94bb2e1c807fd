/* vsum.c: the averages' element-wise kernels, one C body compiled three times (baseline,
 * AVX2, AVX-512F) through GCC/Clang target attributes, picked at run time with
 * __builtin_cpu_supports, so one build runs on every x86-64 CPU and uses the widest vectors
 * it has (doc/distributed.md, "Sum kernels"; measured: bench/results.md, 2026-11-26, fourth
 * session). */
#include "vsum.h"
#include "../../core/sim.h"

#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HPCTI_X86_SETS 1
#endif

/* One register of each set: SSE2 4 floats, AVX2 8, AVX-512 16. GCC/Clang's vector extension
 * makes the loops vector code at every optimisation level (GCC 12 does not vectorise the
 * plain loops at -O2); a type wider than the set's registers went through the stack. */
typedef float v4 __attribute__((vector_size(16)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v16 __attribute__((vector_size(64)));

/* The three kernels of one instruction set; attr: its target attribute (empty: baseline);
 * vec: its register of V floats (the scalar tail does the last m % V). */
#define KERNELS(set, attr, vec, V)                                                                 \
    attr static void add_##set(float *restrict acc, const float *restrict x, size_t m)             \
    {                                                                                              \
        size_t j = 0;                                                                              \
        for (vec a, b; j + V <= m; j += V) {                                                       \
            memcpy(&a, acc + j, sizeof a), memcpy(&b, x + j, sizeof b);                            \
            a += b;                                                                                \
            memcpy(acc + j, &a, sizeof a);                                                         \
        }                                                                                          \
        for (; j < m; j++) acc[j] += x[j];                                                         \
    }                                                                                              \
    attr static void add_scale_##set(float *restrict acc, const float *restrict x, size_t m,       \
                                     float s)                                                      \
    {                                                                                              \
        size_t j = 0;                                                                              \
        for (vec a, b; j + V <= m; j += V) {                                                       \
            memcpy(&a, acc + j, sizeof a), memcpy(&b, x + j, sizeof b);                            \
            a = (a + b) * s;                                                                       \
            memcpy(acc + j, &a, sizeof a);                                                         \
        }                                                                                          \
        for (; j < m; j++) acc[j] = (acc[j] + x[j]) * s;                                           \
    }                                                                                              \
    attr static void scale_##set(float *x, size_t m, float s)                                      \
    {                                                                                              \
        size_t j = 0;                                                                              \
        for (vec a; j + V <= m; j += V) {                                                          \
            memcpy(&a, x + j, sizeof a);                                                           \
            a *= s;                                                                                \
            memcpy(x + j, &a, sizeof a);                                                           \
        }                                                                                          \
        for (; j < m; j++) x[j] *= s;                                                              \
    }

struct kernels {
    const char *name;
    void (*add)(float *restrict, const float *restrict, size_t);
    void (*add_scale)(float *restrict, const float *restrict, size_t, float);
    void (*scale)(float *, size_t, float);
};

KERNELS(baseline, , v4, 4)
#ifdef HPCTI_X86_SETS
KERNELS(avx2, __attribute__((target("avx2"))), v8, 8)
KERNELS(avx512f, __attribute__((target("avx512f"))), v16, 16)
#endif

/* widest first */
static const struct kernels sets[] = {
#ifdef HPCTI_X86_SETS
    {"avx512f", add_avx512f, add_scale_avx512f, scale_avx512f},
    {"avx2", add_avx2, add_scale_avx2, scale_avx2},
#endif
    {"baseline", add_baseline, add_scale_baseline, scale_baseline},
};
#define NSETS (sizeof sets / sizeof sets[0])

static _Atomic(const struct kernels *) in_use = &sets[NSETS - 1];

static const struct kernels *now(void)
{
    return atomic_load_explicit(&in_use, memory_order_relaxed);
}

void hpcti_vadd(float *acc, const float *x, size_t m)
{
#ifdef HPCT_SIM /* lib/core/sim.h: two reads and a write a float */
    (void)acc, (void)x;
    HPCTI_SIM_WORK(3 * m * sizeof(float));
    return;
#endif
    now()->add(acc, x, m);
}

void hpcti_vadd_scale(float *acc, const float *x, size_t m, float s)
{
#ifdef HPCT_SIM
    (void)acc, (void)x, (void)s;
    HPCTI_SIM_WORK(3 * m * sizeof(float));
    return;
#endif
    now()->add_scale(acc, x, m, s);
}

void hpcti_vscale(float *x, size_t m, float s)
{
#ifdef HPCT_SIM
    (void)x, (void)s;
    HPCTI_SIM_WORK(2 * m * sizeof(float));
    return;
#endif
    now()->scale(x, m, s);
}

/* 1 when this CPU runs set k's instructions (and the OS saves their registers). */
static int cpu_runs(size_t k)
{
#ifdef HPCTI_X86_SETS
    __builtin_cpu_init();
    if (!strcmp(sets[k].name, "avx512f")) return __builtin_cpu_supports("avx512f");
    if (!strcmp(sets[k].name, "avx2")) return __builtin_cpu_supports("avx2");
#endif
    return 1;
}

const char *hpcti_vec_use(const char *name)
{
    int any = !strcasecmp(name, "auto");
    for (size_t k = 0; k < NSETS; k++) {
        if (!any && strcasecmp(name, sets[k].name)) continue;
        if (!cpu_runs(k)) {
            if (any) continue;
            return "this CPU does not run those instructions";
        }
        atomic_store_explicit(&in_use, &sets[k], memory_order_relaxed);
        return NULL;
    }
#ifdef HPCTI_X86_SETS
    return "use auto, avx512f, avx2 or baseline";
#else
    return "use auto or baseline (AVX sets exist on x86-64 builds only)";
#endif
}

const char *hpcti_vec_name(void)
{
    return now()->name;
}
