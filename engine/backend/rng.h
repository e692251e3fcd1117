/* rng.h — the engine's seeded PRNG (splitmix64): tiny, fast, and the same
 * on every platform, so a seed reproduces the same initial weights. */
#ifndef PUNCH_RNG_H
#define PUNCH_RNG_H

#include <math.h>
#include <stdint.h>

#include "backend/backend.h"

typedef struct rng {
    uint64_t s;
} rng;

/* A stream for (seed, stream): independent streams per layer, so adding a
 * layer does not change the others' initial weights. */
static inline rng rng_make(uint64_t seed, uint64_t stream)
{
    rng r = {backend_hash64(seed * 0x9e3779b97f4a7c15ULL + backend_hash64(stream + 1))};
    return r;
}

static inline uint64_t rng_next(rng *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return backend_hash64(r->s);
}

/* Uniform in [0, 1) with 53 bits. */
static inline double rng_uniform(rng *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in [-limit, limit). */
static inline float rng_symmetric(rng *r, double limit)
{
    return (float)((2.0 * rng_uniform(r) - 1.0) * limit);
}

#endif
