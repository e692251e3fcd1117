/* gpu_math.h — per-element formulas shared by the CUDA kernels and the
 * host, so the host's unit tests check exactly what the device computes
 * against the CPU backend: the dropout mask rule of backend.h, relu,
 * sigmoid and tanh forward and backward, softmax rows in the order a row
 * block reduces them, batchnorm's running-statistics rule and its
 * single-value case, pooling with any padding, explicit padding and
 * cropping for convolutions, and the optimizer updates of optim.h.
 * Compiled as C by the host compiler and as CUDA C++ by nvcc (GPU_HD marks
 * functions for both sides). */
#ifndef PUNCH_GPU_MATH_H
#define PUNCH_GPU_MATH_H

#include <float.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define GPU_HD __host__ __device__
#else
#define GPU_HD
#endif

#include <math.h>

/* backend_dropout_keep() of backend.h, callable on the device. */
GPU_HD static inline int gpu_dropout_keep(uint64_t seed, uint64_t i, float rate)
{
    uint64_t x = seed ^ ((i + 1) * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    float u = (float)(x >> 40) * (1.0f / 16777216.0f);
    return u >= rate;
}

/* ---- element-wise activations ----------------------------------------- */

/* The activations the backend computes itself, in a form the CUDA compiler
 * sees without spec.h (gpu_activation.c maps spec_activation onto it). */
typedef enum gpu_act_kind {
    GPU_ACT_RELU,
    GPU_ACT_SIGMOID,
    GPU_ACT_TANH,
} gpu_act_kind;

/* act(x): the CPU backend's formulas (cpu_activation.c, cpu_activate). */
GPU_HD static inline float gpu_act_forward_at(int act, float x)
{
    switch (act) {
    case GPU_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case GPU_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case GPU_ACT_TANH:
        return tanhf(x);
    }
    return x;
}

/* dy * act'(.) from the forward OUTPUT y, as backend.h defines it and the
 * CPU backend computes it: relu y > 0, sigmoid y(1 - y), tanh 1 - y^2. */
GPU_HD static inline float gpu_act_backward_at(int act, float y, float dy)
{
    switch (act) {
    case GPU_ACT_RELU:
        return y > 0.0f ? dy : 0.0f;
    case GPU_ACT_SIGMOID:
        return dy * y * (1.0f - y);
    case GPU_ACT_TANH:
        return dy * (1.0f - y * y);
    }
    return dy;
}

/* ---- softmax over rows ------------------------------------------------- */

/* Threads of a block in the reducing kernels (gpu_kernels.cu); a power of
 * two, as the halving tree needs. */
#define GPU_BLOCK_THREADS 256

/* Sums v[0 .. GPU_BLOCK_THREADS) in the order a block's shared-memory tree
 * does (gpu_kernels.cu, gpu_block_sum): halving strides, v[i] += v[i + s].
 * v is overwritten. Host only: the mirrors below use it. */
static inline double gpu_tree_sum(double *v)
{
    for (int stride = GPU_BLOCK_THREADS / 2; stride > 0; stride /= 2)
        for (int i = 0; i < stride; i++)
            v[i] += v[i + stride];
    return v[0];
}

/* Host mirror of the softmax kernel on one row of n values, in its order:
 * thread t of the row's block takes elements t, t + GPU_BLOCK_THREADS, ...,
 * the max is exact in any order, each thread sums its expf in double and
 * the tree adds the threads' sums. The CPU backend's formula otherwise
 * (max-shifted expf, the sum in double). x == y allowed (each element is
 * read before it is written). */
static inline void gpu_softmax_row(const float *x, float *y, long n)
{
    float mx = x[0];
    for (long j = 1; j < n; j++)
        mx = x[j] > mx ? x[j] : mx;
    double part[GPU_BLOCK_THREADS];
    for (long t = 0; t < GPU_BLOCK_THREADS; t++) {
        part[t] = 0.0;
        for (long j = t; j < n; j += GPU_BLOCK_THREADS) {
            float e = expf(x[j] - mx);
            y[j] = e;
            part[t] += e;
        }
    }
    float inv = (float)(1.0 / gpu_tree_sum(part));
    for (long j = 0; j < n; j++)
        y[j] *= inv;
}

/* dx (+)= y * (dy - sum(dy * y)) over one row, the dot product in the
 * kernel's order as above; dx == dy allowed when not accumulating. */
static inline void gpu_softmax_row_backward(const float *y, const float *dy, float *dx, long n,
                                            bool accumulate)
{
    double part[GPU_BLOCK_THREADS];
    for (long t = 0; t < GPU_BLOCK_THREADS; t++) {
        part[t] = 0.0;
        for (long j = t; j < n; j += GPU_BLOCK_THREADS)
            part[t] += (double)dy[j] * y[j];
    }
    float dot = (float)gpu_tree_sum(part);
    for (long j = 0; j < n; j++) {
        float g = y[j] * (dy[j] - dot);
        dx[j] = accumulate ? dx[j] + g : g;
    }
}

/* ---- batch normalisation ----------------------------------------------- */

/* The variance the running statistics take from a batch's biased one over
 * m values: unbiased (m / (m - 1)) when m > 1, as is when m == 1, where
 * the correction would be 0/0 (cpu_batchnorm.c's rule). */
GPU_HD static inline double gpu_bn_unbiased(double var, double m)
{
    return m > 1.0 ? var * m / (m - 1.0) : var;
}

/* One running statistic's exponential average, in cpu_batchnorm.c's float
 * operations. */
GPU_HD static inline float gpu_bn_running(float momentum, float running, float batch_value)
{
    return momentum * running + (1.0f - momentum) * batch_value;
}

/* Training-mode batchnorm of channel c when the batch holds one value per
 * channel (batch x spatial == 1): mean x, variance 0, and the CPU's
 * operations for m == 1 from there. cuDNN's training call is not used for
 * it: its running variance divides by m - 1. */
GPU_HD static inline void gpu_bn_single_at(long c, float momentum, float epsilon,
                                           const float *x, const float *gamma,
                                           const float *beta, float *running_mean,
                                           float *running_var, float *save_mean,
                                           float *save_invstd, float *y)
{
    double mean = x[c], var = 0.0;
    double invstd = 1.0 / sqrt(var + epsilon);
    save_mean[c] = (float)mean;
    save_invstd[c] = (float)invstd;
    running_mean[c] = gpu_bn_running(momentum, running_mean[c], (float)mean);
    running_var[c] = gpu_bn_running(momentum, running_var[c],
                                    (float)gpu_bn_unbiased(var, 1.0));
    float scale = gamma[c] * (float)invstd;
    float shift = beta[c] - (float)mean * scale;
    y[c] = x[c] * scale + shift;
}

/* ---- pooling with any padding (backend.h's semantics) ------------------ */

typedef struct gpu_pool_geom {
    int c, h, w, kh, kw, stride_h, stride_w, pad_top, pad_left, oh, ow;
    bool max;
} gpu_pool_geom;

/* The in-bounds window of output (oy, ox): rows [y0, y1), cols [x0, x1). */
GPU_HD static inline void gpu_pool_window(const gpu_pool_geom *g, int oy, int ox, int *y0,
                                          int *y1, int *x0, int *x1)
{
    int ys = oy * g->stride_h - g->pad_top;
    int xs = ox * g->stride_w - g->pad_left;
    *y0 = ys < 0 ? 0 : ys;
    *x0 = xs < 0 ? 0 : xs;
    *y1 = ys + g->kh > g->h ? g->h : ys + g->kh;
    *x1 = xs + g->kw > g->w ? g->w : xs + g->kw;
}

/* Output element i of (planes, oh, ow): the max or the mean of the
 * in-bounds part of its window (padding never wins, is never counted). */
GPU_HD static inline float gpu_pool_forward_at(const gpu_pool_geom *g, const float *x, long i)
{
    long per = (long)g->oh * g->ow;
    const float *xp = x + i / per * g->h * g->w;
    int oy = (int)(i % per / g->ow), ox = (int)(i % g->ow);
    int y0, y1, x0, x1;
    gpu_pool_window(g, oy, ox, &y0, &y1, &x0, &x1);
    float acc = g->max ? -FLT_MAX : 0.0f;
    for (int iy = y0; iy < y1; iy++)
        for (int ix = x0; ix < x1; ix++) {
            float v = xp[(long)iy * g->w + ix];
            acc = g->max ? (v > acc ? v : acc) : acc + v;
        }
    int count = (y1 - y0) * (x1 - x0);
    if (!g->max)
        acc = count > 0 ? acc / (float)count : 0.0f;
    return acc;
}

/* The gradient reaching input element i of (planes, h, w): the gather form
 * of the backward pass, visiting the outputs whose windows hold it in the
 * order a scatter over outputs would, so no atomics are needed. Max
 * pooling routes each dy to the first maximum of its window. */
GPU_HD static inline float gpu_pool_backward_at(const gpu_pool_geom *g, const float *x,
                                                const float *y, const float *dy, long i)
{
    long per = (long)g->h * g->w;
    long p = i / per;
    int iy = (int)(i % per / g->w), ix = (int)(i % g->w);
    const float *xp = x + p * per;
    const float *yp = y + p * g->oh * g->ow;
    const float *dyp = dy + p * g->oh * g->ow;
    /* Outputs whose window can include (iy, ix): oy * stride - pad in
     * [iy - kh + 1, iy]. */
    int ty = iy + g->pad_top - g->kh + 1, tx = ix + g->pad_left - g->kw + 1;
    int oy_lo = ty <= 0 ? 0 : (ty + g->stride_h - 1) / g->stride_h;
    int ox_lo = tx <= 0 ? 0 : (tx + g->stride_w - 1) / g->stride_w;
    int oy_hi = (iy + g->pad_top) / g->stride_h;
    int ox_hi = (ix + g->pad_left) / g->stride_w;
    oy_hi = oy_hi < g->oh - 1 ? oy_hi : g->oh - 1;
    ox_hi = ox_hi < g->ow - 1 ? ox_hi : g->ow - 1;
    float acc = 0.0f;
    for (int oy = oy_lo; oy <= oy_hi; oy++)
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            int y0, y1, x0, x1;
            gpu_pool_window(g, oy, ox, &y0, &y1, &x0, &x1);
            if (iy < y0 || iy >= y1 || ix < x0 || ix >= x1)
                continue;
            float gr = dyp[oy * g->ow + ox];
            if (!g->max) {
                acc += gr / (float)((y1 - y0) * (x1 - x0));
                continue;
            }
            float m = yp[oy * g->ow + ox];
            bool first = false, found = false;
            for (int wy = y0; wy < y1 && !found; wy++)
                for (int wx = x0; wx < x1; wx++)
                    if (xp[(long)wy * g->w + wx] == m) {
                        first = wy == iy && wx == ix;
                        found = true;
                        break;
                    }
            if (first)
                acc += gr;
        }
    return acc;
}

