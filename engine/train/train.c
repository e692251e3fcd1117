/* train.c — the single-process trainer and evaluate-only mode (see
 * train.h): the epoch loop, validation and test evaluation, schedules,
 * progress and history. The pieces every trainer shares live beside it:
 * weights.c (the weights files), checkpoint.c, runlog.c, options.c. */
#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/tensorfile.h"
#include "train/checkpoint.h"
#include "train/train_optim.h"
#include "train/warmstart.h"
#include "train/weights.h"
#include "timeutil/timeutil.h"
#include "device/device.h"

static volatile sig_atomic_t train_stop_signal;

static void train_on_signal(int sig)
{
    train_stop_signal = sig;
}

/* SIGTERM (cancel, time limit) and SIGINT end the epoch loop after the
 * current step with a checkpoint, so --resume loses nothing. */
static void train_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = train_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* Everything one run holds. */
typedef struct train_run {
    const job_spec *spec;
    const train_options *opt;
    backend *be;
    model *m;
    train_optim optim;      /* host, or the device's on a GPU */
    dataset train, val, test;
    schedule_state sched;
    run_history hist;
    train_position pos;
    int64_t *perm;
    uint64_t spec_hash;
    char val_names[SPEC_MAX_METRICS + 1][40];
    char host[256];         /* history.json's rank_hosts */
    double last_step_line;  /* runlog_step_due's clock */
} train_run;

/* Epoch-level metric values from per-batch sums over `terms` loss terms
 * (samples, or real steps of a per-step model: model_loss_terms), in the
 * order of t->metrics. */
static void train_metric_values(const spec_training *t, const batch_metrics *sums,
                                long terms, int n_out, double *metric)
{
    for (int i = 0; i < t->n_metrics; i++)
        metric[i] = model_metric(sums, (double)terms, t->metrics[i], n_out);
}

static void train_add_sums(batch_metrics *acc, const batch_metrics *b)
{
    acc->correct += b->correct;
    acc->sq_err += b->sq_err;
    acc->abs_err += b->abs_err;
}

int train_evaluate(model *m, const dataset *d, eval_result *out, char *err, size_t errlen)
{
    batch_metrics sums = {0};
    double loss = 0.0;
    long terms = 0;
    for (long first = 0; first < d->n; first += m->max_batch) {
        int batch = (int)(d->n - first < m->max_batch ? d->n - first : m->max_batch);
        if (model_load_range(m, d, first, batch, err, errlen) != 0)
            return -1;
        model_forward(m, batch, false, 0);
        batch_metrics b;
        loss += model_loss(m, batch, &b);
        terms += model_loss_terms(m, batch);
        train_add_sums(&sums, &b);
    }
    memset(out, 0, sizeof *out);
    out->samples = d->n;
    out->loss = terms > 0 ? loss / (double)terms : 0.0;
    train_metric_values(&m->spec->training, &sums, terms, m->classes, out->metric);
    return 0;
}

/* dir/prefix.safetensors and .npz from the model's current parameters
 * and state. */
static int train_save_weights(model *m, const dataset *train, const char *dir,
                              const char *prefix, char *err, size_t errlen)
{
    float *hp = malloc((size_t)(m->n_params + 1) * sizeof *hp);
    float *hs = malloc((size_t)(m->n_state + 1) * sizeof *hs);
    if (!hp || !hs) {
        free(hp);
        free(hs);
        snprintf(err, errlen, "weights: out of memory");
        return -1;
    }
    model_get_params(m, hp);
    model_get_state(m, hs);
    char stem[4096], params[32];
    snprintf(params, sizeof params, "%ld", m->n_trainable);
    const char *keys[] = {"format", "job", "parameters"};
    const char *values[] = {"punchcard", m->spec->name ? m->spec->name : "job", params};
    weights_meta meta = {keys, values, 3};
    snprintf(stem, sizeof stem, "%s/%s", dir, prefix);
    int rc = weights_write(stem, m, hp, hs, train, &meta, true, err, errlen);
    free(hp);
    free(hs);
    return rc;
}

