/* wire.c: 16-bit wire formats for gradients (bf16, IEEE half); sums are taken in fp32
 * (lib/comm/reduce.c) and rounded once per phase. */
#include "reduce.h"

#include <math.h>
#include <string.h>

static uint32_t float_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float bits_float(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* fp32 -> bf16, round to nearest even; NaN stays NaN. */
static uint16_t to_bf16(float f)
{
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float from_bf16(uint16_t b)
{
    return bits_float((uint32_t)b << 16);
}

/* fp32 -> IEEE half, round to nearest even; beyond 65504 rounds to Inf. */
static uint16_t to_fp16(float f)
{
    uint32_t x = float_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) /* below 2^-14: a half subnormal, in units of 2^-24 */
        return (uint16_t)(sign | (uint32_t)lrintf(bits_float(ax) * 16777216.0f));
    uint32_t h = (((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13), rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

static float from_fp16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

void hpcti_to_wire(int transport, const float *x, uint16_t *w, size_t n)
{
    if (transport == HPCT_TRANSPORT_BF16)
        for (size_t i = 0; i < n; i++) w[i] = to_bf16(x[i]);
    else
        for (size_t i = 0; i < n; i++) w[i] = to_fp16(x[i]);
}

void hpcti_from_wire(int transport, const uint16_t *w, float *x, size_t n)
{
    if (transport == HPCT_TRANSPORT_BF16)
        for (size_t i = 0; i < n; i++) x[i] = from_bf16(w[i]);
    else
        for (size_t i = 0; i < n; i++) x[i] = from_fp16(w[i]);
}
