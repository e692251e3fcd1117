/* keras.c — "model": {"keras": CONFIG}: the JSON Keras's model.to_json()
 * writes (dist-keras's serialize_keras_model sent it), Sequential and
 * Functional, in Keras 2's and Keras 3's layouts, translated into our
 * model object ({"input": [...], "layers": [...]}) that spec_parse_model
 * then parses as if written by hand. Keras images are channels-last
 * (H, W, C); ours are (C, H, W): shapes are turned, and an option that
 * would need another layout (data_format channels_first, a batchnorm or
 * concat over another axis) is refused. Every option of a layer's config
 * is either mapped, known to be irrelevant to training here (names,
 * initializers, dtypes), or has to hold its default: anything else is
 * refused naming the layer and the option, never silently dropped. */
#include "jobspec/spec_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kshape {
    int rank;    /* ours: 1 {F}, 2 {T, F}, 3 {C, H, W} */
    long d[3];
} kshape;

typedef struct knode {
    const char *name;
    int index;   /* our layer index; -1 the input */
    kshape s;
} knode;

typedef struct kx {
    json_t *layers;
    int n;
    knode nodes[SPEC_MAX_LAYERS + 1];
    int n_nodes;
    char path[160];
    const char *cls, *lname;
    spec_error *err;
} kx;

static bool kx_fail(kx *k, const char *fmt, const char *a, const char *b)
{
    char what[400];
    snprintf(what, sizeof what, fmt, a ? a : "", b ? b : "");
    return spec_fail(k->err, k->path, "%s \"%.60s\": %s", k->cls, k->lname ? k->lname : "",
                     what);
}

/* Options any layer may carry that do not change what is trained here. */
static bool kx_ignorable(const char *key)
{
    static const char *const keys[] = {
        "name", "trainable", "dtype", "seed", "input_length", "unroll", "implementation",
        "autocast", "synchronized", "lora_rank", "lora_alpha", "quantization_config",
        NULL};
    for (int i = 0; keys[i]; i++)
        if (strcmp(key, keys[i]) == 0)
            return true;
    size_t n = strlen(key);
    static const char *const tails[] = {"_initializer", "_regularizer", "_constraint", NULL};
    for (int i = 0; tails[i]; i++) {
        size_t t = strlen(tails[i]);
        if (n > t && strcmp(key + n - t, tails[i]) == 0)
            return true;
    }
    return false;
}

/* Check cfg's keys: `mapped` are read by the caller; `fixed` is a JSON
 * object of options that must hold one of the listed values. */
static bool kx_options(kx *k, const json_t *cfg, const char *const *mapped, const char *fixed)
{
    json_t *f = fixed ? json_loads(fixed, 0, NULL) : NULL;
    const char *key;
    json_t *v;
    bool ok = true;
    json_object_foreach((json_t *)cfg, key, v) {
        bool known = kx_ignorable(key);
        for (int i = 0; mapped && mapped[i] && !known; i++)
            known = strcmp(key, mapped[i]) == 0;
        if (known)
            continue;
        json_t *allowed = json_object_get(f, key);
        if (!allowed) {
            ok = kx_fail(k, "option \"%s\" is not supported", key, NULL);
            break;
        }
        bool match = false;
        size_t i;
        json_t *a;
        json_array_foreach(allowed, i, a) match = match || json_equal(a, v) || (json_is_number(a) && json_is_number(v) && json_number_value(a) == json_number_value(v));
        if (!match) {
            char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            ok = kx_fail(k, "option \"%s\" = %.80s is not supported", key, text);
            free(text);
            break;
        }
    }
    json_decref(f);
    return ok;
}

