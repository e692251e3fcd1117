/* cpu_pool.c — max and average 2-D pooling on the CPU, planes
 * (sample, channel) split across the pool's threads. Padded positions
 * never win a max and are not counted in an average. */
#include "core/backend_cpu.h"

#include <float.h>
#include <string.h>

long cpu_pool2d_prepare(backend *be, pool2d_desc *d)
{
    (void)be;
    if (d->oh <= 0 || d->ow <= 0 || d->c <= 0)
        return -1;
    return 0;
}

void cpu_pool2d_release(backend *be, pool2d_desc *d)
{
    (void)be;
    d->impl = NULL;
}

typedef struct pool_job {
    const pool2d_desc *d;
    const float *x, *y, *dy;
    float *out;
    bool accumulate;
} pool_job;

/* The in-bounds window of output (oy, ox): rows [y0, y1), cols [x0, x1). */
static void pool_window(const pool2d_desc *d, int oy, int ox, int *y0, int *y1, int *x0,
                        int *x1)
{
    int ys = oy * d->stride_h - d->pad_top;
    int xs = ox * d->stride_w - d->pad_left;
    *y0 = ys < 0 ? 0 : ys;
    *x0 = xs < 0 ? 0 : xs;
    *y1 = ys + d->kh > d->h ? d->h : ys + d->kh;
    *x1 = xs + d->kw > d->w ? d->w : xs + d->kw;
}

/* 2x2 windows at stride 2 without padding (every preset's pooling): all
 * four inputs are in bounds, so no window arithmetic per output. */
static bool pool_is_2x2(const pool2d_desc *d)
{
    return d->kh == 2 && d->kw == 2 && d->stride_h == 2 && d->stride_w == 2 &&
           d->pad_top == 0 && d->pad_left == 0 && d->pad_bottom == 0 && d->pad_right == 0;
}

static void pool_forward_2x2(const pool2d_desc *d, const float *x, float *y)
{
    for (int oy = 0; oy < d->oh; oy++) {
        const float *r0 = x + (long)(2 * oy) * d->w;
        const float *r1 = r0 + d->w;
        float *out = y + (long)oy * d->ow;
        for (int ox = 0; ox < d->ow; ox++) {
            float a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], e = r1[2 * ox + 1];
            if (d->mode == POOL_AVG) {
                out[ox] = (a + b + c + e) * 0.25f;
                continue;
            }
            float m = a > b ? a : b;
            float n = c > e ? c : e;
            out[ox] = m > n ? m : n;
        }
    }
}

/* dx of one plane, already zeroed or holding what to add to. Branch-free
 * (every input of a window gets g or 0), so the loops vectorise; adding
 * 0 leaves a value unchanged. */
static inline void pool_backward_2x2(const pool2d_desc *d, const float *x, const float *y,
                                     const float *dy, float *dx)
{
    for (int oy = 0; oy < d->oh; oy++) {
        const float *x0 = x + (long)(2 * oy) * d->w, *x1 = x0 + d->w;
        float *restrict d0 = dx + (long)(2 * oy) * d->w;
        float *restrict d1 = d0 + d->w;
        const float *ym = y + (long)oy * d->ow, *g = dy + (long)oy * d->ow;
        if (d->mode == POOL_AVG) {
            for (int ox = 0; ox < d->ow; ox++) {
                float q = g[ox] * 0.25f;
                d0[2 * ox] += q;
                d0[2 * ox + 1] += q;
                d1[2 * ox] += q;
                d1[2 * ox + 1] += q;
            }
            continue;
        }
        /* The first maximum in row-major order, as the general path. */
        for (int ox = 0; ox < d->ow; ox++) {
            float m = ym[ox];
            bool a = x0[2 * ox] == m;
            bool b = !a && x0[2 * ox + 1] == m;
            bool c = !a && !b && x1[2 * ox] == m;
            bool e = !a && !b && !c;
            d0[2 * ox] += a ? g[ox] : 0.0f;
            d0[2 * ox + 1] += b ? g[ox] : 0.0f;
            d1[2 * ox] += c ? g[ox] : 0.0f;
            d1[2 * ox + 1] += e ? g[ox] : 0.0f;
        }
    }
}