/* mkdir -p for the run directory. */
static int train_make_dir(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(err, errlen, "--out: path too long");
        return -1;
    }
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int train_threads(const job_spec *spec, const train_options *opt)
{
    if (opt->threads > 0)
        return opt->threads;
    return spec->resources.threads_per_worker > 0 ? spec->resources.threads_per_worker : 1;
}

/* vocab.json for a char tokenizer: token id i is the character of code
 * point code_points[i], so whoever feeds the trained model text maps it
 * the same way. Nothing for other data. */
static int train_write_vocab(const train_run *r, char *err, size_t errlen)
{
    uint32_t *chars;
    int n;
    if (dataset_text_vocab(&r->spec->data, &r->opt->roots, &chars, &n, err, errlen) != 0)
        return -1;
    if (!chars)
        return 0;
    json_t *cps = json_array();
    for (int i = 0; cps && i < n; i++)
        if (json_array_append_new(cps, json_integer(chars[i])) != 0) {
            json_decref(cps);
            cps = NULL;
        }
    free(chars);
    json_t *o = cps ? json_pack("{s:s,s:o}", "tokenizer", "char", "code_points", cps) : NULL;
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text) {
        snprintf(err, errlen, "vocab.json: out of memory");
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.json", r->opt->out_dir);
    int rc = atomic_write_file(path, text, strlen(text), err, errlen);
    free(text);
    return rc;
}

/* Backend, data, model, optimizer: everything but the run state. */
static int train_open(train_run *r, char *err, size_t errlen)
{
    const job_spec *spec = r->spec;
    /* The backend first: a GPU job without a GPU fails before touching
     * data or the run directory. */
    r->be = device_backend_create(spec, train_threads(spec, r->opt), r->opt->local_rank,
                                  err, errlen);
    if (!r->be)
        return -1;
    char ckpt_dir[4096];
    snprintf(ckpt_dir, sizeof ckpt_dir, "%s/checkpoints", r->opt->out_dir);
    if (train_make_dir(ckpt_dir, err, errlen) != 0)
        return -1;
    if (dataset_load_all(&spec->data, &spec->input, &r->opt->roots, spec->training.seed,
                         &r->train, &r->val, &r->test, err, errlen) != 0 ||
        train_write_vocab(r, err, errlen) != 0)
        return -1;
    r->m = model_create(spec, r->be, spec->training.batch_size, err, errlen);
    if (!r->m || model_init_params(r->m, spec->training.seed, err, errlen) != 0)
        return -1;
    if (spec->training.profile && model_profile_enable(r->m) != 0) {
        snprintf(err, errlen, "profile: out of memory");
        return -1;
    }
    if (train_optim_open(&r->optim, r->m, &spec->training, err, errlen) != 0)
        return -1;
    if (run_history_init(&r->hist, spec->training.epochs) != 0) {
        snprintf(err, errlen, "history: out of memory");
        return -1;
    }
    r->hist.has_val = r->val.n > 0;
    runlog_host_name(r->host, sizeof r->host);
    schedule_init(&r->sched, &spec->training);
    r->spec_hash = checkpoint_spec_hash(spec);
    return 0;
}

static void train_close(train_run *r)
{
    free(r->perm);
    run_history_free(&r->hist);
    train_optim_close(&r->optim);
    model_free(r->m);
    dataset_free(&r->train);
    dataset_free(&r->val);
    dataset_free(&r->test);
    if (r->be)
        r->be->destroy(r->be);
}

static long train_steps_per_epoch(const train_run *r)
{
    long b = r->spec->training.batch_size;
    long steps = (r->train.n + b - 1) / b;
    long limit = r->spec->training.steps_per_epoch;
    return limit > 0 && limit < steps ? limit : steps;
}

static long train_samples_per_epoch(const train_run *r)
{
    long b = r->spec->training.batch_size;
    long steps = train_steps_per_epoch(r);
    return steps * b < r->train.n ? steps * b : r->train.n;
}

/* history.json as it stands, with whether the backend has stayed
 * bit-reproducible (a GPU convolution may have had to give that up). */
static int train_write_history(train_run *r, char *err, size_t errlen)
{
    r->hist.not_reproducible = r->be->not_reproducible;
    return runlog_write_history(r->opt->out_dir, r->spec, &r->hist, r->host, err, errlen);
}