static const char *kx_activation(kx *k, const json_t *cfg, bool *ok)
{
    const json_t *a = json_object_get(cfg, "activation");
    if (json_is_object(a)) /* Keras 3 may write {"class_name": ..., "config": "relu"} */
        a = json_is_string(json_object_get(a, "config")) ? json_object_get(a, "config")
                                                         : json_object_get(a, "class_name");
    const char *s = json_string_value(a);
    static const char *const map[][2] = {{"linear", "none"}, {"relu", "relu"},
                                         {"sigmoid", "sigmoid"}, {"tanh", "tanh"},
                                         {"softmax", "softmax"}, {"gelu", "gelu_exact"}};
    *ok = true;
    if (!a || json_is_null(a))
        return "none";
    for (size_t i = 0; s && i < sizeof map / sizeof map[0]; i++)
        if (strcmp(s, map[i][0]) == 0)
            return map[i][1];
    *ok = kx_fail(k, "option \"activation\" = \"%s\" is not supported (linear, relu, sigmoid, "
                  "tanh, softmax, gelu are)", s ? s : "?", NULL);
    return NULL;
}

/* An int or a list of 1 or 2 ints. */
static bool kx_pair(kx *k, const json_t *cfg, const char *key, long dflt0, long dflt1,
                    long out[2])
{
    const json_t *v = json_object_get(cfg, key);
    out[0] = dflt0;
    out[1] = dflt1;
    if (!v || json_is_null(v))
        return true;
    if (json_is_integer(v)) {
        out[0] = out[1] = (long)json_integer_value(v);
    } else if (json_is_array(v) && json_array_size(v) >= 1 && json_array_size(v) <= 2) {
        out[0] = (long)json_integer_value(json_array_get(v, 0));
        out[1] = json_array_size(v) == 2 ? (long)json_integer_value(json_array_get(v, 1))
                                         : out[0];
    } else {
        return kx_fail(k, "option \"%s\" must be an int or a list of ints", key, NULL);
    }
    if (out[0] < 1 || out[1] < 1 || out[0] > 1024 || out[1] > 1024)
        return kx_fail(k, "option \"%s\" must be in 1..1024", key, NULL);
    return true;
}

static long kx_window(long in, long k, long s, long d, bool same)
{
    long span = (k - 1) * d + 1;
    return same ? (in + s - 1) / s : in >= span ? (in - span) / s + 1 : 0;
}

static int kx_add(kx *k, json_t *layer, const knode *in, int n_in, bool sequential)
{
    if (!layer || k->n >= SPEC_MAX_LAYERS) {
        json_decref(layer);
        kx_fail(k, "too many layers (or out of memory)", NULL, NULL);
        return -1;
    }
    if (!sequential || n_in != 1 || in[0].index != k->n - 1) {
        json_t *a = json_array();
        for (int i = 0; i < n_in; i++)
            json_array_append_new(a, json_integer(in[i].index));
        json_object_set_new(layer, "inputs", a);
    }
    json_array_append_new(k->layers, layer);
    return k->n++;
}

static bool kx_padding(kx *k, const json_t *cfg, bool causal_ok, const char **pad)
{
    const char *p = json_string_value(json_object_get(cfg, "padding"));
    *pad = p ? p : "valid";
    if (strcmp(*pad, "valid") == 0 || strcmp(*pad, "same") == 0 ||
        (causal_ok && strcmp(*pad, "causal") == 0))
        return true;
    return kx_fail(k, "option \"padding\" = \"%s\" is not supported", *pad, NULL);
}

#define CHANNELS_LAST "\"data_format\": [\"channels_last\", null]"

/* One Keras layer on its inputs: out is what it produces. */
/* Conv1D's and Conv2D's options checked (fixed: those only one value of
 * maps) and their window read: the activation, or NULL with the error set. */
static const char *kx_conv_window(kx *k, const json_t *cfg, const char *const *mapped,
                                  const char *fixed, bool causal_ok, long ks[2], long st[2],
                                  long dl[2], const char **pad, bool *ok)
{
    if (!kx_options(k, cfg, mapped, fixed) || !kx_pair(k, cfg, "kernel_size", 1, 1, ks) ||
        !kx_pair(k, cfg, "strides", 1, 1, st) || !kx_pair(k, cfg, "dilation_rate", 1, 1, dl) ||
        !kx_padding(k, cfg, causal_ok, pad))
        return NULL;
    return kx_activation(k, cfg, ok);
}