CPU_SIMD_CLONES
static void pool_forward_planes(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const pool_job *j = ctx;
    const pool2d_desc *d = j->d;
    if (pool_is_2x2(d)) {
        for (long p = begin; p < end; p++)
            pool_forward_2x2(d, j->x + p * d->h * d->w, j->out + p * d->oh * d->ow);
        return;
    }
    for (long p = begin; p < end; p++) {
        const float *x = j->x + p * d->h * d->w;
        float *y = j->out + p * d->oh * d->ow;
        for (int oy = 0; oy < d->oh; oy++) {
            for (int ox = 0; ox < d->ow; ox++) {
                int y0, y1, x0, x1;
                pool_window(d, oy, ox, &y0, &y1, &x0, &x1);
                float acc = d->mode == POOL_MAX ? -FLT_MAX : 0.0f;
                for (int iy = y0; iy < y1; iy++) {
                    const float *row = x + (long)iy * d->w;
                    for (int ix = x0; ix < x1; ix++) {
                        if (d->mode == POOL_MAX)
                            acc = row[ix] > acc ? row[ix] : acc;
                        else
                            acc += row[ix];
                    }
                }
                int count = (y1 - y0) * (x1 - x0);
                if (d->mode == POOL_AVG)
                    acc = count > 0 ? acc / (float)count : 0.0f;
                y[oy * d->ow + ox] = acc;
            }
        }
    }
}

void cpu_pool2d_forward(backend *be, const pool2d_desc *d, int batch, const float *x,
                        float *y)
{
    pool_job j = {.d = d, .x = x, .out = y};
    pool_run(cpu_pool(be), (long)batch * d->c, pool_forward_planes, &j);
}

CPU_SIMD_CLONES
static void pool_backward_planes(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const pool_job *j = ctx;
    const pool2d_desc *d = j->d;
    for (long p = begin; p < end; p++) {
        const float *x = j->x + p * d->h * d->w;
        const float *y = j->y + p * d->oh * d->ow;
        const float *dy = j->dy + p * d->oh * d->ow;
        float *dx = j->out + p * d->h * d->w;
        if (!j->accumulate)
            memset(dx, 0, (size_t)d->h * d->w * sizeof *dx);
        if (pool_is_2x2(d)) {
            pool_backward_2x2(d, x, y, dy, dx);
            continue;
        }
        for (int oy = 0; oy < d->oh; oy++) {
            for (int ox = 0; ox < d->ow; ox++) {
                int y0, y1, x0, x1;
                pool_window(d, oy, ox, &y0, &y1, &x0, &x1);
                float g = dy[oy * d->ow + ox];
                if (d->mode == POOL_AVG) {
                    int count = (y1 - y0) * (x1 - x0);
                    if (count == 0)
                        continue;
                    g /= (float)count;
                    for (int iy = y0; iy < y1; iy++)
                        for (int ix = x0; ix < x1; ix++)
                            dx[(long)iy * d->w + ix] += g;
                    continue;
                }
                float m = y[oy * d->ow + ox];
                bool done = false;
                for (int iy = y0; iy < y1 && !done; iy++) {
                    for (int ix = x0; ix < x1; ix++) {
                        if (x[(long)iy * d->w + ix] == m) {
                            dx[(long)iy * d->w + ix] += g;
                            done = true;
                            break;
                        }
                    }
                }
            }
        }
    }
}

void cpu_pool2d_backward(backend *be, const pool2d_desc *d, int batch, const float *x,
                         const float *y, const float *dy, float *dx, bool accumulate)
{
    pool_job j = {.d = d, .x = x, .y = y, .dy = dy, .out = dx, .accumulate = accumulate};
    pool_run(cpu_pool(be), (long)batch * d->c, pool_backward_planes, &j);
}
