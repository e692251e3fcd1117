/* spec_model.c — the model section: the input shape, each layer's fields,
 * and shape inference through the layer graph, so a dense layer after a
 * convolution without flatten, a window larger than its input or a
 * residual add of mismatched shapes is refused before any training. */
#include <stdlib.h>
#include <string.h>

#include "jobspec/spec_internal.h"

/* "input": {"sequence": [F]} or {"tokens": V}: a sequence of data.max_length
 * steps, F features each (a token id is one feature). */
static bool parse_sequence_input(const json_t *in, job_spec *spec, spec_error *err)
{
    static const char *const keys[] = {"sequence", "tokens", NULL};
    if (!spec_check_keys(in, "model.input", keys, err))
        return false;
    const json_t *seq = json_object_get(in, "sequence");
    const json_t *tok = json_object_get(in, "tokens");
    int steps = spec->data.max_length;
    if ((seq != NULL) == (tok != NULL))
        return spec_fail(err, "model.input", "give either {\"sequence\": [features]} or "
                                             "{\"tokens\": vocabulary_size}");
    if (tok) {
        long v = 0;
        if (!spec_get_int(in, "model.input", "tokens", 2, 16777216, &v, err))
            return false;
        spec->input_tokens = (int)v;
        spec->input = (spec_shape){2, {steps, 1, 1}};
        return true;
    }
    if (!json_is_array(seq) || json_array_size(seq) != 1 ||
        !json_is_integer(json_array_get(seq, 0)) ||
        json_integer_value(json_array_get(seq, 0)) < 1 ||
        json_integer_value(json_array_get(seq, 0)) > 1000000)
        return spec_fail(err, "model.input.sequence", "expected [features], features in "
                                                      "1..1000000");
    spec->input = (spec_shape){2, {steps, (int)json_integer_value(json_array_get(seq, 0)), 1}};
    if (spec_shape_size(&spec->input) > 100000000L)
        return spec_fail(err, "model.input", "more than 100,000,000 values per sample");
    return true;
}

static bool parse_input(const json_t *in, job_spec *spec, spec_error *err)
{
    if (json_is_object(in))
        return parse_sequence_input(in, spec, err);
    if (!in) {
        /* The loaders know these shapes; other formats must say. */
        if (spec->data.format == DATA_IDX) {
            spec->input = (spec_shape){3, {1, 28, 28}};
            return true;
        }
        if (spec->data.format == DATA_CIFAR10) {
            spec->input = (spec_shape){3, {3, 32, 32}};
            return true;
        }
        return spec_fail(err, "model.input", "missing; give the sample shape, e.g. [784] or "
                                             "[1, 28, 28] (channels, height, width)");
    }
    size_t n = json_is_array(in) ? json_array_size(in) : 0;
    if (n != 1 && n != 3)
        return spec_fail(err, "model.input", "expected [features], [channels, height, "
                                             "width], {\"sequence\": [features]} or "
                                             "{\"tokens\": vocabulary_size}");
    spec->input.rank = (int)n;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(in, i);
        char p[160];
        spec_path_index(p, sizeof p, "model.input", i);
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > 1000000)
            return spec_fail(err, p, "expected an integer in 1..1000000");
        spec->input.dim[i] = (int)json_integer_value(v);
    }
    if (spec_shape_size(&spec->input) > 100000000L)
        return spec_fail(err, "model.input", "more than 100,000,000 values per sample");
    return true;
}

static bool parse_inputs_field(const json_t *l, const char *path, int index, spec_layer *layer,
                               spec_error *err)
{
    const json_t *in = json_object_get(l, "inputs");
    char p[160];
    spec_path_key(p, sizeof p, path, "inputs");
    bool multi = layer->type == LAYER_ADD || layer->type == LAYER_CONCAT;
    if (!in || json_is_null(in)) {
        if (multi)
            return spec_fail(err, p, "missing; %s needs the indices of at least 2 earlier "
                                     "layers, e.g. [1, 3] (-1 is the model input)",
                             spec_layer_type_name(layer->type));
        layer->inputs[0] = index - 1;
        layer->n_inputs = 1;
        return true;
    }
    if (!json_is_array(in))
        return spec_fail(err, p, "expected an array of layer indices");
    size_t n = json_array_size(in);
    if (multi && (n < 2 || n > SPEC_MAX_INPUTS))
        return spec_fail(err, p, "%s needs 2 to %d inputs, got %zu",
                         spec_layer_type_name(layer->type), SPEC_MAX_INPUTS, n);
    if (layer->type == LAYER_MULTI_HEAD_ATTENTION && (n < 1 || n > 2))
        return spec_fail(err, p, "multi_head_attention takes [input] (self-attention) or "
                                 "[query, key_value] (cross-attention), got %zu inputs", n);
    if (!multi && layer->type != LAYER_MULTI_HEAD_ATTENTION && n != 1)
        return spec_fail(err, p, "%s takes exactly 1 input, got %zu",
                         spec_layer_type_name(layer->type), n);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(in, i);
        char pi[160];
        spec_path_index(pi, sizeof pi, p, i);
        if (!json_is_integer(v))
            return spec_fail(err, pi, "expected a layer index");
        json_int_t k = json_integer_value(v);
        if (k < -1 || k >= index)
            return spec_fail(err, pi, "must name an earlier layer (-1 .. %d), got %lld",
                             index - 1, (long long)k);
        layer->inputs[i] = (int)k;
    }
    layer->n_inputs = (int)n;
    return true;
}

