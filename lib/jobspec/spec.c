/* spec.c — parse and validate a job spec: the top-level sections, typed
 * field readers that know their JSON path, defaults, and the checks that
 * span sections (the model's output against the data's classes, the
 * trainer against the worker count). The model section lives in
 * spec_model.c, training in spec_training.c, the field readers in
 * spec_fields.c, presets in spec_presets.c, the rules for dataset names in
 * spec_dataref.c. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"
#include "jobspec/spec_internal.h"

/* Deep enough for any real spec; jansson itself stops at 2048 levels, so
 * hostile nesting is refused before it reaches us. */
#define SPEC_MAX_BYTES (16u << 20)

static bool parse_dataset_name(const json_t *obj, const char *path, const char *key,
                               char **out, spec_error *err)
{
    const char *s = NULL, *why = NULL;
    char p[160];
    if (!spec_get_string_at(obj, path, key, &s, p, sizeof p, err))
        return false;
    if (!s)
        return true;
    if (spec_dataset_ref_kind(s, &why) == SPEC_REF_INVALID)
        return spec_fail(err, p, "dataset name \"%.80s\" %s", s, why);
    *out = strdup(s);
    if (!*out)
        return spec_fail(err, p, "out of memory");
    return true;
}

/* One transform of data.augment: an object of optional fields, present
 * meaning on with PyDTNN's defaults (probability 0.5, crop size 16). */
static bool parse_augment_op(const json_t *a, const char *key, const char *const *keys,
                             double *prob, long *size, spec_error *err)
{
    const json_t *o = json_object_get(a, key);
    if (!o)
        return true;
    char path[64];
    spec_path_key(path, sizeof path, "data.augment", key);
    if (!json_is_object(o))
        return spec_fail(err, path, "expected an object (e.g. {\"prob\": 0.5}), got %s",
                         spec_json_type_name(o));
    if (!spec_check_keys(o, path, keys, err))
        return false;
    *prob = 0.5;
    if (size)
        *size = 16;
    if (!spec_get_double(o, path, "prob", 0, 1, true, false, prob, err))
        return false;
    return !size || spec_get_int(o, path, "size", 1, 100000, size, err);
}

static bool parse_augment(const json_t *a, spec_augment *out, spec_error *err)
{
    static const char *const keys[] = {"flip", "crop", NULL};
    static const char *const flip_keys[] = {"prob", NULL};
    static const char *const crop_keys[] = {"size", "prob", NULL};
    memset(out, 0, sizeof *out);
    if (!a)
        return true;
    if (!json_is_object(a))
        return spec_fail(err, "data.augment", "expected an object (e.g. {\"flip\": "
                                              "{\"prob\": 0.5}}), got %s", spec_json_type_name(a));
    if (!spec_check_keys(a, "data.augment", keys, err))
        return false;
    long size = 0;
    if (!parse_augment_op(a, "flip", flip_keys, &out->flip_prob, NULL, err) ||
        !parse_augment_op(a, "crop", crop_keys, &out->crop_prob, &size, err))
        return false;
    out->crop_size = (int)size;
    return true;
}

/* A field that only some formats read: refused elsewhere, so that a
 * misplaced option is never silently ignored. */
static bool data_only_for(const json_t *d, const char *key, bool allowed, const char *formats,
                          spec_error *err)
{
    if (allowed || !json_object_get(d, key))
        return true;
    char p[64];
    spec_path_key(p, sizeof p, "data", key);
    return spec_fail(err, p, "only for data.format %s", formats);
}

/* The sequence fields of data: CTF stream names, the text tokenizer and
 * window, length bucketing and per-step labels. A text model predicts
 * the next token at every step, so its labels are per step, and a byte
 * tokenizer has 256 classes unless num_classes says otherwise. */
