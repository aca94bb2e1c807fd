/* test_vsum: the averages' sum kernels (lib/comm/vsum.h) give the same bits in every
 * instruction set this CPU runs as plain scalar C: sizes around every vector width, unaligned
 * starts, and special values (signed zeros, infinities, NaN, subnormals, overflow). A set the
 * CPU lacks is skipped with the reason. */
#include "../lib/comm/vsum.h"
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

/* Element i of input k: mostly varied finite values, every 13th a special one. */
static float input(size_t i, int k)
{
    static const float special[] = {0.0f,    -0.0f,   INFINITY, -INFINITY, NAN,         1e-40f,
                                    -1e-42f, FLT_MAX, -FLT_MAX, FLT_MIN,   16777216.0f, 1.0f};
    size_t ns = sizeof special / sizeof special[0];
    if ((i + (size_t)k) % 13 == 0) return special[(i / 13 + (size_t)k * 5) % ns];
    return (float)((double)((i * 2654435761u + (size_t)k * 40503u) % 100003) / 977.0 - 51.0) *
           (k ? 1.0001f : 0.9999f);
}

/* Bits of x [m] and y [m] equal (NaN payloads included). */
static int same_bits(const float *x, const float *y, size_t m)
{
    return memcmp(x, y, m * sizeof *x) == 0;
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
                if (!same_bits(a, want, m) && bad++ < 3)
                    tap_diag("%s of %zu floats, %zu in: bits differ", ops[op], m, sh);
            }
    return bad;
}

int main(void)
{
    tap_plan(8);
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
    const char *why = hpcti_vec_use("auto");
    tap_ok(!why, "auto takes a set (%s)", hpcti_vec_name());
    const char *bad = hpcti_vec_use("sse9");
    tap_ok(bad && strstr(bad, "auto"), "an unknown set is refused, naming the choices (%s)",
           bad ? bad : "accepted");
    free(acc), free(x), free(want);
    return tap_done();
}