static bool kx_layer(kx *k, const json_t *cfg, const knode *in, int n_in, bool seq, knode *out)
{
    const char *c = k->cls;
    const kshape *s = &in[0].s;
    *out = in[0];
    bool ok = true;
    json_t *l = NULL;
    knode pooled; /* a global 2-d pool's pool layer, which its flatten reads */
    if (strcmp(c, "Dense") == 0) {
        static const char *const m[] = {"units", "activation", "use_bias", NULL};
        const char *act = kx_options(k, cfg, m, "{\"lora_rank\": [null]}")
                              ? kx_activation(k, cfg, &ok) : NULL;
        json_int_t units = json_integer_value(json_object_get(cfg, "units"));
        if (!act)
            return false;
        if (s->rank != 1)
            return kx_fail(k, "a Dense on a %s input is not supported; Flatten first",
                           s->rank == 3 ? "image" : "sequence", NULL);
        l = json_pack("{s:s,s:I,s:s,s:O}", "type", "dense", "units", units, "activation", act,
                      "use_bias", json_object_get(cfg, "use_bias") ? json_object_get(cfg, "use_bias") : json_true());
        out->s = (kshape){1, {(long)units, 0, 0}};
    } else if (strcmp(c, "Conv2D") == 0 || strcmp(c, "DepthwiseConv2D") == 0) {
        bool dw = c[0] == 'D';
        static const char *const m[] = {"filters", "kernel_size", "strides", "padding",
                                        "dilation_rate", "groups", "activation", "use_bias",
                                        "depth_multiplier", NULL};
        long ks[2], st[2], dl[2];
        const char *pad;
        const char *act = kx_conv_window(k, cfg, m, "{" CHANNELS_LAST "}", false, ks, st, dl,
                                         &pad, &ok);
        if (!act)
            return false;
        if (s->rank != 3)
            return kx_fail(k, "its input must be an image", NULL, NULL);
        json_int_t groups = json_object_get(cfg, "groups") ? json_integer_value(json_object_get(cfg, "groups")) : 1;
        json_int_t filters = json_integer_value(json_object_get(cfg, "filters"));
        if (dw) {
            json_int_t mult = json_object_get(cfg, "depth_multiplier") ? json_integer_value(json_object_get(cfg, "depth_multiplier")) : 1;
            groups = s->d[0];
            filters = s->d[0] * mult;
        }
        bool same = strcmp(pad, "same") == 0;
        l = json_pack("{s:s,s:I,s:[i,i],s:[i,i],s:[i,i],s:s,s:I,s:s,s:O}", "type", "conv2d",
                      "filters", filters, "kernel", (int)ks[0], (int)ks[1], "stride", (int)st[0],
                      (int)st[1], "dilation", (int)dl[0], (int)dl[1], "padding", pad, "groups",
                      groups, "activation", act, "use_bias",
                      json_object_get(cfg, "use_bias") ? json_object_get(cfg, "use_bias") : json_true());
        out->s = (kshape){3, {(long)filters, kx_window(s->d[1], ks[0], st[0], dl[0], same),
                              kx_window(s->d[2], ks[1], st[1], dl[1], same)}};
    } else if (strcmp(c, "MaxPooling2D") == 0 || strcmp(c, "AveragePooling2D") == 0) {
        static const char *const m[] = {"pool_size", "strides", "padding", NULL};
        long ps[2], st[2];
        const char *pad;
        if (!kx_options(k, cfg, m, "{" CHANNELS_LAST "}") ||
            !kx_pair(k, cfg, "pool_size", 2, 2, ps) || !kx_pair(k, cfg, "strides", ps[0], ps[1], st) ||
            !kx_padding(k, cfg, false, &pad))
            return false;
        if (s->rank != 3)
            return kx_fail(k, "its input must be an image", NULL, NULL);
        bool same = strcmp(pad, "same") == 0;
        l = json_pack("{s:s,s:[i,i],s:[i,i],s:s}", "type", c[0] == 'M' ? "maxpool2d" : "avgpool2d",
                      "pool", (int)ps[0], (int)ps[1], "stride", (int)st[0], (int)st[1], "padding", pad);
        out->s = (kshape){3, {s->d[0], kx_window(s->d[1], ps[0], st[0], 1, same),
                              kx_window(s->d[2], ps[1], st[1], 1, same)}};
    } else if (strcmp(c, "GlobalAveragePooling2D") == 0 || strcmp(c, "GlobalMaxPooling2D") == 0) {
        if (!kx_options(k, cfg, NULL, "{" CHANNELS_LAST ", \"keepdims\": [false]}"))
            return false;
        if (s->rank != 3)
            return kx_fail(k, "its input must be an image", NULL, NULL);
        int pool = kx_add(k, json_pack("{s:s,s:[i,i]}", "type", c[6] == 'M' ? "maxpool2d" : "avgpool2d",
                                       "pool", (int)s->d[1], (int)s->d[2]), in, n_in, seq);
        if (pool < 0)
            return false;
        pooled = (knode){.index = pool};
        l = json_pack("{s:s}", "type", "flatten");
        in = &pooled;
        n_in = 1;
        out->s = (kshape){1, {s->d[0], 0, 0}};
    } else if (strcmp(c, "Flatten") == 0) {
        if (!kx_options(k, cfg, NULL, "{" CHANNELS_LAST "}"))
            return false;
        if (s->rank == 1)
            return true;
        if (s->rank == 2)
            return kx_fail(k, "flattening a sequence is not supported", NULL, NULL);
        l = json_pack("{s:s}", "type", "flatten");
        out->s = (kshape){1, {s->d[0] * s->d[1] * s->d[2], 0, 0}};
    } else if (strcmp(c, "Dropout") == 0) {
        static const char *const m[] = {"rate", NULL};
        if (!kx_options(k, cfg, m, "{\"noise_shape\": [null]}"))
            return false;
        l = json_pack("{s:s,s:O}", "type", "dropout", "rate", json_object_get(cfg, "rate") ? json_object_get(cfg, "rate") : json_real(0));
    } else if (strcmp(c, "BatchNormalization") == 0) {
        static const char *const m[] = {"momentum", "epsilon", "axis", NULL};
        if (!kx_options(k, cfg, m, "{\"center\": [true], \"scale\": [true], \"renorm\": [false], "
                                   "\"fused\": [null, true, false], \"virtual_batch_size\": [null], "
                                   "\"adjustment\": [null], \"renorm_clipping\": [null], "
                                   "\"renorm_momentum\": [0.99]}"))
            return false;
        const json_t *ax = json_object_get(cfg, "axis");
        if (json_is_array(ax) && json_array_size(ax) == 1)
            ax = json_array_get(ax, 0);
        json_int_t axis = ax ? json_integer_value(ax) : -1;
        if (!(axis == -1 || axis == (s->rank == 3 ? 3 : s->rank)))
            return kx_fail(k, "option \"axis\" must be the channels (the last axis)", NULL, NULL);
        l = json_pack("{s:s,s:f,s:f}", "type", "batchnorm", "momentum",
                      json_object_get(cfg, "momentum") ? json_number_value(json_object_get(cfg, "momentum")) : 0.99,
                      "epsilon", json_object_get(cfg, "epsilon") ? json_number_value(json_object_get(cfg, "epsilon")) : 1e-3);
    } else if (strcmp(c, "Activation") == 0 || strcmp(c, "ReLU") == 0 || strcmp(c, "Softmax") == 0) {
        static const char *const m[] = {"activation", NULL};
        const char *act = c[0] == 'R' ? "relu" : c[0] == 'S' ? "softmax" : NULL;
        if (c[0] == 'R' && !kx_options(k, cfg, NULL, "{\"max_value\": [null], \"negative_slope\": [0], \"threshold\": [0]}"))
            return false;
        if (c[0] == 'S' && !kx_options(k, cfg, NULL, "{\"axis\": [-1]}"))
            return false;
        if (c[0] == 'A' && (!kx_options(k, cfg, m, NULL) || !(act = kx_activation(k, cfg, &ok))))
            return false;
        if (strcmp(act, "none") == 0)
            return true;
        if (strcmp(act, "gelu_exact") == 0)
            return kx_fail(k, "a gelu layer is not supported; give Dense activation \"gelu\"", NULL, NULL);
        l = json_pack("{s:s}", "type", act);
    } else if (strcmp(c, "Add") == 0 || strcmp(c, "Concatenate") == 0) {
        bool cat = c[0] == 'C';
        if (!kx_options(k, cfg, NULL, cat ? "{\"axis\": [-1]}" : "{}"))
            return false;
        if (n_in < 2)
            return kx_fail(k, "needs two or more inputs", NULL, NULL);
        l = json_pack("{s:s}", "type", cat ? "concat" : "add");
        if (cat) {
            int ch = s->rank == 3 ? 0 : s->rank - 1;
            for (int i = 1; i < n_in; i++)
                out->s.d[ch] += in[i].s.d[ch];
        }
        json_t *a = json_array();
        for (int i = 0; i < n_in; i++)
            json_array_append_new(a, json_integer(in[i].index));
        json_object_set_new(l, "inputs", a);
        json_array_append_new(k->layers, l);
        out->index = k->n++;
        return true;
    } else if (strcmp(c, "Embedding") == 0) {
        static const char *const m[] = {"input_dim", "output_dim", "mask_zero", NULL};
        if (!kx_options(k, cfg, m, "{\"sparse\": [false]}"))
            return false;
        l = json_pack("{s:s,s:O,s:O,s:O}", "type", "embedding", "input_dim", json_object_get(cfg, "input_dim"),
                      "output_dim", json_object_get(cfg, "output_dim"), "mask_zero",
                      json_object_get(cfg, "mask_zero") ? json_object_get(cfg, "mask_zero") : json_false());
        out->s = (kshape){2, {0, (long)json_integer_value(json_object_get(cfg, "output_dim")), 0}};
    } else if (strcmp(c, "LSTM") == 0 || strcmp(c, "GRU") == 0) {
        static const char *const m[] = {"units", "return_sequences", "go_backwards", "reset_after", NULL};
        if (!kx_options(k, cfg, m, "{\"activation\": [\"tanh\"], \"recurrent_activation\": [\"sigmoid\"], "
                                   "\"use_bias\": [true], \"dropout\": [0], \"recurrent_dropout\": [0], "
                                   "\"return_state\": [false], \"stateful\": [false], \"time_major\": [false], "
                                   "\"unit_forget_bias\": [true], \"use_cudnn\": [\"auto\", true, false]}"))
            return false;
        if (s->rank != 2)
            return kx_fail(k, "its input must be a sequence", NULL, NULL);
        l = json_pack("{s:s,s:O,s:b,s:b}", "type", c[0] == 'L' ? "lstm" : "gru", "units",
                      json_object_get(cfg, "units"), "return_sequences",
                      json_is_true(json_object_get(cfg, "return_sequences")), "go_backwards",
                      json_is_true(json_object_get(cfg, "go_backwards")));
        if (c[0] == 'G')
            json_object_set_new(l, "reset_after", json_boolean(!json_is_false(json_object_get(cfg, "reset_after"))));
        long u = (long)json_integer_value(json_object_get(cfg, "units"));
        out->s = json_is_true(json_object_get(cfg, "return_sequences")) ? (kshape){2, {0, u, 0}}
                                                                         : (kshape){1, {u, 0, 0}};
    } else if (strcmp(c, "Bidirectional") == 0) {
        static const char *const m[] = {"layer", "merge_mode", NULL};
        if (!kx_options(k, cfg, m, "{\"backward_layer\": [null]}"))
            return false;
        const json_t *inner = json_object_get(cfg, "layer");
        const char *icls = json_string_value(json_object_get(inner, "class_name"));
        const json_t *icfg = json_object_get(inner, "config");
        const char *outer = k->cls;
        if (!icls || (strcmp(icls, "LSTM") != 0 && strcmp(icls, "GRU") != 0))
            return kx_fail(k, "option \"layer\" must be an LSTM or GRU", NULL, NULL);
        k->cls = icls;
        knode tmp;
        json_t *saved = k->layers;
        k->layers = json_array();
        int n_saved = k->n;
        bool inner_ok = kx_layer(k, icfg, in, 1, true, &tmp);
        json_t *rnn = json_incref(json_array_get(k->layers, 0));
        json_decref(k->layers);
        k->layers = saved;
        k->n = n_saved;
        k->cls = outer;
        if (!inner_ok) {
            json_decref(rnn);
            return false;
        }
        json_object_del(rnn, "inputs");
        if (json_is_true(json_object_get(rnn, "go_backwards"))) {
            json_decref(rnn);
            return kx_fail(k, "an inner layer with go_backwards is not supported", NULL, NULL);
        }
        json_object_del(rnn, "go_backwards");
        const char *mm = json_string_value(json_object_get(cfg, "merge_mode"));
        l = json_pack("{s:s,s:o,s:s}", "type", "bidirectional", "layer", rnn, "merge_mode", mm ? mm : "concat");
        out->s = tmp.s;
        if (!mm || strcmp(mm, "concat") == 0)
            out->s.d[out->s.rank - 1] *= 2;
    } else if (strcmp(c, "LayerNormalization") == 0) {
        static const char *const m[] = {"epsilon", NULL};
        if (!kx_options(k, cfg, m, "{\"axis\": [-1, [-1]], \"center\": [true], \"scale\": [true], \"rms_scaling\": [false]}"))
            return false;
        l = json_pack("{s:s,s:f}", "type", "layer_norm", "epsilon",
                      json_object_get(cfg, "epsilon") ? json_number_value(json_object_get(cfg, "epsilon")) : 1e-3);
    } else if (strcmp(c, "Conv1D") == 0) {
        static const char *const m[] = {"filters", "kernel_size", "strides", "padding",
                                        "dilation_rate", "activation", "use_bias", NULL};
        long ks[2], st[2], dl[2];
        const char *pad;
        const char *act = kx_conv_window(k, cfg, m, "{" CHANNELS_LAST ", \"groups\": [1]}", true,
                                         ks, st, dl, &pad, &ok);
        if (!act)
            return false;
        l = json_pack("{s:s,s:O,s:i,s:i,s:i,s:s,s:s,s:O}", "type", "conv1d", "filters",
                      json_object_get(cfg, "filters"), "kernel_size", (int)ks[0], "strides", (int)st[0],
                      "dilation_rate", (int)dl[0], "padding", pad, "activation", act, "use_bias",
                      json_object_get(cfg, "use_bias") ? json_object_get(cfg, "use_bias") : json_true());
        out->s = (kshape){2, {0, (long)json_integer_value(json_object_get(cfg, "filters")), 0}};
    } else if (strcmp(c, "MaxPooling1D") == 0 || strcmp(c, "AveragePooling1D") == 0) {
        static const char *const m[] = {"pool_size", "strides", "padding", NULL};
        long ps[2], st[2];
        const char *pad;
        if (!kx_options(k, cfg, m, "{" CHANNELS_LAST "}") || !kx_pair(k, cfg, "pool_size", 2, 2, ps) ||
            !kx_pair(k, cfg, "strides", ps[0], ps[0], st) || !kx_padding(k, cfg, false, &pad))
            return false;
        l = json_pack("{s:s,s:i,s:i,s:s}", "type", c[0] == 'M' ? "maxpool1d" : "avgpool1d",
                      "pool_size", (int)ps[0], "strides", (int)st[0], "padding", pad);
    } else if (strcmp(c, "GlobalAveragePooling1D") == 0 || strcmp(c, "GlobalMaxPooling1D") == 0) {
        if (!kx_options(k, cfg, NULL, "{" CHANNELS_LAST ", \"keepdims\": [false]}"))
            return false;
        l = json_pack("{s:s}", "type", c[6] == 'M' ? "global_maxpool1d" : "global_avgpool1d");
        out->s = (kshape){1, {s->d[1], 0, 0}};
    } else {
        return kx_fail(k, "layer class %s is not supported", c, NULL);
    }
    if (!ok)
        return false;
    out->index = kx_add(k, l, in, n_in, seq);
    return out->index >= 0;
}