static bool parse_data_sequences(const json_t *d, spec_data *data, spec_error *err)
{
    static const char *const tokenizers[] = {"byte", "char"};
    const char *features = NULL, *labels = NULL;
    int tokenizer = TOKENIZER_BYTE;
    long block = data->max_length;
    bool ctf = data->format == DATA_CTF, text = data->format == DATA_TEXT;
    data->per_step_labels = text;
    if (!spec_get_bool(d, "data", "bucket_by_length", &data->bucket_by_length, err) ||
        !spec_get_bool(d, "data", "per_step_labels", &data->per_step_labels, err) ||
        !spec_get_string(d, "data", "features", &features, err) ||
        !spec_get_string(d, "data", "labels", &labels, err) ||
        !spec_get_enum(d, "data", "tokenizer", tokenizers, 2, "tokenizer", &tokenizer, err) ||
        !spec_get_int(d, "data", "block_size", 1, data->max_length, &block, err) ||
        !data_only_for(d, "features", ctf, "ctf", err) ||
        !data_only_for(d, "labels", ctf, "ctf", err) ||
        !data_only_for(d, "tokenizer", text, "text", err) ||
        !data_only_for(d, "block_size", text, "text", err))
        return false;
    if (text && !data->per_step_labels)
        return spec_fail(err, "data.per_step_labels", "a text dataset's targets are the next "
                                                      "token at every step: it cannot be false");
    if (features && (!features[0] || strlen(features) > 64 || strpbrk(features, " \t|")))
        return spec_fail(err, "data.features", "a CTF stream name: 1 to 64 characters, no "
                                               "space, tab or '|'");
    if (labels && (!labels[0] || strlen(labels) > 64 || strpbrk(labels, " \t|")))
        return spec_fail(err, "data.labels", "a CTF stream name: 1 to 64 characters, no "
                                             "space, tab or '|'");
    data->ctf_features = strdup(features ? features : "x");
    data->ctf_labels = strdup(labels ? labels : "y");
    if (!data->ctf_features || !data->ctf_labels)
        return spec_fail(err, "data", "out of memory");
    data->tokenizer = (spec_tokenizer)tokenizer;
    data->block_size = (int)block;
    if (text && data->tokenizer == TOKENIZER_BYTE && !json_object_get(d, "num_classes"))
        data->num_classes = 256;
    if (text && data->tokenizer == TOKENIZER_CHAR && !json_object_get(d, "num_classes"))
        return spec_fail(err, "data.num_classes", "missing; a char tokenizer's vocabulary is "
                                                  "known only when the text is read: give "
                                                  "the model's outputs, at least the text's "
                                                  "distinct characters");
    return true;
}

/* data.header: true, false or "auto" (the default). */
static bool parse_csv_header(const json_t *d, int *out, spec_error *err)
{
    const json_t *v = json_object_get(d, "header");
    *out = SPEC_HEADER_AUTO;
    if (!v)
        return true;
    if (json_is_boolean(v)) {
        *out = json_is_true(v) ? SPEC_HEADER_YES : SPEC_HEADER_NO;
        return true;
    }
    if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0)
        return true;
    return spec_fail(err, "data.header", "expected true, false or \"auto\" (a header when a "
                     "field of the first line is not a number), got %s",
                     json_is_string(v) ? json_string_value(v) : spec_json_type_name(v));
}

