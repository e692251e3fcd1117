/* rng.c — the data module's PRNG: xoshiro256** (Blackman & Vigna) seeded
 * through splitmix64. Written out here rather than taken from libc so the
 * epoch shuffle and synthetic data are bit-for-bit the same everywhere;
 * resuming a run and adding ranks both depend on that. */
#include "data_internal.h"

static uint64_t rng_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rng_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void data_rng_seed(data_rng *r, uint64_t seed, uint64_t stream)
{
    /* Mix the stream through splitmix first so (seed, stream) and
     * (seed + 1, stream - 1) do not collide. */
    uint64_t x = stream;
    uint64_t mixed = rng_splitmix64(&x) ^ seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = rng_splitmix64(&mixed);
}

uint64_t data_rng_next(data_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rng_rotl(s[3], 45);
    return result;
}

uint64_t data_rng_below(data_rng *r, uint64_t bound)
{
    /* Reject the top sliver of 2^64 that is not a whole multiple of bound. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t v;
    do {
        v = data_rng_next(r);
    } while (v >= limit);
    return v % bound;
}
