/* dist_async_update.c — the asynchronous trainers' update rules (dist_async_update.h
 * says where dist-keras and the papers define each). Pure loops over host vectors: no MPI, no
 * model, so test_dist_units checks them on hand-made vectors. */
#include "distributed/dist_async_update.h"

float dist_update_residual_div(spec_trainer t, int window)
{
    return t == TRAINER_ADAG && window > 0 ? (float)window : 1.0f;
}

void dist_update_residual(const float *x, const float *anchor, long n, float div, float *out)
{
    for (long i = 0; i < n; i++)
        out[i] = (x[i] - anchor[i]) / div;
}

float dist_update_scale(spec_trainer t, int64_t staleness)
{
    if (t != TRAINER_DYNSGD)
        return 1.0f;
    return 1.0f / (float)((staleness > 0 ? staleness : 0) + 1);
}

void dist_update_apply(float *center, const float *delta, long n, float scale)
{
    for (long i = 0; i < n; i++)
        center[i] += scale * delta[i];
}

float dist_update_alpha(double eta, double rho)
{
    return (float)(rho * eta);
}

void dist_update_elastic(const float *x, const float *center, long n, float alpha, float *e,
                         float *x_new)
{
    for (long i = 0; i < n; i++) {
        float d = alpha * (x[i] - center[i]);
        x_new[i] = x[i] - d;
        e[i] = d; /* after x[i] is read: e may be x */
    }
}

void dist_update_lookahead(const float *x, const float *r, long n, float m, float *ahead)
{
    for (long i = 0; i < n; i++)
        ahead[i] = x[i] - m * r[i];
}

void dist_update_momentum(float *x, float *r, const float *ahead, const float *after, long n,
                          float m, float eta)
{
    for (long i = 0; i < n; i++) {
        float d = after[i] - ahead[i];
        r[i] = m * r[i] - eta * d;
        x[i] -= r[i];
    }
}
