/* dist_async_update.h — the update rules of the asynchronous trainers as plain
 * arithmetic on host vectors, shared by the worker (dist_async_worker.c) and the
 * parameter server (dist_async_server.c) so a unit test can check them against
 * the papers by hand:
 *
 *   downpour  residual r = x - x_pull; center += r            (Dean et al. 2012)
 *   adag      r = (x - x_pull) / communication_window          (Hermans 2017)
 *   dynsgd    center += r / (staleness + 1)                    (Jiang et al. 2017)
 *   aeasgd    e = alpha (x - center), alpha = lr * rho;
 *             x -= e; center += e                              (Zhang et al. 2015)
 *   eamsgd    as aeasgd; local step v = m v - lr g(x + m v), x += v
 *
 * staleness: commits the server received between the worker's last pull
 * and this commit's arrival. */
#ifndef PUNCH_DIST_UPDATE_H
#define PUNCH_DIST_UPDATE_H

#include <stdint.h>

#include "jobspec/spec.h"

/* What the worker divides its residual by: the communication window for
 * adag, 1 for the other residual trainers. */
float dist_update_residual_div(spec_trainer t, int window);

/* out[i] = (x[i] - anchor[i]) / div for n entries; out may be x. */
void dist_update_residual(const float *x, const float *anchor, long n, float div, float *out);

/* The factor the server applies a commit with: 1 / (staleness + 1) for
 * dynsgd (a negative staleness counts as 0), 1 for the others. */
float dist_update_scale(spec_trainer t, int64_t staleness);

/* center[i] += scale * delta[i] for n entries. */
void dist_update_apply(float *center, const float *delta, long n, float scale);

/* EASGD's moving rate alpha = learning rate * rho. */
float dist_update_alpha(double lr, double rho);

/* The elastic difference e[i] = alpha * (x[i] - center[i]) and the
 * worker's new x_new[i] = x[i] - e[i], for n entries; e may be x. */
void dist_update_elastic(const float *x, const float *center, long n, float alpha, float *e,
                         float *x_new);

/* EAMSGD's Nesterov look-ahead: ahead[i] = x[i] + m * v[i]. */
void dist_update_lookahead(const float *x, const float *v, long n, float m, float *ahead);

/* EAMSGD's local step from the gradient g taken at the look-ahead point:
 * v[i] = m * v[i] - lr * g[i]; x[i] += v[i]. */
void dist_update_momentum(float *x, float *v, const float *g, long n, float m, float lr);

#endif