static int train_start_event(train_run *r, char *err, size_t errlen)
{
    runlog_start_line l = {.epochs = r->spec->training.epochs,
                           .steps = train_steps_per_epoch(r),
                           .samples = train_samples_per_epoch(r),
                           .ranks = 1,
                           .trainer = "single",
                           .epoch = (long)r->pos.epoch,
                           .resumed = r->pos.global_step > 0,
                           .parameters = r->m->n_trainable};
    return runlog_start(r->opt->out_dir, &l, err, errlen);
}

static void train_end_event_failed(const train_run *r, const char *reason)
{
    char ignored[256];
    runlog_failed(r->opt->out_dir, reason, ignored, sizeof ignored);
}

/* A "step" line, when runlog_step_due says one is. */
static int train_step_event(train_run *r, long steps, double elapsed, char *err,
                            size_t errlen)
{
    const spec_training *t = &r->spec->training;
    long terms = (long)r->pos.terms;
    double per_step = elapsed / (double)r->pos.step;
    runlog_step_line l = {.epoch = (long)r->pos.epoch,
                          .epochs = t->epochs,
                          .step = (long)r->pos.step,
                          .steps = steps,
                          .run.loss = r->pos.loss_sum / (terms > 0 ? terms : 1),
                          .samples_per_s = elapsed > 0 ? r->pos.samples / elapsed : 0.0,
                          .elapsed_s = elapsed,
                          .eta_s = per_step * (double)((steps - r->pos.step) +
                                                       (t->epochs - r->pos.epoch - 1) * steps)};
    train_metric_values(t, &r->pos.sums, terms, r->m->classes, l.run.metric);
    return runlog_step(r->opt->out_dir, t, &l, err, errlen);
}

/* One optimisation step on batch idx[0..batch). */
static int train_step(train_run *r, const int64_t *idx, int batch, float lr, bool last,
                      char *err, size_t errlen)
{
    model *m = r->m;
    model_profile *p = m->profile;
    double t[PROFILE_PHASES + 1];
    t[0] = p ? model_profile_now(m) : 0.0;
    if (model_load_train_batch(m, &r->train, idx, batch, (int)r->pos.epoch, err, errlen) != 0)
        return -1;
    t[1] = p ? model_profile_now(m) : 0.0;
    model_forward(m, batch, true, (uint64_t)r->pos.global_step);
    t[2] = p ? model_profile_now(m) : 0.0;
    batch_metrics b;
    double loss = model_loss(m, batch, &b);
    t[3] = p ? model_profile_now(m) : 0.0;
    train_optim_backward_step(&r->optim, m, batch, lr, last);
    if (p) {
        t[4] = model_profile_now(m);
        for (int k = 0; k < PROFILE_PHASES; k++)
            profile_stat_add(&p->phase[k], t[k + 1] - t[k]);
    }
    if (!isfinite(loss)) {
        snprintf(err, errlen, "training diverged: loss is %g at epoch %lld step %lld; lower "
                 "training.optimizer.learning_rate", loss, (long long)r->pos.epoch + 1,
                 (long long)r->pos.step + 1);
        return -1;
    }
    r->pos.loss_sum += loss;
    train_add_sums(&r->pos.sums, &b);
    r->pos.samples += batch;
    r->pos.terms += model_loss_terms(m, batch);
    r->pos.step++;
    r->pos.global_step++;
    return 0;
}

/* checkpoints/ckpt.bin of the run as it stands; a device optimizer's
 * state is brought to the host first, in optim.h's layout. */
static int train_checkpoint(train_run *r, char *err, size_t errlen)
{
    if (train_optim_pull(&r->optim, err, errlen) != 0)
        return -1;
    return checkpoint_save(r->opt->out_dir, r->spec_hash, &r->pos, &r->sched, &r->hist, r->m,
                           r->optim.host, err, errlen);
}

