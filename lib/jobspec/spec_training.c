/* spec_training.c — the spec's training section (spec_internal.h): the
 * optimizer and its learning-rate schedule, losses, metrics, stopping,
 * checkpoints, init_from, and what depends on the trainer
 * (global_batch_size). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec/spec_internal.h"

/* Keras's default learning rate per optimizer. */
int spec_optimizer_slots(const spec_optimizer *o)
{
    switch (o->name) {
    case OPT_SGD:
        return o->momentum != 0.0 ? 1 : 0;
    case OPT_RMSPROP:
        return 1;
    case OPT_ADAM:
    case OPT_NADAM:
    case OPT_ADAMW:
        return 2;
    }
    return -1;
}

static double default_lr(spec_optimizer_name name)
{
    return name == OPT_SGD ? 0.01 : 0.001;
}

static bool parse_optimizer(const json_t *o, spec_optimizer *opt, spec_error *err)
{
    static const char *const sgd_keys[] = {"name", "learning_rate", "decay", "weight_decay",
                                           "momentum", "nesterov", NULL};
    static const char *const rms_keys[] = {"name", "learning_rate", "decay", "weight_decay",
                                           "rho", "epsilon", NULL};
    static const char *const adam_keys[] = {"name", "learning_rate", "decay", "weight_decay",
                                            "beta1", "beta2", "epsilon", NULL};
    static const char *const adamw_keys[] = {"name", "learning_rate", "decay", "weight_decay",
                                             "beta1", "beta2", "epsilon", "decay_all", NULL};
    const char *path = "training.optimizer";
    int name = OPT_ADAM;
    json_t *wrapped = NULL;
    if (o && json_is_string(o)) {
        wrapped = json_pack("{s:O}", "name", (json_t *)o);
        if (!wrapped)
            return spec_fail(err, path, "out of memory");
        o = wrapped;
    }
    bool ok = false;
    if (o && !json_is_object(o)) {
        spec_fail(err, path, "expected an optimizer name or an object, got %s",
                  spec_json_type_name(o));
        goto out;
    }
    if (o && !spec_get_enum(o, path, "name", spec_optimizer_names, 5, "optimizer", &name, err))
        goto out;
    opt->name = (spec_optimizer_name)name;
    opt->learning_rate = default_lr(opt->name);
    opt->rho = 0.9;
    opt->beta1 = 0.9;
    opt->beta2 = 0.999;
    opt->epsilon = 1e-7;
    if (opt->name == OPT_ADAMW) {
        /* torch.optim.AdamW's defaults. */
        opt->epsilon = 1e-8;
        opt->weight_decay = 0.01;
    }
    if (!o) {
        ok = true;
        goto out;
    }
    const char *const *keys = opt->name == OPT_SGD       ? sgd_keys
                              : opt->name == OPT_RMSPROP ? rms_keys
                              : opt->name == OPT_ADAMW   ? adamw_keys
                                                         : adam_keys;
    if (!spec_check_keys(o, path, keys, err)) {
        snprintf(err->message + strlen(err->message),
                 sizeof err->message - strlen(err->message), " (for %s)",
                 spec_optimizer_names[opt->name]);
        goto out;
    }
    ok = spec_get_double(o, path, "learning_rate", 0, 10, true, false, &opt->learning_rate,
                         err) &&
         spec_get_double(o, path, "decay", 0, 1e6, false, false, &opt->decay, err) &&
         spec_get_double(o, path, "weight_decay", 0, 1, false, false, &opt->weight_decay,
                         err) &&
         spec_get_double(o, path, "momentum", 0, 1, false, true, &opt->momentum, err) &&
         spec_get_bool(o, path, "nesterov", &opt->nesterov, err) &&
         spec_get_double(o, path, "rho", 0, 1, true, true, &opt->rho, err) &&
         spec_get_double(o, path, "beta1", 0, 1, false, true, &opt->beta1, err) &&
         spec_get_double(o, path, "beta2", 0, 1, false, true, &opt->beta2, err) &&
         spec_get_double(o, path, "epsilon", 0, 1, true, false, &opt->epsilon, err) &&
         spec_get_bool(o, path, "decay_all", &opt->decay_all, err);
    if (ok && opt->nesterov && opt->momentum == 0)
        ok = spec_fail(err, "training.optimizer.nesterov", "needs momentum > 0");
out:
    json_decref(wrapped);
    return ok;
}