static bool parse_data(const json_t *d, job_spec *spec, spec_error *err)
{
    static const char *const keys[] = {
        "format", "train", "test", "validation", "validation_split", "scaling", "shuffle",
        "train_samples", "test_samples", "num_classes", "label_column", "header",
        "synthetic_train", "synthetic_test", "augment", "max_length", "bucket_by_length",
        "per_step_labels", "features", "labels", "tokenizer", "block_size", NULL};
    spec_data *data = &spec->data;
    data->format = DATA_IDX;
    data->scaling = SCALE_UNIT;
    data->shuffle = true;
    data->num_classes = 10;
    data->synthetic_train = 60000;
    data->synthetic_test = 10000;
    data->max_length = 256;
    data->bucket_by_length = true;
    if (!d)
        return spec_fail(err, "data", "missing; a job needs data (e.g. {\"format\": \"idx\", "
                                      "\"train\": \"fashion-mnist/train\"})");
    if (!json_is_object(d))
        return spec_fail(err, "data", "expected an object, got %s", spec_json_type_name(d));
    if (!spec_check_keys(d, "data", keys, err))
        return false;
    int fmt = DATA_IDX, scaling = SCALE_UNIT;
    long classes = 10, label_column = 0, max_length = 256;
    if (!spec_get_enum(d, "data", "format", spec_data_format_names, 7, "data format", &fmt,
                       err) ||
        !parse_dataset_name(d, "data", "train", &data->train, err) ||
        !parse_dataset_name(d, "data", "test", &data->test, err) ||
        !parse_dataset_name(d, "data", "validation", &data->validation, err) ||
        !spec_get_double(d, "data", "validation_split", 0, 1, false, true,
                         &data->validation_split, err) ||
        !spec_get_enum(d, "data", "scaling", spec_scaling_names, 3, "scaling", &scaling, err) ||
        !spec_get_bool(d, "data", "shuffle", &data->shuffle, err) ||
        !spec_get_int(d, "data", "train_samples", 0, 100000000, &data->train_samples, err) ||
        !spec_get_int(d, "data", "test_samples", 0, 100000000, &data->test_samples, err) ||
        !spec_get_int(d, "data", "num_classes", 1, 100000, &classes, err) ||
        !spec_get_int(d, "data", "label_column", -1, 1000000, &label_column, err) ||
        !parse_csv_header(d, &data->header, err) ||
        !spec_get_int(d, "data", "synthetic_train", 1, 10000000, &data->synthetic_train, err) ||
        !spec_get_int(d, "data", "synthetic_test", 0, 10000000, &data->synthetic_test, err) ||
        !parse_augment(json_object_get(d, "augment"), &data->augment, err) ||
        !spec_get_int(d, "data", "max_length", 1, 100000, &max_length, err))
        return false;
    data->max_length = (int)max_length;
    data->format = (spec_data_format)fmt;
    data->scaling = (spec_scaling)scaling;
    data->num_classes = (int)classes;
    data->label_column = (int)label_column;
    if (!parse_data_sequences(d, data, err))
        return false;
    if (data->format != DATA_SYNTHETIC && !data->train && spec->task != TASK_PREDICT)
        return spec_fail(err, "data.train", "missing; name the training set (e.g. "
                                            "\"fashion-mnist/train\")");
    if (data->validation && data->validation_split > 0)
        return spec_fail(err, "data.validation_split",
                         "give either data.validation or data.validation_split, not both");
    return true;
}

/* dist-keras's default communication windows. */
static int default_window(spec_trainer t)
{
    switch (t) {
    case TRAINER_ADAG: return 12;
    case TRAINER_AEASGD:
    case TRAINER_EAMSGD: return 32;
    default: return 5;
    }
}

#define TRAINER_BIT(t) (1u << (t))
#define ELASTIC_TRAINERS (TRAINER_BIT(TRAINER_AEASGD) | TRAINER_BIT(TRAINER_EAMSGD))
#define ASYNC_TRAINERS                                                                       \
    (TRAINER_BIT(TRAINER_DOWNPOUR) | TRAINER_BIT(TRAINER_ADAG) | TRAINER_BIT(TRAINER_DYNSGD) | \
     ELASTIC_TRAINERS)

/* The trainers that use each distributed knob: dist-keras's trainer
 * arguments (its residual trainers take no learning rate), plus
 * allreduce's and averaging's own. */
static const struct {
    const char *key;
    unsigned trainers;
} distributed_knobs[] = {
    {"communication_window", ASYNC_TRAINERS},
    {"sync_every_epochs", TRAINER_BIT(TRAINER_AVERAGING)},
    {"learning_rate_scaling", TRAINER_BIT(TRAINER_ALLREDUCE)},
    {"bucket_mb", TRAINER_BIT(TRAINER_ALLREDUCE)},
    {"compression", TRAINER_BIT(TRAINER_ALLREDUCE)},
    {"learning_rate", ELASTIC_TRAINERS},
    {"rho", ELASTIC_TRAINERS},
    {"momentum", TRAINER_BIT(TRAINER_EAMSGD)},
};