static int train_interrupted(train_run *r, char *err, size_t errlen)
{
    int sig = (int)train_stop_signal;
    if (train_checkpoint(r, err, errlen) != 0)
        return -1;
    snprintf(err, errlen, "interrupted by %s at epoch %lld step %lld; checkpoint saved, "
             "continue with --resume", sig == SIGINT ? "SIGINT" : "SIGTERM",
             (long long)r->pos.epoch + 1, (long long)r->pos.step);
    return -1;
}

/* training.warm_up_batches or the cosine schedule: the rate of the
 * optimizer step that micro-batch `step` of the epoch in progress belongs
 * to (grad_accum_steps micro-batches make one), from the epoch's rate lr. */
static float train_step_lr(const train_run *r, long step, double lr)
{
    const spec_training *tr = &r->spec->training;
    long steps = train_steps_per_epoch(r);
    uint64_t done = schedule_opt_steps((long)r->pos.epoch, step, steps, tr->grad_accum_steps);
    uint64_t run = schedule_opt_steps(tr->epochs, 0, steps, tr->grad_accum_steps);
    return schedule_step_lr(tr, done, run, (float)lr);
}

/* The epoch's order: shuffled from (seed, epoch), batches of similar
 * lengths under data.bucket_by_length; a function of the position alone,
 * so a resumed run finds its step in the same order. */
static int train_epoch_order(train_run *r, char *err, size_t errlen)
{
    long n = r->train.n;
    const spec_data *d = &r->spec->data;
    unsigned long seed = r->spec->training.seed;
    int epoch = (int)r->pos.epoch;
    if (!d->shuffle) {
        for (long i = 0; i < n; i++)
            r->perm[i] = i;
        return 0;
    }
    dataset_epoch_permutation(n, seed, epoch, r->perm);
    if (d->bucket_by_length && dataset_bucket_order(r->perm, 0, n, r->train.len,
                                                    r->spec->training.batch_size, seed,
                                                    epoch) != 0) {
        snprintf(err, errlen, "data.bucket_by_length: out of memory ordering %ld samples", n);
        return -1;
    }
    return 0;
}

/* The batches of the epoch in progress, from r->pos.step on. */
static int train_epoch_steps(train_run *r, float lr, char *err, size_t errlen)
{
    long n = r->train.n, b = r->spec->training.batch_size;
    long steps = train_steps_per_epoch(r);
    if (train_epoch_order(r, err, errlen) != 0)
        return -1;
    double start = timeutil_mono_s() - r->pos.elapsed_s;
    while (r->pos.step < steps) {
        long first = r->pos.step * b;
        int batch = (int)(n - first < b ? n - first : b);
        float step_lr = train_step_lr(r, r->pos.step, lr);
        bool last = r->pos.step + 1 == steps;
        if (train_step(r, r->perm + first, batch, step_lr, last, err, errlen) != 0)
            return -1;
        double now = timeutil_mono_s();
        r->pos.elapsed_s = now - start;
        if (r->opt->on_step)
            r->opt->on_step(r->opt->on_step_ctx, (long)r->pos.epoch, (long)r->pos.step);
        /* Mid-group, the accumulated gradient is in no checkpoint: finish
         * the group (at most grad_accum_steps - 1 more micro-batches; the
         * epoch's last step closes one too) so a resume loses nothing. */
        if (train_stop_signal && !train_optim_group_open(&r->optim))
            return train_interrupted(r, err, errlen);
        if (r->pos.step < steps && runlog_step_due(&r->last_step_line)) {
            if (train_step_event(r, steps, r->pos.elapsed_s, err, errlen) != 0)
                return -1;
        }
    }
    return 0;
}

/* Names for the schedule's lookup: "loss", "accuracy", "val_loss", ... */
static void train_epoch_metrics(train_run *r, const epoch_record *rec, epoch_metrics *em)
{
    const spec_training *t = &r->spec->training;
    memset(em, 0, sizeof *em);
    em->names[em->n] = "loss";
    em->values[em->n++] = rec->loss;
    for (int i = 0; i < t->n_metrics; i++) {
        em->names[em->n] = spec_metric_name(t->metrics[i]);
        em->values[em->n++] = rec->metric[i];
    }
    if (!r->hist.has_val)
        return;
    em->names[em->n] = "val_loss";
    em->values[em->n++] = rec->val_loss;
    for (int i = 0; i < t->n_metrics; i++) {
        snprintf(r->val_names[i], sizeof r->val_names[i], "val_%s",
                 spec_metric_name(t->metrics[i]));
        em->names[em->n] = r->val_names[i];
        em->values[em->n++] = rec->val_metric[i];
    }
}