/* The monitored value m names in this engine's history ("val_loss" for
 * PyDTNN's "val_categorical_cross_entropy"), written to out; false when m
 * names none. Every loss alias is "loss": the history has one loss. */
static bool monitor_resolve(const char *m, char *out, size_t len)
{
    static const char *const names[] = {"loss", "accuracy", "mse", "mae"};
    bool val = strncmp(m, "val_", 4) == 0;
    const char *base = spec_alias_resolve(val ? m + 4 : m, spec_metric_aliases);
    if (spec_alias_resolve(base, spec_loss_aliases) != base)
        base = "loss";
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strcmp(base, names[i]) == 0) {
            snprintf(out, len, "%s%s", val ? "val_" : "", names[i]);
            return true;
        }
    }
    return false;
}

/* PyDTNN's names for two schedule parameters, accepted as aliases: its
 * constructors' loss_or_metric and its command line's *_metric for
 * monitor; epoch_save_frequency and *_save_freq for every_epochs. */
static const char *const schedule_monitor_keys[] = {"monitor", "loss_or_metric", "metric",
                                                    NULL};
static const char *const schedule_every_keys[] = {"every_epochs", "epoch_save_frequency",
                                                  "save_freq", NULL};

/* The key s uses for the parameter named by names[0] or an alias (names[0]
 * when it uses none); false, naming the second, when it gives two. */
static bool schedule_key(const json_t *s, const char *path, const char *const *names,
                         const char **key, spec_error *err)
{
    const char *found = NULL;
    for (int i = 0; names[i]; i++) {
        if (!spec_field(s, names[i]))
            continue;
        if (found) {
            char p[160];
            spec_path_key(p, sizeof p, path, names[i]);
            return spec_fail(err, p, "the same parameter as \"%s\"; give only one", found);
        }
        found = names[i];
    }
    *key = found ? found : names[0];
    return true;
}