/* Keys each layer type accepts besides "type" and "inputs". */
static const char *const *layer_keys(spec_layer_type t)
{
    static const char *const dense[] = {"type",     "inputs",        "units", "activation",
                                        "use_bias", "tie_embedding", NULL};
    static const char *const conv[] = {"type",    "inputs",     "filters",  "kernel",
                                       "stride",  "padding",    "dilation", "activation",
                                       "use_bias", "groups", NULL};
    static const char *const pool[] = {"type", "inputs", "pool", "stride", "padding", NULL};
    static const char *const dropout[] = {"type", "inputs", "rate", NULL};
    static const char *const bn[] = {"type", "inputs", "momentum", "epsilon", NULL};
    static const char *const plain[] = {"type", "inputs", NULL};
    static const char *const lstm[] = {"type", "inputs", "units", "return_sequences",
                                       "go_backwards", NULL};
    static const char *const gru[] = {"type", "inputs", "units", "return_sequences",
                                      "go_backwards", "reset_after", NULL};
    static const char *const bidirectional[] = {"type", "inputs", "layer", "merge_mode", NULL};
    static const char *const embedding[] = {"type", "inputs", "output_dim", "input_dim",
                                            "mask_zero", NULL};
    static const char *const conv1d[] = {"type",    "inputs",        "filters",  "kernel_size",
                                         "kernel",  "strides",       "stride",   "padding",
                                         "dilation_rate", "dilation", "activation",
                                         "use_bias", NULL};
    static const char *const pool1d[] = {"type",    "inputs", "pool_size", "pool",
                                         "strides", "stride", "padding",   NULL};
    static const char *const layer_norm[] = {"type", "inputs", "epsilon", NULL};
    static const char *const position[] = {"type", "inputs", "max_length", NULL};
    static const char *const attention[] = {"type",   "inputs",  "heads",    "key_dim",
                                            "causal", "dropout", "use_bias", NULL};
    switch (t) {
    case LAYER_LAYER_NORM: return layer_norm;
    case LAYER_POSITIONAL_EMBEDDING: return position;
    case LAYER_MULTI_HEAD_ATTENTION: return attention;
    case LAYER_LSTM: return lstm;
    case LAYER_GRU: return gru;
    case LAYER_BIDIRECTIONAL: return bidirectional;
    case LAYER_DENSE: return dense;
    case LAYER_CONV2D: return conv;
    case LAYER_MAXPOOL2D:
    case LAYER_AVGPOOL2D: return pool;
    case LAYER_DROPOUT: return dropout;
    case LAYER_BATCHNORM: return bn;
    case LAYER_EMBEDDING: return embedding;
    case LAYER_CONV1D: return conv1d;
    case LAYER_MAXPOOL1D:
    case LAYER_AVGPOOL1D: return pool1d;
    default: return plain;
    }
}

static bool require(const json_t *l, const char *path, const char *key, const char *example,
                    spec_error *err)
{
    const json_t *v = json_object_get(l, key);
    if (v && !json_is_null(v))
        return true;
    char p[160];
    spec_path_key(p, sizeof p, path, key);
    return spec_fail(err, p, "missing; %s", example);
}

/* lstm and gru (also the inner layer of a bidirectional, without
 * go_backwards there: the wrapper decides the directions). Keras's defaults:
 * return_sequences false, go_backwards false, reset_after true. */
static bool parse_rnn_fields(const json_t *l, const char *path, spec_layer *layer,
                             spec_error *err)
{
    long units = 0;
    layer->reset_after = true;
    const char *what = layer->type == LAYER_LSTM ? "lstm needs \"units\" (e.g. 128)"
                                                 : "gru needs \"units\" (e.g. 128)";
    if (!require(l, path, "units", what, err) ||
        !spec_get_int(l, path, "units", 1, 1 << 16, &units, err) ||
        !spec_get_bool(l, path, "return_sequences", &layer->return_sequences, err) ||
        !spec_get_bool(l, path, "go_backwards", &layer->go_backwards, err) ||
        !spec_get_bool(l, path, "reset_after", &layer->reset_after, err))
        return false;
    layer->units = (int)units;
    return true;
}

/* bidirectional: "layer" is {"type": "lstm"|"gru", "units", "return_sequences",
 * "reset_after"}, copied into this layer's fields with rnn = its type. */
static bool parse_bidirectional_fields(const json_t *l, const char *path, spec_layer *layer,
                                       spec_error *err)
{
    static const char *const merge_names[] = {"concat", "sum", "ave", "mul"};
    static const char *const inner_keys[] = {"type", "units", "return_sequences",
                                             "reset_after", NULL};
    static const char *const rnn_names[] = {"lstm", "gru"};
    char p[160];
    spec_path_key(p, sizeof p, path, "layer");
    const json_t *inner = json_object_get(l, "layer");
    if (!inner || json_is_null(inner))
        return spec_fail(err, p, "missing; bidirectional needs \"layer\": {\"type\": "
                                 "\"lstm\", \"units\": 64} (an lstm or a gru)");
    if (!json_is_object(inner))
        return spec_fail(err, p, "expected {\"type\": \"lstm\" or \"gru\", \"units\": ...}");
    int rnn = 0, merge = MERGE_CONCAT;
    char pt[160];
    spec_path_key(pt, sizeof pt, p, "type");
    if (!json_object_get(inner, "type"))
        return spec_fail(err, pt, "missing; \"lstm\" or \"gru\"");
    if (!spec_get_enum(inner, p, "type", rnn_names, 2, "recurrent layer type", &rnn, err) ||
        !spec_check_keys(inner, p, inner_keys, err) ||
        !spec_get_enum(l, path, "merge_mode", merge_names, 4, "merge_mode", &merge, err))
        return false;
    layer->rnn = rnn == 0 ? LAYER_LSTM : LAYER_GRU;
    spec_layer tmp = {.type = layer->rnn};
    if (rnn == 0 && json_object_get(inner, "reset_after")) {
        char pr[160];
        spec_path_key(pr, sizeof pr, p, "reset_after");
        return spec_fail(err, pr, "only a gru has reset_after");
    }
    if (!parse_rnn_fields(inner, p, &tmp, err))
        return false;
    layer->units = tmp.units;
    layer->return_sequences = tmp.return_sequences;
    layer->reset_after = tmp.reset_after;
    layer->merge_mode = (spec_merge_mode)merge;
    return true;
}