static void train_print_epoch(const train_run *r, const epoch_record *rec)
{
    const spec_training *t = &r->spec->training;
    fprintf(stderr, "epoch %lld/%d - %.1fs - %.0f samples/s - loss %.4f",
            (long long)r->pos.epoch + 1, t->epochs, rec->time_s, rec->samples_per_s, rec->loss);
    for (int i = 0; i < t->n_metrics; i++)
        fprintf(stderr, " - %s %.4f", spec_metric_name(t->metrics[i]), rec->metric[i]);
    if (r->hist.has_val) {
        fprintf(stderr, " - val_loss %.4f", rec->val_loss);
        for (int i = 0; i < t->n_metrics; i++)
            fprintf(stderr, " - val_%s %.4f", spec_metric_name(t->metrics[i]),
                    rec->val_metric[i]);
    }
    fprintf(stderr, " - lr %.3g\n", rec->lr);
}

static int train_epoch_event(train_run *r, const epoch_record *rec, char *err, size_t errlen)
{
    const spec_training *t = &r->spec->training;
    double total = 0;
    for (int e = 0; e < r->hist.n_epochs; e++)
        total += r->hist.epochs[e].time_s;
    eval_result val = {.loss = rec->val_loss};
    memcpy(val.metric, rec->val_metric, sizeof val.metric);
    runlog_epoch_line l = {.epoch = (long)r->pos.epoch,
                           .epochs = t->epochs,
                           .train.loss = rec->loss,
                           .val = r->hist.has_val ? &val : NULL,
                           .lr = rec->lr,
                           .samples_per_s = rec->samples_per_s,
                           .elapsed_s = rec->time_s,
                           .eta_s = total / r->hist.n_epochs * (t->epochs - r->hist.n_epochs),
                           .commits = -1};
    memcpy(l.train.metric, rec->metric, sizeof l.train.metric);
    return runlog_epoch(r->opt->out_dir, t, &l, err, errlen);
}

/* After the last batch of an epoch: record, report, schedule, checkpoint.
 * Sets *stop when early stopping fired. */
static int train_finish_epoch(train_run *r, double lr, bool *stop, char *err, size_t errlen)
{
    const spec_training *t = &r->spec->training;
    epoch_record *rec = &r->hist.epochs[r->hist.n_epochs];
    memset(rec, 0, sizeof *rec);
    long terms = r->pos.terms > 0 ? (long)r->pos.terms : 1;
    rec->loss = r->pos.loss_sum / terms;
    train_metric_values(t, &r->pos.sums, terms, r->m->classes, rec->metric);
    /* The rate the epoch's last step used, as Keras's epoch line shows the
     * optimizer's rate at the epoch end: with cosine or warm_up_batches it
     * is not the epoch's base rate. Derived from the position, so a run
     * resumed after the last step records the same. The spec's own double
     * when no schedule moved it, so a plain run's history shows 0.001. */
    float last_lr = train_step_lr(r, train_steps_per_epoch(r) - 1, lr);
    rec->lr = last_lr == (float)lr ? lr : (double)last_lr;
    rec->time_s = r->pos.elapsed_s;
    rec->samples_per_s = rec->time_s > 0 ? r->pos.samples / rec->time_s : 0.0;
    if (r->hist.has_val) {
        eval_result v;
        if (train_evaluate(r->m, &r->val, &v, err, errlen) != 0)
            return -1;
        rec->val_loss = v.loss;
        memcpy(rec->val_metric, v.metric, sizeof v.metric);
    }
    r->hist.n_epochs++;
    if (r->opt->verbose)
        train_print_epoch(r, rec);
    if (train_epoch_event(r, rec, err, errlen) != 0 ||
        train_write_history(r, err, errlen) != 0)
        return -1;

    epoch_metrics em;
    train_epoch_metrics(r, rec, &em);
    bool save = schedule_epoch_end(&r->sched, t, (int)r->pos.epoch, &em);
    if (save) {
        char name[64];
        snprintf(name, sizeof name, "checkpoints/weights-epoch-%03lld",
                 (long long)r->pos.epoch + 1);
        if (train_save_weights(r->m, &r->train, r->opt->out_dir, name, err, errlen) != 0)
            return -1;
    }
    r->pos = (train_position){.epoch = r->pos.epoch + 1, .global_step = r->pos.global_step};
    *stop = r->sched.stop;
    return train_checkpoint(r, err, errlen);
}

