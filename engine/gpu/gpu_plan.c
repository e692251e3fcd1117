/* gpu_plan.c — conv/pool/batchnorm geometry and workspace layout for the
 * CUDA backend; see gpu_plan.h. */
#include "gpu/gpu_plan.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

long gpu_plan_floats(size_t bytes)
{
    size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
    size_t a = (size_t)GPU_PLAN_ALIGN_FLOATS;
    if (floats > (size_t)LONG_MAX - a)
        return -1;
    return (long)((floats + a - 1) / a * a);
}

/* a * b * c * d as a long, or -1 on overflow or a non-positive factor. */
static long gpu_plan_product(long a, long b, long c, long d)
{
    long f[4] = {a, b, c, d};
    long r = 1;
    for (int i = 0; i < 4; i++) {
        if (f[i] <= 0 || r > LONG_MAX / f[i])
            return -1;
        r *= f[i];
    }
    return r;
}

static int gpu_conv_out(int in, int pad_a, int pad_b, int k, int dil, int stride)
{
    long span = (long)in + pad_a + pad_b - (long)dil * (k - 1) - 1;
    if (span < 0)
        return 0;
    return (int)(span / stride + 1);
}

bool gpu_conv_plan_geometry(const conv2d_desc *d, gpu_conv_plan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (d->max_batch <= 0 || d->c <= 0 || d->h <= 0 || d->w <= 0 || d->k <= 0 ||
        d->kh <= 0 || d->kw <= 0 || d->stride_h <= 0 || d->stride_w <= 0 ||
        d->dil_h <= 0 || d->dil_w <= 0 || d->pad_top < 0 || d->pad_left < 0 ||
        d->pad_bottom < 0 || d->pad_right < 0) {
        snprintf(err, errlen, "conv2d: sizes, strides and dilations must be positive, "
                              "padding non-negative");
        return false;
    }
    int oh = gpu_conv_out(d->h, d->pad_top, d->pad_bottom, d->kh, d->dil_h, d->stride_h);
    int ow = gpu_conv_out(d->w, d->pad_left, d->pad_right, d->kw, d->dil_w, d->stride_w);
    if (oh <= 0 || ow <= 0 || oh != d->oh || ow != d->ow) {
        snprintf(err, errlen, "conv2d: output %dx%d does not match the geometry (expected %dx%d)",
                 d->oh, d->ow, oh, ow);
        return false;
    }
    p->explicit_pad = d->pad_top != d->pad_bottom || d->pad_left != d->pad_right;
    if (p->explicit_pad) {
        p->in_h = d->h + d->pad_top + d->pad_bottom;
        p->in_w = d->w + d->pad_left + d->pad_right;
        p->padded_floats = gpu_plan_product(d->max_batch, d->c, p->in_h, p->in_w);
        if (p->padded_floats < 0) {
            snprintf(err, errlen, "conv2d: padded input too large");
            return false;
        }
    } else {
        p->pad_h = d->pad_top;
        p->pad_w = d->pad_left;
        p->in_h = d->h;
        p->in_w = d->w;
    }
    return true;
}

bool gpu_conv_plan_workspace(gpu_conv_plan *p, size_t cudnn_bytes, char *err, size_t errlen)
{
    p->cudnn_floats = gpu_plan_floats(cudnn_bytes);
    long padded = p->explicit_pad ? gpu_plan_floats((size_t)p->padded_floats * sizeof(float))
                                  : 0;
    if (p->cudnn_floats < 0 || padded < 0 || p->cudnn_floats > (LONG_MAX - 2 * padded) / 2) {
        snprintf(err, errlen, "conv2d: workspace too large");
        return false;
    }
    p->off_xpad = p->cudnn_floats;
    p->off_dxpad = p->off_xpad + padded;
    p->workspace_floats = p->off_dxpad + padded;
    return true;
}

bool gpu_pool_plan_build(const pool2d_desc *d, gpu_pool_plan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (d->max_batch <= 0 || d->c <= 0 || d->h <= 0 || d->w <= 0 || d->kh <= 0 ||
        d->kw <= 0 || d->stride_h <= 0 || d->stride_w <= 0 || d->pad_top < 0 ||
        d->pad_left < 0 || d->pad_bottom < 0 || d->pad_right < 0) {
        snprintf(err, errlen, "pool2d: sizes and strides must be positive, padding "
                              "non-negative");
        return false;
    }
    int oh = gpu_conv_out(d->h, d->pad_top, d->pad_bottom, d->kh, 1, d->stride_h);
    int ow = gpu_conv_out(d->w, d->pad_left, d->pad_right, d->kw, 1, d->stride_w);
    if (oh <= 0 || ow <= 0 || oh != d->oh || ow != d->ow) {
        snprintf(err, errlen, "pool2d: output %dx%d does not match the geometry (expected %dx%d)",
                 d->oh, d->ow, oh, ow);
        return false;
    }
    /* cuDNN excludes padding from max and (in COUNT_EXCLUDE_PADDING mode)
     * from averages, as backend.h asks, but only pads symmetrically, and a
     * window lying wholly in the padding would have no element at all. */
    p->use_cudnn = d->pad_top == d->pad_bottom && d->pad_left == d->pad_right &&
                   d->pad_top < d->kh && d->pad_left < d->kw;
    if (p->use_cudnn) {
        p->pad_h = d->pad_top;
        p->pad_w = d->pad_left;
    }
    return true;
}

long gpu_batchnorm_workspace(const batchnorm_desc *d)
{
    return gpu_plan_product(d->max_batch, d->c, d->spatial, 1);
}