/* An integer field Keras spells `keras` and this spec's conv2d `short_`
 * ("kernel_size" or "kernel"): either may be given, not both. */
static bool get_int_alias(const json_t *l, const char *path, const char *keras,
                          const char *short_, long min, long max, long *out, spec_error *err)
{
    if (json_object_get(l, keras) && json_object_get(l, short_)) {
        char p[160];
        spec_path_key(p, sizeof p, path, short_);
        return spec_fail(err, p, "give \"%s\" or \"%s\", not both", keras, short_);
    }
    const char *key = json_object_get(l, keras) ? keras : short_;
    return spec_get_int(l, path, key, min, max, out, err);
}

/* embedding: the vocabulary defaults to the token input's (checked
 * against it in infer_embedding, which knows the input). */
static bool parse_embedding(const json_t *l, const char *path, spec_layer *layer,
                            spec_error *err)
{
    long out = 0, in = 0;
    layer->mask_zero = false;
    if (!require(l, path, "output_dim", "embedding needs \"output_dim\" (e.g. 64)", err) ||
        !spec_get_int(l, path, "output_dim", 1, 1 << 20, &out, err) ||
        !spec_get_int(l, path, "input_dim", 2, 16777216, &in, err) ||
        !spec_get_bool(l, path, "mask_zero", &layer->mask_zero, err))
        return false;
    layer->output_dim = (int)out;
    layer->input_dim = (int)in; /* 0: model.input.tokens */
    return true;
}

/* multi_head_attention, Keras's fields: heads required; key_dim 0 here
 * means F / heads, resolved by infer_attention, which knows F. */
static bool parse_attention(const json_t *l, const char *path, spec_layer *layer,
                            double *rate, spec_error *err)
{
    long heads = 0, key_dim = 0;
    layer->causal = false;
    if (!require(l, path, "heads", "multi_head_attention needs \"heads\" (e.g. 4)", err) ||
        !spec_get_int(l, path, "heads", 1, 1024, &heads, err) ||
        !spec_get_int(l, path, "key_dim", 1, 1 << 16, &key_dim, err) ||
        !spec_get_bool(l, path, "causal", &layer->causal, err) ||
        !spec_get_double(l, path, "dropout", 0, 1, false, true, rate, err) ||
        !spec_get_bool(l, path, "use_bias", &layer->use_bias, err))
        return false;
    layer->heads = (int)heads;
    layer->key_dim = (int)key_dim;
    return true;
}

/* dense "tie_embedding": an index, checked against the graph (an earlier
 * embedding of the right shape) in infer_tie. */
static bool parse_tie(const json_t *l, const char *path, spec_layer *layer, spec_error *err)
{
    long tie = 0;
    if (!spec_get_int(l, path, "tie_embedding", 0, SPEC_MAX_LAYERS, &tie, err))
        return false;
    const json_t *v = json_object_get(l, "tie_embedding");
    layer->tied = v && !json_is_null(v);
    layer->tie_embedding = (int)tie;
    return true;
}

/* conv1d and the 1-d pools: the window along time in kernel[0] etc. */
static bool parse_window1d(const json_t *l, const char *path, spec_layer *layer, int *pad,
                           spec_error *err)
{
    long k = 2, stride = 0, dil = 1, filters = 0;
    int act = ACT_NONE;
    bool conv = layer->type == LAYER_CONV1D;
    if (conv && (!require(l, path, "filters", "conv1d needs \"filters\" (e.g. 64)", err) ||
                 !spec_get_int(l, path, "filters", 1, 1 << 16, &filters, err)))
        return false;
    if (conv && !json_object_get(l, "kernel_size") && !json_object_get(l, "kernel"))
        return require(l, path, "kernel_size", "conv1d needs \"kernel_size\" (e.g. 3)", err);
    if (!get_int_alias(l, path, conv ? "kernel_size" : "pool_size", conv ? "kernel" : "pool",
                       1, 1024, &k, err) ||
        !get_int_alias(l, path, "strides", "stride", 1, 1024, &stride, err) ||
        !spec_get_enum(l, path, "padding", spec_padding_names, conv ? 3 : 2, "padding", pad,
                       err))
        return false;
    if (conv && (!get_int_alias(l, path, "dilation_rate", "dilation", 1, 1024, &dil, err) ||
                 !spec_get_enum(l, path, "activation", spec_activation_names,
                                SPEC_ACTIVATION_COUNT, "activation",
                                &act, err) ||
                 !spec_get_bool(l, path, "use_bias", &layer->use_bias, err)))
        return false;
    layer->activation = (spec_activation)act;
    layer->filters = (int)filters;
    layer->kernel[0] = (int)k;
    layer->kernel[1] = 1;
    layer->stride[0] = (int)(stride ? stride : conv ? 1 : k);
    layer->stride[1] = 1;
    layer->dilation[0] = (int)dil;
    return true;
}