/* training.init_from.optimizer: the warm start's optimizer state, from
 * another run's checkpoint (PBT's exploit: the donor's momenta with its
 * weights), so the first step moves as the donor's next would have. */
static int train_warm_optimizer(train_run *r, char *err, size_t errlen)
{
    const char *ref = r->spec->training.init_optimizer_file;
    if (!ref)
        return 0;
    char why[600];
    if (ref[0] != '@' || ref[1] != '/') {
        snprintf(err, errlen, "training.init_from.optimizer: \"%s\" is not \"@/path\"", ref);
        return -1;
    }
    if (checkpoint_load_optimizer(ref + 1, r->m, r->optim.host, why, sizeof why) != 0) {
        snprintf(err, errlen, "training.init_from.optimizer: %s", why);
        return -1;
    }
    return train_optim_push(&r->optim, err, errlen);
}

static int train_resume_or_start(train_run *r, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/progress.jsonl", r->opt->out_dir);
    if (r->opt->resume) {
        int rc = checkpoint_load(r->opt->out_dir, r->spec_hash, &r->pos, &r->sched, &r->hist,
                                 r->m, r->optim.host, err, errlen);
        if (rc < 0 || (rc == 0 && train_optim_push(&r->optim, err, errlen) != 0))
            return -1;
        if (rc == 0)
            return train_start_event(r, err, errlen);
    }
    /* A fresh run starts a fresh progress log, from init_from's weights
     * when the spec names some. */
    if (warmstart_load(r->m, r->spec, err, errlen) != 0 ||
        train_warm_optimizer(r, err, errlen) != 0)
        return -1;
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return train_start_event(r, err, errlen);
}

/* training.evaluate (PyDTNN's --evaluate): the test set before the first
 * step, as an "evaluate" event with test_ values; after training it is
 * evaluated as always. */
static int train_evaluate_before(train_run *r, char *err, size_t errlen)
{
    const spec_training *t = &r->spec->training;
    if (!t->evaluate || r->pos.global_step > 0 || r->test.n <= 0)
        return 0;
    eval_result e;
    if (train_evaluate(r->m, &r->test, &e, err, errlen) != 0)
        return -1;
    if (r->opt->verbose)
        fprintf(stderr, "before training: test loss %.4f\n", e.loss);
    return runlog_evaluate_before(r->opt->out_dir, t, &e, err, errlen);
}

