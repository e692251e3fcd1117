/* optim.h — optimizers over one flat parameter buffer: SGD (momentum,
 * Nesterov, decay), RMSprop, Adam, Nadam, with the Keras defaults. One call
 * updates every parameter of the model, so a distributed trainer averages
 * the gradient buffer once and steps once.
 *
 * The update rules are Keras 2's (each file states its formulas and where
 * PyTorch differs): SGD keeps lr inside the velocity, Adam folds the bias
 * correction into the step size, Nadam uses Keras's momentum schedule.
 * optim_step allocates nothing, runs vectorized loops, and is
 * deterministic: the same inputs give the same bits. Every parameter's
 * update depends on that parameter alone, so a caller with threads may
 * split one step into ranges (optim_step_range, optim_step_end) and get
 * the same bits as optim_step. */
#ifndef PUNCH_OPTIM_H
#define PUNCH_OPTIM_H

#include <stdbool.h>
#include <stddef.h>

#include "jobspec/spec.h"

typedef struct optimizer optimizer;

/* Allocates the state for n parameters (zeroed). NULL on allocation failure
 * (or n < 0, or an unknown cfg->name). The optimizer copies cfg. */
optimizer *optim_create(const spec_optimizer *cfg, long n);
void optim_free(optimizer *o);

/* One update: params -= f(grads) at learning rate lr (the schedule's
 * current rate; the optimizer applies its own `decay` on top, from its
 * iteration count: lr / (1 + decay * iterations), counted before this
 * step). Adds weight_decay * params to the gradient first. n must be the
 * count the optimizer was created for. */
void optim_step(optimizer *o, float *params, const float *grads, long n, float lr);

/* optim_step in parts: update params[begin, end) (params and grads are the
 * whole n-float buffers), for disjoint ranges covering [0, n) — in any
 * order, from several threads at once — then call optim_step_end once.
 * The result is bit-identical to optim_step. */
void optim_step_range(optimizer *o, float *params, const float *grads, long begin, long end,
                      float lr);
void optim_step_end(optimizer *o);

/* One step's coefficients, computed on the host in double from the
 * settings and the step count and rounded to float: the one definition of
 * Keras's formulas, used by the CPU kernels here and by the device
 * optimizer (gpu/gpu_optim.c), so the two paths cannot drift apart. Fields
 * an algorithm does not use are 0. */
typedef struct optim_coeffs {
    float lr;                     /* the rate after `decay` */
    float wd;                     /* weight_decay */
    float eps;                    /* epsilon */
    float mu;                     /* sgd: momentum */
    float rho, one_rho;           /* rmsprop */
    float b1, one_b1, b2, one_b2; /* adam, nadam */
    float lr_t;                   /* adam: lr * sqrt(1 - b2^t) / (1 - b1^t) */
    float cg, cm, vscale;         /* nadam, see nadam.c */
    float m_schedule;             /* nadam: the momentum-schedule product
                                     after this step (else the one given) */
    float keep;                   /* adamw: 1 - lr * weight_decay */
} optim_coeffs;

/* The coefficients of the step taken after `iterations` steps at schedule
 * rate lr, with Nadam's momentum-schedule product so far `m_schedule`
 * (1 before the first step). */
optim_coeffs optim_coeffs_for(const spec_optimizer *cfg, long iterations, float lr,
                              float m_schedule);

/* State vectors per parameter (0, 1 or 2) for cfg; -1 for an unknown
 * name. */
int optim_slots(const spec_optimizer *cfg);

/* Iterations taken so far. */
long optim_iterations(const optimizer *o);

/* Checkpointing: the state (slots plus iteration count) as one flat float
 * buffer of optim_state_floats() floats, restorable bit-exactly: after a
 * load, the optimizer steps exactly as the one that saved it would have.
 * The buffer holds only finite floats, so it can be stored as any tensor. */
long optim_state_floats(const optimizer *o);
void optim_state_save(const optimizer *o, float *dst);
void optim_state_load(optimizer *o, const float *src);

/* The first OPTIM_STATE_HEADER floats of a saved state: the iteration
 * count (in two exact 24-bit halves) and Nadam's schedule product. The
 * device optimizer (gpu/gpu_optim.c) writes the same header before its
 * slots, so a checkpoint moves between CPU and GPU runs. header_load
 * returns false, setting nothing, when the count is not a valid one. */
#define OPTIM_STATE_HEADER 3
void optim_header_save(long iterations, float m_schedule, float *dst);
bool optim_header_load(const float *src, long *iterations, float *m_schedule);

/* Whether n_floats floats at src look like a state this optimizer saved
 * (right length, sane iteration count). Check this before loading bytes
 * read from a file; optim_state_load leaves the optimizer unchanged when
 * the count is not valid. */
bool optim_state_valid(const optimizer *o, const float *src, long n_floats);

/* adamw: the parameters weight decay applies to, as n_ranges [begin, end)
 * pairs (ranges[2r], ranges[2r+1]), sorted and disjoint; the rest step
 * without decay. Without a call every parameter decays. Copies ranges;
 * -1 on allocation failure. Other optimizers ignore it (their
 * weight_decay is an L2 term on every gradient, as Keras's). */
int optim_set_decay_ranges(optimizer *o, const long *ranges, int n_ranges);

/* training.clip_norm (clip.c): the L2 norm of g[0..n), and g scaled in
 * place so that norm is at most max_norm. Returns the norm before
 * clipping; with max_norm <= 0 (off) returns 0 without reading g.
 * Deterministic: summed in double in index order. */
double optim_grad_norm(const float *g, long n);
double optim_clip_norm(float *g, long n, double max_norm);

/* training.grad_accum_steps (grad_accum.c): the mean gradient of k
 * micro-batches. With k = 1 no buffer is made and add returns g itself. */
typedef struct grad_accum {
    float *sum;  /* n floats, NULL when k = 1 */
    long n;
    int k;
    int count;   /* micro-batches in sum */
} grad_accum;
int grad_accum_init(grad_accum *a, long n, int k); /* -1: out of memory */
void grad_accum_free(grad_accum *a);
/* Adds one micro-batch's gradient; when it completes a group of k, returns
 * the group's mean (a->sum, or g when k = 1) and starts a new group; else
 * NULL. */
float *grad_accum_add(grad_accum *a, float *g);
/* The mean of a partial group (the end of an epoch or run), or NULL when
 * none is pending; starts a new group. */
float *grad_accum_mean(grad_accum *a);

#endif