/* The input shape from a batch shape [null, ...] (channels last). */
static bool kx_input(kx *k, const json_t *shape, const json_t *next_cfg, const char *next_cls,
                     json_t **input, kshape *s)
{
    size_t n = json_array_size(shape);
    if (n < 2 || n > 4)
        return spec_fail(k->err, k->path, "the input shape must be [batch, features], "
                         "[batch, steps(, features)] or [batch, height, width, channels]");
    long d[3] = {0, 0, 0};
    for (size_t i = 1; i < n; i++)
        d[i - 1] = json_is_integer(json_array_get(shape, i)) ? (long)json_integer_value(json_array_get(shape, i)) : 0;
    if (n == 2 && next_cls && strcmp(next_cls, "Embedding") == 0) {
        *input = json_pack("{s:O}", "tokens", json_object_get(next_cfg, "input_dim"));
        *s = (kshape){2, {0, 1, 0}};
    } else if (n == 2) {
        *input = json_pack("[I]", (json_int_t)d[0]);
        *s = (kshape){1, {d[0], 0, 0}};
    } else if (n == 3) {
        *input = json_pack("{s:[I]}", "sequence", (json_int_t)d[1]);
        *s = (kshape){2, {0, d[1], 0}};
    } else {
        *input = json_pack("[I,I,I]", (json_int_t)d[2], (json_int_t)d[0], (json_int_t)d[1]);
        *s = (kshape){3, {d[2], d[0], d[1]}};
    }
    for (int i = 0; i < (n == 4 ? 3 : 1); i++)
        if (n != 3 && !(n == 2 && next_cls && strcmp(next_cls, "Embedding") == 0) && d[i] < 1)
            return spec_fail(k->err, k->path, "the input's dimensions (but the batch and the "
                             "steps) must be known");
    return *input != NULL;
}