/* ---- explicit padding for asymmetric convolutions ----------------------- */

/* Element i of the (planes, hp, wp) zero-padded copy of (planes, h, w)
 * images placed at (top, left). */
GPU_HD static inline float gpu_pad_at(long i, int h, int w, int top, int left, int hp, int wp,
                                      const float *x)
{
    long per = (long)hp * wp;
    long p = i / per;
    int yy = (int)(i % per / wp) - top, xx = (int)(i % wp) - left;
    bool in = yy >= 0 && yy < h && xx >= 0 && xx < w;
    return in ? x[(p * h + yy) * w + xx] : 0.0f;
}

/* Element i of the (planes, h, w) window at (top, left) of padded images
 * (planes, hp, wp): the adjoint of gpu_pad_at. */
GPU_HD static inline float gpu_crop_at(long i, int h, int w, int top, int left, int hp, int wp,
                                       const float *xp)
{
    long per = (long)h * w;
    long p = i / per;
    int yy = (int)(i % per / w), xx = (int)(i % w);
    return xp[(p * hp + yy + top) * wp + xx + left];
}

typedef enum gpu_optim_kind {
    GPU_OPT_SGD,          /* no state */
    GPU_OPT_MOMENTUM,     /* velocity */
    GPU_OPT_NESTEROV,     /* velocity */
    GPU_OPT_RMSPROP,      /* mean square */
    GPU_OPT_ADAM,         /* m, v */
    GPU_OPT_NADAM,        /* m, v */
} gpu_optim_kind;

