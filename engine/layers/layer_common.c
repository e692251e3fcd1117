/* layer_common.c — helpers every layer file builds from: its tensors in the
 * parameter block, its initial weights' limit, padding, and a gradient
 * passed through (declared in layer.h). */
#include "layers/layer.h"

#include <math.h>

long layer_tensor_size(const layer_tensor *t)
{
    long size = 1;
    for (int r = 0; r < t->rank; r++)
        size *= t->dims[r];
    return size;
}

long layer_param_align(long n)
{
    return (n + LAYER_PARAM_ALIGN - 1) / LAYER_PARAM_ALIGN * LAYER_PARAM_ALIGN;
}

void layer_add_tensor(layer *l, const char *name, bool is_state, long offset, int rank,
                      long d0, long d1, long d2, long d3)
{
    if (l->n_tensors >= LAYER_MAX_TENSORS)
        return;
    layer_tensor *t = &l->tensors[l->n_tensors++];
    t->name = name;
    t->is_state = is_state;
    t->offset = offset;
    t->rank = rank;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->dims[2] = d2;
    t->dims[3] = d3;
    if (is_state)
        return;
    long end = layer_param_align(offset + layer_tensor_size(t));
    if (end > l->param_span)
        l->param_span = end;
}

void layer_pass_gradient(backend *be, const float *dy, float *dx, bool accumulate, long n)
{
    if (!dx)
        return;
    if (accumulate)
        be->axpy(be, n, 1.0f, dy, dx);
    else
        be->copy(be, dx, dy, n);
}

/* Glorot uniform, Keras's default for every layer. He uniform before a
 * ReLU was tried: its 2.4x larger weights (conv 5x5 on one channel) cost
 * the convnet preset about 1% of test accuracy after 5 epochs. */
double layer_init_limit(long fan_in, long fan_out)
{
    return sqrt(6.0 / (double)(fan_in + fan_out));
}

int layer_pad_after(int in, int out, int kernel, int stride, int dilation, int pad_before)
{
    int needed = (out - 1) * stride + dilation * (kernel - 1) + 1 - in - pad_before;
    return needed > 0 ? needed : 0;
}

int layer_steps(const layer *l)
{
    return l->steps > 0 ? l->steps : l->spec->in_shape.dim[0];
}

int layer_out_steps(const layer *l)
{
    return l->out_steps > 0 ? l->out_steps : l->spec->out_shape.dim[0];
}

/* A merge layer's sequence inputs all have the first's steps (the model
 * refuses branches that shorten time differently). */
long layer_x_floats(const layer *l, int i)
{
    const spec_shape *in = &l->spec->in_shape;
    if (in->rank != 2)
        return l->x_size[i];
    return l->x_size[i] / in->dim[0] * layer_steps(l);
}

long layer_y_floats(const layer *l)
{
    const spec_shape *out = &l->spec->out_shape;
    if (out->rank != 2)
        return l->out_size;
    return l->out_size / out->dim[0] * layer_out_steps(l);
}
