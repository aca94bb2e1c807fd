/* rng.c: xoshiro256** (Blackman and Vigna's published algorithm) seeded by splitmix64. */
#include "core.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void hpcti_rng_seed(hpcti_rng_t *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < HPCT_RNG_STATE_WORDS; i++) rng->s[i] = splitmix64(&x);
}

uint64_t hpcti_seed_mix(uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    return splitmix64(&x);
}

uint64_t hpcti_rng_next(hpcti_rng_t *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double hpcti_rng_uniform(hpcti_rng_t *rng)
{
    return (double)(hpcti_rng_next(rng) >> 11) * 0x1.0p-53;
}

double hpcti_rng_normal(hpcti_rng_t *rng)
{
    double u1 = 1.0 - hpcti_rng_uniform(rng); /* (0, 1]: log is finite */
    double u2 = hpcti_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