/* One step's coefficients: optim/optim.h's optim_coeffs (computed on the
 * host in double and rounded to float) plus the kind, in a struct the CUDA
 * compiler sees without the C headers behind optim.h. */
typedef struct gpu_optim_coeffs {
    int kind;             /* gpu_optim_kind */
    float lr;             /* after decay */
    float wd;             /* weight decay */
    float mu;             /* sgd momentum */
    float rho, one_rho;   /* rmsprop */
    float b1, one_b1, b2, one_b2;
    float eps;
    float lr_t;           /* adam: lr * sqrt(1 - b2^t) / (1 - b1^t) */
    float cg, cm, vscale; /* nadam, see engine/optim/nadam.c */
} gpu_optim_coeffs;

/* Updates parameter i in place; s0 and s1 are the state slots the kind
 * uses (NULL otherwise). The float operations and their order are those of
 * the engine/optim/ files. */
GPU_HD static inline void gpu_optim_update(const gpu_optim_coeffs *k, long i, float *p,
                                           const float *g, float *s0, float *s1)
{
    float gi = g[i] + k->wd * p[i];
    switch (k->kind) {
    case GPU_OPT_SGD:
        p[i] -= k->lr * gi;
        return;
    case GPU_OPT_MOMENTUM:
    case GPU_OPT_NESTEROV: {
        float vi = k->mu * s0[i] - k->lr * gi;
        s0[i] = vi;
        p[i] += k->kind == GPU_OPT_NESTEROV ? k->mu * vi - k->lr * gi : vi;
        return;
    }
    case GPU_OPT_RMSPROP: {
        float ai = k->rho * s0[i] + k->one_rho * gi * gi;
        s0[i] = ai;
        p[i] -= k->lr * gi / (sqrtf(ai) + k->eps);
        return;
    }
    case GPU_OPT_ADAM:
    case GPU_OPT_NADAM: {
        /* Both moments as optim/adam.c and optim/nadam.c update them. */
        float mi = k->b1 * s0[i] + k->one_b1 * gi;
        float vi = k->b2 * s1[i] + k->one_b2 * gi * gi;
        s0[i] = mi;
        s1[i] = vi;
        if (k->kind == GPU_OPT_ADAM) {
            p[i] -= k->lr_t * mi / (sqrtf(vi) + k->eps);
        } else {
            float mbar = k->cg * gi + k->cm * mi;
            p[i] -= k->lr * mbar / (sqrtf(vi * k->vscale) + k->eps);
        }
        return;
    }
    }
}

#endif