static bool parse_schedule(const json_t *s, const char *path, double lr, spec_schedule *out,
                           spec_error *err)
{
    static const char *const keys[][8] = {
        {"name", "warmup_epochs", "init_lr", NULL},
        {"name", "monitor", "loss_or_metric", "metric", "patience", "min_delta", NULL},
        {"name", "monitor", "loss_or_metric", "metric", "factor", "patience", "min_lr", NULL},
        {"name", "factor", "nepochs", "min_lr", NULL},
        {"name", "every_epochs", "epoch_save_frequency", "save_freq", "monitor",
         "loss_or_metric", "metric", NULL},
        {"name", "warmup_steps", "decay_steps", "min_lr", NULL},
    };
    if (!json_is_object(s))
        return spec_fail(err, path, "expected an object with a \"name\", got %s",
                         spec_json_type_name(s));
    int kind = -1;
    char p[160];
    spec_path_key(p, sizeof p, path, "name");
    if (!spec_field(s, "name"))
        return spec_fail(err, p, "missing; expected one of warm_up, early_stopping, "
                                 "reduce_lr_on_plateau, reduce_lr_every_nepochs, "
                                 "model_checkpoint, cosine");
    if (!spec_get_enum(s, path, "name", spec_schedule_names, 6, "schedule", &kind, err))
        return false;
    const char *monitor_key, *every_key;
    if (!spec_check_keys(s, path, keys[kind], err) ||
        !schedule_key(s, path, schedule_monitor_keys, &monitor_key, err) ||
        !schedule_key(s, path, schedule_every_keys, &every_key, err))
        return false;
    out->kind = (spec_schedule_kind)kind;
    out->warmup_epochs = 5;
    out->init_lr = lr / 10;
    snprintf(out->monitor, sizeof out->monitor, "val_loss");
    out->patience = kind == SCHED_EARLY_STOPPING ? 10 : 5;
    out->factor = 0.1;
    out->nepochs = 5;
    out->every_epochs = 1;
    long warm = out->warmup_epochs, patience = out->patience, nepochs = out->nepochs,
         every = out->every_epochs;
    const char *monitor = NULL;
    if (kind == SCHED_MODEL_CHECKPOINT)
        out->monitor[0] = '\0'; /* no monitor: save on schedule */
    if (!spec_get_int(s, path, "warmup_epochs", 1, 100000, &warm, err) ||
        !spec_get_double(s, path, "init_lr", 0, 10, true, false, &out->init_lr, err) ||
        !spec_get_string(s, path, monitor_key, &monitor, err) ||
        !spec_get_int(s, path, "patience", 0, 100000, &patience, err) ||
        !spec_get_double(s, path, "min_delta", 0, 1e9, false, false, &out->min_delta, err) ||
        !spec_get_double(s, path, "factor", 0, 1, true, true, &out->factor, err) ||
        !spec_get_double(s, path, "min_lr", 0, 10, false, false, &out->min_lr, err) ||
        !spec_get_int(s, path, "nepochs", 1, 100000, &nepochs, err) ||
        !spec_get_int(s, path, every_key, 1, 100000, &every, err) ||
        !spec_get_int(s, path, "warmup_steps", 0, 1L << 40, &out->warmup_steps, err) ||
        !spec_get_int(s, path, "decay_steps", 1, 1L << 40, &out->decay_steps, err))
        return false;
    if (kind == SCHED_COSINE && out->min_lr > lr) {
        spec_path_key(p, sizeof p, path, "min_lr");
        return spec_fail(err, p, "%g is above training.optimizer.learning_rate %g", out->min_lr,
                         lr);
    }
    if (kind == SCHED_COSINE && out->decay_steps > 0 && out->decay_steps <= out->warmup_steps) {
        spec_path_key(p, sizeof p, path, "decay_steps");
        return spec_fail(err, p, "%ld must be above warmup_steps (%ld)", out->decay_steps,
                         out->warmup_steps);
    }
    if (monitor) {
        spec_path_key(p, sizeof p, path, monitor_key);
        if (!monitor_resolve(monitor, out->monitor, sizeof out->monitor))
            return spec_fail(err, p, "unknown metric \"%.40s\"; expected loss, accuracy, mse, "
                                     "mae (or a PyDTNN name for one, such as "
                                     "categorical_cross_entropy or categorical_accuracy), "
                                     "optionally prefixed with val_", monitor);
    }
    out->warmup_epochs = (int)warm;
    out->patience = (int)patience;
    out->nepochs = (int)nepochs;
    out->every_epochs = (int)every;
    return true;
}

/* training.stop_at_loss: {"metric": ..., "threshold": ...}, PyDTNN's
 * --stop_at_loss_metric and --stop_at_loss_threshold. */
static bool parse_stop_at_loss(const json_t *s, spec_training *t, spec_error *err)
{
    static const char *const keys[] = {"metric", "threshold", NULL};
    static const char *const path = "training.stop_at_loss";
    if (!s)
        return true;
    if (!json_is_object(s))
        return spec_fail(err, path, "expected {\"metric\": \"val_accuracy\", \"threshold\": "
                                    "0.9}, got %s", spec_json_type_name(s));
    const char *metric = NULL;
    if (!spec_check_keys(s, path, keys, err) ||
        !spec_get_string(s, path, "metric", &metric, err) ||
        !spec_get_double(s, path, "threshold", -1e30, 1e30, false, false, &t->stop_threshold,
                         err))
        return false;
    if (!metric || !spec_field(s, "threshold"))
        return spec_fail(err, path, "needs both \"metric\" and \"threshold\"");
    if (!monitor_resolve(metric, t->stop_metric, sizeof t->stop_metric))
        return spec_fail(err, "training.stop_at_loss.metric",
                         "unknown metric \"%.40s\"; expected loss, accuracy, mse, mae (or a "
                         "PyDTNN name for one), optionally prefixed with val_", metric);
    return true;
}

