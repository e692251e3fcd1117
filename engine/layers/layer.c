/* layer.c — the layer-type table and helpers shared by the layer files. */
#include "layers/layer.h"

#include <math.h>

const layer_ops *layer_ops_for(spec_layer_type type)
{
    switch (type) {
    case LAYER_DENSE:
        return &layer_dense_ops;
    case LAYER_CONV2D:
        return &layer_conv2d_ops;
    case LAYER_MAXPOOL2D:
        return &layer_maxpool2d_ops;
    case LAYER_AVGPOOL2D:
        return &layer_avgpool2d_ops;
    case LAYER_DROPOUT:
        return &layer_dropout_ops;
    case LAYER_FLATTEN:
        return &layer_flatten_ops;
    case LAYER_BATCHNORM:
        return &layer_batchnorm_ops;
    case LAYER_RELU:
    case LAYER_SIGMOID:
    case LAYER_TANH:
    case LAYER_SOFTMAX:
        return &layer_activation_ops;
    case LAYER_ADD:
        return &layer_add_ops;
    case LAYER_CONCAT:
        return &layer_concat_ops;
    case LAYER_EMBEDDING:
        return &layer_embedding_ops;
    case LAYER_CONV1D:
        return &layer_conv1d_ops;
    case LAYER_GLOBAL_MAXPOOL1D:
    case LAYER_GLOBAL_AVGPOOL1D:
        return &layer_global_pool1d_ops;
    case LAYER_MAXPOOL1D:
    case LAYER_AVGPOOL1D:
        return &layer_pool1d_ops;
    case LAYER_LSTM:
        return &layer_lstm_ops;
    case LAYER_GRU:
        return &layer_gru_ops;
    case LAYER_BIDIRECTIONAL:
        return &layer_bidirectional_ops;
    case LAYER_LAYER_NORM:
        return &layer_layer_norm_ops;
    case LAYER_POSITIONAL_EMBEDDING:
        return &layer_positional_embedding_ops;
    case LAYER_SINUSOIDAL_POSITION:
        return &layer_sinusoidal_position_ops;
    case LAYER_MULTI_HEAD_ATTENTION:
        return &layer_attention_ops;
    case LAYER_TYPE_COUNT:
        break;
    }
    return NULL;
}

spec_activation layer_final_activation(const spec_layer *s)
{
    switch (s->type) {
    case LAYER_DENSE:
    case LAYER_CONV2D:
    case LAYER_CONV1D:
        return s->activation;
    case LAYER_RELU:
        return ACT_RELU;
    case LAYER_SIGMOID:
        return ACT_SIGMOID;
    case LAYER_TANH:
        return ACT_TANH;
    case LAYER_SOFTMAX:
        return ACT_SOFTMAX;
    default:
        return ACT_NONE;
    }
}

bool layer_seq_length(const spec_layer *s, int *len)
{
    pool1d_desc p;
    if (layer_pool1d_desc(s, &p)) {
        *len = pool1d_out_length(&p, *len);
        return true;
    }
    if (s->type != LAYER_CONV1D || (s->padding != PAD_VALID && s->stride[0] == 1))
        return false;
    conv1d_desc c;
    layer_conv1d_desc(s, 1, &c);
    *len = conv1d_out_length(&c, *len);
    return true;
}

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