static bool parse_layer_fields(const json_t *l, const char *path, spec_layer *layer,
                               spec_error *err)
{
    long units = 0, filters = 0, groups = 1;
    int act = ACT_NONE, pad = PAD_VALID;
    double rate = 0, momentum = 0.9, eps = 1e-5;
    layer->use_bias = true;
    layer->stride[0] = layer->stride[1] = 0; /* 0 = default, resolved below */
    layer->dilation[0] = layer->dilation[1] = 1;
    layer->kernel[0] = layer->kernel[1] = 2;
    switch (layer->type) {
    case LAYER_DENSE:
        if (!require(l, path, "units", "dense needs \"units\" (e.g. 128)", err) ||
            !spec_get_int(l, path, "units", 1, 1 << 24, &units, err) ||
            !spec_get_enum(l, path, "activation", spec_activation_names, SPEC_ACTIVATION_COUNT,
                           "activation", &act, err) ||
            !spec_get_bool(l, path, "use_bias", &layer->use_bias, err))
            return false;
        layer->units = (int)units;
        if (!parse_tie(l, path, layer, err))
            return false;
        break;
    case LAYER_CONV2D:
        if (!require(l, path, "filters", "conv2d needs \"filters\" (e.g. 32)", err) ||
            !require(l, path, "kernel", "conv2d needs \"kernel\" (e.g. 3 or [3, 3])", err) ||
            !spec_get_int(l, path, "filters", 1, 1 << 16, &filters, err) ||
            !spec_get_pair(l, path, "kernel", 1, 1024, layer->kernel, err) ||
            !spec_get_pair(l, path, "stride", 1, 1024, layer->stride, err) ||
            !spec_get_pair(l, path, "dilation", 1, 1024, layer->dilation, err) ||
            !spec_get_enum(l, path, "padding", spec_padding_names, 2, "padding", &pad, err) ||
            !spec_get_enum(l, path, "activation", spec_activation_names, SPEC_ACTIVATION_COUNT,
                           "activation", &act, err) ||
            !spec_get_bool(l, path, "use_bias", &layer->use_bias, err) ||
            !spec_get_int(l, path, "groups", 1, 1 << 16, &groups, err))
            return false;
        layer->filters = (int)filters;
        layer->groups = (int)groups;
        if (!layer->stride[0])
            layer->stride[0] = layer->stride[1] = 1;
        break;
    case LAYER_MAXPOOL2D:
    case LAYER_AVGPOOL2D:
        if (!spec_get_pair(l, path, "pool", 1, 1024, layer->kernel, err) ||
            !spec_get_pair(l, path, "stride", 1, 1024, layer->stride, err) ||
            !spec_get_enum(l, path, "padding", spec_padding_names, 2, "padding", &pad, err))
            return false;
        if (!layer->stride[0]) {
            layer->stride[0] = layer->kernel[0];
            layer->stride[1] = layer->kernel[1];
        }
        break;
    case LAYER_EMBEDDING:
        if (!parse_embedding(l, path, layer, err))
            return false;
        break;
    case LAYER_CONV1D:
    case LAYER_MAXPOOL1D:
    case LAYER_AVGPOOL1D:
        if (!parse_window1d(l, path, layer, &pad, err))
            return false;
        act = layer->activation;
        break;
    case LAYER_DROPOUT:
        if (!spec_get_double(l, path, "rate", 0, 1, false, true, &rate, err))
            return false;
        break;
    case LAYER_BATCHNORM:
        if (!spec_get_double(l, path, "momentum", 0, 1, false, true, &momentum, err) ||
            !spec_get_double(l, path, "epsilon", 0, 1, true, false, &eps, err))
            return false;
        break;
    case LAYER_LSTM:
    case LAYER_GRU:
        if (!parse_rnn_fields(l, path, layer, err))
            return false;
        break;
    case LAYER_BIDIRECTIONAL:
        if (!parse_bidirectional_fields(l, path, layer, err))
            return false;
        break;
    case LAYER_LAYER_NORM:
        if (!spec_get_double(l, path, "epsilon", 0, 1, true, false, &eps, err))
            return false;
        break;
    case LAYER_POSITIONAL_EMBEDDING: {
        long max_length = 0;
        if (!spec_get_int(l, path, "max_length", 1, 1 << 20, &max_length, err))
            return false;
        layer->max_length = (int)max_length;
        break;
    }
    case LAYER_MULTI_HEAD_ATTENTION:
        if (!parse_attention(l, path, layer, &rate, err))
            return false;
        break;
    default:
        break;
    }
    layer->activation = (spec_activation)act;
    layer->padding = (spec_padding)pad;
    layer->rate = (float)rate;
    layer->momentum = (float)momentum;
    layer->epsilon = (float)eps;
    return true;
}

static bool parse_layer(const json_t *l, int index, spec_layer *layer, spec_error *err)
{
    char path[160];
    spec_path_index(path, sizeof path, "model.layers", (size_t)index);
    if (!json_is_object(l))
        return spec_fail(err, path, "expected a layer object like {\"type\": \"dense\", "
                                    "\"units\": 10}");
    char p[160];
    spec_path_key(p, sizeof p, path, "type");
    const json_t *type = json_object_get(l, "type");
    if (!type)
        return spec_fail(err, p, "missing; every layer needs a \"type\"");
    int t;
    if (!spec_get_enum(l, path, "type", spec_layer_type_names, LAYER_TYPE_COUNT, "layer type",
                       &t, err))
        return false;
    layer->type = (spec_layer_type)t;
    return spec_check_keys(l, path, layer_keys(layer->type), err) &&
           parse_inputs_field(l, path, index, layer, err) &&
           parse_layer_fields(l, path, layer, err);
}

/* A preset: its layers written out by spec_presets.c, parsed here like any
 * model object, and its name kept. */