static bool parse_metrics(const json_t *m, spec_training *t, spec_error *err)
{
    t->n_metrics = 1;
    t->metrics[0] = METRIC_ACCURACY;
    if (!m)
        return true;
    if (!json_is_array(m))
        return spec_fail(err, "training.metrics", "expected an array of metric names, got %s",
                         spec_json_type_name(m));
    if (json_array_size(m) > SPEC_MAX_METRICS)
        return spec_fail(err, "training.metrics", "at most %d metrics", SPEC_MAX_METRICS);
    t->n_metrics = 0;
    for (size_t i = 0; i < json_array_size(m); i++) {
        char p[160];
        spec_path_index(p, sizeof p, "training.metrics", i);
        const json_t *v = json_array_get(m, i);
        if (!json_is_string(v))
            return spec_fail(err, p, "expected a metric name, got %s", spec_json_type_name(v));
        int k;
        const char *name = spec_alias_resolve(json_string_value(v), spec_metric_aliases);
        if (strcmp(name, "categorical_hinge") == 0)
            return spec_fail(err, p, "categorical_hinge is a loss here, not a metric: set "
                                     "training.loss to it (the history's loss is then "
                                     "PyDTNN's categorical_hinge), or use accuracy, mse or "
                                     "mae");
        if (!spec_match_enum(name, p, spec_metric_names, 3, "metric", &k, err))
            return false;
        for (int j = 0; j < t->n_metrics; j++)
            if (t->metrics[j] == (spec_metric)k)
                return spec_fail(err, p, "metric \"%s\" listed twice", spec_metric_names[k]);
        t->metrics[t->n_metrics++] = (spec_metric)k;
    }
    return true;
}

/* training.loss by our name or PyDTNN's. */
static bool parse_loss(const json_t *obj, int *loss, spec_error *err)
{
    const char *s = NULL;
    if (!spec_get_string(obj, "training", "loss", &s, err))
        return false;
    return !s || spec_match_enum(spec_alias_resolve(s, spec_loss_aliases), "training.loss",
                                 spec_loss_names, 4, "loss", loss, err);
}

/* training.init_from: {"job": ID [, "path": "@PATH" [, "optimizer":
 * "@PATH"]]} or {"dataset": "@NAME" | "@PATH"}. "path" is what punchcardd
 * writes when it resolves a job, "optimizer" what a PBT exploit adds (the
 * donor's checkpoint); a user's spec has no reason to give either. */
static bool parse_init_from(const json_t *o, spec_training *tr, spec_error *err)
{
    static const char *const keys[] = {"job", "dataset", "path", "optimizer", NULL};
    const char *p = "training.init_from";
    if (!o)
        return true;
    if (!json_is_object(o))
        return spec_fail(err, p, "expected {\"job\": \"ID\"} or {\"dataset\": \"@NAME\"}, "
                                 "got %s", spec_json_type_name(o));
    const char *job = NULL, *dataset = NULL, *path = NULL, *optim = NULL;
    if (!spec_check_keys(o, p, keys, err) || !spec_get_string(o, p, "job", &job, err) ||
        !spec_get_string(o, p, "dataset", &dataset, err) ||
        !spec_get_string(o, p, "path", &path, err) ||
        !spec_get_string(o, p, "optimizer", &optim, err))
        return false;
    if ((job != NULL) == (dataset != NULL))
        return spec_fail(err, p, "give exactly one of \"job\" (a finished job's id) and "
                                 "\"dataset\" (an uploaded weights file, \"@NAME\")");
    if (job && (strlen(job) != 12 || strspn(job, "0123456789abcdef") != 12))
        return spec_fail(err, "training.init_from.job", "\"%.40s\" is not a job id "
                                                        "(12 lowercase hex digits)", job);
    const char *why = NULL;
    spec_ref_kind k = dataset ? spec_dataset_ref_kind(dataset, &why) : SPEC_REF_INVALID;
    if (dataset && k != SPEC_REF_UPLOAD && k != SPEC_REF_UPLOAD_PATH)
        return spec_fail(err, "training.init_from.dataset", "\"%.80s\": name an uploaded "
                         "weights file as \"@NAME\"%s%s", dataset, why ? "; " : "",
                         why ? why : "");
    if (path && (!job || spec_dataset_ref_kind(path, NULL) != SPEC_REF_UPLOAD_PATH))
        return spec_fail(err, "training.init_from.path", "is written by punchcardd for a "
                                                         "job; do not give it");
    if (optim && (!path || spec_dataset_ref_kind(optim, NULL) != SPEC_REF_UPLOAD_PATH))
        return spec_fail(err, "training.init_from.optimizer", "is written by punchcardd for "
                                                              "a sweep's exploit; do not give it");
    tr->init_from_job = job ? strdup(job) : NULL;
    tr->init_from_file = dataset ? strdup(dataset) : path ? strdup(path) : NULL;
    tr->init_optimizer_file = optim ? strdup(optim) : NULL;
    if ((job && !tr->init_from_job) || ((dataset || path) && !tr->init_from_file) ||
        (optim && !tr->init_optimizer_file))
        return spec_fail(err, p, "out of memory");
    return true;
}