bool spec_distributed_uses(spec_trainer t, const char *key)
{
    if (strcmp(key, "trainer") == 0 || strcmp(key, "workers") == 0)
        return true;
    for (size_t i = 0; i < sizeof distributed_knobs / sizeof distributed_knobs[0]; i++)
        if (strcmp(distributed_knobs[i].key, key) == 0)
            return (distributed_knobs[i].trainers & TRAINER_BIT(t)) != 0;
    return false;
}

/* Refuse a knob the chosen trainer would ignore, naming the trainers
 * that use it. A null value counts as absent, as everywhere in a spec. */
static bool check_distributed_knobs(const json_t *d, spec_trainer t, spec_error *err)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)d, key, value) {
        if (json_is_null(value) || spec_distributed_uses(t, key))
            continue;
        const char *users[9];
        int n = 0;
        for (int u = 0; u < 9; u++)
            if (spec_distributed_uses((spec_trainer)u, key))
                users[n++] = spec_trainer_names[u];
        char p[160], names[160];
        spec_join_names(names, sizeof names, users, n);
        spec_path_key(p, sizeof p, "distributed", key);
        return spec_fail(err, p, "trainer \"%s\" does not use it (only %s %s); remove it",
                         spec_trainer_names[t], names, n == 1 ? "does" : "do");
    }
    return true;
}

/* distributed.compression (allreduce only, check_distributed_knobs). The
 * bf16 exchange lives in the host gradient path of one micro-batch per
 * step: accumulated steps reduce once through another path, so the pair
 * is refused rather than silently sent uncompressed. */
static bool parse_compression(const json_t *d, job_spec *spec, spec_error *err)
{
    static const char *const names[] = {"none", "bf16"};
    int c = SPEC_COMPRESSION_NONE;
    if (!spec_get_enum(d, "distributed", "compression", names, 2, "compression", &c, err))
        return false;
    spec->distributed.compression = (spec_compression)c;
    if (c != SPEC_COMPRESSION_NONE && spec->training.grad_accum_steps > 1)
        return spec_fail(err, "distributed.compression",
                         "\"%s\" does not work with training.grad_accum_steps > 1 (got %d) yet; "
                         "use \"none\" or one step per batch", names[c],
                         spec->training.grad_accum_steps);
    return true;
}

static bool parse_distributed(const json_t *d, job_spec *spec, spec_error *err)
{
    static const char *const keys[] = {"trainer", "workers", "communication_window",
                                       "sync_every_epochs", "learning_rate_scaling",
                                       "learning_rate", "rho", "momentum", "bucket_mb",
                                       "compression", NULL};
    spec_distributed *ds = &spec->distributed;
    ds->trainer = TRAINER_SINGLE;
    ds->workers = 1;
    ds->sync_every_epochs = 1;
    ds->learning_rate = 0.1;
    ds->rho = 5.0;
    ds->momentum = 0.9;
    ds->bucket_mb = 4.0;
    if (!d) {
        ds->communication_window = default_window(ds->trainer);
        return true;
    }
    if (!json_is_object(d))
        return spec_fail(err, "distributed", "expected an object, got %s", spec_json_type_name(d));
    int trainer = TRAINER_SINGLE;
    long workers = 1, window = -1, sync = 1;
    if (!spec_check_keys(d, "distributed", keys, err) ||
        !spec_get_enum(d, "distributed", "trainer", spec_trainer_names, 9, "trainer", &trainer,
                       err) ||
        !check_distributed_knobs(d, (spec_trainer)trainer, err) ||
        !spec_get_int(d, "distributed", "workers", 1, 4096, &workers, err) ||
        !spec_get_int(d, "distributed", "communication_window", 1, 1000000, &window, err) ||
        !spec_get_int(d, "distributed", "sync_every_epochs", 1, 100000, &sync, err) ||
        !spec_get_bool(d, "distributed", "learning_rate_scaling", &ds->learning_rate_scaling,
                       err) ||
        !spec_get_double(d, "distributed", "learning_rate", 0, 10, true, false,
                         &ds->learning_rate, err) ||
        !spec_get_double(d, "distributed", "rho", 0, 1e6, true, false, &ds->rho, err) ||
        !spec_get_double(d, "distributed", "momentum", 0, 1, false, true, &ds->momentum, err) ||
        !spec_get_double(d, "distributed", "bucket_mb", 0, 1024, true, false, &ds->bucket_mb,
                         err) ||
        !parse_compression(d, spec, err))
        return false;
    ds->trainer = (spec_trainer)trainer;
    ds->workers = (int)workers;
    ds->communication_window = window > 0 ? (int)window : default_window(ds->trainer);
    ds->sync_every_epochs = (int)sync;
    if (ds->trainer == TRAINER_SINGLE && ds->workers != 1)
        return spec_fail(err, "distributed.workers",
                         "trainer \"single\" runs exactly 1 worker, got %d; use "
                         "\"allreduce\" (or another distributed trainer) for more",
                         ds->workers);
    /* With alpha >= 1 the elastic force would overshoot: worker and
     * center would swap places or fly apart instead of attracting. */
    if ((TRAINER_BIT(ds->trainer) & ELASTIC_TRAINERS) && ds->rho * ds->learning_rate >= 1.0)
        return spec_fail(err, spec_field(d, "rho") ? "distributed.rho" : "distributed.learning_rate",
                         "the elastic moving rate alpha = rho * learning_rate must be < 1, "
                         "got %g * %g = %g",
                         ds->rho, ds->learning_rate, ds->rho * ds->learning_rate);
    return true;
}