static const json_t *kx_batch_shape(const json_t *cfg)
{
    const json_t *s = json_object_get(cfg, "batch_shape");
    return s ? s : json_object_get(cfg, "batch_input_shape");
}

static knode *kx_find(kx *k, const char *name)
{
    for (int i = 0; i < k->n_nodes; i++)
        if (k->nodes[i].name && strcmp(k->nodes[i].name, name) == 0)
            return &k->nodes[i];
    return NULL;
}

/* The names of the layers feeding a Functional layer: Keras 2's
 * [[[name, 0, 0, {}], ...]], Keras 3's [{"args": [tensors], ...}]. */
static void kx_inbound(const json_t *v, const char **names, int *n)
{
    if (json_is_array(v)) {
        if (json_array_size(v) >= 3 && json_is_string(json_array_get(v, 0)) &&
            json_is_integer(json_array_get(v, 1))) {
            if (*n < SPEC_MAX_INPUTS)
                names[(*n)++] = json_string_value(json_array_get(v, 0));
            return;
        }
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) kx_inbound(e, names, n);
        return;
    }
    if (!json_is_object(v))
        return;
    const char *cls = json_string_value(json_object_get(v, "class_name"));
    if (cls && strcmp(cls, "__keras_tensor__") == 0) {
        const json_t *h = json_object_get(json_object_get(v, "config"), "keras_history");
        if (*n < SPEC_MAX_INPUTS && json_is_string(json_array_get(h, 0)))
            names[(*n)++] = json_string_value(json_array_get(h, 0));
        return;
    }
    kx_inbound(json_object_get(v, "args"), names, n);
}

