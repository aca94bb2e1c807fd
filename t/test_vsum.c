/* test_vsum: the averages' sum kernels (lib/comm/avg/vsum.h) give the same bits in every
 * instruction set this CPU runs as plain scalar C: sizes around every vector width, unaligned
 * starts, and special values meeting finite and special ones (signed zeros, infinities, NaNs
 * with payloads, subnormals, overflow). A set the CPU lacks is skipped with the reason. */
#include "../lib/comm/avg/vsum.h"
#include "lib/tap.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXN  65537
#define SHIFT 3 /* unaligned starts: 0 .. SHIFT floats in */

static const char *const sets[] = {"baseline", "avx2", "avx512f"};
static const size_t sizes[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 1000, MAXN};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* A float from its bits (NaNs with payloads). */
static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Element i of input k: mostly varied finite values; every 13th of input 0 and every 11th
 * of input 1 a special one, so specials also meet at every 143rd element: the c-th meeting
 * pairs special 11 c % 13 with special (c / 13 + 5) % 13, every pair of the 13 once in the
 * first 169 meetings (NaN + NaN, inf + -inf, FLT_MAX + FLT_MAX, ...). */
static float input(size_t i, int k)
{
    const float special[] = {0.0f,
                             -0.0f,
                             INFINITY,
                             -INFINITY,
                             from_bits(0x7fc00001u),
                             from_bits(0xffc00002u),
                             1e-40f,
                             -1e-42f,
                             FLT_MAX,
                             -FLT_MAX,
                             FLT_MIN,
                             16777216.0f,
                             1.0f};
    size_t ns = sizeof special / sizeof special[0], every = k ? 11 : 13;
    size_t at = k ? i / every + i / (every * ns * ns) + 5 : i / every;
    if (i % every == 0) return special[at % ns];
    return (float)((double)((i * 2654435761u + (size_t)k * 40503u) % 100003) / 977.0 - 51.0) *
           (k ? 1.0001f : 0.9999f);
}

/* got [m] against want [m] bit for bit, except where op adds two NaNs: there any NaN (x86
 * returns the first operand's payload, and a compiler orders the operands of an add as it
 * likes, so the payload may differ between sets; documented in vsum.h). */
static int matches(const float *got, const float *want, size_t m, int op)
{
    for (size_t j = 0; j < m; j++) {
        int both = op < 2 && isnan(input(j, 0)) && isnan(input(j, 1));
        if (both ? !isnan(got[j]) : memcmp(got + j, want + j, sizeof *got) != 0) return 0;
    }
    return 1;
}

/* volatile: the reference stays scalar, whatever the compiler would vectorize */
static void reference(float *want, const float *acc, const float *x, size_t m, int op, float s)
{
    for (size_t j = 0; j < m; j++) {
        volatile float a = acc[j];
        want[j] = op == 0 ? a + x[j] : op == 1 ? (a + x[j]) * s : a * s;
    }
}

/* Every size and start of one set: add, add_scale, scale against reference. */
static int check_set(float *acc, float *x, float *want)
{
    static const char *const ops[] = {"add", "add_scale", "scale"};
    int bad = 0;
    float s = 1.0f / 3.0f;
    for (size_t k = 0; k < NSIZES; k++)
        for (size_t sh = 0; sh <= SHIFT; sh++)
            for (int op = 0; op < 3; op++) {
                size_t m = sizes[k];
                float *a = acc + sh, *b = x + (SHIFT - sh);
                for (size_t j = 0; j < m; j++) a[j] = input(j, 0), b[j] = input(j, 1);
                reference(want, a, b, m, op, s);
                if (op == 0) hpcti_vadd(a, b, m);
                if (op == 1) hpcti_vadd_scale(a, b, m, s);
                if (op == 2) hpcti_vscale(a, m, s);
                if (!matches(a, want, m, op) && bad++ < 3)
                    tap_diag("%s of %zu floats, %zu in: bits differ", ops[op], m, sh);
            }
    return bad;
}

int main(void)
{
    tap_plan(9);
    float *acc = malloc((MAXN + SHIFT) * sizeof *acc), *x = malloc((MAXN + SHIFT) * sizeof *x);
    float *want = malloc(MAXN * sizeof *want);
    if (!acc || !x || !want) tap_bail("out of memory");
    for (int i = 0; i < 3; i++) {
        const char *why = hpcti_vec_use(sets[i]);
        if (why && i > 0) {
            tap_skip(2, why);
            tap_diag("set %s: %s", sets[i], why);
            continue;
        }
        tap_ok(!why && !strcmp(hpcti_vec_name(), sets[i]), "set %s taken (%s)", sets[i],
               why ? why : hpcti_vec_name());
        tap_is_int(check_set(acc, x, want), 0,
                   "set %s: add, add_scale, scale give scalar C's bits at %zu sizes, %d starts",
                   sets[i], NSIZES, SHIFT + 1);
    }
    const char *why = hpcti_vec_use("BASELINE");
    tap_ok(!why && !strcmp(hpcti_vec_name(), "baseline"), "names in any case (BASELINE: %s)",
           hpcti_vec_name());
    why = hpcti_vec_use("auto");
    tap_ok(!why, "auto takes a set (%s)", hpcti_vec_name());
    const char *bad = hpcti_vec_use("sse9");
    tap_ok(bad && strstr(bad, "auto"), "an unknown set is refused, naming the choices (%s)",
           bad ? bad : "accepted");
    free(acc), free(x), free(want);
    return tap_done();
}