static bool parse_resources(const json_t *r, job_spec *spec, spec_error *err)
{
    static const char *const keys[] = {"gpus", "threads_per_worker", "time_limit_s",
                                       "priority", "preemptible", NULL};
    spec_resources *rs = &spec->resources;
    rs->threads_per_worker = 1;
    rs->preemptible = SPEC_PREEMPTIBLE_UNSET;
    if (!r)
        return true;
    if (!json_is_object(r))
        return spec_fail(err, "resources", "expected an object, got %s", spec_json_type_name(r));
    long gpus = 0, threads = 1, priority = 0;
    if (!spec_check_keys(r, "resources", keys, err) ||
        !spec_get_int(r, "resources", "gpus", 0, 16, &gpus, err) ||
        !spec_get_int(r, "resources", "threads_per_worker", 1, 256, &threads, err) ||
        !spec_get_int(r, "resources", "time_limit_s", 0, 30L * 86400, &rs->time_limit_s, err) ||
        !spec_get_int(r, "resources", "priority", -10, 10, &priority, err))
        return false;
    rs->gpus = (int)gpus;
    rs->threads_per_worker = (int)threads;
    rs->priority = (int)priority;
    if (json_object_get(r, "preemptible")) {
        bool preemptible;
        if (!spec_get_bool(r, "resources", "preemptible", &preemptible, err))
            return false;
        rs->preemptible = preemptible ? SPEC_PREEMPTIBLE_YES : SPEC_PREEMPTIBLE_NO;
    }
    return true;
}

/* data.augment transforms images: it needs [C, H, W] samples, and a crop
 * no larger than they are. */
static bool check_augment(const job_spec *spec, spec_error *err)
{
    const spec_augment *a = &spec->data.augment;
    if (a->flip_prob <= 0 && a->crop_size <= 0)
        return true;
    const spec_shape *in = &spec->input;
    if (in->rank != 3)
        return spec_fail(err, "data.augment", "flips and crops need image samples "
                                              "(model.input [C, H, W]); these have %d "
                                              "dimension%s", in->rank,
                         in->rank == 1 ? "" : "s");
    if (a->crop_size > in->dim[1] || a->crop_size > in->dim[2])
        return spec_fail(err, "data.augment.crop.size", "%d is larger than the %dx%d images",
                         a->crop_size, in->dim[1], in->dim[2]);
    return true;
}