static bool kx_model(kx *k, const json_t *keras, json_t **input)
{
    const char *cls = json_string_value(json_object_get(keras, "class_name"));
    const json_t *cfg = json_object_get(keras, "config");
    const json_t *layers = json_object_get(cfg, "layers");
    bool functional = cls && (strcmp(cls, "Functional") == 0 || strcmp(cls, "Model") == 0);
    if (!cls || (!functional && strcmp(cls, "Sequential") != 0) || !json_is_array(layers) ||
        json_array_size(layers) == 0)
        return spec_fail(k->err, "model.keras", "expected the JSON of Keras's model.to_json(): "
                         "{\"class_name\": \"Sequential\" or \"Functional\", \"config\": "
                         "{\"layers\": [...]}}");
    knode prev = {.index = -1};
    bool have_input = false;
    size_t i;
    const json_t *l;
    json_array_foreach(layers, i, l) {
        spec_path_index(k->path, sizeof k->path, "model.keras.config.layers", i);
        k->cls = json_string_value(json_object_get(l, "class_name"));
        const json_t *lc = json_object_get(l, "config");
        k->lname = json_string_value(json_object_get(lc, "name"));
        if (!k->cls || !json_is_object(lc))
            return spec_fail(k->err, k->path, "expected {\"class_name\": ..., \"config\": {...}}");
        const json_t *bs = kx_batch_shape(lc);
        if (!have_input && !bs && strcmp(k->cls, "InputLayer") != 0 && !functional)
            bs = json_object_get(json_object_get(keras, "build_config"), "input_shape");
        if (!have_input && (bs || strcmp(k->cls, "InputLayer") == 0)) {
            const json_t *next = json_array_get(layers, strcmp(k->cls, "InputLayer") == 0 ? i + 1 : i);
            if (!kx_input(k, bs, json_object_get(next, "config"),
                          json_string_value(json_object_get(next, "class_name")), input, &prev.s))
                return false;
            have_input = true;
            k->nodes[k->n_nodes++] = (knode){k->lname ? k->lname : json_string_value(json_object_get(l, "name")), -1, prev.s};
            if (strcmp(k->cls, "InputLayer") == 0)
                continue;
        }
        if (!have_input)
            return spec_fail(k->err, k->path, "no input shape: start with an InputLayer");
        knode in[SPEC_MAX_INPUTS];
        int n_in = 1;
        in[0] = prev;
        if (functional) {
            const char *names[SPEC_MAX_INPUTS];
            int n = 0;
            const json_t *ib = json_object_get(l, "inbound_nodes");
            if (json_array_size(ib) != 1)
                return kx_fail(k, "a layer called %s times (shared) is not supported",
                               json_array_size(ib) ? "several" : "zero", NULL);
            kx_inbound(ib, names, &n);
            for (int j = 0; j < n; j++) {
                knode *src = kx_find(k, names[j]);
                if (!src)
                    return kx_fail(k, "input \"%s\" is not an earlier layer", names[j], NULL);
                in[j] = *src;
            }
            n_in = n;
            if (n_in < 1)
                return kx_fail(k, "has no inputs", NULL, NULL);
        }
        knode out;
        if (!kx_layer(k, lc, in, n_in, !functional, &out))
            return false;
        out.name = json_string_value(json_object_get(l, "name"));
        if (!out.name)
            out.name = k->lname;
        if (k->n_nodes > SPEC_MAX_LAYERS)
            return spec_fail(k->err, k->path, "too many layers");
        k->nodes[k->n_nodes++] = out;
        prev = out;
    }
    if (functional) {
        const json_t *outs = json_object_get(cfg, "output_layers");
        const char *name = json_string_value(json_array_get(json_array_get(outs, 0), 0));
        if (!name)
            name = json_string_value(json_array_get(outs, 0));
        knode *o = name ? kx_find(k, name) : NULL;
        if (json_array_size(outs) != 1 || !o || o->index != k->n - 1)
            return spec_fail(k->err, "model.keras.config.output_layers", "one output, the last "
                             "layer, is supported");
    }
    return k->n > 0 || spec_fail(k->err, "model.keras", "no layers");
}

bool spec_keras_model(const json_t *keras, json_t **model, spec_error *err)
{
    kx *k = calloc(1, sizeof *k);
    if (!k)
        return spec_fail(err, "model.keras", "out of memory");
    k->layers = json_array();
    k->err = err;
    json_t *input = NULL;
    bool ok = kx_model(k, keras, &input);
    *model = ok ? json_pack("{s:o,s:O}", "input", input, "layers", k->layers) : NULL;
    if (!ok)
        json_decref(input);
    json_decref(k->layers);
    free(k);
    return ok && *model;
}