static int train_loop(train_run *r, char *err, size_t errlen)
{
    const spec_training *t = &r->spec->training;
    r->perm = malloc((size_t)(r->train.n > 0 ? r->train.n : 1) * sizeof *r->perm);
    if (!r->perm) {
        snprintf(err, errlen, "out of memory for the epoch order of %ld samples", r->train.n);
        return -1;
    }
    if (r->train.n <= 0) {
        snprintf(err, errlen, "data.train: no training samples");
        return -1;
    }
    if (train_evaluate_before(r, err, errlen) != 0)
        return -1;
    bool stop = r->sched.stop;
    while (!stop && r->pos.epoch < t->epochs) {
        /* Mid-epoch resume: the schedule already chose this epoch's rate. */
        double lr = r->pos.step > 0 ? r->sched.lr
                                    : schedule_epoch_begin(&r->sched, t, (int)r->pos.epoch);
        if (train_epoch_steps(r, (float)lr, err, errlen) != 0 ||
            train_finish_epoch(r, lr, &stop, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* training.profile: profile.json in the run directory. */
static int train_write_profile(const train_run *r, char *err, size_t errlen)
{
    if (!r->m->profile)
        return 0;
    json_t *o = model_profile_json(r->m);
    char *text = o ? json_dumps(o, JSON_INDENT(1) | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(o);
    if (!text) {
        snprintf(err, errlen, "profile.json: out of memory");
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/profile.json", r->opt->out_dir);
    int rc = atomic_write_file(path, text, strlen(text), err, errlen);
    free(text);
    return rc;
}

static int train_finish(train_run *r, char *err, size_t errlen)
{
    const spec_training *t = &r->spec->training;
    if (r->test.n > 0) {
        if (train_evaluate(r->m, &r->test, &r->hist.test, err, errlen) != 0)
            return -1;
        r->hist.has_test = true;
    }
    if (train_write_history(r, err, errlen) != 0 ||
        train_save_weights(r->m, &r->train, r->opt->out_dir, "weights", err, errlen) != 0 ||
        train_write_profile(r, err, errlen) != 0)
        return -1;
    double total = 0;
    for (int e = 0; e < r->hist.n_epochs; e++)
        total += r->hist.epochs[e].time_s;
    if (r->hist.has_test) {
        if (r->opt->verbose) {
            fprintf(stderr, "test - loss %.4f", r->hist.test.loss);
            for (int i = 0; i < t->n_metrics; i++)
                fprintf(stderr, " - %s %.4f", spec_metric_name(t->metrics[i]),
                        r->hist.test.metric[i]);
            fprintf(stderr, "\n");
        }
    }
    return runlog_end(r->opt->out_dir, t, r->hist.has_test ? &r->hist.test : NULL, total,
                      r->hist.n_epochs, err, errlen);
}

int train_single(const job_spec *spec, const train_options *opt, char *err, size_t errlen)
{
    train_run r;
    memset(&r, 0, sizeof r);
    r.spec = spec;
    r.opt = opt;
    train_stop_signal = 0;
    train_catch_signals();
    int rc = train_open(&r, err, errlen);
    bool logging = rc == 0;
    if (rc == 0)
        rc = train_resume_or_start(&r, err, errlen);
    if (rc == 0)
        rc = train_loop(&r, err, errlen);
    if (rc == 0)
        rc = train_finish(&r, err, errlen);
    if (rc != 0 && logging)
        train_end_event_failed(&r, err);
    train_close(&r);
    return rc;
}

static json_t *train_eval_json(const spec_training *t, const eval_result *e)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    runlog_put_metrics(o, t, "", e->loss, e->metric);
    json_object_set_new(o, "samples", json_integer(e->samples));
    return o;
}

int train_evaluate_only(const job_spec *spec, const train_options *opt, char *err,
                        size_t errlen)
{
    train_run r;
    memset(&r, 0, sizeof r);
    r.spec = spec;
    r.opt = opt;
    int rc = train_open(&r, err, errlen);
    if (rc == 0)
        rc = weights_load(r.m, opt->weights, err, errlen);
    json_t *out = rc == 0 ? json_pack("{s:s}", "weights", opt->weights) : NULL;
    const struct { const char *key; const dataset *d; } sets[] = {{"test", &r.test},
                                                                   {"validation", &r.val}};
    for (size_t i = 0; rc == 0 && i < sizeof sets / sizeof sets[0]; i++) {
        eval_result e;
        if (sets[i].d->n <= 0)
            continue;
        rc = train_evaluate(r.m, sets[i].d, &e, err, errlen);
        if (rc == 0)
            json_object_set_new(out, sets[i].key, train_eval_json(&spec->training, &e));
    }
    char *text = rc == 0 && out ? json_dumps(out, JSON_COMPACT | JSON_REAL_PRECISION(13)) : NULL;
    if (rc == 0 && !text) {
        snprintf(err, errlen, "evaluation: out of memory");
        rc = -1;
    }
    if (rc == 0) {
        printf("%s\n", text);
        char path[4096];
        snprintf(path, sizeof path, "%s/evaluation.json", opt->out_dir);
        rc = atomic_write_file(path, text, strlen(text), err, errlen);
    }
    free(text);
    json_decref(out);
    train_close(&r);
    return rc;
}