/* Sequence data against the model input, which is parsed after data:
 * sequences are not scaled (a token id divided by the largest one would
 * no longer name its token, and zero padding must stay zero), so scaling
 * defaults to none for them and unit or standard are refused; CTF and
 * text hold sequences, and text token ids. */
static bool check_sequence_data(const json_t *d, job_spec *spec, spec_error *err)
{
    spec_data *data = &spec->data;
    bool seq = spec->input.rank == 2;
    data->input_tokens = spec->input_tokens;
    if (!seq && (data->format == DATA_CTF || data->format == DATA_TEXT))
        return spec_fail(err, "model.input", "data.format %s holds sequences: give "
                                             "{\"tokens\": vocabulary_size} or "
                                             "{\"sequence\": [features]}",
                         spec_data_format_name(data->format));
    if (data->format == DATA_TEXT && spec->input_tokens == 0)
        return spec_fail(err, "model.input", "data.format text holds token ids: give "
                                             "{\"tokens\": vocabulary_size}");
    if (data->format == DATA_TEXT && data->tokenizer == TOKENIZER_BYTE &&
        spec->input_tokens < 256)
        return spec_fail(err, "model.input.tokens", "%d is fewer than the byte tokenizer's "
                                                    "256 ids", spec->input_tokens);
    if (!seq) {
        if (data->per_step_labels)
            return spec_fail(err, "data.per_step_labels", "per-step labels need a sequence "
                                                          "input (model.input {\"tokens\": V} "
                                                          "or {\"sequence\": [F]})");
        return true;
    }
    /* A batch's steps are GEMM rows, counted in int by BLAS. */
    if ((long)spec->training.batch_size * data->max_length > INT_MAX)
        return spec_fail(err, "data.max_length", "%d steps x batch %d is more rows than a "
                                                 "GEMM can take (2^31)",
                         data->max_length, spec->training.batch_size);
    if (data->per_step_labels && data->format != DATA_NPZ && data->format != DATA_CTF &&
        data->format != DATA_TEXT)
        return spec_fail(err, "data.per_step_labels", "data.format %s has one label a sample; "
                                                      "per-step labels come from npz, ctf or "
                                                      "text", spec_data_format_name(data->format));
    /* Synthetic inputs are byte values: as token ids they need V >= 256. */
    if (data->format == DATA_SYNTHETIC && spec->input_tokens > 0 && spec->input_tokens < 256)
        return spec_fail(err, "model.input.tokens", "synthetic data draws ids 0..255: %d "
                                                    "tokens are too few", spec->input_tokens);
    if (!json_object_get(d, "scaling")) {
        data->scaling = SCALE_NONE;
        return true;
    }
    if (data->scaling != SCALE_NONE)
        return spec_fail(err, "data.scaling", "\"%s\" does not apply to sequences (token ids "
                                              "and zero padding must keep their values); "
                                              "use \"none\" or leave it out",
                         spec_scaling_names[data->scaling]);
    return true;
}

/* A label per step (tagging, language models): softmax cross-entropy at
 * each real step, a prediction for every input step, accuracy as the
 * metric (mse and mae would be per output of a step: not built), and a
 * trainer that sums per-step losses (the ensemble's mean prediction is
 * scored per sample). */
static bool check_per_step(const job_spec *spec, const spec_layer *last, const char *p,
                           spec_error *err)
{
    if (last->out_shape.dim[0] != spec->input.dim[0])
        return spec_fail(err, p, "data.per_step_labels needs an output at each of the %d "
                                 "input steps, got %d steps (no pooling over time)",
                         spec->input.dim[0], last->out_shape.dim[0]);
    if (spec->training.loss != LOSS_CATEGORICAL_CROSSENTROPY)
        return spec_fail(err, "training.loss", "a label per step (data.per_step_labels) is "
                                               "trained with categorical_crossentropy only, "
                                               "not %s", spec_loss_name(spec->training.loss));
    for (int i = 0; i < spec->training.n_metrics; i++)
        if (spec->training.metrics[i] != METRIC_ACCURACY)
            return spec_fail(err, "training.metrics", "with a label per step "
                                                      "(data.per_step_labels) the metric is "
                                                      "accuracy over real steps, not %s",
                             spec_metric_name(spec->training.metrics[i]));
    if (spec->distributed.trainer == TRAINER_ENSEMBLE)
        return spec_fail(err, "distributed.trainer", "ensemble scores one prediction per "
                                                     "sample; a label per step "
                                                     "(data.per_step_labels) trains with "
                                                     "single, allreduce, averaging or an "
                                                     "async trainer");
    return true;
}