/* A run has one step-driven rate: at most one cosine entry, and not
 * beside warm_up_batches (both would own the first steps' rate). */
static bool parse_training_cosine_once(const spec_training *tr, spec_error *err)
{
    int seen = -1;
    for (int i = 0; i < tr->n_schedules; i++) {
        if (tr->schedules[i].kind != SCHED_COSINE)
            continue;
        char p[160];
        spec_path_index(p, sizeof p, "training.lr_schedulers", (size_t)i);
        if (seen >= 0)
            return spec_fail(err, p, "a second cosine schedule; give one");
        if (tr->warm_up_batches > 0)
            return spec_fail(err, p, "give either cosine's warmup_steps or "
                                     "training.warm_up_batches, not both");
        seen = i;
    }
    return true;
}

/* training.precision and allow_emulation. bf16 without the instructions
 * runs oneDNN's emulation (several times slower than fp32), so it is
 * refused unless asked for. */
static bool parse_precision(const json_t *obj, spec_training *tr, spec_error *err)
{
    static const char *const names[] = {"fp32", "bf16"};
    int p = PRECISION_FP32;
    if (!spec_get_enum(obj, "training", "precision", names, 2, "precision", &p, err) ||
        !spec_get_bool(obj, "training", "allow_emulation", &tr->allow_emulation, err))
        return false;
    tr->precision = (spec_precision)p;
    if (tr->precision == PRECISION_BF16 && !tr->allow_emulation && !spec_cpu_has_bf16())
        return spec_fail(err, "training.precision",
                         "bf16 needs a CPU with AVX512_BF16 or AMX; this one has neither; "
                         "set training.allow_emulation: true to run it slowly");
    return true;
}

