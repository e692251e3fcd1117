/* dist_async_update.h — the update rules of the asynchronous trainers as plain
 * arithmetic on host vectors, shared by the worker (dist_async_worker.c) and the
 * parameter server (dist_async_server.c) so a unit test can check them by
 * hand against dist-keras (workers.py, parameter_servers.py), which defines
 * them after the papers:
 *
 *   downpour  residual r = x - x_pull; center += r            (Dean et al. 2012)
 *   adag      r = (x - x_pull) / communication_window          (Hermans 2017)
 *   dynsgd    center += r / (staleness + 1)                    (Jiang et al. 2017)
 *   aeasgd    e = alpha (x - center), alpha = rho * eta;
 *             x -= e; center += e                              (Zhang et al. 2015)
 *   eamsgd    as aeasgd; the local step: the worker optimizer steps from
 *             the look-ahead x - m r to `after`, d = after - (x - m r),
 *             r = m r - eta d, x -= r (dist-keras looks at x + m r:
 *             dist_update_lookahead says why we depart)
 *
 * eta is distributed.learning_rate (dist-keras's trainer learning_rate,
 * default 0.1), not the worker optimizer's rate; the residual rules use no
 * rate, as in dist-keras. staleness: commits the server received between
 * the worker's last pull and this commit's arrival. */
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

/* EASGD's moving rate alpha = rho * eta (eta: distributed.learning_rate). */
float dist_update_alpha(double eta, double rho);

/* The elastic difference e[i] = alpha * (x[i] - center[i]) and the
 * worker's new x_new[i] = x[i] - e[i], for n entries; e may be x. */
void dist_update_elastic(const float *x, const float *center, long n, float alpha, float *e,
                         float *x_new);

/* EAMSGD's look-ahead, where the worker optimizer takes its step:
 * ahead[i] = x[i] - m * r[i]. A departure from dist-keras, which looks at
 * x + m r: its r accumulates -eta times the optimizer's steps and x moves
 * by -r, so the point the momentum carries x to is x - m r (Zhang et al.'s
 * Nesterov point x + delta v, with v = -r); dist-keras's x + m r trails x,
 * on the side it comes from. Measured on docs/performance.md's job: 0.865
 * mean test accuracy against 0.851 with dist-keras's sign. */
void dist_update_lookahead(const float *x, const float *r, long n, float m, float *ahead);

/* EAMSGD's momentum after the worker optimizer moved the look-ahead point
 * `ahead` to `after`: d = after - ahead, r[i] = m * r[i] - eta * d[i],
 * x[i] -= r[i], as dist-keras has it (r points against the descent). */
void dist_update_momentum(float *x, float *r, const float *ahead, const float *after, long n,
                          float m, float eta);

#endif