static bool parse_preset(const char *name, const char *path, const json_t *knobs,
                         job_spec *spec, spec_error *err)
{
    json_t *model = NULL;
    bool ok = spec_preset_model(name, path, knobs, spec, &model, err) &&
              spec_parse_model(model, spec, err);
    json_decref(model);
    if (ok && !(spec->preset = strdup(name)))
        ok = spec_fail(err, path, "out of memory");
    return ok;
}

bool spec_parse_model(const json_t *model, job_spec *spec, spec_error *err)
{
    static const char *const keys[] = {"preset",     "input",  "layers", "n_layer",
                                       "n_head",     "n_embd", "max_length",
                                       "block_size", "dropout", "imported", NULL};
    if (spec_model_is_import(model)) {
        json_t *imported = NULL;
        bool ok = spec_import_model(model, &imported, err) &&
                  spec_parse_model(imported, spec, err);
        json_decref(imported);
        return ok;
    }
    if (json_is_object(model) && json_object_get(model, "keras")) {
        json_t *translated = NULL;
        if (json_object_size(model) != 1)
            return spec_fail(err, "model", "give \"keras\" alone");
        bool ok = spec_keras_model(json_object_get(model, "keras"), &translated, err) &&
                  spec_parse_model(translated, spec, err);
        json_decref(translated);
        return ok;
    }
    if (json_is_string(model))
        return parse_input(NULL, spec, err) &&
               parse_preset(json_string_value(model), "model", NULL, spec, err);
    if (!json_is_object(model))
        return spec_fail(err, "model", "expected a preset name or an object with \"input\" "
                                       "and \"layers\"");
    if (!spec_check_keys(model, "model", keys, err) ||
        !parse_input(json_object_get(model, "input"), spec, err))
        return false;
    const char *preset = NULL, *imported = NULL;
    if (!spec_get_string(model, "model", "preset", &preset, err) ||
        !spec_get_string(model, "model", "imported", &imported, err) ||
        (imported && !spec_model_set_file(imported, "model.imported", spec, err)))
        return false;
    const json_t *layers = json_object_get(model, "layers");
    if (preset && layers)
        return spec_fail(err, "model.layers", "give either model.preset or model.layers, "
                                              "not both");
    if (preset)
        return parse_preset(preset, "model.preset", model, spec, err);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)model, key, value) {
        if (spec_preset_is_knob(key)) {
            char p[160];
            spec_path_key(p, sizeof p, "model", key);
            return spec_fail(err, p, "a preset's knob: give model.preset too");
        }
    }
    if (!layers)
        return spec_fail(err, "model.layers", "missing; give the layers or a model.preset");
    if (!json_is_array(layers) || json_array_size(layers) == 0)
        return spec_fail(err, "model.layers", "expected a non-empty array of layers");
    size_t n = json_array_size(layers);
    if (n > SPEC_MAX_LAYERS)
        return spec_fail(err, "model.layers", "at most %d layers, got %zu", SPEC_MAX_LAYERS, n);
    spec->layers = calloc(n, sizeof *spec->layers);
    if (!spec->layers)
        return spec_fail(err, "model.layers", "out of memory");
    spec->n_layers = (int)n;
    for (size_t i = 0; i < n; i++)
        if (!parse_layer(json_array_get(layers, i), (int)i, &spec->layers[i], err))
            return false;
    return true;
}

static void shape_str(const spec_shape *s, char *buf, size_t len)
{
    if (s->rank == 1)
        snprintf(buf, len, "%d", s->dim[0]);
    else if (s->rank == 2)
        snprintf(buf, len, "%d steps x %d", s->dim[0], s->dim[1]);
    else
        snprintf(buf, len, "%dx%dx%d", s->dim[0], s->dim[1], s->dim[2]);
}

/* Output extent of a window: `same` keeps ceil(in / stride), `valid`
 * only whole windows. Sets the leading pad. Returns <= 0 when it does not
 * fit. */
static int window_out(int in, int k, int stride, int dilation, spec_padding pad, int *lead)
{
    int span = (k - 1) * dilation + 1;
    if (pad == PAD_SAME) {
        int out = (in + stride - 1) / stride;
        int total = (out - 1) * stride + span - in;
        *lead = total > 0 ? total / 2 : 0;
        return out;
    }
    *lead = 0;
    return in >= span ? (in - span) / stride + 1 : 0;
}

static bool infer_window(spec_layer *l, const char *path, spec_error *err)
{
    const spec_shape *in = &l->in_shape;
    char s[64];
    shape_str(in, s, sizeof s);
    if (in->rank != 3)
        return spec_fail(err, path, "%s needs a channels x height x width input, got %s",
                         spec_layer_type_name(l->type), s);
    int oh = window_out(in->dim[1], l->kernel[0], l->stride[0], l->dilation[0], l->padding,
                        &l->pad[0]);
    int ow = window_out(in->dim[2], l->kernel[1], l->stride[1], l->dilation[1], l->padding,
                        &l->pad[1]);
    if (oh <= 0 || ow <= 0)
        return spec_fail(err, path, "window %dx%d (dilation %d) does not fit input %s with "
                                    "padding \"valid\"",
                         l->kernel[0], l->kernel[1], l->dilation[0], s);
    int c = l->type == LAYER_CONV2D ? l->filters : in->dim[0];
    l->out_shape = (spec_shape){3, {c, oh, ow}};
    if (l->type != LAYER_CONV2D)
        return true;
    int groups = l->groups > 0 ? l->groups : 1;
    if (in->dim[0] % groups != 0 || l->filters % groups != 0)
        return spec_fail(err, path, "groups %d must divide both the input's %d channels and "
                                    "the %d filters", groups, in->dim[0], l->filters);
    l->n_params = (long)l->filters * (in->dim[0] / groups) * l->kernel[0] * l->kernel[1] +
                  (l->use_bias ? l->filters : 0);
    return true;
}