bool spec_parse_training(const json_t *t, job_spec *spec, spec_error *err)
{
    static const char *const keys[] = {"epochs", "batch_size", "steps_per_epoch", "loss",
                                       "metrics", "optimizer", "lr_schedulers", "seed",
                                       "init_from", "checkpoint_keep", "global_batch_size",
                                       "evaluate", "stop_at_loss", "warm_up_batches", "profile",
                                       "deterministic", "clip_norm", "grad_accum_steps",
                                       "precision", "allow_emulation", NULL};
    spec_training *tr = &spec->training;
    long epochs = 5, batch = 64, seed = 1, keep = 1, accum = 1;
    bool deterministic = true;
    int loss = LOSS_CATEGORICAL_CROSSENTROPY;
    if (t && !json_is_object(t))
        return spec_fail(err, "training", "expected an object, got %s", spec_json_type_name(t));
    json_t *empty = t ? NULL : json_object();
    if (!t && !empty)
        return spec_fail(err, "training", "out of memory");
    const json_t *obj = t ? t : empty;
    bool ok = spec_check_keys(obj, "training", keys, err) &&
              spec_get_int(obj, "training", "epochs", 1, 100000, &epochs, err) &&
              spec_get_int(obj, "training", "batch_size", 1, 1 << 20, &batch, err) &&
              spec_get_int(obj, "training", "steps_per_epoch", 0, 1L << 40,
                           &tr->steps_per_epoch, err) &&
              parse_loss(obj, &loss, err) &&
              spec_get_int(obj, "training", "seed", 0, 0x7fffffffffffffffL, &seed, err) &&
              spec_get_int(obj, "training", "checkpoint_keep", 0, 100000, &keep, err) &&
              spec_get_int(obj, "training", "global_batch_size", 1, 1L << 30,
                           &tr->global_batch_size, err) &&
              spec_get_bool(obj, "training", "evaluate", &tr->evaluate, err) &&
              spec_get_bool(obj, "training", "profile", &tr->profile, err) &&
              spec_get_bool(obj, "training", "deterministic", &deterministic, err) &&
              spec_get_int(obj, "training", "warm_up_batches", 0, 1L << 40,
                           &tr->warm_up_batches, err) &&
              spec_get_double(obj, "training", "clip_norm", 0, 1e9, false, false,
                              &tr->clip_norm, err) &&
              spec_get_int(obj, "training", "grad_accum_steps", 1, 65536, &accum, err) &&
              parse_precision(obj, tr, err) &&
              parse_stop_at_loss(spec_field(obj, "stop_at_loss"), tr, err) &&
              parse_metrics(spec_field(obj, "metrics"), tr, err) &&
              parse_optimizer(spec_field(obj, "optimizer"), &tr->optimizer, err) &&
              parse_init_from(spec_field(obj, "init_from"), tr, err);
    const json_t *scheds = ok ? spec_field(obj, "lr_schedulers") : NULL;
    if (ok && scheds && !json_is_array(scheds))
        ok = spec_fail(err, "training.lr_schedulers", "expected an array, got %s",
                       spec_json_type_name(scheds));
    if (ok && scheds && json_array_size(scheds) > SPEC_MAX_SCHEDULES)
        ok = spec_fail(err, "training.lr_schedulers", "at most %d entries", SPEC_MAX_SCHEDULES);
    for (size_t i = 0; ok && scheds && i < json_array_size(scheds); i++) {
        char p[160];
        spec_path_index(p, sizeof p, "training.lr_schedulers", i);
        ok = parse_schedule(json_array_get(scheds, i), p, tr->optimizer.learning_rate,
                            &tr->schedules[tr->n_schedules++], err);
    }
    ok = ok && parse_training_cosine_once(tr, err);
    json_decref(empty);
    tr->grad_accum_steps = (int)accum;
    tr->epochs = (int)epochs;
    tr->batch_size = (int)batch;
    tr->loss = (spec_loss)loss;
    tr->seed = (unsigned long)seed;
    tr->checkpoint_keep = (int)keep;
    tr->nondeterministic = !deterministic;
    return ok;
}


/* The training options that depend on the trainer: global_batch_size
 * (PyDTNN's: the batch of all workers together) becomes the per-worker
 * batch_size. evaluate, warm_up_batches and profile mean something to
 * every trainer (docs/distributed.md says what). */
bool spec_resolve_training(const json_t *t, job_spec *spec, spec_error *err)
{
    spec_training *tr = &spec->training;
    if (tr->global_batch_size > 0) {
        int w = spec->distributed.workers;
        if (spec_field(t, "batch_size"))
            return spec_fail(err, "training.global_batch_size",
                             "give either batch_size (per worker) or global_batch_size, not "
                             "both");
        if (tr->global_batch_size % w != 0)
            return spec_fail(err, "training.global_batch_size",
                             "%ld is not a multiple of the %d workers", tr->global_batch_size,
                             w);
        tr->batch_size = (int)(tr->global_batch_size / w);
    }
    return true;
}