/* The last layer must produce one value per class for every loss we
 * have: the targets are one-hot labels (or, for a regression, one value
 * per target). */
static bool check_output(const job_spec *spec, spec_error *err)
{
    const spec_layer *last = &spec->layers[spec->n_layers - 1];
    char p[160];
    spec_path_index(p, sizeof p, "model.layers", (size_t)spec->n_layers - 1);
    /* Per-step labels: one value per class at every step, {T, classes}. */
    bool per_step = spec->data.per_step_labels;
    if (per_step && last->out_shape.rank != 2)
        return spec_fail(err, p, "data.per_step_labels needs an output at every step "
                                 "({steps, classes}: a dense layer on a sequence), got %s",
                         last->out_shape.rank == 1 ? "a flat output" : "an image");
    if (last->out_shape.rank != 1 && !per_step)
        return spec_fail(err, p, "the model's output must be flat (one value per class), got "
                                 "%dx%dx%d; end with flatten and dense",
                         last->out_shape.dim[0], last->out_shape.dim[1],
                         last->out_shape.dim[2]);
    if (per_step && !check_per_step(spec, last, p, err))
        return false;
    int outputs = last->out_shape.dim[per_step ? 1 : 0];
    if (outputs != spec->data.num_classes)
        return spec_fail(err, p, "the model outputs %d values%s but data.num_classes is %d",
                         outputs, per_step ? " per step" : "", spec->data.num_classes);
    if (spec->data.num_classes < 2 && spec->training.loss != LOSS_MSE)
        return spec_fail(err, "data.num_classes", "1 output is a regression: it needs "
                                                  "training.loss \"mse\" (and float targets)");
    if (last->type == LAYER_DROPOUT)
        return spec_fail(err, p, "a model cannot end with dropout");
    return true;
}

static bool check_root_keys(const json_t *root, spec_error *err)
{
    static const char *const keys[] = {"name", "description", "model", "data", "training",
                                       "distributed", "resources", "task", NULL};
    if (!json_is_object(root))
        return spec_fail(err, "", "a job spec must be a JSON object, got %s",
                         spec_json_type_name(root));
    return spec_check_keys(root, "", keys, err);
}

