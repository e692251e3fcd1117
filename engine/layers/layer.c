/* layer.c — the layer-type table and what is read off a layer's spec (its
 * final activation, its sequence length). The helpers the layer files
 * build from are layer_common.c's, so the table depends on the layer files
 * and they never call back into it. */
#include "layers/layer.h"

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

bool layer_runs_short(const spec_layer *s)
{
    switch (s->type) {
    case LAYER_DENSE:
    case LAYER_DROPOUT:
    case LAYER_RELU:
    case LAYER_SIGMOID:
    case LAYER_TANH:
    case LAYER_ADD:
    case LAYER_CONCAT:
    case LAYER_EMBEDDING:
    case LAYER_CONV1D:
    case LAYER_GLOBAL_MAXPOOL1D:
    case LAYER_GLOBAL_AVGPOOL1D:
    case LAYER_MAXPOOL1D:
    case LAYER_AVGPOOL1D:
    case LAYER_LSTM:
    case LAYER_GRU:
    case LAYER_BIDIRECTIONAL:
    case LAYER_LAYER_NORM:
    case LAYER_POSITIONAL_EMBEDDING:
    case LAYER_SINUSOIDAL_POSITION:
    case LAYER_MULTI_HEAD_ATTENTION:
        return true;
    default:
        return false;
    }
}