static bool infer_merge(job_spec *spec, spec_layer *l, const char *path, spec_error *err)
{
    spec_shape out = l->in_shape;
    for (int i = 1; i < l->n_inputs; i++) {
        int k = l->inputs[i];
        const spec_shape *s = k < 0 ? &spec->input : &spec->layers[k].out_shape;
        char a[64], b[64];
        shape_str(&l->in_shape, a, sizeof a);
        shape_str(s, b, sizeof b);
        if (l->type == LAYER_ADD) {
            if (s->rank != out.rank || memcmp(s->dim, out.dim, sizeof out.dim[0] * out.rank))
                return spec_fail(err, path, "add needs inputs of one shape, got %s and %s", a,
                                 b);
            continue;
        }
        if (s->rank == 2 && out.rank == 2) {
            /* Sequences join their features step by step (Keras's last axis). */
            if (s->dim[0] != out.dim[0])
                return spec_fail(err, path, "concat needs sequences of equal steps, got %s "
                                            "and %s", a, b);
            out.dim[1] += s->dim[1];
            continue;
        }
        if (s->rank != out.rank || (s->rank == 3 && (s->dim[1] != out.dim[1] ||
                                                     s->dim[2] != out.dim[2])))
            return spec_fail(err, path, "concat needs inputs of equal height and width, got "
                                        "%s and %s", a, b);
        out.dim[0] += s->dim[0];
    }
    l->out_shape = out;
    return true;
}

/* lstm, gru, bidirectional: {T, F} -> {T, units'} with return_sequences,
 * else {units'}; units' is 2 * units for a concatenating bidirectional.
 * Parameters as Keras counts them: kernel F x gU, recurrent kernel U x gU and
 * a bias of gU (g = 4 for lstm, 3 for gru), gru with reset_after keeping a
 * second bias for the recurrent side. On the model's token ids F is the
 * vocabulary, as a Keras model fed the same ids one-hot would count it. */
static bool infer_rnn(const job_spec *spec, spec_layer *l, const char *path, spec_error *err)
{
    const spec_shape *in = &l->in_shape;
    spec_layer_type cell = l->type == LAYER_BIDIRECTIONAL ? l->rnn : l->type;
    if (in->rank != 2) {
        char s[64];
        shape_str(in, s, sizeof s);
        return spec_fail(err, path, "%s needs a sequence input {steps, features}, got %s",
                         spec_layer_type_name(l->type), s);
    }
    l->token_vocab = l->inputs[0] < 0 ? spec->input_tokens : 0;
    long f = l->token_vocab > 0 ? l->token_vocab : in->dim[1], u = l->units;
    long n = cell == LAYER_LSTM ? 4 * u * (f + u + 1)
                                : 3 * u * (f + u + (l->reset_after ? 2 : 1));
    int out = l->units;
    if (l->type == LAYER_BIDIRECTIONAL) {
        n *= 2;
        if (l->merge_mode == MERGE_CONCAT)
            out *= 2;
    }
    l->n_params = n;
    l->out_shape = l->return_sequences ? (spec_shape){2, {in->dim[0], out, 1}}
                                       : (spec_shape){1, {out, 1, 1}};
    return true;
}

/* embedding reads the model's token ids: its rows are the vocabulary. */
static bool infer_embedding(const job_spec *spec, spec_layer *l, const char *path,
                            spec_error *err)
{
    if (l->inputs[0] != -1 || spec->input_tokens <= 0)
        return spec_fail(err, path, "embedding reads token ids: it must be the first layer, "
                                    "on a model.input of {\"tokens\": vocabulary_size}");
    if (l->input_dim == 0)
        l->input_dim = spec->input_tokens;
    if (l->input_dim < spec->input_tokens)
        return spec_fail(err, path, "input_dim %d is smaller than the vocabulary of "
                                    "model.input.tokens (%d)", l->input_dim,
                         spec->input_tokens);
    l->out_shape = (spec_shape){2, {l->in_shape.dim[0], l->output_dim, 1}};
    l->n_params = (long)l->input_dim * l->output_dim;
    return true;
}

/* conv1d: Keras's output steps for a full-length sequence (causal pads
 * the whole span before and counts like same); each sample's own length
 * follows in the engine (engine/layers/conv1d.c). */
static bool infer_conv1d(spec_layer *l, const char *path, const char *in_str, spec_error *err)
{
    const spec_shape *in = &l->in_shape;
    if (in->rank != 2)
        return spec_fail(err, path, "conv1d needs a sequence input, got %s", in_str);
    int out = window_out(in->dim[0], l->kernel[0], l->stride[0], l->dilation[0],
                         l->padding == PAD_VALID ? PAD_VALID : PAD_SAME, &l->pad[0]);
    if (l->padding == PAD_CAUSAL)
        l->pad[0] = (l->kernel[0] - 1) * l->dilation[0];
    if (out <= 0)
        return spec_fail(err, path, "kernel_size %d (dilation %d) does not fit %s with "
                                    "padding \"valid\"", l->kernel[0], l->dilation[0], in_str);
    l->pad[1] = 0;
    l->out_shape = (spec_shape){2, {out, l->filters, 1}};
    l->n_params = (long)l->kernel[0] * in->dim[1] * l->filters + (l->use_bias ? l->filters : 0);
    return true;
}

/* layer_norm: gamma and beta over the last axis (the features of each
 * step of a sequence; of a flat sample, its values). */