job_spec *spec_parse_json(const json_t *root, spec_error *err)
{
    job_spec *spec = calloc(1, sizeof *spec);
    if (!spec) {
        spec_fail(err, "", "out of memory");
        return NULL;
    }
    const char *name = "job", *description = NULL;
    static const char *const tasks[] = {"train", "predict"};
    int task = TASK_TRAIN;
    bool ok = check_root_keys(root, err) && spec_get_string(root, "", "name", &name, err) &&
              spec_get_string(root, "", "description", &description, err) &&
              spec_get_enum(root, "", "task", tasks, 2, "task", &task, err);
    /* The task first: a predict task needs no data.train. */
    spec->task = (spec_task)task;
    ok = ok && parse_data(spec_field(root, "data"), spec, err) &&
              spec_parse_training(spec_field(root, "training"), spec, err) &&
              parse_distributed(spec_field(root, "distributed"), spec, err) &&
              parse_resources(spec_field(root, "resources"), spec, err);
    ok = ok && spec_resolve_training(spec_field(root, "training"), spec, err);
    spec->data.float_targets = spec->training.loss == LOSS_MSE;
    if (ok && spec->task == TASK_PREDICT && !spec_model_is_import(spec_field(root, "model")) &&
        !json_is_string(json_object_get(spec_field(root, "model"), "imported")) &&
        !(spec->training.init_from_job || spec->training.init_from_file))
        ok = spec_fail(err, "training.init_from", "a predict task needs the weights to apply: "
                                                  "{\"job\": \"ID\"} or {\"dataset\": \"@NAME\"}");
    if (ok && spec->task == TASK_PREDICT && (spec->data.format != DATA_NPZ || !spec->data.test))
        ok = spec_fail(err, "data.test", "a predict task reads its inputs from data.test, an "
                                         "npz (x_test or x; data.format \"npz\")");
    if (ok && (spec->training.init_from_job || spec->training.init_from_file) &&
        spec->distributed.trainer != TRAINER_SINGLE)
        ok = spec_fail(err, "training.init_from", "a warm start runs with the single trainer "
                                                  "only, for now");
    if (ok && !spec_field(root, "model"))
        ok = spec_fail(err, "model", "missing; name a preset (\"mlp\", \"convnet\", "
                                     "\"resnet20_cifar10\", ...: docs/job-spec.md lists them) or "
                                     "give {\"input\": [...], \"layers\": [...]}");
    ok = ok && spec_parse_model(spec_field(root, "model"), spec, err) &&
         spec_infer_shapes(spec, err) && check_sequence_data(spec_field(root, "data"), spec, err) &&
         check_output(spec, err) && check_augment(spec, err);
    if (ok) {
        spec->name = strdup(name);
        if (!spec->name)
            ok = spec_fail(err, "name", "out of memory");
    }
    if (!ok) {
        spec_free(spec);
        return NULL;
    }
    return spec;
}

/* Every parse of a spec's text goes through spec_parse_text: its count is
 * what tests hold the daemon to (one per submit, none per start). */
static atomic_ulong spec_parses;

unsigned long spec_parse_count(void)
{
    return atomic_load(&spec_parses);
}

json_t *spec_parse_text(const char *text, size_t len, spec_error *err)
{
    atomic_fetch_add(&spec_parses, 1);
    if (len == 0) {
        spec_fail(err, "", "empty job spec; expected a JSON object");
        return NULL;
    }
    if (len > SPEC_MAX_BYTES) {
        spec_fail(err, "", "job spec is %zu bytes; the limit is %u", len, SPEC_MAX_BYTES);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        spec_fail(err, "", "invalid JSON at line %d, column %d: %s", jerr.line, jerr.column,
                  jerr.text);
    return root;
}

job_spec *spec_parse(const char *text, size_t len, spec_error *err)
{
    json_t *root = spec_parse_text(text, len, err);
    if (!root)
        return NULL;
    job_spec *spec = spec_parse_json(root, err);
    json_decref(root);
    return spec;
}

job_spec *spec_load_file(const char *path, spec_error *err)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    char why[512];
    /* A pipe too: `punch-train /dev/stdin` and a shell's <(...) work. */
    if (io_read_file_or_pipe(path, SPEC_MAX_BYTES, &buf, &len, why, sizeof why) != 0) {
        spec_fail(err, "", "%s", why);
        return NULL;
    }
    job_spec *spec = spec_parse((const char *)buf, len, err);
    free(buf);
    return spec;
}

void spec_free(job_spec *spec)
{
    if (!spec)
        return;
    free(spec->name);
    free(spec->preset);
    free(spec->layers);
    free(spec->data.train);
    free(spec->data.test);
    free(spec->data.validation);
    free(spec->data.ctf_features);
    free(spec->data.ctf_labels);
    free(spec->training.init_from_job);
    free(spec->training.init_from_file);
    free(spec->training.init_optimizer_file);
    free(spec->model_file);
    free(spec);
}

bool spec_trainer_is_async(spec_trainer t)
{
    return t == TRAINER_DOWNPOUR || t == TRAINER_ADAG || t == TRAINER_DYNSGD ||
           t == TRAINER_AEASGD || t == TRAINER_EAMSGD;
}

int spec_ranks_needed(const job_spec *spec)
{
    return spec->distributed.workers + (spec_trainer_is_async(spec->distributed.trainer) ? 1 : 0);
}
