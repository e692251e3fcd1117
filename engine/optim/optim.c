/* optim.c — the optimizer object: state allocation, the per-step learning
 * rate (Keras's `decay`), dispatch to the algorithm's kernel, and the
 * checkpoint layout of the state. */
#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "optim/optim_internal.h"

/* Checkpoint layout: a header of OPTIM_STATE_HEADER floats, then the slots.
 *   [0] iterations & 0xffffff   [1] iterations >> 24   [2] m_schedule
 * The iteration count is split into 24-bit halves because a float holds
 * every integer below 2^24 exactly, so no count below 2^48 loses a bit. */
#define OPTIM_ITER_BITS 24

int optim_slots(const spec_optimizer *cfg)
{
    return spec_optimizer_slots(cfg);
}

optimizer *optim_create(const spec_optimizer *cfg, long n)
{
    int n_slots = optim_slots(cfg);
    if (n < 0 || n_slots < 0)
        return NULL;
    if (n_slots > 0 && (size_t)n > SIZE_MAX / sizeof(float) / (size_t)n_slots)
        return NULL;
    optimizer *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->cfg = *cfg;
    o->n = n;
    o->n_slots = n_slots;
    o->m_schedule = 1.0f;
    size_t count = (size_t)n_slots * (size_t)n;
    if (count > 0) {
        o->slots = calloc(count, sizeof(float));
        if (!o->slots) {
            free(o);
            return NULL;
        }
    }
    return o;
}

void optim_free(optimizer *o)
{
    if (!o)
        return;
    free(o->slots);
    free(o->decay);
    free(o);
}

optim_coeffs optim_coeffs_for(const spec_optimizer *cfg, long iterations, float lr,
                              float m_schedule)
{
    optim_coeffs c;
    memset(&c, 0, sizeof c);
    /* Keras applies decay from the count before this step: the first step
     * runs at the full rate. */
    double rate = (double)lr / (1.0 + cfg->decay * (double)iterations);
    c.lr = (float)rate;
    c.wd = (float)cfg->weight_decay;
    c.eps = (float)cfg->epsilon;
    c.m_schedule = m_schedule;
    double t = (double)(iterations + 1);
    switch (cfg->name) {
    case OPT_SGD:
        optim_sgd_coeffs(cfg, t, &c);
        break;
    case OPT_RMSPROP:
        optim_rmsprop_coeffs(cfg, t, &c);
        break;
    case OPT_ADAM:
        optim_adam_coeffs(cfg, t, &c);
        break;
    case OPT_NADAM:
        optim_nadam_coeffs(cfg, t, &c);
        break;
    case OPT_ADAMW:
        optim_adamw_coeffs(cfg, t, &c);
        break;
    }
    return c;
}

static void optim_dispatch(optimizer *o, float *params, const float *grads, long begin,
                           long end, const optim_coeffs *c)
{
    switch (o->cfg.name) {
    case OPT_SGD:
        optim_sgd_step(o, params, grads, begin, end, c);
        break;
    case OPT_RMSPROP:
        optim_rmsprop_step(o, params, grads, begin, end, c);
        break;
    case OPT_ADAM:
        optim_adam_step(o, params, grads, begin, end, c);
        break;
    case OPT_NADAM:
        optim_nadam_step(o, params, grads, begin, end, c);
        break;
    case OPT_ADAMW:
        optim_adamw_step(o, params, grads, begin, end, c);
        break;
    }
}

void optim_step_range(optimizer *o, float *params, const float *grads, long begin, long end,
                      float lr)
{
    assert(begin >= 0 && begin <= end && end <= o->n);
    optim_coeffs c = optim_coeffs_for(&o->cfg, o->iterations, lr, o->m_schedule);
    /* An empty range may come with NULL buffers: even NULL + 0 is undefined. */
    if (end > begin)
        optim_dispatch(o, params, grads, begin, end, &c);
}

void optim_step_end(optimizer *o)
{
    /* Only Nadam's schedule moves; the rate does not matter here. */
    if (o->cfg.name == OPT_NADAM)
        o->m_schedule = optim_coeffs_for(&o->cfg, o->iterations, 0.0f, o->m_schedule).m_schedule;
    o->iterations++;
}

void optim_step(optimizer *o, float *params, const float *grads, long n, float lr)
{
    assert(n == o->n);
    optim_step_range(o, params, grads, 0, n, lr);
    optim_step_end(o);
}

int optim_set_decay_ranges(optimizer *o, const long *ranges, int n_ranges)
{
    long *copy = calloc((size_t)(n_ranges > 0 ? 2 * n_ranges : 1), sizeof *copy);
    if (!copy)
        return -1;
    if (n_ranges > 0)
        memcpy(copy, ranges, (size_t)(2 * n_ranges) * sizeof *copy);
    free(o->decay);
    o->decay = copy;
    o->n_decay = n_ranges > 0 ? n_ranges : 0;
    return 0;
}

long optim_iterations(const optimizer *o)
{
    return o->iterations;
}

long optim_state_floats(const optimizer *o)
{
    return OPTIM_STATE_HEADER + (long)o->n_slots * o->n;
}

void optim_header_save(long iterations, float m_schedule, float *dst)
{
    long mask = (1L << OPTIM_ITER_BITS) - 1;
    dst[0] = (float)(iterations & mask);
    dst[1] = (float)(iterations >> OPTIM_ITER_BITS);
    dst[2] = m_schedule;
}

/* True when f is an integer in [0, 2^OPTIM_ITER_BITS): one half of a saved
 * iteration count. */
static bool optim_iter_part_ok(float f)
{
    return f >= 0.0f && f < (float)(1L << OPTIM_ITER_BITS) && f == floorf(f);
}

bool optim_header_load(const float *src, long *iterations, float *m_schedule)
{
    /* Garbage would make the casts below undefined behaviour. */
    if (!optim_iter_part_ok(src[0]) || !optim_iter_part_ok(src[1]))
        return false;
    *iterations = ((long)src[1] << OPTIM_ITER_BITS) | (long)src[0];
    *m_schedule = src[2];
    return true;
}

void optim_state_save(const optimizer *o, float *dst)
{
    optim_header_save(o->iterations, o->m_schedule, dst);
    if (o->n_slots > 0)
        memcpy(dst + OPTIM_STATE_HEADER, o->slots,
               (size_t)o->n_slots * (size_t)o->n * sizeof(float));
}

bool optim_state_valid(const optimizer *o, const float *src, long n_floats)
{
    long iterations;
    float m_schedule;
    if (n_floats != optim_state_floats(o) || !optim_header_load(src, &iterations, &m_schedule))
        return false;
    /* m_schedule is a product of momenta in (0, 1): it starts at 1 and
     * only shrinks. */
    return m_schedule >= 0.0f && m_schedule <= 1.0f;
}

void optim_state_load(optimizer *o, const float *src)
{
    /* A caller that skipped optim_state_valid() gets an unchanged
     * optimizer when the count is garbage. */
    if (!optim_header_load(src, &o->iterations, &o->m_schedule))
        return;
    if (o->n_slots > 0)
        memcpy(o->slots, src + OPTIM_STATE_HEADER,
               (size_t)o->n_slots * (size_t)o->n * sizeof(float));
}
