/* crc32c.c: CRC32C (Castagnoli polynomial, reflected 0x82F63B78, initial and final XOR
 * 0xFFFFFFFF), the per-dataset checksum of checkpoints. The SSE4.2 instruction does 8 bytes
 * at a time where the CPU has it; elsewhere a 256-entry table built at compile time. */
#include "hpctrain.h"

#include <string.h>

#define POLY 0x82F63B78u
/* One bit of the reflected CRC register, then eight bits (one table entry). */
#define BIT(c)   (((c) >> 1) ^ (POLY & (0u - ((c)&1u))))
#define BIT2(c)  BIT(BIT(c))
#define BYTE(c)  BIT2(BIT2(BIT2(BIT2((uint32_t)(c)))))
#define ROW4(i)  BYTE(i), BYTE((i) + 1), BYTE((i) + 2), BYTE((i) + 3)
#define ROW16(i) ROW4(i), ROW4((i) + 4), ROW4((i) + 8), ROW4((i) + 12)
#define ROW64(i) ROW16(i), ROW16((i) + 16), ROW16((i) + 32), ROW16((i) + 48)

static const uint32_t table[256] = {ROW64(0), ROW64(64), ROW64(128), ROW64(192)};

/* Table-driven update of the raw (un-inverted) register. */
static uint32_t crc_table(uint32_t c, const unsigned char *p, size_t n)
{
    while (n--) c = table[(c ^ *p++) & 0xffu] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* a * b modulo the CRC polynomial, reflected bit order (bit 31 is x^0). */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

/* x^(8 n) modulo the polynomial: appending n zero bytes multiplies a raw register by it. */
static uint32_t xpow8n(size_t n)
{
    uint32_t p = 1u << 31, base = 1u << 23; /* x^0 and x^8 */
    for (; n; n >>= 1) {
        if (n & 1) p = multmodp(base, p);
        base = multmodp(base, base);
    }
    return p;
}

#define LANE 8192 /* bytes per lane of the three-way interleaved loop */

/* Three independent crc32 chains over adjacent LANE-byte blocks hide the instruction's
 * 3-cycle latency; the raw registers are joined as a x^(16 LANE) + b x^(8 LANE) + c. */
__attribute__((target("sse4.2"))) static uint32_t crc_3way(uint32_t c, const unsigned char **pp,
                                                           size_t *np)
{
    const unsigned char *p = *pp;
    size_t n = *np;
    uint32_t k1 = xpow8n(LANE), k2 = xpow8n(2 * LANE);
    for (; n >= 3 * LANE; n -= 3 * LANE, p += 3 * LANE) {
        uint64_t a = c, b = 0, d = 0;
        for (size_t i = 0; i < LANE; i += 8) {
            uint64_t wa, wb, wd;
            memcpy(&wa, p + i, 8);
            memcpy(&wb, p + LANE + i, 8);
            memcpy(&wd, p + 2 * LANE + i, 8);
            a = __builtin_ia32_crc32di(a, wa);
            b = __builtin_ia32_crc32di(b, wb);
            d = __builtin_ia32_crc32di(d, wd);
        }
        c = multmodp(k2, (uint32_t)a) ^ multmodp(k1, (uint32_t)b) ^ (uint32_t)d;
    }
    *pp = p;
    *np = n;
    return c;
}

/* The crc32 instruction over 8-byte words, bytes for the head and tail. */
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t c, const unsigned char *p,
                                                            size_t n)
{
    while (n && ((uintptr_t)p & 7u)) {
        c = __builtin_ia32_crc32qi(c, *p++);
        n--;
    }
    if (n >= 3 * LANE) c = crc_3way(c, &p, &n);
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
    }
    c = (uint32_t)c64;
    while (n--) c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}

static int have_sse42(void)
{
    return __builtin_cpu_supports("sse4.2");
}
#else
static uint32_t crc_sse42(uint32_t c, const unsigned char *p, size_t n)
{
    return crc_table(c, p, n);
}

static int have_sse42(void)
{
    return 0;
}
#endif

uint32_t hpct_crc32c(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint32_t c = ~crc;
    if (!p) return crc;
    c = have_sse42() ? crc_sse42(c, p, n) : crc_table(c, p, n);
    return ~c;
}
