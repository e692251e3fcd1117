/* sampler.h — picking the next token of a language model from one step's
 * probabilities (punch-train --generate, generate.c): greedy, temperature
 * and top-k, with the engine's seeded rng so a seed gives the same text. */
#ifndef PUNCH_TRAIN_SAMPLER_H
#define PUNCH_TRAIN_SAMPLER_H

#include "backend/rng.h"

typedef struct sampler_options {
    double temperature; /* 0: greedy (argmax); else p_i^(1/t), renormalised */
    int top_k;          /* draw among the k most probable; 0: all */
} sampler_options;

/* The id drawn from probs[0..n) (n >= 1, non-negative, not necessarily
 * summing to 1). Ties go to the lower id, in the argmax and in the top-k
 * cut. scratch holds n floats (so a step allocates nothing). A temperature
 * scales log-probabilities: t < 1 sharpens, t > 1 flattens; an id with
 * probability 0 is never drawn (unless every kept one is 0: then the
 * lowest-id of the kept ones). Draws exactly one rng_uniform unless greedy
 * or top_k = 1. */
int sampler_pick(const float *probs, int n, const sampler_options *o, rng *r, float *scratch);

#endif