static bool infer_layer_norm(spec_layer *l, const char *path, const char *in_str,
                             spec_error *err)
{
    if (l->in_shape.rank == 3)
        return spec_fail(err, path, "layer_norm needs a flat or a sequence input, got %s",
                         in_str);
    l->out_shape = l->in_shape;
    l->n_params = 2L * l->in_shape.dim[l->in_shape.rank - 1];
    return true;
}

/* positional_embedding and sinusoidal_position add a table of {steps,
 * features} to a sequence. */
static bool infer_position(spec_layer *l, const char *path, const char *in_str,
                           spec_error *err)
{
    const spec_shape *in = &l->in_shape;
    const char *t = spec_layer_type_name(l->type);
    if (in->rank != 2)
        return spec_fail(err, path, "%s needs a sequence input {steps, features}, got %s", t,
                         in_str);
    if (l->inputs[0] < 0 && in->dim[1] == 1)
        return spec_fail(err, path, "%s adds to vectors: put it after an embedding, not on "
                                    "the token ids", t);
    l->out_shape = *in;
    if (l->type == LAYER_SINUSOIDAL_POSITION)
        return true;
    if (l->max_length == 0)
        l->max_length = in->dim[0];
    if (l->max_length < in->dim[0])
        return spec_fail(err, path, "max_length %d is shorter than the sequences (%d steps, "
                                    "data.max_length)", l->max_length, in->dim[0]);
    l->n_params = (long)l->max_length * in->dim[1];
    return true;
}

/* multi_head_attention: Keras's projections, query/key/value kernels
 * {F_in, heads, key_dim} with biases {heads, key_dim}, and the output
 * kernel {heads, key_dim, F} with a bias {F}; the output has the query's
 * shape. The key/value input (the second of "inputs") must have the
 * query's steps: both carry the same per-sample lengths. */
static bool infer_attention(const job_spec *spec, spec_layer *l, const char *path,
                            const char *in_str, spec_error *err)
{
    const spec_shape *q = &l->in_shape;
    if (q->rank != 2)
        return spec_fail(err, path, "multi_head_attention needs a sequence input {steps, "
                                    "features}, got %s", in_str);
    const spec_shape *kv = q;
    if (l->n_inputs == 2) {
        int k = l->inputs[1];
        kv = k < 0 ? &spec->input : &spec->layers[k].out_shape;
        if (kv->rank != 2 || kv->dim[0] != q->dim[0])
            return spec_fail(err, path, "cross-attention needs a key/value sequence of the "
                                        "query's %d steps", q->dim[0]);
    }
    long f = q->dim[1], fkv = kv->dim[1];
    if (l->key_dim == 0) {
        if (f % l->heads != 0) {
            char p[160];
            spec_path_key(p, sizeof p, path, "key_dim");
            return spec_fail(err, p, "missing, and the %ld features do not split into %d "
                                     "heads; give key_dim", f, l->heads);
        }
        l->key_dim = (int)(f / l->heads);
    }
    long hd = (long)l->heads * l->key_dim, b = l->use_bias ? 1 : 0;
    l->out_shape = *q;
    l->n_params = f * hd + 2 * fkv * hd + hd * f + b * (3 * hd + f);
    return true;
}

/* Layers defined on one shape family only: sequences for the pools over
 * time (a windowed pool shortens each sample by its own amount, which the
 * engine tracks: engine/layers/pool1d.c), not sequences for batchnorm
 * (whose statistics are per channel of an image or per feature of a
 * table). */
static bool infer_sequence_only(spec_layer *l, const char *path, const char *in_str,
                                spec_error *err)
{
    const char *t = spec_layer_type_name(l->type);
    switch (l->type) {
    case LAYER_GLOBAL_MAXPOOL1D:
    case LAYER_GLOBAL_AVGPOOL1D:
        if (l->in_shape.rank != 2)
            return spec_fail(err, path, "%s needs a sequence input, got %s", t, in_str);
        l->out_shape = (spec_shape){1, {l->in_shape.dim[1], 1, 1}};
        return true;
    case LAYER_MAXPOOL1D:
    case LAYER_AVGPOOL1D: {
        if (l->in_shape.rank != 2)
            return spec_fail(err, path, "%s needs a sequence input, got %s", t, in_str);
        int out = window_out(l->in_shape.dim[0], l->kernel[0], l->stride[0], 1, l->padding,
                             &l->pad[0]);
        if (out <= 0)
            return spec_fail(err, path, "pool_size %d does not fit %s with padding \"valid\"",
                             l->kernel[0], in_str);
        l->pad[1] = 0;
        l->out_shape = (spec_shape){2, {out, l->in_shape.dim[1], 1}};
        return true;
    }
    default:
        return spec_fail(err, path, "%s is not defined on a sequence (%s)", t, in_str);
    }
}

/* A dense layer tied to embedding k uses its table {V, E} as a weight
 * {E, V} transposed: its input has E features, its units are V, and it
 * owns only its bias. */
