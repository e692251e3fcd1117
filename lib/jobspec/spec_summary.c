/* spec_summary.c — the resolved spec for people (a Keras-style summary
 * table) and for programs (JSON with every default filled, which parses
 * back to the same spec). */
#include <string.h>

#include "jobspec/spec_internal.h"

static void shape_cell(const spec_shape *s, char *buf, size_t len)
{
    if (s->rank == 1)
        snprintf(buf, len, "(%d)", s->dim[0]);
    else if (s->rank == 2)
        snprintf(buf, len, "(%d steps, %d)", s->dim[0], s->dim[1]);
    else
        snprintf(buf, len, "(%d, %d, %d)", s->dim[0], s->dim[1], s->dim[2]);
}

/* 1234567 → "1,234,567": parameter counts are read by people. */
static const char *grouped(long v, char *buf, size_t len)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%ld", v < 0 ? -v : v);
    size_t n = strlen(digits), o = 0;
    if (v < 0 && o + 1 < len)
        buf[o++] = '-';
    for (size_t i = 0; i < n && o + 2 < len; i++) {
        if (i && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static void layer_label(const spec_layer *l, int i, char *buf, size_t len)
{
    const char *t = spec_layer_type_name(l->type);
    switch (l->type) {
    case LAYER_DENSE:
        snprintf(buf, len, "%d.%s %d%s%s%s", i, t, l->units, l->activation ? " " : "",
                 l->activation ? spec_activation_name(l->activation) : "",
                 l->tied ? " tied" : "");
        break;
    case LAYER_CONV2D:
        snprintf(buf, len, "%d.%s %dx%d/%d %s%s%s", i, t, l->kernel[0], l->kernel[1],
                 l->stride[0], l->padding == PAD_SAME ? "same" : "valid",
                 l->activation ? " " : "",
                 l->activation ? spec_activation_name(l->activation) : "");
        break;
    case LAYER_MAXPOOL1D:
    case LAYER_AVGPOOL1D:
        snprintf(buf, len, "%d.%s %d/%d %s", i, t, l->kernel[0], l->stride[0],
                 spec_padding_names[l->padding]);
        break;
    case LAYER_CONV1D:
        snprintf(buf, len, "%d.%s %d %s%s%s", i, t, l->kernel[0],
                 spec_padding_names[l->padding], l->activation ? " " : "",
                 l->activation ? spec_activation_name(l->activation) : "");
        break;
    case LAYER_MAXPOOL2D:
    case LAYER_AVGPOOL2D:
        snprintf(buf, len, "%d.%s %dx%d/%d", i, t, l->kernel[0], l->kernel[1], l->stride[0]);
        break;
    case LAYER_DROPOUT:
        snprintf(buf, len, "%d.%s %.2g", i, t, l->rate);
        break;
    case LAYER_EMBEDDING:
        snprintf(buf, len, "%d.%s %d", i, t, l->output_dim);
        break;
    case LAYER_LSTM:
    case LAYER_GRU:
        snprintf(buf, len, "%d.%s %d%s%s", i, t, l->units, l->go_backwards ? " backwards" : "",
                 l->return_sequences ? " all steps" : "");
        break;
    case LAYER_BIDIRECTIONAL:
        snprintf(buf, len, "%d.%s %s %d %s%s", i, t, spec_layer_type_name(l->rnn), l->units,
                 (const char *const[]){"concat", "sum", "ave", "mul"}[l->merge_mode],
                 l->return_sequences ? " all steps" : "");
        break;
    case LAYER_MULTI_HEAD_ATTENTION:
        snprintf(buf, len, "%d.%s %dx%d%s", i, "attention", l->heads, l->key_dim,
                 l->causal ? " causal" : "");
        break;
    case LAYER_ADD:
    case LAYER_CONCAT: {
        int o = snprintf(buf, len, "%d.%s", i, t);
        for (int k = 0; k < l->n_inputs && o > 0 && (size_t)o < len; k++)
            o += snprintf(buf + o, len - (size_t)o, "%s%d", k ? "," : " <- ", l->inputs[k]);
        break;
    }
    default:
        snprintf(buf, len, "%d.%s", i, t);
    }
}

/* A dataset as its user named it: punchcardd resolves an upload "@NAME"
 * to "@DATA_DIR/uploads/<sha256 of the owner>/NAME" before the engine
 * reads it, and train.log (which the user reads) shows "@NAME" again, not
 * the server's paths and hashes. Any other name is shown as it is. */
static const char *summary_ref(const char *ref, char *buf, size_t cap)
{
    const char *at = ref[0] == '@' ? strstr(ref, "/uploads/") : NULL;
    if (!at)
        return ref;
    const char *hex = at + strlen("/uploads/");
    size_t n = strspn(hex, "0123456789abcdef");
    if (n != 64 || hex[n] != '/' || !hex[n + 1])
        return ref;
    snprintf(buf, cap, "@%s", hex + n + 1);
    return buf;
}

void spec_print_summary(const job_spec *spec, FILE *out)
{
    char a[64], b[64], c[32];
    fprintf(out, "Job \"%s\"%s%s%s\n", spec->name, spec->preset ? " (model preset " : "",
            spec->preset ? spec->preset : "", spec->preset ? ")" : "");
    fprintf(out, "%-34s %-18s %12s\n", "Layer (index.type)", "Output shape", "Params");
    fprintf(out, "%.66s\n", "==================================================================");
    shape_cell(&spec->input, b, sizeof b);
    fprintf(out, "%-34s %-18s %12s\n", "input", b, "0");
    for (int i = 0; i < spec->n_layers; i++) {
        const spec_layer *l = &spec->layers[i];
        layer_label(l, i, a, sizeof a);
        shape_cell(&l->out_shape, b, sizeof b);
        fprintf(out, "%-34s %-18s %12s\n", a, b, grouped(l->n_params, c, sizeof c));
    }
    fprintf(out, "%.66s\n", "==================================================================");
    fprintf(out, "Trainable params: %s\n", grouped(spec->n_params, c, sizeof c));
    fprintf(out, "Non-trainable params: %s\n", grouped(spec->n_state, c, sizeof c));
    const spec_training *t = &spec->training;
    fprintf(out, "Training: %d epochs, batch %d, %s (lr %g), loss %s, seed %lu\n", t->epochs,
            t->batch_size, spec_optimizer_name_str(t->optimizer.name),
            t->optimizer.learning_rate, spec_loss_name(t->loss), t->seed);
    char train[300], test[300];
    fprintf(out, "Data: %s train=%s test=%s\n", spec_data_format_name(spec->data.format),
            spec->data.train ? summary_ref(spec->data.train, train, sizeof train) : "(synthetic)",
            spec->data.test ? summary_ref(spec->data.test, test, sizeof test) : "(none)");
    fprintf(out, "Distributed: trainer %s, %d worker%s, MPI ranks needed: %d\n",
            spec_trainer_name(spec->distributed.trainer), spec->distributed.workers,
            spec->distributed.workers == 1 ? "" : "s", spec_ranks_needed(spec));
}

static json_t *pair_json(const int v[2])
{
    return v[0] == v[1] ? json_integer(v[0]) : json_pack("[i,i]", v[0], v[1]);
}

/* The model input as written: [F], [C, H, W], {"sequence": [F]} or
 * {"tokens": V} (the steps are data.max_length). */
static json_t *input_json(const job_spec *spec)
{
    const spec_shape *s = &spec->input;
    if (s->rank != 2) {
        json_t *a = json_array();
        for (int i = 0; a && i < s->rank; i++)
            json_array_append_new(a, json_integer(s->dim[i]));
        return a;
    }
    if (spec->input_tokens > 0)
        return json_pack("{s:i}", "tokens", spec->input_tokens);
    return json_pack("{s:[i]}", "sequence", s->dim[1]);
}

/* lstm, gru and bidirectional's fields, so the resolved spec parses back
 * to the same layer. */
static void rnn_layer_json(const spec_layer *l, json_t *o)
{
    static const char *const merge_names[] = {"concat", "sum", "ave", "mul"};
    spec_layer_type cell = l->type == LAYER_BIDIRECTIONAL ? l->rnn : l->type;
    json_t *r = l->type == LAYER_BIDIRECTIONAL
                    ? json_pack("{s:s}", "type", spec_layer_type_name(cell))
                    : o;
    if (!r)
        return;
    json_object_set_new(r, "units", json_integer(l->units));
    json_object_set_new(r, "return_sequences", json_boolean(l->return_sequences));
    if (cell == LAYER_GRU)
        json_object_set_new(r, "reset_after", json_boolean(l->reset_after));
    if (l->type != LAYER_BIDIRECTIONAL) {
        json_object_set_new(o, "go_backwards", json_boolean(l->go_backwards));
        return;
    }
    json_object_set_new(o, "layer", r);
    json_object_set_new(o, "merge_mode", json_string(merge_names[l->merge_mode]));
}

static json_t *layer_json(const spec_layer *l, int index)
{
    json_t *o = json_pack("{s:s}", "type", spec_layer_type_name(l->type));
    if (!o)
        return NULL;
    if (l->n_inputs != 1 || l->inputs[0] != index - 1) {
        json_t *in = json_array();
        for (int k = 0; in && k < l->n_inputs; k++)
            json_array_append_new(in, json_integer(l->inputs[k]));
        json_object_set_new(o, "inputs", in);
    }
    switch (l->type) {
    case LAYER_DENSE:
        json_object_set_new(o, "units", json_integer(l->units));
        if (l->tied)
            json_object_set_new(o, "tie_embedding", json_integer(l->tie_embedding));
        break;
    case LAYER_CONV2D:
        json_object_set_new(o, "filters", json_integer(l->filters));
        json_object_set_new(o, "kernel", pair_json(l->kernel));
        json_object_set_new(o, "stride", pair_json(l->stride));
        json_object_set_new(o, "dilation", pair_json(l->dilation));
        if (l->groups > 1)
            json_object_set_new(o, "groups", json_integer(l->groups));
        json_object_set_new(o, "padding", json_string(spec_padding_names[l->padding]));
        break;
    case LAYER_MAXPOOL2D:
    case LAYER_AVGPOOL2D:
        json_object_set_new(o, "pool", pair_json(l->kernel));
        json_object_set_new(o, "stride", pair_json(l->stride));
        json_object_set_new(o, "padding", json_string(spec_padding_names[l->padding]));
        break;
    case LAYER_EMBEDDING:
        json_object_set_new(o, "output_dim", json_integer(l->output_dim));
        json_object_set_new(o, "input_dim", json_integer(l->input_dim));
        json_object_set_new(o, "mask_zero", json_boolean(l->mask_zero));
        break;
    case LAYER_MAXPOOL1D:
    case LAYER_AVGPOOL1D:
        json_object_set_new(o, "pool_size", json_integer(l->kernel[0]));
        json_object_set_new(o, "strides", json_integer(l->stride[0]));
        json_object_set_new(o, "padding", json_string(spec_padding_names[l->padding]));
        break;
    case LAYER_CONV1D:
        json_object_set_new(o, "filters", json_integer(l->filters));
        json_object_set_new(o, "kernel_size", json_integer(l->kernel[0]));
        json_object_set_new(o, "strides", json_integer(l->stride[0]));
        json_object_set_new(o, "dilation_rate", json_integer(l->dilation[0]));
        json_object_set_new(o, "padding", json_string(spec_padding_names[l->padding]));
        break;
    case LAYER_DROPOUT:
        json_object_set_new(o, "rate", json_real(l->rate));
        break;
    case LAYER_BATCHNORM:
        json_object_set_new(o, "momentum", json_real(l->momentum));
        json_object_set_new(o, "epsilon", json_real(l->epsilon));
        break;
    case LAYER_LSTM:
    case LAYER_GRU:
    case LAYER_BIDIRECTIONAL:
        rnn_layer_json(l, o);
        break;
    case LAYER_LAYER_NORM:
        json_object_set_new(o, "epsilon", json_real(l->epsilon));
        break;
    case LAYER_POSITIONAL_EMBEDDING:
        json_object_set_new(o, "max_length", json_integer(l->max_length));
        break;
    case LAYER_MULTI_HEAD_ATTENTION:
        json_object_set_new(o, "heads", json_integer(l->heads));
        json_object_set_new(o, "key_dim", json_integer(l->key_dim));
        json_object_set_new(o, "causal", json_boolean(l->causal));
        json_object_set_new(o, "dropout", json_real(l->rate));
        json_object_set_new(o, "use_bias", json_boolean(l->use_bias));
        break;
    default:
        break;
    }
    if (l->type == LAYER_DENSE || l->type == LAYER_CONV2D || l->type == LAYER_CONV1D) {
        json_object_set_new(o, "activation", json_string(spec_activation_name(l->activation)));
        json_object_set_new(o, "use_bias", json_boolean(l->use_bias));
    }
    return o;
}

static json_t *schedule_json(const spec_schedule *s)
{
    json_t *o = json_pack("{s:s}", "name", spec_schedule_name(s->kind));
    if (!o)
        return NULL;
    switch (s->kind) {
    case SCHED_WARM_UP:
        json_object_set_new(o, "warmup_epochs", json_integer(s->warmup_epochs));
        json_object_set_new(o, "init_lr", json_real(s->init_lr));
        break;
    case SCHED_EARLY_STOPPING:
        json_object_set_new(o, "monitor", json_string(s->monitor));
        json_object_set_new(o, "patience", json_integer(s->patience));
        json_object_set_new(o, "min_delta", json_real(s->min_delta));
        break;
    case SCHED_REDUCE_LR_ON_PLATEAU:
        json_object_set_new(o, "monitor", json_string(s->monitor));
        json_object_set_new(o, "factor", json_real(s->factor));
        json_object_set_new(o, "patience", json_integer(s->patience));
        json_object_set_new(o, "min_lr", json_real(s->min_lr));
        break;
    case SCHED_REDUCE_LR_EVERY_NEPOCHS:
        json_object_set_new(o, "factor", json_real(s->factor));
        json_object_set_new(o, "nepochs", json_integer(s->nepochs));
        json_object_set_new(o, "min_lr", json_real(s->min_lr));
        break;
    case SCHED_MODEL_CHECKPOINT:
        json_object_set_new(o, "every_epochs", json_integer(s->every_epochs));
        if (s->monitor[0])
            json_object_set_new(o, "monitor", json_string(s->monitor));
        break;
    case SCHED_COSINE:
        json_object_set_new(o, "warmup_steps", json_integer(s->warmup_steps));
        if (s->decay_steps > 0)
            json_object_set_new(o, "decay_steps", json_integer(s->decay_steps));
        json_object_set_new(o, "min_lr", json_real(s->min_lr));
        break;
    }
    return o;
}

static json_t *optimizer_json(const spec_optimizer *o)
{
    json_t *j = json_pack("{s:s,s:f,s:f,s:f}", "name", spec_optimizer_name_str(o->name),
                          "learning_rate", o->learning_rate, "decay", o->decay,
                          "weight_decay", o->weight_decay);
    if (!j)
        return NULL;
    if (o->name == OPT_SGD) {
        json_object_set_new(j, "momentum", json_real(o->momentum));
        json_object_set_new(j, "nesterov", json_boolean(o->nesterov));
    } else if (o->name == OPT_RMSPROP) {
        json_object_set_new(j, "rho", json_real(o->rho));
        json_object_set_new(j, "epsilon", json_real(o->epsilon));
    } else {
        json_object_set_new(j, "beta1", json_real(o->beta1));
        json_object_set_new(j, "beta2", json_real(o->beta2));
        json_object_set_new(j, "epsilon", json_real(o->epsilon));
    }
    if (o->name == OPT_ADAMW)
        json_object_set_new(j, "decay_all", json_boolean(o->decay_all));
    return j;
}

static void set_name(json_t *o, const char *key, const char *value)
{
    if (value)
        json_object_set_new(o, key, json_string(value));
}

static json_t *data_json(const spec_data *d)
{
    json_t *header = d->header == SPEC_HEADER_AUTO ? json_string("auto")
                                                   : json_boolean(d->header == SPEC_HEADER_YES);
    json_t *o = json_pack("{s:s,s:f,s:s,s:b,s:I,s:I,s:i,s:i,s:o}", "format",
                          spec_data_format_name(d->format), "validation_split",
                          d->validation_split, "scaling", spec_scaling_names[d->scaling],
                          "shuffle", d->shuffle, "train_samples", (json_int_t)d->train_samples,
                          "test_samples", (json_int_t)d->test_samples, "num_classes",
                          d->num_classes, "label_column", d->label_column, "header", header);
    if (!o)
        return NULL;
    set_name(o, "train", d->train);
    set_name(o, "test", d->test);
    set_name(o, "validation", d->validation);
    if (d->format == DATA_CTF) {
        json_object_set_new(o, "features", json_string(d->ctf_features));
        json_object_set_new(o, "labels", json_string(d->ctf_labels));
    }
    if (d->format == DATA_TEXT) {
        json_object_set_new(o, "tokenizer",
                            json_string(d->tokenizer == TOKENIZER_CHAR ? "char" : "byte"));
        json_object_set_new(o, "block_size", json_integer(d->block_size));
    }
    if (d->format == DATA_SYNTHETIC) {
        json_object_set_new(o, "synthetic_train", json_integer(d->synthetic_train));
        json_object_set_new(o, "synthetic_test", json_integer(d->synthetic_test));
    }
    const spec_augment *a = &d->augment;
    if (a->flip_prob > 0 || a->crop_size > 0) {
        json_t *aug = json_object();
        if (aug && a->flip_prob > 0)
            json_object_set_new(aug, "flip", json_pack("{s:f}", "prob", a->flip_prob));
        if (aug && a->crop_size > 0)
            json_object_set_new(aug, "crop", json_pack("{s:i,s:f}", "size", a->crop_size,
                                                       "prob", a->crop_prob));
        json_object_set_new(o, "augment", aug);
    }
    return o;
}

static json_t *training_json(const spec_training *t)
{
    json_t *metrics = json_array(), *scheds = json_array();
    for (int i = 0; metrics && i < t->n_metrics; i++)
        json_array_append_new(metrics, json_string(spec_metric_name(t->metrics[i])));
    for (int i = 0; scheds && i < t->n_schedules; i++)
        json_array_append_new(scheds, schedule_json(&t->schedules[i]));
    json_t *o = json_pack("{s:i,s:i,s:I,s:s,s:o,s:o,s:o,s:I,s:i}", "epochs", t->epochs,
                          "batch_size", t->batch_size, "steps_per_epoch",
                          (json_int_t)t->steps_per_epoch, "loss", spec_loss_name(t->loss),
                          "metrics", metrics, "optimizer", optimizer_json(&t->optimizer),
                          "lr_schedulers", scheds, "seed", (json_int_t)t->seed,
                          "checkpoint_keep", t->checkpoint_keep);
    /* PyDTNN's options only when set (global_batch_size is in batch_size). */
    if (o && t->evaluate)
        json_object_set_new(o, "evaluate", json_true());
    if (o && t->profile)
        json_object_set_new(o, "profile", json_true());
    if (o && t->nondeterministic)
        json_object_set_new(o, "deterministic", json_false());
    if (o && t->precision != PRECISION_FP32)
        json_object_set_new(o, "precision", json_string(spec_precision_name(t->precision)));
    if (o && t->allow_emulation)
        json_object_set_new(o, "allow_emulation", json_true());
    if (o && t->warm_up_batches > 0)
        json_object_set_new(o, "warm_up_batches", json_integer(t->warm_up_batches));
    if (o && t->clip_norm > 0)
        json_object_set_new(o, "clip_norm", json_real(t->clip_norm));
    if (o && t->grad_accum_steps > 1)
        json_object_set_new(o, "grad_accum_steps", json_integer(t->grad_accum_steps));
    if (o && t->stop_metric[0])
        json_object_set_new(o, "stop_at_loss",
                            json_pack("{s:s,s:f}", "metric", t->stop_metric, "threshold",
                                      t->stop_threshold));
    if (o && (t->init_from_job || t->init_from_file)) {
        json_t *init = json_object();
        if (t->init_from_job) {
            json_object_set_new(init, "job", json_string(t->init_from_job));
            if (t->init_from_file)
                json_object_set_new(init, "path", json_string(t->init_from_file));
            if (t->init_optimizer_file)
                json_object_set_new(init, "optimizer", json_string(t->init_optimizer_file));
        } else {
            json_object_set_new(init, "dataset", json_string(t->init_from_file));
        }
        json_object_set_new(o, "init_from", init);
    }
    return o;
}

/* Only the knobs the trainer uses, so the output parses again (a knob
 * given to a trainer that ignores it is refused). */
static json_t *distributed_json(const spec_distributed *d)
{
    json_t *o = json_pack("{s:s,s:i}", "trainer", spec_trainer_name(d->trainer), "workers",
                          d->workers);
    if (!o)
        return NULL;
    const struct {
        const char *key;
        json_t *value;
    } knobs[] = {
        {"communication_window", json_integer(d->communication_window)},
        {"sync_every_epochs", json_integer(d->sync_every_epochs)},
        {"learning_rate_scaling", json_boolean(d->learning_rate_scaling)},
        {"learning_rate", json_real(d->learning_rate)},
        {"rho", json_real(d->rho)},
        {"momentum", json_real(d->momentum)},
        {"bucket_mb", json_real(d->bucket_mb)},
    };
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        if (spec_distributed_uses(d->trainer, knobs[i].key))
            json_object_set_new(o, knobs[i].key, knobs[i].value);
        else
            json_decref(knobs[i].value);
    }
    /* Only when on: resolved specs written before the field stay the same. */
    if (d->compression == SPEC_COMPRESSION_BF16)
        json_object_set_new(o, "compression", json_string("bf16"));
    return o;
}

json_t *spec_to_json(const job_spec *spec)
{
    json_t *layers = json_array();
    for (int i = 0; layers && i < spec->n_layers; i++)
        json_array_append_new(layers, layer_json(&spec->layers[i], i));
    const spec_resources *r = &spec->resources;
    json_t *o = json_pack("{s:s,s:{s:o,s:o},s:o,s:o,s:o,s:{s:i,s:i,s:I,s:i}}", "name", spec->name,
                     "model", "input", input_json(spec), "layers", layers, "data",
                     data_json(&spec->data), "training", training_json(&spec->training),
                     "distributed", distributed_json(&spec->distributed), "resources", "gpus",
                     r->gpus, "threads_per_worker", r->threads_per_worker, "time_limit_s",
                     (json_int_t)r->time_limit_s, "priority", r->priority);
    if (o && spec->task == TASK_PREDICT)
        json_object_set_new(o, "task", json_string("predict"));
    if (o && spec->model_file)
        json_object_set_new(json_object_get(o, "model"), "imported",
                            json_string(spec->model_file));
    if (o && spec->input.rank == 2) {
        json_t *data = json_object_get(o, "data");
        json_object_set_new(data, "max_length", json_integer(spec->data.max_length));
        json_object_set_new(data, "bucket_by_length", json_boolean(spec->data.bucket_by_length));
        json_object_set_new(data, "per_step_labels", json_boolean(spec->data.per_step_labels));
    }
    return o;
}