static bool infer_tie(const job_spec *spec, spec_layer *l, int i, spec_error *err)
{
    char path[160];
    char at[160];
    spec_path_index(at, sizeof at, "model.layers", (size_t)i);
    spec_path_key(path, sizeof path, at, "tie_embedding");
    int k = l->tie_embedding;
    if (k >= i || spec->layers[k].type != LAYER_EMBEDDING)
        return spec_fail(err, path, "%d is not an earlier embedding layer", k);
    const spec_layer *e = &spec->layers[k];
    int f = l->in_shape.dim[l->in_shape.rank - 1];
    if (l->units != e->input_dim || f != e->output_dim)
        return spec_fail(err, path, "the tied dense layer needs %d units and %d input "
                                    "features (embedding %d is %d x %d), got %d and %d",
                         e->input_dim, e->output_dim, k, e->input_dim, e->output_dim,
                         l->units, f);
    if (l->use_bias || l->activation == ACT_GELU || l->activation == ACT_GELU_EXACT)
        return spec_fail(err, path, "a tied output layer has no bias and no gelu (GPT-2's): "
                                    "set use_bias false");
    for (int j = k + 1; j < i; j++)
        if (spec->layers[j].type == LAYER_DENSE && spec->layers[j].tied &&
            spec->layers[j].tie_embedding == k)
            return spec_fail(err, path, "embedding %d is already tied to layer %d", k, j);
    l->n_params = 0;
    return true;
}

static bool infer_layer(job_spec *spec, int i, spec_error *err)
{
    spec_layer *l = &spec->layers[i];
    char path[160];
    spec_path_index(path, sizeof path, "model.layers", (size_t)i);
    int src = l->inputs[0];
    l->in_shape = src < 0 ? spec->input : spec->layers[src].out_shape;
    const spec_shape *in = &l->in_shape;
    char s[64];
    shape_str(in, s, sizeof s);
    switch (l->type) {
    case LAYER_DENSE:
        if (in->rank == 2) {
            /* Keras: dense on a sequence applies to every step. */
            l->out_shape = (spec_shape){2, {in->dim[0], l->units, 1}};
            l->n_params = (long)in->dim[1] * l->units + (l->use_bias ? l->units : 0);
            return true;
        }
        if (in->rank != 1)
            return spec_fail(err, path, "dense needs a flat input but gets %s from %s; add "
                                        "{\"type\": \"flatten\"} before it",
                             s, src < 0 ? "the model input" : "the layer before");
        l->out_shape = (spec_shape){1, {l->units, 1, 1}};
        l->n_params = (long)in->dim[0] * l->units + (l->use_bias ? l->units : 0);
        return true;
    case LAYER_EMBEDDING:
        return infer_embedding(spec, l, path, err);
    case LAYER_CONV1D:
        return infer_conv1d(l, path, s, err);
    case LAYER_MAXPOOL1D:
    case LAYER_AVGPOOL1D:
    case LAYER_GLOBAL_MAXPOOL1D:
    case LAYER_GLOBAL_AVGPOOL1D:
        return infer_sequence_only(l, path, s, err);
    case LAYER_CONV2D:
    case LAYER_MAXPOOL2D:
    case LAYER_AVGPOOL2D:
        return infer_window(l, path, err);
    case LAYER_FLATTEN:
        l->out_shape = (spec_shape){1, {(int)spec_shape_size(in), 1, 1}};
        return true;
    case LAYER_BATCHNORM:
        if (in->rank == 2)
            return infer_sequence_only(l, path, s, err);
        l->out_shape = *in;
        l->n_params = 2L * in->dim[0];
        l->n_state = 2L * in->dim[0];
        return true;
    case LAYER_SOFTMAX:
        if (in->rank != 1)
            return spec_fail(err, path, "softmax needs a flat input, got %s", s);
        l->out_shape = *in;
        return true;
    case LAYER_ADD:
    case LAYER_CONCAT:
        return infer_merge(spec, l, path, err);
    case LAYER_LSTM:
    case LAYER_GRU:
    case LAYER_BIDIRECTIONAL:
        return infer_rnn(spec, l, path, err);
    case LAYER_LAYER_NORM:
        return infer_layer_norm(l, path, s, err);
    case LAYER_POSITIONAL_EMBEDDING:
    case LAYER_SINUSOIDAL_POSITION:
        return infer_position(l, path, s, err);
    case LAYER_MULTI_HEAD_ATTENTION:
        return infer_attention(spec, l, path, s, err);
    default:
        l->out_shape = *in;
        return true;
    }
}

bool spec_infer_shapes(job_spec *spec, spec_error *err)
{
    spec->n_params = spec->n_state = 0;
    for (int i = 0; i < spec->n_layers; i++) {
        if (!infer_layer(spec, i, err))
            return false;
        spec_layer *l = &spec->layers[i];
        if (l->type == LAYER_DENSE && l->tied && !infer_tie(spec, l, i, err))
            return false;
        if ((l->activation == ACT_GELU || l->activation == ACT_GELU_EXACT) &&
            l->type != LAYER_DENSE) {
            char path[160], p[160];
            spec_path_index(p, sizeof p, "model.layers", (size_t)i);
            spec_path_key(path, sizeof path, p, "activation");
            return spec_fail(err, path, "%s is fused into dense layers only in this version",
                             spec_activation_name(l->activation));
        }
        /* A last layer's softmax over a sequence [T, classes] is per step
         * (data.per_step_labels: fused into the loss at every step). */
        bool per_step = i == spec->n_layers - 1 && l->out_shape.rank == 2;
        if (l->activation == ACT_SOFTMAX && l->out_shape.rank != 1 && !per_step) {
            char path[160];
            spec_path_index(path, sizeof path, "model.layers", (size_t)i);
            return spec_fail(err, path, "softmax activation needs a flat output");
        }
        if (spec_shape_size(&l->out_shape) > 200000000L || l->n_params > 500000000L) {
            char path[160];
            spec_path_index(path, sizeof path, "model.layers", (size_t)i);
            return spec_fail(err, path, "layer too large (%ld values, %ld parameters)",
                             spec_shape_size(&l->out_shape), l->n_params);
        }
        spec->n_params += l->n_params;
        spec->n_state += l->n_state;
    }
    return true;
}
